"""``reactbench release diff OLD NEW``: what changed between two releases (``tasks.release.export.diff``).

The ``release`` group is shared with ``release canary``; ``flows/cli.py`` mounts :data:`release_app`.
"""

from __future__ import annotations

import typer
from rich.console import Console
from rich.table import Table

console = Console(stderr=True, soft_wrap=True, emoji=False)
release_app = typer.Typer(help="Inspect releases: compare two versions.", no_args_is_help=True)


@release_app.command("diff")
def diff_cmd(
    old: str = typer.Argument(..., help="The older release (folder or fsspec URL)."),
    new: str = typer.Argument(..., help="The newer release (folder or fsspec URL)."),
    as_json: bool = typer.Option(False, "--json", help="Print the whole diff as one JSON line on stdout."),
    items: bool = typer.Option(False, "--list", help="Also list every item added, removed or changed."),
) -> None:
    """List the items added, removed and changed per task and question type, with their reasons."""
    from flows.cli_output import print_error
    from tasks.release.export.diff import diff_urls, json_line

    try:
        d = diff_urls(old, new)
    except (ValueError, FileNotFoundError) as exc:
        print_error(f"error: {exc}")
        raise typer.Exit(2) from None
    if as_json:
        typer.echo(json_line(d))
        return
    out = Console(soft_wrap=True, emoji=False)
    s = d.summary()
    out.print(
        f"{d.old.label} -> {d.new.label}: {s['added']:,} added, {s['removed']:,} removed, {s['changed']:,} changed",
        markup=False,
    )
    table = Table("task", "question type", "added", "removed", "changed")
    for task, groups in d.by_group().items():
        for qtype, c in groups.items():
            table.add_row(task, qtype, str(c["added"]), str(c["removed"]), str(c["changed"]))
    out.print(table)
    for kind, reasons in d.reasons().items():
        for reason, n in reasons.items():
            out.print(f"{kind}: {n:,} x {reason}", markup=False)
    if items:
        for c in d.changes:
            more = f" ({c['detail']})" if c["detail"] else ""
            out.print(f"{c['change']:8} {c['id']} {c['task']} {c['qtype']}: {c['reason']}{more}", markup=False)
