"""Throughput of the instruct stage against an OpenAI-compatible server with fixed latency.

A loopback server (child process) answers every chat completion after exactly ``latency``
seconds. The instruct stage runs over ``requests`` relational-erasure candidates with
``mllm.concurrency`` requests in flight; the ideal is concurrency / latency requests per
second. Then the stage is recomputed (``force``) with the response cache warm: no request
may reach the server, and the time is reported.

    .venv/bin/python benchmarks/mllm_throughput.py [--requests 2000] [--concurrency 64] [--latency 0.5]

The last line is one JSON object: requests, concurrency, latency_s, achieved_rps,
theoretical_rps, efficiency, warm_cache_s.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # the test helper dummy_server.py

ANSWER = "remove: wheel\nkeep: skateboard\ninstruction: Remove the wheel under the skateboard; preserve the skateboard deck and do not alter the background."
LATENCY = {"s": 0.5}


def responder(body: dict):  # module level: runs in the server process
    from dummy_server import Reply

    return Reply(ANSWER, delay_s=LATENCY["s"])


def _serve(latency: float, q: mp.Queue[int]) -> None:
    from dummy_server import serve_forever

    LATENCY["s"] = latency
    serve_forever(responder, "127.0.0.1", 0, q)


def _photo_like(path: Path) -> None:
    """A 500x375 JPEG of about 70 KB: the size class of a Visual Genome image (noise-only images
    would be three times larger and measure JSON encoding rather than the client)."""
    import numpy as np
    from PIL import Image

    y, x = np.mgrid[0:375, 0:500]
    base = np.stack([x * 255 / 500, y * 255 / 375, (x + y) * 255 / 875], -1)
    img = np.clip(base + np.random.default_rng(0).normal(0, 20, base.shape), 0, 255).astype(np.uint8)
    Image.fromarray(img).save(path, format="JPEG", quality=85)


def _candidates(n: int, image_path: str) -> list[dict]:
    from storage.hashing import stable_id
    from storage.schemas import CANDIDATES

    rows = []
    for i in range(n):
        row = {k: None for k in CANDIDATES.schema.names}
        row.update(
            task="relational_erasure",
            variant="targeted",
            source="visual_genome",
            image_id=str(i),
            image_path=image_path,
            width=500,
            height=375,
            target_object_id=i,
            target_name="wheel",
            target_box=[float(i % 450), float(10 + i // 450), 40.0, 30.0],
            partner_object_id=100000 + i,
            partner_name="skateboard",
            partner_box=[0.0, 300.0, 400.0, 80.0],
            predicate="on",
            direction="target_is_subject",
            edit_type="remove",
            context_json="[]",
        )
        row["id"] = stable_id("bench", i)
        rows.append(row)
    return rows


def _write_mine(run, rows: list[dict]) -> None:
    from storage.schemas import CANDIDATES
    from storage.stage_store import ShardResult, StageStore

    store = StageStore(run, "mine", {"candidates": CANDIDATES})
    store.write_shard(0, "bench", ShardResult(outputs={"candidates": rows}, rows_in=len(rows)))
    store.write_manifest(
        {"stage": "mine", "status": "complete", "key": "bench", "output_fingerprint": store.output_fingerprint()}
    )


def _cpu_s() -> float:
    import resource

    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def _stats(port: int) -> dict:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/stats", timeout=10) as r:
        return json.loads(r.read())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--latency", type=float, default=0.5)
    ap.add_argument("--shard-size", type=int, default=500)
    args = ap.parse_args()

    ctx_mp = mp.get_context("fork")
    q: mp.Queue[int] = ctx_mp.Queue()
    server = ctx_mp.Process(target=_serve, args=(args.latency, q), daemon=True)
    server.start()
    port = q.get(timeout=30)
    base_url = f"http://127.0.0.1:{port}/v1"

    from flows.config import config_from_dict
    from storage.fs import RunFS
    from storage.parquet_io import ArtifactReader
    from tasks.engine.base import RunContext
    from tasks.engine.runner import run_stage
    from tasks.stages.instruct import InstructStage

    try:
        with tempfile.TemporaryDirectory(prefix="mllm-bench-") as tmp:
            img = Path(tmp) / "scene.jpg"
            _photo_like(img)
            run = RunFS.open(str(Path(tmp) / "run"))
            _write_mine(run, _candidates(args.requests, str(img)))
            cfg = config_from_dict(
                {
                    "run": {"shard_size": args.shard_size, "workers": 2},
                    "mllm": {
                        "backend": "openai",
                        "model": "bench-vl",
                        "base_url": base_url,
                        "concurrency": args.concurrency,
                        "timeout_s": 30,
                        "max_retries": 2,
                    },
                }
            )
            ctx = RunContext(run, cfg)
            cpu0 = _cpu_s()
            t0 = time.perf_counter()
            cold = run_stage(InstructStage(), ctx)
            cold_s = time.perf_counter() - t0
            cpu_ms = 1000 * (_cpu_s() - cpu0) / args.requests
            rows = ArtifactReader(run, "instruct/instructions", "instructions").rows(["status"])
            applicable = sum(r["status"] == "applicable" for r in rows)
            if applicable != args.requests:
                raise SystemExit(f"expected {args.requests} applicable rows, got {applicable} ({cold.reject_reasons})")

            sent_cold = _stats(port)
            t1 = time.perf_counter()
            warm = run_stage(InstructStage(), RunContext(run, cfg), force=True)
            warm_s = time.perf_counter() - t1
            sent_warm = _stats(port)["requests"] - sent_cold["requests"]
            if sent_warm:
                raise SystemExit(f"the warm-cache rerun sent {sent_warm} requests; a cache hit must cost no network")
            cache_files = len(list((Path(tmp) / "run" / "cache" / "mllm").rglob("*.json")))
            image_kb = img.stat().st_size / 1024
    finally:
        server.terminate()
        server.join(5)

    theoretical = args.concurrency / args.latency
    achieved = args.requests / cold_s
    print(f"one {image_kb:.0f} KB JPEG per request (base64 data URL); client CPU {cpu_ms:.2f} ms per request")
    print(
        f"cold: {args.requests} requests in {cold_s:.2f} s -> {achieved:.1f} req/s; theoretical {theoretical:.1f} req/s (concurrency {args.concurrency} / latency {args.latency} s)"
    )
    print(
        f"efficiency (achieved / theoretical, same run): {achieved / theoretical:.3f}; server saw {sent_cold['requests']} requests, at most {sent_cold['max_inflight']} in flight"
    )
    print(
        f"warm cache: {warm.shards_run} shards recomputed from {cache_files} cached answers in {warm_s:.2f} s, {sent_warm} requests sent"
    )
    print(
        json.dumps(
            {
                "requests": args.requests,
                "concurrency": args.concurrency,
                "latency_s": args.latency,
                "achieved_rps": round(achieved, 2),
                "theoretical_rps": round(theoretical, 2),
                "efficiency": round(achieved / theoretical, 4),
                "warm_cache_s": round(warm_s, 3),
            }
        )
    )


if __name__ == "__main__":
    main()
