"""The pipeline's stages by name, in order; imported lazily so the CLI starts fast."""

from __future__ import annotations

from importlib import import_module

from tasks.engine.base import Stage

STAGE_ORDER: tuple[str, ...] = ("mine", "instruct", "edit", "qa", "review")

_STAGE_CLASSES: dict[str, str] = {
    "mine": "tasks.stages.mine:MineStage",
    "instruct": "tasks.stages.instruct:InstructStage",
    "edit": "tasks.stages.edit:EditStage",
    "qa": "tasks.stages.qa:QAStage",
    "review": "tasks.review:ReviewStage",
}


class UnknownStage(KeyError, ValueError):
    """A stage name that does not exist; the message names the stages that do (and the closest).
    Still a ``KeyError`` for callers that caught that; printed as its plain message."""

    def __str__(self) -> str:
        return str(self.args[0])


def _unknown(names: list[str]) -> UnknownStage:
    import difflib

    parts = []
    for n in names:
        close = difflib.get_close_matches(n, STAGE_ORDER, n=1)
        parts.append(f"{n!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    return UnknownStage(f"unknown stage {', '.join(parts)}; the stages are {', '.join(STAGE_ORDER)}")


def get_stage(name: str) -> Stage:
    try:
        target = _STAGE_CLASSES[name]
    except KeyError:
        raise _unknown([name]) from None
    module, cls = target.split(":")
    return getattr(import_module(module), cls)()


def select_stages(names: list[str] | None) -> list[str]:
    """Validate and order a stage selection (None -> all five)."""
    if not names:
        return list(STAGE_ORDER)
    unknown = [n for n in names if n not in STAGE_ORDER]
    if unknown:
        raise _unknown(unknown)
    return [n for n in STAGE_ORDER if n in names]
