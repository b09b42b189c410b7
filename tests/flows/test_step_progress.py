"""A long step's progress (flows/cli_output.py): a bar with the time left on a terminal, nothing
from the bar in a redirected log, where the caller's one summary line is what remains."""

from __future__ import annotations

import io
import re

from rich.console import Console

from flows.cli_output import step_progress, step_summary


def test_a_terminal_sees_a_bar_with_the_time_left_then_nothing_of_it() -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=120)
    with step_progress(console, "eval rules:rules-v1", "shards") as progress:
        progress(0, 40)
        progress(13, 40)
    text = out.getvalue()
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text)
    last = plain.replace("\r", "\n").strip().splitlines()[-1]
    assert "eval rules:rules-v1" in last and "13/40 shards" in last and " left " in last, plain
    assert text.endswith("\x1b[1A\x1b[2K"), repr(text[-40:])  # cleared when the step ended


def test_a_redirected_log_gets_no_bar() -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=False, width=120)
    with step_progress(console, "eval rules:rules-v1", "shards") as progress:
        for done in range(0, 41):
            progress(done, 40)
    assert out.getvalue() == ""


def test_the_summary_line() -> None:
    assert step_summary("eval rules:rules-v1", "58,208 answers", 41.31, "12 of 12 shards run") == "eval rules:rules-v1: 58,208 answers in 41.3 s (12 of 12 shards run)"
    assert step_summary("metrics", "10 answers", 0.04) == "metrics: 10 answers in 0.0 s"
