"""One build chain (flows/chain.py) for local and Prefect runs: the same steps in the same order."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest


def _record_steps(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record each step of a build where it happens: the preflight gate, each stage's plan, each
    report written. Everything runs in this process (Prefect's subflows and thread tasks too)."""
    import tasks.release.report.write as report_write
    import tasks.tools.preflight as preflight
    from tasks.stages.instruct import InstructStage
    from tasks.stages.mine import MineStage

    steps: list[str] = []
    real_gate, real_report = preflight.require_preflight, report_write.write_report

    def gate(cfg: Any, stages: Any, run_dir: Any = None) -> Any:
        steps.append("preflight")
        return real_gate(cfg, stages, run_dir)

    def report(kind: str, run: Any, *args: Any, **kwargs: Any) -> str:
        steps.append(f"report {kind}")
        return real_report(kind, run, *args, **kwargs)

    monkeypatch.setattr(preflight, "require_preflight", gate)
    monkeypatch.setattr(report_write, "write_report", report)
    for cls in (MineStage, InstructStage):
        real_plan = cls.plan
        monkeypatch.setattr(
            cls, "plan", lambda self, ctx, _plan=real_plan: (steps.append(self.name), _plan(self, ctx))[1]
        )
    return steps


def test_local_and_prefect_builds_run_the_same_chain(
    tmp_path: Path, prefect_api: Any, sample_config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the CLI's own path (``run_stages_cli``, as ``reactbench build`` runs it): the preflight
    once (it ran twice in Prefect builds), the stages in order, and the build report in both modes
    (only Prefect builds wrote it)."""
    from flows.cli import run_stages_cli

    steps = _record_steps(monkeypatch)
    seen: dict[str, list[str]] = {}
    for mode in ("local", "prefect"):
        run_stages_cli(["instruct", "mine"], sample_config, str(tmp_path / mode), force=False, orchestrator=mode)
        seen[mode], steps[:] = list(steps), []
    assert seen["local"] == ["preflight", "mine", "instruct", "report build"], seen
    assert seen["prefect"] == seen["local"], seen
    for mode in seen:
        report = tmp_path / mode / "reports" / "build.html"
        assert report.stat().st_size > 0 and "instruct" in report.read_text(encoding="utf-8"), mode
    summary = prefect_api.artifacts("reactbench-build-summary")[0]["data"]
    assert "reports/build.html" in summary and str(tmp_path / "prefect") in summary


def test_a_failing_preflight_stops_both_modes_before_mine(
    tmp_path: Path,
    prefect_api: Any,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    sample_dir: Path,
) -> None:
    """The gate is the chain's first step in both modes: it runs once, nothing is written, and the
    CLI prints the preflight table (the exception keeps its report through the Prefect flow)."""
    import typer
    import yaml

    from flows.cli import run_stages_cli

    bad = tmp_path / "bad.yaml"
    bad.write_text(
        yaml.safe_dump(
            {
                "editors": [
                    {"name": "qwen-image-edit", "params": {"lora": str(tmp_path / "no-such-lora.safetensors")}}
                ],
                # real sources: a build checks them (flows/config_checks.py) before its preflight
                "sources": {"visual_genome": str(sample_dir / "visual_genome"), "fsc147": str(sample_dir / "fsc147")},
            }
        )
    )
    steps = _record_steps(monkeypatch)
    for mode in ("local", "prefect"):
        capsys.readouterr()
        with pytest.raises(typer.Exit) as stop:
            run_stages_cli(None, bad, str(tmp_path / mode), force=False, orchestrator=mode)
        err = capsys.readouterr().err
        assert stop.value.exit_code == 1 and steps == ["preflight"], (mode, steps)
        assert (
            "reactbench preflight" in err and "preflight failed, nothing was run" in err and "no-such-lora" in err
        ), (mode, err[-2000:])
        assert not (tmp_path / mode / "mine").exists()
        steps[:] = []
