"""Load test of the review app: simulated annotators doing next + decide over HTTP.

Starts ``reactbench review serve`` (as ``python -m flows.cli_review serve``) on 127.0.0.1 over
a fresh run with a filled SQLite queue, then runs rounds against it one after the other:
1 annotator and N annotators with the realistic think time (``--think-ms``, 500 ms), N
annotators with a short think time (``--short-think-ms``, 100 ms) and N annotators with no
think time at all (saturation reference). Each annotator logs in and loops: ``GET /api/next``
then ``POST`` a decision, pausing the think time in between. Reports p50 / p95 latency of
those requests and throughput side by side, and checks that no item was leased to two
annotators and that every acknowledged decision is in the event log.

The last line is one JSON object with keys ``annotators``, ``requests``, ``p50_ms``,
``p95_ms``, ``double_leases``, ``lost_decisions``; its latency figures are those of the main
configuration, N annotators with the SHORT think time (100 ms, the harder of the two;
``--json-round realistic`` reports the 500 ms round instead). Double leases and lost
decisions are counted over all rounds.

    .venv/bin/python benchmarks/review_load.py [--annotators 20] [--items 8000] [--think-ms 500] [--short-think-ms 100]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

import httpx
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from storage.fs import RunFS  # noqa: E402
from storage.hashing import stable_id  # noqa: E402
from storage.image_store import ImageStore  # noqa: E402
from tasks.review.accounts import add_user  # noqa: E402
from tasks.review.queue import ReviewQueue  # noqa: E402
from tasks.review.stage import default_db_url, queue_rows  # noqa: E402


def build_queue(run_dir: Path, n_items: int) -> str:
    """A run with ``n_items`` edits in the queue (each with 3 questions); returns the DB URL."""
    run = RunFS.open(str(run_dir))
    store = ImageStore(run)
    rows = []
    for i in range(n_items):
        img = np.full((64, 64, 3), (i * 37) % 255, np.uint8)
        img[10:30, 10:30] = (i * 11) % 255
        orig = store.put_array(img)
        img[10:30, 10:30] = 0
        edited = store.put_array(img)
        edit = {
            "id": stable_id("bench", i), "task": "relational_erasure", "variant": "targeted", "source": "visual_genome",
            "image_id": str(i), "width": 64, "height": 64, "instruction": f"Remove object {i}.", "edit_type": "remove",
            "target_name": "cup", "target_box": [10.0, 10.0, 20.0, 20.0], "original_image": orig, "edited_image": edited,
            "mask_image": None, "editor": ("classical", "qwen_image_edit")[i % 2],
        }
        questions = [
            {"id": stable_id("bq", i, j), "question_set": "main", "qid": f"Q{j + 1}", "qtype": "YN", "dimension": None,
             "text": f"Is there a cup ({j})?", "options": None, "gold": "No", "images": [edited], "image_role": "edited"}
            for j in range(3)
        ]
        rows.extend(queue_rows(edit, questions))
    url = default_db_url(run)
    q = ReviewQueue.open(url)
    q.enqueue(rows)
    q.close()
    return url


class Annotator(threading.Thread):
    def __init__(self, base: str, secret: str, name: str, stop_at: float, think_s: float, results: dict):
        super().__init__(daemon=True)
        self.base, self.secret, self.name, self.stop_at, self.think_s, self.results = base, secret, name, stop_at, think_s, results

    def run(self) -> None:
        lat, handed, acked, errors = [], [], [], []
        try:
            with httpx.Client(base_url=self.base, timeout=30) as c:
                tok = re.search(r'name="csrf_token" value="([^"]+)"', c.get("/login").text).group(1)
                c.post("/login", data={"secret": self.secret, "csrf_token": tok})
                csrf = re.search(r'data-csrf="([^"]+)"', c.get("/review/qa").text).group(1)
                while time.perf_counter() < self.stop_at:
                    t0 = time.perf_counter()
                    r = c.get("/api/next", params={"stage": "edit"})
                    lat.append(time.perf_counter() - t0)
                    items = r.json()["items"]
                    if not items:
                        break
                    handed.append(items[0]["id"])
                    if self.think_s:
                        time.sleep(self.think_s)
                    t0 = time.perf_counter()
                    r = c.post(f"/api/items/{items[0]['id']}/decision", json={"verdict": "accept"}, headers={"X-CSRF-Token": csrf})
                    lat.append(time.perf_counter() - t0)
                    if r.status_code == 200:
                        acked.append(r.json()["event_id"])
                    else:
                        errors.append(f"{r.status_code} {r.text[:200]}")
        except Exception as exc:  # reported, not hidden
            errors.append(repr(exc))
        self.results[self.name] = {"lat": lat, "handed": handed, "acked": acked, "errors": errors}


def run_round(base: str, secrets: list[tuple[str, str]], seconds: float, think_s: float) -> dict:
    results: dict = {}
    stop_at = time.perf_counter() + seconds
    threads = [Annotator(base, s, n, stop_at, think_s, results) for n, s in secrets]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join(seconds + 60)
    wall = time.perf_counter() - t0
    lat = sorted(x for r in results.values() for x in r["lat"])
    return {
        "results": results,
        "requests": len(lat),
        "p50_ms": 1000 * statistics.median(lat) if lat else float("nan"),
        "p95_ms": 1000 * lat[min(len(lat) - 1, int(0.95 * len(lat)))] if lat else float("nan"),
        "decisions_per_s": sum(len(r["acked"]) for r in results.values()) / wall,
        "errors": [e for r in results.values() for e in r["errors"]],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--annotators", type=int, default=20)
    ap.add_argument("--items", type=int, default=8000, help="queue size; enough that no round runs out of items")
    ap.add_argument("--seconds", type=float, default=15.0, help="duration of each round")
    ap.add_argument("--think-ms", type=float, default=500.0, help="realistic pause between next and decide (human reviewers take 5-20 s)")
    ap.add_argument("--short-think-ms", type=float, default=100.0, help="short pause for the main (stress) configuration")
    ap.add_argument("--json-round", choices=("short", "realistic"), default="short", help="which N-annotator round the JSON line reports")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="rb-review-load-") as tmp:
        run_dir = Path(tmp) / "run"
        run_dir.mkdir()
        url = build_queue(run_dir, args.items)
        queue = ReviewQueue.open(url)
        secrets = [(f"ann{i:02d}", add_user(queue.engine, f"ann{i:02d}", "annotator")) for i in range(args.annotators + 1)]
        port = _free_port()
        server = subprocess.Popen(
            [sys.executable, "-m", "flows.cli_review", "serve", "--run-dir", str(run_dir), "--port", str(port)],
            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )
        base = f"http://127.0.0.1:{port}"
        try:
            _wait(base, server)
            single = run_round(base, secrets[:1], args.seconds / 2, args.think_ms / 1000)
            many = run_round(base, secrets[1:], args.seconds, args.think_ms / 1000)
            short = run_round(base, secrets[1:], args.seconds, args.short_think_ms / 1000)
            stress = run_round(base, secrets[1:], args.seconds / 2, 0.0)  # no think time: saturation, for reference
        finally:
            server.terminate()
            server.wait(10)

        handed = defaultdict(set)
        acked = []
        for rnd in (single, many, short, stress):
            for name, r in rnd["results"].items():
                for item in r["handed"]:
                    handed[item].add(name)
                acked.extend(r["acked"])
        double_leases = sum(1 for who in handed.values() if len(who) > 1)
        logged = {e.id for e in queue.events(kinds=("decision",))}
        lost = sum(1 for a in acked if a not in logged)
        queue.close()

    main_round, main_think = (short, args.short_think_ms) if args.json_round == "short" else (many, args.think_ms)
    print(f"items {args.items}, SQLite WAL, one uvicorn process, clients in this process; latency of GET /api/next and POST decision")
    print(f"{'annotators':>10} {'think ms':>9} {'requests':>9} {'p50 ms':>8} {'p95 ms':>8} {'decisions/s':>12}")
    rounds = (
        ("1", args.think_ms, single, ""),
        (str(args.annotators), args.think_ms, many, "realistic" + (" (JSON line)" if main_round is many else "")),
        (str(args.annotators), args.short_think_ms, short, "short" + (" (JSON line)" if main_round is short else "")),
        (str(args.annotators), 0.0, stress, "none: saturation reference, back-to-back requests"),
    )
    for label, think, rnd, note in rounds:
        print(f"{label:>10} {think:>9.0f} {rnd['requests']:>9} {rnd['p50_ms']:>8.1f} {rnd['p95_ms']:>8.1f} {rnd['decisions_per_s']:>12.1f}  {note}")
    print(f"p95 ratio {args.annotators} vs 1 annotator ({args.think_ms:.0f} ms think): {many['p95_ms'] / single['p95_ms']:.2f}x; "
          f"throughput ratio: {many['decisions_per_s'] / single['decisions_per_s']:.2f}x")
    errors = single["errors"] + many["errors"] + short["errors"] + stress["errors"]
    print(f"double leases: {double_leases}; lost decisions: {lost}; errors: {len(errors)} (all rounds)")
    for e in errors[:5]:
        print("  error:", e)
    for think, rnd in ((args.think_ms, many), (args.short_think_ms, short)):
        print(f"p95 <= 50 ms at {args.annotators} annotators, {think:.0f} ms think time: {'yes' if rnd['p95_ms'] <= 50 else 'NO'} ({rnd['p95_ms']:.1f} ms)")
    print(f"JSON line: {args.annotators} annotators with {main_think:.0f} ms think time (double leases / lost decisions: all rounds)")
    print(json.dumps({
        "annotators": args.annotators,
        "requests": main_round["requests"],
        "p50_ms": round(main_round["p50_ms"], 2),
        "p95_ms": round(main_round["p95_ms"], 2),
        "double_leases": double_leases,
        "lost_decisions": lost,
    }))


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait(base: str, server: subprocess.Popen) -> None:
    deadline = time.time() + 30
    while time.time() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"server exited: {server.stderr.read().decode()[-2000:]}")
        try:
            httpx.get(base + "/login", timeout=2)
            return
        except httpx.TransportError:
            time.sleep(0.2)
    raise RuntimeError("server did not start within 30 s")


if __name__ == "__main__":
    main()
