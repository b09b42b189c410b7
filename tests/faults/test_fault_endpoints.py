"""Issue 31.1-2 through the real ``reactbench`` executable: a model server that is down or failing
stops ``build``, ``qa`` and ``eval`` in seconds with one line naming it, and a stop signal is
visible and leaves a true state.

One fake OpenAI-compatible server (``tests/dummy_server.py``) answers the whole
relational-erasure build (``tests/pipeline_replies.py``); a test makes it fail every second call
(``fail_every``) or answer slowly, then puts it right. A dead server is a closed port. Against
every failure the command must exit non-zero within 30 s, print one line naming the URL, keep
the shards it finished, and a rerun against the working server must end with the Parquet bytes
of a run that never met a failure.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from dummy_server import DummyServer, Reply
from pipeline_replies import pipeline_reply

ROOT = Path(__file__).resolve().parents[2]
CLI = str(Path(sys.executable).with_name("reactbench"))
LIMIT_S = 30  # the bound from start to exit
EVAL = ["--model", "openai:m", "--unverified", "--modes", "standard"]


class Server:
    """The module's fake server: working, failing every second call, or slow."""

    def __init__(self) -> None:
        self.delay = 0.0
        self.hang_after: int | None = None
        self.dummy = DummyServer(self._reply, models=["m"])

    def _reply(self, body: dict) -> Reply:
        hung = self.hang_after is not None and self.dummy.chat_requests > self.hang_after
        return replace(pipeline_reply(body), delay_s=3600.0 if hung else self.delay)

    def working(self) -> None:
        self.dummy.fail_every, self.delay, self.hang_after = 0, 0.0, None

    def hanging_after(self, answered: int) -> None:
        """The endpoint check and the first ``answered`` work requests are answered; every later
        request is held without an answer (the connection stays open)."""
        self.working()
        self.hang_after, self.dummy.chat_requests = answered, 0

    def failing_every(self, n: int) -> None:
        self.working()
        self.dummy.fail_every, self.dummy.chat_requests = n, 0

    def failing_half(self) -> None:
        """Every second call from now on fails (the 2nd, 4th, ...): the same calls fail on every run."""
        self.dummy.fail_every, self.delay, self.dummy.chat_requests = 2, 0.0, 0


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    s = Server()
    s.dummy.start()
    try:
        yield s
    finally:
        s.dummy.stop()


def closed_url() -> str:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}/v1"


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    env["PYTHONUNBUFFERED"] = "1"
    return env


def write_config(path: Path, sample_dir: Path, url: str, window: int = 10, defaults: bool = False) -> Path:
    """Relational erasure only, shards of 2 run one at a time (so a failing server meets a
    finished shard first), no retries, a breaker that trips on the 3rd failure of the last 10
    (an evaluation shard asks 12 questions: its breaker watches the last 50 calls). ``defaults``:
    every transport setting (timeouts, retries, breaker, stall watch) left at its default."""
    data = {
        "run": {"seed": 0, "shard_size": 2, "workers": 1},
        "sources": {"visual_genome": str(sample_dir / "visual_genome")},
        "mine": {
            "tasks": ["relational_erasure"],
            "relational_erasure": {"n_min": 20, "theta": 0.2, "area_range": [0.003, 0.5], "images_per_pair": 2},
        },
        "mllm": {
            "backend": "openai",
            "model": "m",
            "base_url": url,
            "max_retries": 0,
            "parse_retries": 0,
            "timeout_s": 10,
            "probe_timeout_s": 5,
            "breaker_window": window,
            "breaker_failure_rate": 0.2,
        },
        "edit": {
            "qc": {"verify": {"model_checks": False}}
        },  # the fake server cannot tell an edited image from its original
        "editors": [{"name": "classical", "params": {"dilation_px": 5}}],
    }
    if defaults:
        data["mllm"] = {"backend": "openai", "model": "m", "base_url": url, "parse_retries": 0}
    path.write_text(yaml.safe_dump(data))
    return path


