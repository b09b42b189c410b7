"""Prefect artifacts of a build: per-stage counts and reject reasons, progress, the build summary.

Keys are stable (``reactbench-<stage>-counts``, ``reactbench-<stage>-progress``,
``reactbench-build-summary``) so the Prefect UI's artifact pages show one history per key,
one entry per run. The ``*_rows`` / ``*_markdown`` functions are pure (tested without a
server); ``publish_*`` send them to the Prefect API of the current flow run.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from uuid import UUID

from storage import addresses
from tasks.engine.runner import StageSummary
from tasks.engine.suggest import suggest


def artifact_key(*parts: str) -> str:
    """Prefect keys allow lowercase letters, digits and dashes only."""
    raw = "-".join(["reactbench", *parts]).lower()
    return re.sub(r"-+", "-", re.sub(r"[^a-z0-9-]", "-", raw)).strip("-")


def stage_table_rows(summary: StageSummary) -> list[dict[str, Any]]:
    """One row per metric: shards, rows in/out per artifact, rejects per reason code."""
    rows: list[dict[str, Any]] = [
        {"metric": "shards total", "value": summary.shards_total},
        {"metric": "shards run", "value": summary.shards_run},
        {"metric": "shards skipped", "value": summary.shards_skipped},
        {"metric": "rows in", "value": summary.rows_in},
        {"metric": "items reused", "value": summary.items_reused},
        {"metric": "items computed", "value": summary.items_computed},
    ]
    rows += [{"metric": f"rows out: {name}", "value": n} for name, n in summary.rows_out.items()]
    rows.append({"metric": "rejected", "value": summary.rejected})
    rows += [{"metric": f"reject: {reason}", "value": n} for reason, n in sorted(summary.reject_reasons.items())]
    return rows


def _link(run_dir: str, rel: str = "") -> str:
    """A clickable link for local run directories, a plain URL otherwise."""
    target = f"{run_dir.rstrip('/')}/{rel}" if rel else run_dir
    if "://" in run_dir:
        return f"`{target}`"
    return f"[{rel or target}](file://{Path(target).resolve()})"


def build_summary_markdown(
    run_dir: str,
    summaries: Iterable[StageSummary],
    failed: dict[str, str] | None = None,
    reports: Iterable[str] = (),
) -> str:
    """The build at a glance: a table per stage with links to each stage's folder and manifest."""
    lines = [
        "# reactbench build",
        "",
        f"Run directory: {_link(run_dir)}  (resolved config: {_link(run_dir, addresses.CONFIG_FILE)})",
        "",
        "| stage | shards run | skipped | rows in | rows out | rejected | top reject reasons | items reused / computed | manifest |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for s in summaries:
        out = ", ".join(f"{k} {v}" for k, v in s.rows_out.items()) or "-"
        top = sorted(s.reject_reasons.items(), key=lambda kv: (-kv[1], kv[0]))[:3]
        reasons = ", ".join(f"{k} {v}" for k, v in top) or "-"
        lines.append(
            f"| {s.stage} | {s.shards_run} | {s.shards_skipped} | {s.rows_in} | {out} | {s.rejected} | {reasons} "
            f"| {s.items_reused} / {s.items_computed} | {_link(run_dir, f'{s.stage}/_manifest.json')} |"
        )
    if failed:
        lines += ["", "## Failed", ""]
        lines += [f"- **{stage}**: {msg.splitlines()[0] if msg else 'failed'}" for stage, msg in failed.items()]
        lines += ["", "Rerun the same build: finished shards are skipped, only the failed ones run again."]
    lines += ["", "## Reports", ""]
    lines += [f"- {_link(run_dir, rel)}" for rel in reports]
    lines += [
        f"- review queue: {_link(run_dir, addresses.REVIEW_DB)} (`{suggest('review', 'serve', '--run-dir', str(run_dir))}`)",
        f"- more reports (eval, ablation) land under {_link(run_dir, addresses.REPORTS_DIR)}",
    ]
    return "\n".join(lines)


def publish_stage_table(summary: StageSummary) -> UUID:
    from prefect.artifacts import create_table_artifact

    return create_table_artifact(
        key=artifact_key(summary.stage, "counts"),
        table=stage_table_rows(summary),
        description=f"reactbench stage `{summary.stage}`: counts and reject reasons",
    )


def publish_build_summary(
    run_dir: str, summaries: Iterable[StageSummary], failed: dict[str, str] | None = None, reports: Iterable[str] = ()
) -> UUID:
    from prefect.artifacts import create_markdown_artifact

    return create_markdown_artifact(
        key=artifact_key("build", "summary"),
        markdown=build_summary_markdown(run_dir, summaries, failed, reports),
        description="reactbench build summary",
    )


class ProgressArtifact:
    """A progress artifact (0-100 %) updated as shards finish; created at the stage's start."""

    def __init__(self, stage: str, total: int, done: int = 0):
        from prefect.artifacts import create_progress_artifact

        self.stage, self.total, self.done = stage, max(total, 0), done
        self.id = create_progress_artifact(
            progress=self.percent, key=artifact_key(stage, "progress"), description=self._describe()
        )

    @property
    def percent(self) -> float:
        return 100.0 if self.total == 0 else round(100.0 * self.done / self.total, 2)

    def _describe(self) -> str:
        return f"reactbench stage `{self.stage}`: {self.done}/{self.total} shards"

    def advance(self, n: int = 1) -> None:
        from prefect.artifacts import update_progress_artifact

        self.done += n
        update_progress_artifact(artifact_id=self.id, progress=self.percent, description=self._describe())
