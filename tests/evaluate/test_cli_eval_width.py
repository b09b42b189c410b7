"""The eval CLI at a narrow terminal width: its table keeps its labels, its errors stay on one line."""

from __future__ import annotations

import typer
from eval_helpers import write_run
from typer.testing import CliRunner

from flows.cli_eval import register


def _app() -> typer.Typer:
    app = typer.Typer()

    @app.callback()
    def main() -> None:  # a group, like the real CLI
        pass

    register(app)
    return app


def test_eval_at_30_columns_keeps_table_labels_and_unwrapped_errors(tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "30")
    run = write_run(tmp_path / "run", verified=False)
    (tmp_path / "run" / "config.yaml").write_text("run:\n  shard_size: 16\n  workers: 1\n")
    cli = CliRunner()
    res = cli.invoke(_app(), ["eval", "--run-dir", str(tmp_path / "run"), "--model", "rules:rules-v1", "--unverified", "--modes", "standard"])
    assert res.exit_code == 0, res.output
    assert "React-Score" in res.output and run.exists("eval/rules-rules-v1-unverified/metrics.json")
    res = cli.invoke(_app(), ["eval", "--run-dir", str(tmp_path / "run"), "--model", "rules:rules-v1"])
    assert res.exit_code == 2
    lines = [ln for ln in res.output.splitlines() if "--unverified" in ln]
    assert lines and lines[0].startswith("error:"), res.output  # one line, however narrow the terminal
