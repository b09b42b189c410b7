"""A long step's progress (flows/cli_output.StepBars): a bar with the time left on a terminal,
cleared when the step ends; in a redirected log no bar, only the step's one summary line."""

from __future__ import annotations

import io
import re

from rich.console import Console

from flows.cli_output import StepBars


def test_a_terminal_sees_a_bar_with_the_time_left_then_the_summary() -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=120)
    with StepBars("eval rules:rules-v1", console) as steps:
        progress = steps.step("answer")
        progress(0, 40)
        progress(13, 40)
        steps.bars.refresh()
        during = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out.getvalue())
        steps("answer", 40, 40, summary="58,208 answers", details="12 of 12 shards run")
    assert "eval rules:rules-v1: answer" in during and "32%" in during, during
    assert re.search(r"\d+:\d\d:\d\d|-:--:--", during), during  # the time-left column
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out.getvalue())
    assert re.search(r"eval rules:rules-v1: 58,208 answers in \d+\.\d s \(12 of 12 shards run\)", plain), plain


def test_a_redirected_log_gets_only_the_summary_lines() -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=False, width=120)
    with StepBars("metrics", console) as steps:
        progress = steps.step("metrics")
        for done in range(0, 41):
            progress(done, 40)
        steps("metrics", 40, 40, summary="10 answers", details="eval/x/metrics.json")
    assert re.fullmatch(r"metrics: 10 answers in \d+\.\d s \(eval/x/metrics\.json\)\n", out.getvalue()), repr(
        out.getvalue()
    )