def cli(*args: str, timeout: float = 300) -> tuple[subprocess.CompletedProcess, float]:
    started = time.monotonic()
    proc = subprocess.run([CLI, *args], capture_output=True, text=True, env=_env(), timeout=timeout, cwd=ROOT)
    return proc, time.monotonic() - started


@pytest.fixture(scope="module")
def cfg(sample_dir: Path, server: Server, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_config(tmp_path_factory.mktemp("endpoint-cfg") / "re.yaml", sample_dir, server.dummy.base_url)


@pytest.fixture(scope="module")
def clean(cfg: Path, server: Server, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A build and an evaluation that never met a failure."""
    server.working()
    run = tmp_path_factory.mktemp("endpoint-runs") / "clean"
    built, _ = cli("build", "-c", str(cfg), "--run-dir", str(run))
    assert built.returncode == 0, built.stderr[-3000:]
    evaluated, _ = cli("eval", "--run-dir", str(run), *EVAL)
    assert evaluated.returncode == 0, evaluated.stderr[-3000:]
    assert parquet(run, "qa/questions"), "the fake server's answers gave no questions: the comparison would be empty"
    return run


def parquet(run: Path, folder: str) -> dict[str, bytes]:
    return {str(p.relative_to(run)): p.read_bytes() for p in sorted((run / folder).rglob("*.parquet"))}


def stage_parquet(run: Path, *stages: str) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    for s in stages:
        out.update(parquet(run, s))
    return out


def files(run: Path) -> dict[str, bytes]:
    return {str(p.relative_to(run)): p.read_bytes() for p in sorted(run.rglob("*")) if p.is_file()}


def one_line_naming(proc: subprocess.CompletedProcess, url: str) -> str:
    """The one stderr line that names ``url``; no traceback."""
    lines = [ln for ln in proc.stderr.splitlines() if url in ln]
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    return lines[0]


def copy_run(src: Path, dest: Path) -> Path:
    shutil.copytree(src, dest)
    return dest


def manifest(run: Path, stage: str) -> dict:
    return json.loads((run / stage / "_manifest.json").read_text())


# -- a server that is down -------------------------------------------------------------------
def test_a_closed_port_stops_build_qa_and_eval_at_once_writing_nothing(
    clean: Path, sample_dir: Path, tmp_path: Path
) -> None:
    """The issue's build ran instruct for 9 min against a closed port and exited 0 with 177
    llm_error rejects; its eval printed nothing for 7 min. Now each command checks the server
    before it writes anything."""
    dead = closed_url()
    run = tmp_path / "runs" / "fresh"
    built, took = cli(
        "build", "-c", str(write_config(tmp_path / "dead.yaml", sample_dir, dead)), "--run-dir", str(run)
    )
    assert built.returncode == 1 and took < LIMIT_S, (took, built.stderr[-3000:])
    line = one_line_naming(built, dead)
    assert "cannot connect" in line and "reactbench build" in line, line
    assert not (tmp_path / "runs").exists(), "a refused build left a run directory behind"

    copy = copy_run(clean, tmp_path / "copy")
    before = files(copy)
    for args in (
        ["qa", "--run-dir", str(copy), "--base-url", dead],
        ["eval", "--run-dir", str(copy), *EVAL[:2], "--base-url", dead, "--unverified", "--modes", "cot"],
    ):
        proc, took = cli(*args)
        assert proc.returncode == 1 and took < LIMIT_S, (args[0], took, proc.stderr[-3000:])
        assert "cannot connect" in one_line_naming(proc, dead)
        assert files(copy) == before, f"`reactbench {args[0]}` against a dead server changed the run directory"


# -- a server that fails half of its calls -------------------------------------------------------
def test_a_build_meeting_a_half_failing_server_stops_keeps_its_shards_and_resumes_to_a_clean_build(
    clean: Path, cfg: Path, server: Server, tmp_path: Path
) -> None:
    run = tmp_path / "run"
    server.failing_half()
    stopped, took = cli("build", "-c", str(cfg), "--run-dir", str(run))
    assert stopped.returncode == 1 and took < LIMIT_S, (took, stopped.stderr[-3000:])
    line = one_line_naming(stopped, server.dummy.base_url)
    assert "3 of the last" in line and "instruct: 2 of" in line and "resume with `reactbench build" in line, line
    assert len(list((run / "instruct" / "_shards").glob("*.json"))) == 2, (
        "the shards finished before the breaker tripped are kept"
    )
    assert manifest(run, "instruct")["status"] == "interrupted" and not (run / ".reactbench-lock.json").exists()
    status, _ = cli("status", "--run-dir", str(run))
    assert [ln for ln in status.stderr.splitlines() if "instruct" in ln and "interrupted" in ln], status.stderr

    server.working()
    resumed, _ = cli("build", "-c", str(cfg), "--run-dir", str(run))
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    stages = ("mine", "instruct", "edit", "qa", "review")
    assert stage_parquet(run, *stages) == stage_parquet(clean, *stages)


def test_qa_meeting_a_half_failing_server_stops_and_resumes_to_the_clean_questions(
    clean: Path, server: Server, tmp_path: Path
) -> None:
    run = copy_run(clean, tmp_path / "run")
    server.failing_half()  # every analysis asked again: neither the reuse store nor the response cache answers
    stopped, took = cli("qa", "--run-dir", str(run), "--force-items", "stage=qa", "--no-cache")
    assert stopped.returncode == 1 and took < LIMIT_S, (took, stopped.stderr[-3000:])
    line = one_line_naming(stopped, server.dummy.base_url)
    kept = len(list((run / "qa" / "_shards").glob("*.json")))  # edits refused by verification need no call
    assert kept >= 1 and f"qa: {kept} of 7 shards finished" in line, line
    assert manifest(run, "qa")["status"] == "interrupted"

    server.working()
    resumed, _ = cli("qa", "--run-dir", str(run))
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert parquet(run, "qa") == parquet(clean, "qa")


def test_eval_meeting_a_half_failing_server_stops_and_resumes_to_the_clean_answers(
    clean: Path, server: Server, sample_dir: Path, tmp_path: Path
) -> None:
    run = copy_run(clean, tmp_path / "run")
    folder = "eval/openai-m-unverified"
    wide = write_config(tmp_path / "wide.yaml", sample_dir, server.dummy.base_url, window=50)
    server.failing_half()
    stopped, took = cli("eval", "--run-dir", str(run), *EVAL, "--force", "--no-cache", "--config", str(wide))
    assert stopped.returncode == 1 and took < LIMIT_S, (took, stopped.stderr[-3000:])
    line = one_line_naming(stopped, server.dummy.base_url)
    # the 1st shard's 12 answers hold 6 failures (not more than 10 of 50); the 2nd shard meets the 11th
    assert "11 of the last " in line and f"{folder}: 1 of 8 shards finished" in line, line
    assert len(list((run / folder / "_shards").glob("*.json"))) == 1, (
        "the shard finished before the breaker tripped is kept"
    )
    assert manifest(run, folder)["status"] == "interrupted" and not (run / folder / "metrics.json").exists()

    server.working()
    resumed, _ = cli("eval", "--run-dir", str(run), *EVAL)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert parquet(run, folder) == parquet(clean, folder)
    assert (run / folder / "metrics.json").read_bytes() == (clean / folder / "metrics.json").read_bytes()


# -- stop signals ----------------------------------------------------------------------------------
def _signal_when_running(args: list[str], run: Path, stage: str, sig: int) -> tuple[subprocess.Popen, str, float]:
    """Start ``reactbench ARGS``, send ``sig`` once ``stage`` runs; (process, stderr, seconds to exit)."""
    proc = subprocess.Popen(
        [CLI, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=_env(), cwd=ROOT
    )
    try:
        path = run / stage / "_manifest.json"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            if path.exists() and json.loads(path.read_text() or "{}").get("status") == "running":
                break
            time.sleep(0.02)
        time.sleep(0.5)  # the shard's calls are in flight
        proc.send_signal(sig)
        sent = time.monotonic()
        _, err = proc.communicate(timeout=60)
        return proc, err, time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize(
    "command, sig", [("build", signal.SIGINT), ("eval", signal.SIGTERM)], ids=["build-SIGINT", "eval-SIGTERM"]
)
def test_a_stop_signal_cuts_slow_model_calls_says_what_finished_and_leaves_the_stage_interrupted(
    clean: Path, cfg: Path, server: Server, tmp_path: Path, command: str, sig: int
) -> None:
    """The issue's Ctrl-C took ~55 s to act, said nothing, and `status` kept saying `running`.
    Against a server that takes 20 s per answer, the stop now takes seconds: the calls in flight
    are abandoned, the message counts what finished and gives the resume command, the lease is
    gone and the stage's manifest says `interrupted`."""
    from tasks.engine.suggest import suggest

    if command == "build":
        run = tmp_path / "run"
        args, stage = ["build", "-c", str(cfg), "--run-dir", str(run)], "instruct"
    else:
        run = copy_run(clean, tmp_path / "run")
        args, stage = ["eval", "--run-dir", str(run), *EVAL, "--force", "--no-cache"], "eval/openai-m-unverified"
    server.working()
    server.delay = 20.0
    try:
        proc, err, took = _signal_when_running(args, run, stage, sig)
    finally:
        server.working()
    name = signal.Signals(sig).name
    assert proc.returncode == 128 + sig and took < 10, (proc.returncode, took, err[-3000:])
    said = [ln for ln in err.splitlines() if f"stopped by {name}" in ln]
    assert len(said) == 1 and "Traceback" not in err, err[-3000:]
    assert f"{stage}: 0 of " in said[0] and "abandoned, computed on resume" in said[0], said[0]
    assert f"Resume with `{suggest(*args)}`" in said[0], said[0]
    assert not (run / ".reactbench-lock.json").exists()
    assert manifest(run, stage)["status"] == "interrupted" and manifest(run, stage)["stopped_by"] == name
    if command == "build":
        status, _ = cli("status", "--run-dir", str(run))
        assert [ln for ln in status.stderr.splitlines() if "instruct" in ln and "interrupted" in ln], status.stderr


def test_status_calls_a_stage_left_running_by_a_dead_writer_interrupted(clean: Path, tmp_path: Path) -> None:
    """A writer killed with SIGKILL cannot mark its stage; ``status`` sees that nobody holds the
    lease and says ``interrupted`` instead of ``running``."""
    run = copy_run(clean, tmp_path / "run")
    m = manifest(run, "qa")
    (run / "qa" / "_manifest.json").write_text(json.dumps({**m, "status": "running"}))
    status, _ = cli("status", "--run-dir", str(run))
    rows = {
        ln.split("│")[1].strip(): ln.split("│")[2].strip() for ln in status.stderr.splitlines() if ln.startswith("│")
    }
    assert rows["qa"] == "interrupted" and rows["edit"] == "complete", status.stderr


# -- issue 42.1-2: a hung server and one failing every second request, with the default settings ----
def test_a_hung_server_stops_a_build_with_the_default_settings_within_a_minute(
    server: Server, sample_dir: Path, tmp_path: Path
) -> None:
    """The issue's server accepts connections and answers the endpoint check, then holds every
    chat request: with the default settings a build sat at 0 of 35 instruct shards after 240 s.
    The stall watch (``mllm.stall_s``) now stops it within a minute, naming the URL, keeping
    the shards that finished (here the first two) and leaving the stage ``interrupted``."""
    cfg = write_config(tmp_path / "defaults.yaml", sample_dir, server.dummy.base_url, defaults=True)
    run = tmp_path / "run"
    server.hanging_after(4)  # two shards of two instructions each are answered
    try:
        stopped, took = cli("build", "-c", str(cfg), "--run-dir", str(run), timeout=90)
    finally:
        server.working()
    assert stopped.returncode == 1 and took < 60, (took, stopped.stderr[-3000:])
    line = one_line_naming(stopped, server.dummy.base_url)
    assert "answered none of the" in line and "mllm.stall_s" in line and "instruct: 2 of 7" in line, line
    assert len(list((run / "instruct" / "_shards").glob("*.json"))) == 2
    assert manifest(run, "instruct")["status"] == "interrupted" and not (run / ".reactbench-lock.json").exists()


def test_retries_do_not_hide_a_server_failing_every_second_request_from_build_or_eval(
    clean: Path, server: Server, sample_dir: Path, tmp_path: Path
) -> None:
    """With the default 5 retries every call still got its answer: the build took 113 s instead
    of 14 s and exited 0 without a word, and an evaluation that takes 7 s was still running at
    300 s. Failed attempts now count toward the breaker even when their retry succeeds."""
    cfg = write_config(tmp_path / "defaults.yaml", sample_dir, server.dummy.base_url, defaults=True)
    server.failing_every(2)
    try:
        built, took_build = cli("build", "-c", str(cfg), "--run-dir", str(tmp_path / "run"), timeout=120)
        run = copy_run(clean, tmp_path / "copy")
        server.failing_every(2)
        evaluated, took_eval = cli(
            "eval", "--run-dir", str(run), *EVAL, "--force", "--no-cache", "--config", str(cfg), timeout=120
        )
    finally:
        server.working()
    for proc, took in ((built, took_build), (evaluated, took_eval)):  # not minutes (the build's backoff sleeps count)
        assert proc.returncode == 1 and took < 60, (took, proc.stderr[-3000:])
        line = one_line_naming(proc, server.dummy.base_url)
        assert "11 of the last" in line and "requests failed" in line, line
    calls = manifest(run, "eval/openai-m-unverified")["model_calls"]
    assert [c["url"] for c in calls] == [server.dummy.base_url] and calls[0]["error_rate"] >= 0.4, calls


def test_an_eval_answered_only_through_retries_says_so_and_exits_7(
    clean: Path, server: Server, sample_dir: Path, tmp_path: Path
) -> None:
    """A server failing one request in eight stays under the breaker; the evaluation completes
    with every answer, but it ends with a line giving the error rate and exits 7, and the
    stage's manifest records the requests, the failures and the retries."""
    from prompts.clients.call_stats import RETRIED_EXIT

    cfg = write_config(tmp_path / "defaults.yaml", sample_dir, server.dummy.base_url, defaults=True)
    run = copy_run(clean, tmp_path / "copy")
    server.failing_every(8)
    try:
        done, _ = cli("eval", "--run-dir", str(run), *EVAL, "--force", "--no-cache", "--config", str(cfg))
    finally:
        server.working()
    assert done.returncode == RETRIED_EXIT, done.stderr[-3000:]
    line = one_line_naming(done, server.dummy.base_url)
    assert re.search(r"requests failed \(1[12]\.\d %\)", line) and "more than mllm.max_error_rate 0.05" in line, line
    folder = "eval/openai-m-unverified"
    assert manifest(run, folder)["status"] == "complete"
    (calls,) = manifest(run, folder)["model_calls"]
    assert calls["failed_requests"] == calls["retried"] == calls["requests"] // 8 > 0 and calls["failed_calls"] == 0
    assert 0.11 <= calls["error_rate"] <= 0.125 and calls["answered_after_retry"] > 0, calls
    assert parquet(run, folder) == parquet(clean, folder), "the retried answers are the clean ones"
