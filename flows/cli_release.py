"""``reactbench release ...``: a benchmark's releases: ``diff OLD NEW`` (what changed between two
versions, ``tasks.release.export.diff``) and ``canary`` (its contamination canary GUID)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from flows.cli_options import run_dir_option

release_app = typer.Typer(
    help="A benchmark's releases: compare two versions, print its canary GUID.", no_args_is_help=True
)
GUID_IN_TEXT = re.compile(r"canary GUID ([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})")


def _from_release(folder: str) -> str:
    """The GUID a release folder carries (its manifest's ``canary``, else its croissant.json)."""
    from storage.fs import RunFS
    from tasks.release.export.croissant import FILE
    from tasks.release.export.seal import MANIFEST

    out = RunFS.open(folder)
    for name, read in ((MANIFEST, lambda d: d.get("canary")), (FILE, lambda d: d.get("description"))):
        if out.exists(name):
            text = read(json.loads(out.read_text(name))) or ""
            if m := GUID_IN_TEXT.search(text):
                return m.group(1)
    raise ValueError(
        f"{out.url}: no canary in {MANIFEST} or {FILE} (a release exported before canaries; export it again)"
    )


@release_app.command("canary")
def canary_cmd(
    run_dir: str = run_dir_option("Run directory whose benchmark's canary to print (from its config)."),
    release: str | None = typer.Option(
        None, "--release", help="A release folder (local path or fsspec URL): print the canary it carries."
    ),
    config: Path | None = typer.Option(None, "--config", "-c", help="Run config (default: the run's config.yaml)."),
    full: bool = typer.Option(False, "--full", help="Print the whole canary sentence, not only the GUID."),
) -> None:
    """Print the benchmark's canary GUID: one per benchmark, the same in every version of its releases
    (datasheet.canary_guid, else derived from the benchmark's name). docs/publishing.md says how to
    test a model's output for it."""
    from flows.cli_output import print_error
    from tasks.release.export.canary import canary_guid, canary_string
    from tasks.release.export.datasheet import DEFAULT_NAME

    try:
        if release is not None:
            guid = _from_release(release)
        else:
            from flows.config import resolve_run_config

            sheet = resolve_run_config(config, run_dir=run_dir).datasheet
            guid = canary_guid(sheet.name or DEFAULT_NAME, sheet.canary_guid)
    except (ValueError, FileNotFoundError) as exc:
        print_error(f"error: {exc}")
        raise typer.Exit(2) from None
    typer.echo(canary_string(guid) if full else guid)


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


def register(app: typer.Typer) -> None:
    app.add_typer(release_app, name="release")
