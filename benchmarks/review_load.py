"""Load test of the review app: simulated annotators doing next + decide over HTTP.

Starts ``--servers`` processes of ``reactbench review serve`` (as ``python -m flows.cli_review
serve``) on 127.0.0.1 over a fresh run whose queue is filled in SQLite (WAL, in the run
directory) or in a throwaway PostgreSQL server (``--db postgresql``, the Debian package, as
the tests start it), then runs rounds against them one after the other: 1 annotator and N
annotators with the realistic think time (``--think-ms``, 500 ms), N annotators with a short
think time (``--short-think-ms``, 100 ms) and N annotators with no think time at all
(saturation reference). Annotator i talks to server i mod ``--servers``. Every annotator
logs in once, before the rounds (logins are not measured), then each loops: ``GET
/api/next`` then ``POST`` a decision, pausing the think time in between. By default each
annotator starts at a random moment within the first think time and each pause varies by
+-50 % around the think time (seeded), so requests arrive at random times as independent
people's do; ``--start spread`` staggers the starts evenly with fixed pauses, ``--start
together`` starts everyone in the same millisecond and keeps them in lockstep (a stress shape).
The annotators are coroutines of one asyncio loop (aiohttp, keep-alive connections) in this
process, which shares the machine with the servers and the database; its own CPU time per
decision is reported too.
With two servers or more, a round after the realistic one repeats it and ``kill -9``s the first
server halfway through: its annotators go on through the next server with the same session;
a replacement server is then started for the remaining rounds. A kill round in which nobody
failed over, or a measured round whose queue ran dry (raise ``--items``), exits 1.
Reports p50 / p95 latency of those requests and throughput side by side, and checks that no
item was leased to two annotators and that every acknowledged decision is in the event log.

The last line is one JSON object with keys ``annotators``, ``requests``, ``p50_ms``,
``p95_ms``, ``double_leases``, ``lost_decisions``, ``servers``, ``db``, ``killed_servers``,
``failovers`` (annotators that went on through another server after the kill),
``db_pool_size`` (``review.db_pool_size`` of the servers, ``--db-pool-size``) and
``db_connections`` (connections the servers hold on PostgreSQL after the saturation round);
its latency figures are those of N annotators with the ``--think-ms`` think time
(``--json-round short`` reports the short round instead). Double leases and lost decisions
are counted over all rounds, the kill round included.

    .venv/bin/python benchmarks/review_load.py [--annotators 20] [--items 12000] [--think-ms 500] [--short-think-ms 100]
    .venv/bin/python benchmarks/review_load.py --annotators 100 --think-ms 1000 --db postgresql --servers 2
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

sys.path.insert(0, str(ROOT / "tests"))  # the throwaway PostgreSQL server of the tests (tests/pg_cluster.py)

from pg_cluster import fresh_database, throwaway_postgres  # noqa: E402

from storage.fs import RunFS  # noqa: E402
from storage.hashing import stable_id  # noqa: E402
from storage.image_store import ImageStore  # noqa: E402
from tasks.engine.config import ReviewConfig  # noqa: E402
from tasks.review.accounts import add_user  # noqa: E402
from tasks.review.queue import ReviewQueue  # noqa: E402
from tasks.review.stage import default_db_url, queue_rows  # noqa: E402

JITTER = 0.5  # --start random: each pause is think time x U(0.5, 1.5)

if TYPE_CHECKING:  # the annotation only; the benchmark imports aiohttp where it runs
    import aiohttp


def build_queue(run_dir: Path, n_items: int, url: str | None = None) -> str:
    """A run with ``n_items`` edits in the queue (each with 3 questions) in the database
    ``url`` (default: SQLite in the run directory); returns the DB URL."""
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
            "id": stable_id("bench", i),
            "task": "relational_erasure",
            "variant": "targeted",
            "source": "visual_genome",
            "image_id": str(i),
            "width": 64,
            "height": 64,
            "instruction": f"Remove object {i}.",
            "edit_type": "remove",
            "target_name": "cup",
            "target_box": [10.0, 10.0, 20.0, 20.0],
            "original_image": orig,
            "edited_image": edited,
            "mask_image": None,
            "editor": ("classical", "qwen_image_edit")[i % 2],
        }
        questions = [
            {
                "id": stable_id("bq", i, j),
                "question_set": "main",
                "qid": f"Q{j + 1}",
                "qtype": "YN",
                "dimension": None,
                "text": f"Is there a cup ({j})?",
                "options": None,
                "gold": "No",
                "images": [edited],
                "image_role": "edited",
            }
            for j in range(3)
        ]
        rows.extend(queue_rows(edit, questions))
    url = url or default_db_url(run)
    q = ReviewQueue.open(url)
    q.enqueue(rows)
    q.close()
    return url


@dataclass
class Session:
    """A logged-in annotator: its session cookie and CSRF token, valid on every server."""

    name: str
    cookies: dict
    csrf: str


def log_in(base: str, name: str, secret: str) -> Session:
    with httpx.Client(base_url=base, timeout=60) as c:
        tok = re.search(r'name="csrf_token" value="([^"]+)"', c.get("/login").text).group(1)
        c.post("/login", data={"secret": secret, "csrf_token": tok})
        csrf = re.search(r'data-csrf="([^"]+)"', c.get("/review/qa").text).group(1)
        return Session(name, dict(c.cookies), csrf)


def log_in_all(base: str, secrets: list[tuple[str, str]]) -> list[Session]:
    """Every annotator logs in once, before any round (logins are not what is measured)."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(8) as pool:
        return list(pool.map(lambda ns: log_in(base, *ns), secrets))


