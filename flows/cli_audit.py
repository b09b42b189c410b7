"""``reactbench audit``: check every gold answer of a run's queued items against the drawn truth."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.console import Console

from flows.cli_options import run_dir_option


def register(app: typer.Typer) -> None:
    """Add the ``audit`` command to the root CLI."""

    @app.command("audit")
    def audit(
        run_dir: str = run_dir_option("Run directory to audit (local path or fsspec URL)."),
        truth: Path | None = typer.Option(
            None, "--truth", help="sample_truth.json (default: next to the run's sources, when present)."
        ),
    ) -> None:
        """Per task and editor: queued items whose gold answers are all true of their image; ends with one JSON line."""
        from flows.cli_options import no_run_dir
        from flows.cli_output import StepBars, print_error
        from flows.config import saved_run_config
        from storage.fs import RunFS
        from storage.parquet_io import ArtifactError
        from tasks.engine.intact import DamagedInput
        from tasks.tools.audit import find_truth, run_audit

        console = Console(soft_wrap=True, emoji=False)  # a suggested command is never broken across lines
        run = RunFS.open(str(run_dir))
        if not run.exists():
            print_error(no_run_dir(str(run_dir)))
            raise typer.Exit(2)
        path = truth or find_truth(saved_run_config(run_dir))
        if truth is not None and not truth.exists():
            raise typer.BadParameter(f"{truth}: no such truth file", param_hint="--truth")
        try:
            with StepBars("audit", console) as steps:
                out = run_audit(run, path, steps.step("items"))
                if out["mode"] == "truth":
                    steps(
                        "items",
                        out["items"],
                        out["items"],
                        summary=f"{out['items']:,} queued items checked against the truth",
                        details=f"{out['consistent']:,} consistent",
                    )
        except (FileNotFoundError, DamagedInput, ArtifactError) as exc:  # one line naming the file, no traceback
            print_error(str(exc))
            raise typer.Exit(2) from None
        if out["mode"] == "verification":
            console.print("No sample truth: verification verdicts of the queued edits only.")
            for key, counts in out["per_task_editor"].items():
                console.print(f"  {key}: {counts}")
            print(json.dumps({"items": out["items"], "per_task_editor": out["per_task_editor"]}, sort_keys=True))
            return
        for task, t in sorted(out["per_task"].items()):
            console.print(
                f"{task}: {t['consistent']}/{t['items']} consistent, {t['items'] - t['consistent']} inconsistent"
            )
            for ed, e in sorted(t["per_editor"].items()):
                console.print(f"  editor {ed}: {e['consistent']}/{e['items']} consistent")
            for ex in t["examples"]:
                console.print(
                    f"  [yellow]inconsistent[/yellow] {ex['edit_id']} ({ex['editor']}): {'; '.join(ex['problems'])}",
                    markup=True,
                    highlight=False,
                )
        per_task = {
            k: {"items": v["items"], "consistent": v["consistent"]} for k, v in sorted(out["per_task"].items())
        }
        print(
            json.dumps(
                {
                    "items": out["items"],
                    "consistent": out["consistent"],
                    "fraction": out["fraction"],
                    "per_task": per_task,
                },
                sort_keys=False,
            )
        )
