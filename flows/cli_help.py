"""What ``reactbench ... --help`` shows: one example per command, flags without a value type, and
``reactbench --version``.

Typer's rich help labels every option with its Python type, flags included (``--force <bool>``,
even ``--help <bool>``), which reads as if a flag took a value (``--force true`` then fails). The
command classes here give flags an empty type label; options that take a value keep theirs.

Every command's example is in :data:`EXAMPLES`, keyed by its path; :func:`finish_help` attaches
them and the classes to every command of the app once it is assembled. A command without an
example, or an example that does not parse, fails ``tests/flows/test_cli_help.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer
from typer.core import TyperCommand, TyperGroup
from typer.models import OptionInfo

if TYPE_CHECKING:
    import click  # typer's own command-line layer

EXAMPLES: dict[str, str] = {
    "": "reactbench build --config configs/demo.yaml --run-dir runs/demo",
    "build": "reactbench build --config configs/demo.yaml --run-dir runs/demo --stages mine,instruct",
    "mine": "reactbench mine --config configs/demo.yaml --run-dir runs/demo",
    "instruct": "reactbench instruct --run-dir runs/demo --mllm openai --mllm-model Qwen/Qwen2.5-VL-7B-Instruct --base-url http://localhost:8000/v1",
    "edit": "reactbench edit --run-dir runs/demo --force-items editor=classical",
    "qa": "reactbench qa --run-dir runs/demo",
    "status": "reactbench status --run-dir runs/demo",
    "sample-data": "reactbench sample-data data/sample --vg-images 900",
    "export": "reactbench export --run-dir runs/demo --out releases/demo-v2 --release-version 1.1.0 --previous releases/demo-v1",
    "eval": "reactbench eval --run-dir runs/demo --model openai:Qwen/Qwen2.5-VL-7B-Instruct --base-url http://localhost:8000/v1",
    "report": "reactbench report eval --run-dir runs/demo --eval rules-rules-v1",
    "audit": "reactbench audit --run-dir runs/demo",
    "tasks": "reactbench tasks --json",
    "preflight": "reactbench preflight --config configs/reactbench.yaml --gpus 4 --gpu-memory-gb 48 --items 20000 --window-h 8",
    "review": "reactbench review --run-dir runs/demo",
    "review serve": "reactbench review serve --run-dir runs/demo --port 8765",
    "review add-user": "reactbench review add-user alice --role admin --run-dir runs/demo",
    "review export": "reactbench review export --run-dir runs/demo --labelstudio ls/tasks.json",
    "review import-labelstudio": "reactbench review import-labelstudio ls/export.json --run-dir runs/demo",
    "reuse": "reactbench reuse stats --run-dir runs/demo",
    "reuse prune": "reactbench reuse prune --keep-days 30 --run-dir runs/demo",
    "reuse stats": "reactbench reuse stats --run-dir runs/demo",
    "release": "reactbench release diff releases/demo-v1 releases/demo-v2",
    "release diff": "reactbench release diff releases/demo-v1 releases/demo-v2 --json",
    "release canary": "reactbench release canary --release releases/demo",
}


def _label_flags(params: list[click.Parameter]) -> list[click.Parameter]:
    """A flag takes no value: no type label in the help (``--force``, not ``--force <bool>``)."""
    for p in params:
        if getattr(p, "is_flag", False) and getattr(p, "metavar", None) is None:
            p.metavar = ""
    return params


class HelpCommand(TyperCommand):
    """A command whose help labels flags as flags."""

    def get_params(self, ctx: click.Context) -> list[click.Parameter]:
        return _label_flags(super().get_params(ctx))


class HelpGroup(TyperGroup):
    """A command group whose help labels flags as flags."""

    def get_params(self, ctx: click.Context) -> list[click.Parameter]:
        return _label_flags(super().get_params(ctx))


def _unset(value: object) -> bool:
    """Typer marks settings left at their default with a placeholder object."""
    return value is None or type(value).__name__ == "DefaultPlaceholder"


def _epilog(path: str) -> str | None:
    example = EXAMPLES.get(path)
    return f"Example: {example}" if example else None


def finish_help(app: typer.Typer, path: str = "") -> None:
    """Give every command and group of ``app`` (recursively) the help classes and its example."""
    if _unset(app.info.cls):
        app.info.cls = HelpGroup
    if _unset(app.info.epilog):
        app.info.epilog = _epilog(path)
    for info in app.registered_commands:
        name = info.name or (info.callback.__name__.replace("_", "-") if info.callback else "")
        if info.cls in (None, TyperCommand):
            info.cls = HelpCommand
        if _unset(info.epilog):
            info.epilog = _epilog(f"{path} {name}".strip())
    for group in app.registered_groups:
        if group.typer_instance is not None:
            finish_help(group.typer_instance, f"{path} {group.name}".strip())


def version_option() -> OptionInfo:
    """``--version``: prints ``reactbench <version>`` and exits, before any command runs."""

    def show(value: bool) -> None:
        if value:
            from storage.stage_store import code_version

            typer.echo(f"reactbench {code_version()}")
            raise typer.Exit(0)

    return typer.Option(False, "--version", is_eager=True, callback=show, help="Print the version and exit.")