async def annotate(
    http: aiohttp.ClientSession,
    bases: list[str],
    session: Session,
    stop_at: float,
    think_s: float,
    start_s: float,
    jitter: float = 0.0,
    seed: int = 0,
) -> dict:
    """One simulated annotator on ``bases[0]``: after ``start_s``, ``GET /api/next``, think,
    ``POST`` the decision, until ``stop_at``. When that server stops answering (killed) it goes
    on through the next one with the same session cookie. Latency: from sending a request to
    having read its answer."""
    import aiohttp

    lat, handed, acked, errors, failovers, ran_out = [], [], [], [], 0, False
    rng = random.Random(seed)
    await asyncio.sleep(start_s)
    base = bases[0]
    cookies = "; ".join(f"{k}={v}" for k, v in session.cookies.items())
    get_headers = {"Cookie": cookies}
    post_headers = {"Cookie": cookies, "X-CSRF-Token": session.csrf, "Content-Type": "application/json"}
    try:
        while time.perf_counter() < stop_at:
            try:
                t0 = time.perf_counter()
                async with http.get(base + "/api/next?stage=edit", headers=get_headers) as r:
                    body = await r.read()
                lat.append(time.perf_counter() - t0)
                items = json.loads(body)["items"]
                if not items:  # the queue ran dry: the round measured less than it claims
                    ran_out = True
                    break
                item = items[0]["id"]
                handed.append(item)
                if think_s:
                    await asyncio.sleep(think_s * (1 + jitter * (2 * rng.random() - 1)))
                t0 = time.perf_counter()
                async with http.post(
                    f"{base}/api/items/{item}/decision", data=b'{"verdict": "accept"}', headers=post_headers
                ) as r:
                    status, body = r.status, await r.read()
                lat.append(time.perf_counter() - t0)
            except (TimeoutError, aiohttp.ClientConnectionError):
                if failovers + 1 >= len(bases):
                    raise
                failovers += 1
                base = bases[failovers]
                continue
            if status == 200:
                acked.append(json.loads(body)["event_id"])
            else:
                errors.append(f"{status} {body[:200].decode(errors='replace')}")
    except Exception as exc:  # reported, not hidden
        errors.append(repr(exc))
    return {"lat": lat, "handed": handed, "acked": acked, "errors": errors, "failovers": failovers, "ran_out": ran_out}


