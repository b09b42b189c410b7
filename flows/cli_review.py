"""``reactbench review ...``: serve the review app, manage accounts, export and exchange decisions.

The lead's ``flows/cli.py`` mounts :data:`review_app` and adds the default callback that runs
the review stage (filling the queue).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console

from flows.cli_options import no_run_dir, run_dir_option
from flows.cli_output import print_error
from tasks.engine.suggest import suggest

review_app = typer.Typer(
    help="Human verification: fill the queue, serve the review app, export verified data.", no_args_is_help=False
)
console = Console(
    soft_wrap=True, emoji=False
)  # messages never hard-wrapped (copyable commands); names never read as emoji codes

if TYPE_CHECKING:
    from storage.fs import RunFS
    from tasks.review.queue import ReviewQueue

RunDir = run_dir_option("Run directory holding review/queue.sqlite and images/ (local path or fsspec URL).")
DbOpt = typer.Option(
    None, "--db", help="Queue database URL (default: review.db_url of the run's config, else sqlite in the run dir)."
)
CfgOpt = typer.Option(None, "--config", "-c", help="Run config (default: the run's saved config.yaml).")


def open_queue(run_dir: str, db: str | None, config: Path | None = None) -> tuple[RunFS, ReviewQueue]:
    """The run's queue, configured from its saved config (k, lease timeout, database URL)."""
    from flows.config import resolve_run_config
    from storage.fs import RunFS
    from tasks.review.queue import ReviewQueue
    from tasks.review.stage import default_db_url

    run = RunFS.open(str(run_dir))
    if not run.exists():  # a mistyped path would get an empty queue of its own
        print_error(no_run_dir(str(run_dir)))
        raise typer.Exit(2)
    cfg = resolve_run_config(config, run_dir=run_dir)
    url = db or cfg.review.db_url or default_db_url(run)
    return run, ReviewQueue.open(
        url, k=cfg.review.k, lease_minutes=cfg.review.lease_minutes, pool_size=cfg.review.db_pool_size
    )


def _has_users(engine) -> bool:
    from sqlalchemy import func, select

    from storage.review_db import User

    with engine.connect() as conn:
        return bool(conn.execute(select(func.count()).select_from(User)).scalar_one())


@review_app.command("serve")
def serve(
    run_dir: str = RunDir,
    db: str | None = DbOpt,
    config: Path | None = CfgOpt,
    host: str = typer.Option("127.0.0.1", help="Interface to listen on (use 0.0.0.0 only behind TLS)."),
    port: int = typer.Option(8765, help="Port."),
    secure_cookies: bool = typer.Option(
        False, "--secure-cookies", help="Mark cookies Secure (when served over HTTPS)."
    ),
    forwarded_allow_ips: str | None = typer.Option(
        None,
        "--forwarded-allow-ips",
        help="Trust X-Forwarded-For / -Proto from these proxy addresses (comma-separated, or '*'); by default no proxy header is trusted.",
    ),
) -> None:
    """Serve the review web app for a run."""
    import uvicorn

    from storage.review_db import redact
    from tasks.review.app import create_app

    run, queue = open_queue(run_dir, db, config)
    app = create_app(str(run_dir), queue, secure_cookies=secure_cookies)
    console.print(f"Review app for {run_dir} (queue {redact(str(queue.engine.url))}) on http://{host}:{port}/")
    if not _has_users(queue.engine):
        console.print(
            f"No account yet: {suggest('review', 'add-user', 'NAME', '--role', 'admin', '--run-dir', run_dir)}"
        )
    # proxy headers only when configured: otherwise anyone could name their own address in
    # X-Forwarded-For and rotate it past the per-client login limit
    proxy = (
        {"proxy_headers": True, "forwarded_allow_ips": forwarded_allow_ips}
        if forwarded_allow_ips
        else {"proxy_headers": False}
    )
    uvicorn.run(app, host=host, port=port, log_level="warning", **proxy)


@review_app.command("add-user")
def add_user_cmd(
    name: str = typer.Argument(..., help="Account name (shown on the dashboard, pseudonymised on export)."),
    role: str = typer.Option("annotator", "--role", help="annotator | admin"),
    run_dir: str = RunDir,
    db: str | None = DbOpt,
    config: Path | None = CfgOpt,
) -> None:
    """Create an account and print its secret once (only its hash is stored)."""
    from tasks.review.accounts import AccountError, add_user

    _run, queue = open_queue(run_dir, db, config)
    try:
        secret = add_user(queue.engine, name, role)
    except AccountError as exc:
        console.print(f"[red]{exc}[/red]")
        raise typer.Exit(1) from None
    console.print(f"Created {role} {name!r}. Secret (shown once, store it now):")
    typer.echo(secret)


@review_app.command("export")
def export_cmd(
    run_dir: str = RunDir,
    db: str | None = DbOpt,
    config: Path | None = CfgOpt,
    labelstudio: Path | None = typer.Option(
        None,
        "--labelstudio",
        help="Also write Label Studio tasks (JSON) here (QA tasks as <stem>.qa.json), each with its labeling config beside it.",
    ),
    image_url_prefix: str = typer.Option(
        "/data/local-files/?d=", help="Prefix of image URLs in the Label Studio tasks."
    ),
) -> None:
    """Write review/verified_edits, review/verified_questions and review/decisions."""
    from tasks.engine.intact import DamagedInput
    from tasks.review.export import export_review
    from tasks.review.labelstudio import export_tasks

    run, queue = open_queue(run_dir, db, config)
    try:
        summary = export_review(run, queue)
    except DamagedInput as exc:  # one line naming the file
        print_error(str(exc))
        raise typer.Exit(2) from None
    console.print(summary.message)
    for name, path in summary.paths.items():
        console.print(f"  {name}: {path}")
    if labelstudio:
        console.print(export_tasks(queue, labelstudio, image_url_prefix).message)


@review_app.command("import-labelstudio")
def import_labelstudio_cmd(
    path: Path = typer.Argument(
        ..., help="Label Studio JSON export of the tasks written by `review export --labelstudio`."
    ),
    run_dir: str = RunDir,
    db: str | None = DbOpt,
    config: Path | None = CfgOpt,
) -> None:
    """Append Label Studio annotations as decisions (importing the same file twice adds nothing)."""
    from tasks.review.labelstudio import import_decisions
    from tasks.review.queue import QueueError

    _run, queue = open_queue(run_dir, db, config)
    try:
        summary = import_decisions(queue, path)
    except QueueError as exc:
        console.print(f"[red]{exc}[/red]")
        raise typer.Exit(1) from None
    console.print(
        f"Imported {summary.imported} decisions ({summary.already_imported} imported before, {len(summary.rejected)} skipped)"
    )
    for r in summary.rejected:
        console.print(f"  skipped task {r['task']} annotation {r['annotation']}: {r['reason']}: {r['detail']}")


if __name__ == "__main__":
    review_app()
