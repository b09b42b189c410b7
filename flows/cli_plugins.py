"""``reactbench tasks``: the tasks and sources this installation knows, and which package gave each.

What a plugin author runs after ``pip install -e`` to see that the entry point was found and
loads, and what a benchmark author runs to see which causes a build can mine."""

from __future__ import annotations

import json
from importlib.metadata import entry_points
from typing import Any

import typer
from rich.console import Console
from rich.table import Table


def _packages(group: str) -> dict[str, str]:
    """Entry-point name -> the distribution that declares it."""
    return {ep.name: (ep.dist.name if ep.dist is not None else "?") for ep in entry_points(group=group)}


def plugin_rows() -> dict[str, list[dict[str, Any]]]:
    """Every registered task and source as plain rows (``--json`` prints them as they are)."""
    from miners.sources import BUILTIN, available, source_spec
    from miners.sources import ENTRY_POINT_GROUP as SOURCE_GROUP
    from storage.task_spec import ENTRY_POINT_GROUP as TASK_GROUP
    from storage.task_spec import all_tasks
    from tasks.stages.mine import fed_tasks

    specs = all_tasks()
    total = sum(s.weight for s in specs.values()) or 1.0
    task_pkgs, source_pkgs = _packages(TASK_GROUP), _packages(SOURCE_GROUP)
    sources = {name: source_spec(name) for name in available()}
    fed = {name: fed_tasks(src) for name, src in sources.items()}
    tasks = [
        {
            "id": s.id,
            "short": s.short,
            "label": s.label,
            "weight": s.weight,
            "share": round(s.weight / total, 4),
            "order": s.order,
            "sources": [n for n in sources if s.id in fed[n]],
            "hooks": sorted(s.hook_refs()),
            "package": task_pkgs.get(s.id, "registered in this process"),
        }
        for s in specs.values()
    ]
    source_rows = [
        {
            "name": n,
            "format": src.format,
            "tasks": list(fed[n]),
            "package": "reactbench-pipeline (built in)"
            if n in BUILTIN
            else source_pkgs.get(n, "registered in this process"),
        }
        for n, src in sources.items()
    ]
    return {"tasks": tasks, "sources": source_rows}


def register(app: typer.Typer) -> None:
    """Add the ``tasks`` command to the root CLI."""

    @app.command("tasks")
    def tasks_cmd(as_json: bool = typer.Option(False, "--json", help="Print the rows as one JSON object.")) -> None:
        """List the registered tasks (built-in and plugins) and sources, with the package of each."""
        from miners.sources import SourceError
        from storage.task_spec import TaskError

        console = Console()
        try:
            rows = plugin_rows()
        except (TaskError, SourceError) as exc:  # a plugin whose entry point does not load is named
            console.print(f"[red]{exc}[/red]")
            raise typer.Exit(2) from None
        if as_json:
            typer.echo(json.dumps(rows, sort_keys=True))
            return
        table = Table(title="Tasks (share: weight over the sum of the registered weights)")
        for col in ("id", "short", "weight", "share", "sources", "package"):
            table.add_column(col, overflow="fold")
        for t in rows["tasks"]:
            table.add_row(
                t["id"],
                t["short"],
                f"{t['weight']:g}",
                f"{t['share']:.0%}",
                ", ".join(t["sources"]) or "-",
                t["package"],
            )
        console.print(table)
        sources = Table(title="Sources (formats: --json)")
        for col in ("name", "tasks", "package"):
            sources.add_column(col, overflow="fold")
        for s in rows["sources"]:
            sources.add_row(s["name"], ", ".join(s["tasks"]) or "-", s["package"])
        console.print(sources)