def cpu_seconds(procs: list[subprocess.Popen]) -> float:
    """CPU time (user + system) used so far by the live processes ``procs`` (Linux /proc):
    a cost per decision that, unlike latency, hardly depends on what else the machine runs."""
    import os

    total = 0.0
    for p in procs:
        try:
            fields = Path(f"/proc/{p.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def run_round(
    bases: list[str],
    sessions: list[Session],
    seconds: float,
    think_s: float,
    procs: list[subprocess.Popen],
    kill: subprocess.Popen | None = None,
    start: str = "random",
) -> dict:
    """One round: annotator i starts on server i mod len(bases); ``kill`` (a server process)
    is killed with SIGKILL halfway through. ``procs``: the servers, for their CPU time.

    The annotators are coroutines of one asyncio loop in this process (aiohttp, keep-alive
    connections): the clients share the machine with the servers and the database, and a
    thread per annotator with a blocking client cost more CPU per request than the server
    answering it."""
    cpu0, client0 = cpu_seconds(procs), time.process_time()
    t0 = time.perf_counter()
    results = asyncio.run(_round(bases, sessions, seconds, think_s, kill, start))
    wall = time.perf_counter() - t0
    client = time.process_time() - client0
    lat = sorted(x for r in results.values() for x in r["lat"])
    decisions = sum(len(r["acked"]) for r in results.values())
    return {
        "server_cpu_ms_per_decision": 1000 * (cpu_seconds(procs) - cpu0) / max(decisions, 1)
        if kill is None
        else float("nan"),
        "client_cpu_ms_per_decision": 1000 * client / max(decisions, 1),
        "results": results,
        "requests": len(lat),
        "p50_ms": 1000 * statistics.median(lat) if lat else float("nan"),
        "p95_ms": 1000 * lat[min(len(lat) - 1, int(0.95 * len(lat)))] if lat else float("nan"),
        "decisions_per_s": decisions / wall,
        "errors": [e for r in results.values() for e in r["errors"]],
        "failovers": sum(r["failovers"] for r in results.values()),
        "ran_out": sum(1 for r in results.values() if r["ran_out"]),
    }


