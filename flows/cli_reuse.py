"""``reactbench reuse ...``: look after the per-item reuse store (``storage.reuse_store``)."""

from __future__ import annotations

import typer
from rich.console import Console

from flows.cli_options import finite, run_dir_option

reuse_app = typer.Typer(
    help="The per-item reuse store: finished edits, instructions and analyses that rebuilds take instead of recomputing.",
    no_args_is_help=True,
)
console = Console(stderr=True, emoji=False)


def _store(run_dir: str, reuse_dir: str | None):
    from storage.fs import RunFS
    from storage.reuse_store import ReuseStore

    if reuse_dir:
        return ReuseStore.open(RunFS.open(str(run_dir)), reuse_dir), reuse_dir
    run = RunFS.open(str(run_dir))
    if not run.exists():
        console.print(f"{run_dir}: no such run directory", style="red", markup=False)
        raise typer.Exit(1)
    saved = _saved_reuse_dir(run_dir)
    return ReuseStore.open(run, saved), saved or f"{run_dir}/reuse"


def _saved_reuse_dir(run_dir: str) -> str | None:
    """``run.reuse_dir`` of the run's config (the one rule: ``flows.config.resolve_run_config``)."""
    from flows.config import resolve_run_config

    return resolve_run_config(None, run_dir=run_dir).run.reuse_dir


@reuse_app.command("prune")
def prune(
    keep_days: float = typer.Option(
        ..., "--keep-days", min=0, callback=finite, help="Keep entries used within this many days; delete the rest."
    ),
    run_dir: str = run_dir_option("Run directory whose store to prune (its run.reuse_dir if set)."),
    reuse_dir: str | None = typer.Option(None, "--reuse-dir", help="A shared store (fsspec URL) to prune instead."),
) -> None:
    """Delete reuse entries not used for --keep-days days (and a shared store's images nothing refers to)."""
    store, where = _store(run_dir, reuse_dir)
    counts = store.prune(keep_days)
    console.print(
        f"{where}: removed {counts['entries_removed']} entr{'y' if counts['entries_removed'] == 1 else 'ies'}, "
        f"kept {counts['entries_kept']}, removed {counts['images_removed']} unreferenced image(s) "
        f"and {counts['quarantine_removed']} quarantine record(s)",
        markup=False,
    )


@reuse_app.command("stats")
def stats(
    run_dir: str = run_dir_option("Run directory whose store to describe (its run.reuse_dir if set)."),
    reuse_dir: str | None = typer.Option(None, "--reuse-dir", help="A shared store (fsspec URL) to describe instead."),
) -> None:
    """Entries per component (edit:<editor>, instruct, analysis), and how many failed their check."""
    store, where = _store(run_dir, reuse_dir)
    per: dict[str, int] = {}
    for _, doc in store.entries():
        name = str(doc.get("component") or "?")
        per[name] = per.get(name, 0) + 1
    damaged = store.quarantined()
    files = store.layout()
    held = f"in {files['packs']} pack(s)" + (
        f" and {files['entry_files']} file(s) of the previous layout" if files["entry_files"] else ""
    )
    lines = [f"{where}: {sum(per.values())} entries {held}"] + [f"  {k}: {v}" for k, v in sorted(per.items())]
    lines.append(
        f"failed verification (recomputed): {len(damaged)}"
        + (
            f"; records in {where}/quarantine/, the last: {damaged[-1].get('entry')}: {damaged[-1].get('why')}"
            if damaged
            else ""
        )
    )
    console.print("\n".join(lines), markup=False)
