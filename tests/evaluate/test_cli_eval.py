"""The ``export``, ``eval`` and ``report`` commands through Typer, on a hand-made run (and at a
narrow terminal width: tables keep their labels, errors stay on one line)."""

from __future__ import annotations

import re

import typer
from eval_helpers import write_run
from typer.testing import CliRunner

from flows.cli_eval import register
from storage.parquet_io import ArtifactReader


def _flat(text: str) -> str:
    return " ".join(text.split())  # rich wraps long lines


def _app() -> typer.Typer:
    app = typer.Typer()

    @app.callback()
    def main() -> None:  # a group, like the real CLI
        pass

    register(app)
    return app


def test_eval_report_export_commands(tmp_path):
    run = write_run(tmp_path / "run", verified=False)
    (tmp_path / "run" / "config.yaml").write_text("run:\n  shard_size: 16\n  workers: 1\n")
    app, cli = _app(), CliRunner()
    res = cli.invoke(
        app,
        [
            "eval",
            "--run-dir",
            str(tmp_path / "run"),
            "--model",
            "rules:rules-v1",
            "--unverified",
            "--modes",
            "standard",
        ],
    )
    assert res.exit_code == 0, res.output
    assert "React-Score" in res.output and run.exists("eval/rules-rules-v1-unverified/metrics.json")
    res = cli.invoke(app, ["report", "eval", "--run-dir", str(tmp_path / "run")])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "run" / "reports" / "eval.html").exists()
    res = cli.invoke(
        app,
        ["export", "--run-dir", str(tmp_path / "run"), "--out", str(tmp_path / "rel"), "--unverified", "--vlmevalkit"],
    )
    assert res.exit_code == 0, res.output
    assert (tmp_path / "rel" / "vlmevalkit" / "reactbench_MCQ_circular.tsv").exists() and not (
        tmp_path / "rel" / "lmms_eval"
    ).exists()
    # no terminal here: no bars, but one summary line per long step, each with its time
    n = ArtifactReader(run, "qa/questions", "questions").count()
    lines = [line for line in res.output.splitlines() if line.startswith("export: ")]
    assert [line.split()[1] for line in lines] == ["read", "wrote", "sealed"], res.output
    assert lines[1].startswith(f"export: wrote {n} questions (") and all(
        re.search(r" in \d+\.\d s$", line) for line in lines
    ), lines
    assert "━" not in res.output  # no bar was drawn into the log


def test_clear_errors(tmp_path):
    write_run(tmp_path / "run", verified=False)
    app, cli = _app(), CliRunner()
    res = cli.invoke(app, ["eval", "--run-dir", str(tmp_path / "run"), "--model", "rules:rules-v1"])
    assert res.exit_code == 2 and "--unverified" in _flat(res.output)
    res = cli.invoke(app, ["report", "eval", "--run-dir", str(tmp_path / "run")])
    assert res.exit_code == 2 and "no evaluation found" in _flat(res.output)
    res = cli.invoke(app, ["report", "nonsense", "--run-dir", str(tmp_path / "run")])
    assert res.exit_code == 2 and "eval, ablation, build" in _flat(res.output)


def test_eval_at_30_columns_keeps_table_labels_and_unwrapped_errors(tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "30")
    run = write_run(tmp_path / "run", verified=False)
    (tmp_path / "run" / "config.yaml").write_text("run:\n  shard_size: 16\n  workers: 1\n")
    cli = CliRunner()
    res = cli.invoke(
        _app(),
        [
            "eval",
            "--run-dir",
            str(tmp_path / "run"),
            "--model",
            "rules:rules-v1",
            "--unverified",
            "--modes",
            "standard",
        ],
    )
    assert res.exit_code == 0, res.output
    assert "React-Score" in res.output and run.exists("eval/rules-rules-v1-unverified/metrics.json")
    res = cli.invoke(_app(), ["eval", "--run-dir", str(tmp_path / "run"), "--model", "rules:rules-v1"])
    assert res.exit_code == 2
    lines = [ln for ln in res.output.splitlines() if "--unverified" in ln]
    assert lines and lines[0].startswith("error:"), res.output  # one line, however narrow the terminal


def test_eval_leaves_one_summary_line_per_step_in_a_log(tmp_path):
    """Output that is not a terminal (a log, CI) gets no bar, and one line per step saying what was done."""
    import re

    import pyarrow.parquet as pq

    run = write_run(tmp_path / "run", verified=False)
    (tmp_path / "run" / "config.yaml").write_text("run:\n  shard_size: 4\n  workers: 1\n")
    args = [
        "eval",
        "--run-dir",
        str(tmp_path / "run"),
        "--model",
        "rules:rules-v1",
        "--unverified",
        "--modes",
        "standard",
    ]
    first = CliRunner().invoke(_app(), args)
    assert first.exit_code == 0, first.output
    answers = run.sub("eval/rules-rules-v1-unverified").path("answers")
    n = pq.read_table(answers).num_rows
    step = re.search(
        r"^eval rules:rules-v1: ([\d,]+) answers in [\d.]+ s \((\d+) of (\d+) shards run; ([\d,]+) asked, 0 reused\)$",
        first.output,
        re.M,
    )
    assert step, first.output
    assert (
        int(step.group(1).replace(",", "")) == n == int(step.group(4).replace(",", ""))
        and step.group(2) == step.group(3)
        and int(step.group(3)) > 1
    )
    assert re.search(
        rf"^metrics: {n:,} answers in [\d.]+ s \(eval/rules-rules-v1-unverified/metrics.json\)$", first.output, re.M
    ), first.output
    assert [ln for ln in first.output.splitlines() if "rules:rules-v1" in ln and "answers" in ln] == [
        step.group(0)
    ]  # no bar left behind
    assert "\x1b" not in first.output  # no cursor movement
    again = CliRunner().invoke(_app(), args)
    assert re.search(
        rf"^eval rules:rules-v1: {n:,} answers in [\d.]+ s \(0 of {step.group(3)} shards run; 0 asked, 0 reused\)$",
        again.output,
        re.M,
    ), again.output