async def _round(
    bases: list[str],
    sessions: list[Session],
    seconds: float,
    think_s: float,
    kill: subprocess.Popen | None,
    start: str,
) -> dict:
    import aiohttp

    connector = aiohttp.TCPConnector(limit=0)  # a keep-alive connection per concurrent request, as browsers keep them
    timeout = aiohttp.ClientTimeout(total=30)
    async with aiohttp.ClientSession(
        connector=connector, timeout=timeout, cookie_jar=aiohttp.DummyCookieJar()
    ) as http:
        stop_at = time.perf_counter() + seconds
        # People do not click in step. ``random`` (default): each annotator starts at a random
        # moment within the first think time and each pause varies by +-JITTER around it, so
        # requests arrive at random times, as independent people's do (seeded: reproducible).
        # ``spread``: annotator i of n starts i/n of a think time after the first, pauses fixed.
        # ``together``: 100 coroutines send 100 requests in the same millisecond, every think
        # time, for the whole round (a stress shape no crowd of people produces).
        n = len(sessions)
        offsets = {
            "random": [random.Random(i).uniform(0, think_s) for i in range(n)],
            "spread": [think_s * i / n for i in range(n)],
            "together": [0.0] * n,
        }[start]
        jitter = JITTER if start == "random" else 0.0
        tasks = [
            asyncio.ensure_future(
                annotate(
                    http,
                    bases[i % len(bases) :] + bases[: i % len(bases)],
                    s,
                    stop_at,
                    think_s,
                    offsets[i],
                    jitter,
                    seed=1000 + i,
                )
            )
            for i, s in enumerate(sessions)
        ]
        if kill is not None:  # halfway through the round
            await asyncio.sleep(max(0.0, stop_at - seconds / 2 - time.perf_counter()))
            kill.kill()
            await asyncio.get_running_loop().run_in_executor(None, kill.wait)
        done = await asyncio.gather(*tasks)
    return {s.name: r for s, r in zip(sessions, done)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--annotators", type=int, default=20)
    ap.add_argument("--items", type=int, default=12000, help="queue size; enough that no round runs out of items")
    ap.add_argument("--seconds", type=float, default=15.0, help="duration of each round")
    ap.add_argument(
        "--think-ms",
        type=float,
        default=500.0,
        help="realistic pause between next and decide (human reviewers take 5-20 s)",
    )
    ap.add_argument("--short-think-ms", type=float, default=100.0, help="short pause for the stress configuration")
    ap.add_argument(
        "--json-round",
        choices=("short", "realistic"),
        default="realistic",
        help="which N-annotator round the JSON line reports",
    )
    ap.add_argument(
        "--db",
        choices=("sqlite", "postgresql"),
        default="sqlite",
        help="queue database: SQLite in the run dir, or a throwaway PostgreSQL server",
    )
    ap.add_argument("--servers", type=int, default=1, help="review server processes sharing the database")
    ap.add_argument(
        "--start",
        choices=("random", "spread", "together"),
        default="random",
        help="random (default): random start within the first think time, each pause +-50%%; spread: annotator i of n "
        "starts i/n of a think time after the first, fixed pauses; together: all at once, in lockstep",
    )
    ap.add_argument(
        "--db-pool-size",
        type=int,
        default=None,
        help="review.db_pool_size of the servers (default: the config default)",
    )
    args = ap.parse_args()
    if args.servers < 1:
        ap.error("--servers must be >= 1")

    with tempfile.TemporaryDirectory(prefix="rb-review-load-") as tmp, _database(args.db) as db_url:
        run_dir = Path(tmp) / "run"
        run_dir.mkdir()
        url = build_queue(run_dir, args.items, db_url)
        if args.db_pool_size is not None:  # the servers read the run's saved config
            (run_dir / "config.yaml").write_text(json.dumps({"review": {"db_pool_size": args.db_pool_size}}))
        queue = ReviewQueue.open(url)
        secrets = [
            (f"ann{i:02d}", add_user(queue.engine, f"ann{i:02d}", "annotator")) for i in range(args.annotators + 1)
        ]
        servers = [_serve(run_dir, url) for _ in range(args.servers)]
        bases = [base for base, _ in servers]
        procs = [proc for _, proc in servers]
        sessions = log_in_all(bases[0], secrets)
        killed = None
        try:
            single = run_round(bases, sessions[:1], args.seconds / 2, args.think_ms / 1000, procs)
            many = run_round(bases, sessions[1:], args.seconds, args.think_ms / 1000, procs, start=args.start)
            if args.servers > 1:  # kill -9 of the first server halfway through a realistic round (before the
                # rounds that use up the queue fastest, so it always has items to hand out)
                killed = run_round(
                    bases, sessions[1:], args.seconds, args.think_ms / 1000, procs, kill=procs[0], start=args.start
                )
                servers[0] = _serve(run_dir, url)  # a replacement, as a supervisor would start one
                bases, procs = [base for base, _ in servers], [proc for _, proc in servers]
            short = run_round(bases, sessions[1:], args.seconds, args.short_think_ms / 1000, procs, start=args.start)
            stress = run_round(
                bases, sessions[1:], args.seconds / 2, 0.0, procs
            )  # no think time: saturation, for reference
            queue.engine.dispose()  # (this process's own connections are not counted)
            db_connections = _connections(url)  # what the servers hold after the saturation round
        finally:
            for _, proc in servers:
                proc.terminate()
                proc.wait(10)
        rounds_run = [r for r in (single, many, short, stress, killed) if r is not None]
        handed = defaultdict(set)
        acked = []
        for rnd in rounds_run:
            for name, r in rnd["results"].items():
                for item in r["handed"]:
                    handed[item].add(name)
                acked.extend(r["acked"])
        double_leases = sum(1 for who in handed.values() if len(who) > 1)
        logged = {e.id for e in queue.events(kinds=("decision",))}
        lost = sum(1 for a in acked if a not in logged)
        queue.close()

    main_round, main_think = (short, args.short_think_ms) if args.json_round == "short" else (many, args.think_ms)
    db_label = "SQLite WAL" if args.db == "sqlite" else "PostgreSQL"
    print(
        f"items {args.items}, {db_label}, {args.servers} uvicorn process(es), clients in this process (asyncio); latency of GET /api/next and POST decision"
    )
    print(
        f"{'annotators':>10} {'think ms':>9} {'requests':>9} {'p50 ms':>8} {'p95 ms':>8} {'decisions/s':>12} {'server CPU ms/decision':>23} {'client CPU':>11}"
    )
    rows = [
        ("1", args.think_ms, single, ""),
        (str(args.annotators), args.think_ms, many, "realistic" + (" (JSON line)" if main_round is many else "")),
        (str(args.annotators), args.short_think_ms, short, "short" + (" (JSON line)" if main_round is short else "")),
        (str(args.annotators), 0.0, stress, "none: saturation reference, back-to-back requests"),
    ]
    if killed is not None:
        rows.append(
            (
                str(args.annotators),
                args.think_ms,
                killed,
                f"realistic, server 1 of {args.servers} killed (kill -9) halfway; {killed['failovers']} failovers",
            )
        )
    for label, think, rnd, note in rows:
        if rnd["ran_out"]:
            note += f"; the queue ran dry for {rnd['ran_out']} annotator(s) (raise --items)"
        print(
            f"{label:>10} {think:>9.0f} {rnd['requests']:>9} {rnd['p50_ms']:>8.1f} {rnd['p95_ms']:>8.1f} {rnd['decisions_per_s']:>12.1f} "
            f"{rnd['server_cpu_ms_per_decision']:>23.1f} {rnd['client_cpu_ms_per_decision']:>11.1f}  {note}"
        )
    print(
        f"p95 ratio {args.annotators} vs 1 annotator ({args.think_ms:.0f} ms think): {many['p95_ms'] / single['p95_ms']:.2f}x; "
        f"throughput ratio: {many['decisions_per_s'] / single['decisions_per_s']:.2f}x"
    )
    errors = [e for rnd in rounds_run for e in rnd["errors"]]
    print(f"double leases: {double_leases}; lost decisions: {lost}; errors: {len(errors)} (all rounds)")
    for e in errors[:5]:
        print("  error:", e)
    for think, rnd in ((args.think_ms, many), (args.short_think_ms, short)):
        print(
            f"p95 <= 50 ms at {args.annotators} annotators, {think:.0f} ms think time: {'yes' if rnd['p95_ms'] <= 50 else 'NO'} ({rnd['p95_ms']:.1f} ms)"
        )
    print(
        f"JSON line: {args.annotators} annotators with {main_think:.0f} ms think time (double leases / lost decisions: all rounds)"
    )
    print(
        json.dumps(
            {
                "annotators": args.annotators,
                "requests": main_round["requests"],
                "p50_ms": round(main_round["p50_ms"], 2),
                "p95_ms": round(main_round["p95_ms"], 2),
                "double_leases": double_leases,
                "lost_decisions": lost,
                "servers": args.servers,
                "db": args.db,
                "killed_servers": int(killed is not None),
                "failovers": killed["failovers"] if killed is not None else 0,
                "db_pool_size": ReviewConfig().db_pool_size if args.db_pool_size is None else args.db_pool_size,
                "db_connections": db_connections,
            }
        )
    )
    # A round that ran dry or a kill round nobody failed over in measured less than it claims.
    broken = [
        name
        for name, rnd in (("1 annotator", single), ("realistic", many), ("kill", killed))
        if rnd is not None and rnd["ran_out"]
    ]
    if killed is not None and not killed["failovers"]:
        broken.append("kill (no annotator failed over: nobody made a request after the kill)")
    if broken:
        print(f"ERROR: not measured as claimed: {', '.join(broken)}", file=sys.stderr)
        raise SystemExit(1)


def _connections(url: str) -> int | None:
    """Connections the review servers hold on the PostgreSQL database (None on SQLite)."""
    if not url.startswith("postgres"):
        return None
    import psycopg

    with psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://"), autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchone()
    return int(row[0])


@contextmanager
def _database(kind: str) -> Iterator[str | None]:
    """None for SQLite in the run directory; else a fresh database on a throwaway PostgreSQL server."""
    if kind == "sqlite":
        yield None
        return
    with throwaway_postgres(max_connections=300) as base:
        yield fresh_database(base)


def _serve(run_dir: Path, url: str) -> tuple[str, subprocess.Popen]:
    port = _free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "flows.cli_review",
            "serve",
            "--run-dir",
            str(run_dir),
            "--db",
            url,
            "--port",
            str(port),
        ],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    base = f"http://127.0.0.1:{port}"
    _wait(base, server)
    return base, server


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait(base: str, server: subprocess.Popen) -> None:
    deadline = time.time() + 120  # a busy machine takes its time to import the app
    while time.time() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"server exited: {server.stderr.read().decode()[-2000:]}")
        try:
            httpx.get(base + "/login", timeout=2)
            return
        except httpx.TransportError:
            time.sleep(0.2)
    raise RuntimeError("server did not start within 120 s")


if __name__ == "__main__":
    main()
