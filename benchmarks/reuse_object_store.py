"""Reading a shard's reuse entries from an object store: item by item, or the shard's pack in one round.

A local S3 API server (moto, tests/s3_server.py) answers every request ``--latency-ms`` late,
as a remote store does (S3 from the same region: ~10-30 ms a request; across the internet
more). A shard of ``--entries`` keys, half of them stored (hits) and half not (misses, the
common case of a first run), is looked up two ways, side by side in turns:

  one_by_one   a shard of one item per key (``ItemReuse.map([key])``): each key's own pack
               folder listed and read, one key after the other, as a lookup per item costs
  one_round    ``ItemReuse.map`` of the whole shard: its pack folder listed, and its pack read
               in one round (fsspec's ``cat`` of a list), then the same checks

The stored half is written both ways beforehand (a pack per key, and the shard's pack). Both
must return the same values. Each figure is the median of ``--runs`` turns. The server runs in
this process, so its own CPU (~7 ms a request here, all requests under one GIL) bounds the
round. Ends with one JSON line: entries, latency_ms, one_by_one_s, one_round_s, speedup, same_values.
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
            store.put("eval-answer", key, {"text": f"answer {i * 2}"}, [], run)
        ItemReuse(ReuseStore.open(run), run, "eval", "eval-answer").map(
            keys, lambda misses: [Entry({"text": f"answer {i}"}, keep=i % 2 == 0) for i in misses]
        )

        def miss(misses: list[int]) -> list[Entry]:
            return [Entry(None, keep=False) for _ in misses]

        def one_by_one() -> list:
            return [ItemReuse(ReuseStore.open(run), run, "eval", "eval-answer").map([k], miss)[0] for k in keys]

        def one_round() -> list:
            return ItemReuse(ReuseStore.open(run), run, "eval", "eval-answer").map(keys, miss)

        times: dict[str, list[float]] = {"one_by_one": [], "one_round": []}
        values: dict[str, list] = {}
        for _ in range(args.runs):
            for name, fn in (("one_by_one", one_by_one), ("one_round", one_round)):
                started = time.perf_counter()
                values[name] = fn()
                times[name].append(time.perf_counter() - started)
    med = {k: statistics.median(v) for k, v in times.items()}
    same = values["one_by_one"] == values["one_round"] and sum(v is not None for v in values["one_round"]) == len(
        keys[::2]
    )
    print(f"{args.entries} keys (half stored), {args.latency_ms:g} ms a request, median of {args.runs}:")
    print(f"  one by one  {med['one_by_one']:8.3f} s")
    print(
        f"  one round   {med['one_round']:8.3f} s   ({med['one_by_one'] / med['one_round']:.1f}x faster; same values: {same})"
    )
    print(
        json.dumps(
            {
                "entries": args.entries,
                "latency_ms": args.latency_ms,
                "one_by_one_s": round(med["one_by_one"], 3),
                "one_round_s": round(med["one_round"], 3),
                "speedup": round(med["one_by_one"] / med["one_round"], 1),
                "same_values": same,
            }
        )
    )
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
