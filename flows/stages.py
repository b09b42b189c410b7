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


def get_stage(name: str) -> Stage:
    try:
        target = _STAGE_CLASSES[name]
    except KeyError:
        raise KeyError(f"unknown stage {name!r}; stages: {', '.join(STAGE_ORDER)}") from None
    module, cls = target.split(":")
    return getattr(import_module(module), cls)()


def select_stages(names: list[str] | None) -> list[str]:
    """Validate and order a stage selection (None -> all five)."""
    if not names:
        return list(STAGE_ORDER)
    unknown = [n for n in names if n not in STAGE_ORDER]
    if unknown:
        raise KeyError(f"unknown stage(s) {unknown}; stages: {', '.join(STAGE_ORDER)}")
    return [n for n in STAGE_ORDER if n in names]
