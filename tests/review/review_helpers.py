"""Build review test data with the storage API: EDITS and QUESTIONS rows, images in the store,
and completed upstream manifests, so the review stage runs without the other stages."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
from server_wait import wait_until_ready

from storage.fs import RunFS
from storage.hashing import canonical_json, stable_id
from storage.image_store import ImageStore
from storage.schemas import EDITS, QUESTIONS
from storage.stage_store import ShardResult, StageStore

TASKS = ("relational_erasure", "counterfactual_attribute")
EDITORS = ("classical", "qwen_image_edit")


def _image(seed: int, size: int = 48) -> np.ndarray:
    rng = np.random.default_rng(seed)
    img = np.full((size, size, 3), 200, np.uint8)
    img[8:40, 8:40] = rng.integers(0, 255, 3, dtype=np.uint8)
    img[20:30, 20:30] = rng.integers(0, 255, 3, dtype=np.uint8)
    return img


def edit_rows(
    run: RunFS, n: int, *, auto_rejected: int = 0, missing_image: int = 0, instruction: str | None = None
) -> list[dict[str, Any]]:
    """``n`` edits (ok), plus some auto-rejected ones and some whose edited image is not in the store."""
    store = ImageStore(run)
    rows = []
    for i in range(n + auto_rejected + missing_image):
        task = TASKS[i % len(TASKS)]
        editor = EDITORS[(i // len(TASKS)) % len(EDITORS)]
        orig = _image(i)
        edited = orig.copy()
        edited[20:30, 20:30] = 200
        original_path = store.put_array(orig)
        edited_path = store.put_array(edited)
        if i >= n + auto_rejected:
            edited_path = "images/00/" + "0" * 64 + ".png"  # a store path that does not exist
        instr_id = stable_id("instr", i)
        rows.append(
            {
                "id": stable_id("edit", i, editor),
                "instruction_id": instr_id,
                "task": task,
                "variant": "targeted",
                "source": "visual_genome",
                "image_id": str(1000 + i),
                "image_path": f"/data/vg/{1000 + i}.jpg",
                "width": 48,
                "height": 48,
                "candidate_id": stable_id("cand", i),
                "candidate_json": canonical_json({"i": i}),
                "instruction": instruction
                if instruction is not None
                else f"Remove the cup number {i} from the table.",
                "edit_type": "remove" if task == "relational_erasure" else "attribute",
                "target_name": "cup",
                "target_box": [20.0, 20.0, 10.0, 10.0],
                "instruction_fields_json": "{}",
                "editor": editor,
                "editor_params_json": "{}",
                "seed": 0,
                "status": "auto_rejected" if n <= i < n + auto_rejected else "ok",
                "original_image": original_path,
                "edited_image": edited_path,
                "mask_image": None,
                "qc_json": None,
                "edit_seconds": 0.1,
            }
        )
    return rows


def question_rows(edits: list[dict[str, Any]], *, skip: int = 0, text: str | None = None) -> list[dict[str, Any]]:
    """Three questions (YN, MC, SA) per edit; the last ``skip`` edits get none."""
    rows = []
    for e in edits[: len(edits) - skip] if skip else edits:
        common = {
            "edit_id": e["id"],
            "editor": e["editor"],
            "task": e["task"],
            "variant": e["variant"],
            "question_set": "main",
            "rotation": 0,
            "rubric_json": None,
            "prior_options": None,
            "images": [e["edited_image"]],
            "image_role": "edited",
        }
        rows += [
            {
                **common,
                "id": stable_id(e["id"], "Q1"),
                "qid": "Q1",
                "qtype": "YN",
                "dimension": "existence",
                "text": text or "Is there a cup on the table?",
                "options": None,
                "gold": "No",
            },
            {
                **common,
                "id": stable_id(e["id"], "Q2"),
                "qid": "Q2",
                "qtype": "MC",
                "dimension": "relation",
                "text": "What is on the table?",
                "options": ["a cup", "nothing", "a plate", "a bowl"],
                "gold": "B",
            },
            {
                **common,
                "id": stable_id(e["id"], "Q3"),
                "qid": "Q3",
                "qtype": "SA",
                "dimension": "description",
                "text": "Describe the table.",
                "options": None,
                "gold": "An empty table.",
            },
        ]
    return rows


def write_stage(run: RunFS, stage: str, artifact: str, schema: Any, rows: list[dict[str, Any]]) -> None:
    """Write one finished shard and a complete manifest, as the real upstream stage would."""
    store = StageStore(run, stage, {artifact: schema})
    store.write_shard(0, "test", ShardResult(outputs={artifact: rows}, rows_in=len(rows)))
    store.write_manifest(
        {"stage": stage, "status": "complete", "key": "test", "output_fingerprint": store.output_fingerprint()}
    )


def make_run(root: Path, n: int = 6, **kw: Any) -> tuple[RunFS, list[dict[str, Any]], list[dict[str, Any]]]:
    run = RunFS.open(str(root))
    run.makedirs()
    skip = kw.pop("skip_questions", 0)
    qtext = kw.pop("question_text", None)
    edits = edit_rows(run, n, **kw)
    questions = question_rows(edits, skip=skip, text=qtext)
    write_stage(run, "edit", "edits", EDITS, edits)
    write_stage(run, "qa", "questions", QUESTIONS, questions)
    return run, edits, questions


def context(run: RunFS, **review: Any) -> Any:
    from flows.config import config_from_dict
    from tasks.engine.base import RunContext

    cfg = config_from_dict({"run": {"shard_size": 4, "workers": 2}, "review": review})
    return RunContext(run=run, config=cfg)


def fill_queue(run: RunFS, **review: Any) -> Any:
    from tasks.engine.runner import run_stage
    from tasks.review import ReviewStage

    return run_stage(ReviewStage(), context(run, **review))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


ROOT = Path(__file__).resolve().parents[2]


def serve_process(run_dir: Path, port: int, *options: str) -> subprocess.Popen:
    """``reactbench review serve`` for ``run_dir`` as its own process on 127.0.0.1:``port``
    (extra CLI ``options``, e.g. ``--db URL``), once it answers; its output goes to
    ``serve-<port>.log`` beside the run directory."""
    import httpx

    log_path = run_dir.parent / f"serve-{port}.log"
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "flows.cli_review",
                "serve",
                "--run-dir",
                str(run_dir),
                "--port",
                str(port),
                *options,
            ],
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
    wait_until_ready(
        proc,
        lambda: httpx.get(f"http://127.0.0.1:{port}/login", timeout=5) is not None,
        "review server",
        lambda: log_path.read_text(errors="replace")[-2000:],
        90,
        poll_s=0.1,
        error=AssertionError,
    )
    return proc


def http_login(client: Any, secret: str) -> str:
    """Log ``client`` (an httpx client on the app) in with ``secret``; returns the session's
    CSRF token for JSON posts."""
    import re

    tok = re.search(r'name="csrf_token" value="([^"]+)"', client.get("/login").text).group(1)
    r = client.post("/login", data={"secret": secret, "csrf_token": tok})
    if r.status_code != 303:
        raise AssertionError(f"login refused: {r.status_code} {r.text[:200]}")
    return re.search(r'data-csrf="([^"]+)"', client.get("/review/edit").text).group(1)


def concurrent_wrong_logins(bases: list[str], n: int = 30) -> dict[int, int]:
    """``n`` logins with a wrong secret released at once, spread over the servers ``bases``
    (round robin); returns how many got each status code."""
    import re
    from collections import Counter

    import httpx

    codes: list[int] = []
    start = threading.Barrier(n)

    def one(i: int) -> None:
        with httpx.Client(base_url=bases[i % len(bases)], timeout=60) as c:
            tok = re.search(r'name="csrf_token" value="([^"]+)"', c.get("/login").text).group(1)
            start.wait()
            codes.append(c.post("/login", data={"secret": "rbk_wrong", "csrf_token": tok}).status_code)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    [t.start() for t in threads]
    [t.join(120) for t in threads]
    return dict(Counter(codes))


class ServerThread:
    """Uvicorn serving an app on 127.0.0.1 in a background thread (stopped by ``stop``)."""

    def __init__(self, app: Any):
        import uvicorn

        self.port = free_port()
        self.server = uvicorn.Server(
            uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning", lifespan="off")
        )
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ServerThread:
        self.thread.start()
        deadline = time.time() + 20
        while not self.server.started:
            if time.time() > deadline:
                raise RuntimeError("uvicorn did not start within 20 s")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def state_from_events(queue: Any) -> dict[str, tuple[str, int, int]]:
    """Each item's (outcome, n current decisions, available) recomputed from the event log
    alone (decisions, retractions, adjudications), independently of the queue's cache."""
    from collections import defaultdict

    items = {r.id: r for r in queue.items()}
    current: dict[str, dict[int, str]] = defaultdict(dict)
    adjudicated: dict[str, str] = {}
    for e in queue.events(kinds=("decision", "retract", "adjudication")):
        if e.kind == "decision":
            current[e.item_id][e.annotator_id] = e.verdict
        elif e.kind == "retract":
            current[e.item_id].pop(e.annotator_id, None)
        else:
            adjudicated[e.item_id] = e.verdict
    outcome: dict[str, tuple[str, int]] = {}
    for i in items:
        decs = current.get(i, {})
        if i in adjudicated:
            out = adjudicated[i]
        elif len(decs) >= queue.k:
            out = next(iter(set(decs.values()))) if len(set(decs.values())) == 1 else "disputed"
        else:
            out = "pending"
        outcome[i] = (out, len(decs))
    return {
        i: (
            out,
            n,
            int(
                out == "pending" and (it.parent_id is None or outcome.get(it.parent_id, ("pending", 0))[0] == "accept")
            ),
        )
        for i, it in items.items()
        for out, n in [outcome[i]]
    }


def assert_state_matches_events(queue: Any) -> None:
    """The derived item-state cache equals the state recomputed from the events, and mirrors
    each item's latest resolution event."""
    cached = queue.item_states()
    assert cached == state_from_events(queue)
    latest = queue.resolutions()
    assert {i: (o, n) for i, (o, n, _) in cached.items()} == {i: latest.get(i, ("pending", 0)) for i in cached}
