"""Reading a shard's reuse entries from an object store: one by one, or in one concurrent round.

A local S3 API server (moto, tests/s3_server.py) answers every request ``--latency-ms`` late,
as a remote store does (S3 from the same region: ~10-30 ms a request; across the internet
more). ``--entries`` keys are stored, then a shard of ``--entries`` keys is looked up, half of
them stored (hits) and half not (misses, the common case of a first run), side by side in turns:

  one_by_one   ``ReuseStore.get`` per key, reading each entry file on its own (a HEAD and a
               GET for a hit, a HEAD for a miss, one after the other): what ``ItemReuse.map``
               did before
  one_round    ``ItemReuse.map``: ``ReuseStore.read_entries`` fetches every entry file of the
               shard in one concurrent round (fsspec's ``cat`` of a list), then the same checks

Both must return the same values. Each figure is the median of ``--runs`` turns. The server
runs in this process, so its own CPU (~7 ms a request here, all requests under one GIL) bounds
the round: with no added latency 100 lookups take ~0.8 s either way. The speedup on a real
store, which serves requests side by side, is larger than the one printed here.
Ends with one JSON line: entries, latency_ms, one_by_one_s, one_round_s, speedup, same_values.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]  # tests/s3_server.py, loaded by file location


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=200, help="keys looked up per shard (half of them stored)")
    parser.add_argument("--latency-ms", type=float, default=20.0, help="delay the server adds to every request")
    parser.add_argument("--runs", type=int, default=3, help="turns of each way")
    args = parser.parse_args()

    import os

    from s3_server import S3Server

    from storage.fs import RunFS
    from storage.reuse_store import Entry, ReuseStore
    from tasks.engine.reuse import ItemReuse

    with S3Server(latency_ms=args.latency_ms) as server:
        os.environ.update(server.env())
        run = RunFS.open(f"s3://{server.bucket()}/run")
        store = ReuseStore.open(run)
        keys = [f"{i:064x}" for i in range(args.entries)]
        for i, key in enumerate(keys[::2]):
            store.put("eval-answer", key, {"text": f"answer {i}"}, [], run)

        def one_by_one() -> list:
            fresh = ReuseStore.open(run)
            return [hit.value if (hit := fresh.get("eval-answer", k, run)) else None for k in keys]

        def one_round() -> list:
            reuse = ItemReuse(ReuseStore.open(run), run, "eval", "eval-answer")
            return reuse.map(keys, lambda misses: [Entry(None, keep=False) for _ in misses])

        times: dict[str, list[float]] = {"one_by_one": [], "one_round": []}
        values: dict[str, list] = {}
        for _ in range(args.runs):
            for name, fn in (("one_by_one", one_by_one), ("one_round", one_round)):
                started = time.perf_counter()
                values[name] = fn()
                times[name].append(time.perf_counter() - started)
    med = {k: statistics.median(v) for k, v in times.items()}
    same = values["one_by_one"] == values["one_round"] and sum(v is not None for v in values["one_round"]) == len(keys[::2])
    print(f"{args.entries} keys (half stored), {args.latency_ms:g} ms a request, median of {args.runs}:")
    print(f"  one by one  {med['one_by_one']:8.3f} s")
    print(f"  one round   {med['one_round']:8.3f} s   ({med['one_by_one'] / med['one_round']:.1f}x faster; same values: {same})")
    print(json.dumps({"entries": args.entries, "latency_ms": args.latency_ms, "one_by_one_s": round(med["one_by_one"], 3),
                      "one_round_s": round(med["one_round"], 3), "speedup": round(med["one_by_one"] / med["one_round"], 1), "same_values": same}))
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
