"""Reuse entries written per item or per shard: files written, CPU time, and a cold rerun's lookups.

``--entries`` evaluation-answer-like entries (the value ``complete_with_reuse`` stores: text,
model id, backend, no error; keys are item keys) go into a reuse store on the local disk two
ways, side by side in one run, each in a fresh folder:

  per_item    the previous layout, one sealed JSON file per entry
              (``items/<component>/<ab>/<key>.json``, written as ``ReuseStore.put`` wrote it
              before packs: a temporary file renamed into place), and looked up as the previous
              ``ItemReuse.map`` did on a local disk: one read and check per key
  per_shard   ``ItemReuse.map`` in shards of ``--shard-size`` keys: each shard's entries one pack

Then a cold rerun (new store objects, the process's key index dropped) looks every key up again
(all hits), per item or per shard with the same grouping; ``regrouped`` looks the per-shard
store up with another grouping (shards of ``--shard-size`` + 7), which goes through the
per-component index once and writes each new shard's pack. CPU seconds are ``process_time``;
each figure is the median of ``--runs`` turns. Both ways must return the same values.

At the paper's size (``--index-entries``, ~150k answers: 50k questions, cyclic presentations and
two modes) the per-shard store is written once more and its index built cold: CPU seconds, the
megabytes it holds and the peak while it is built (tracemalloc).
Ends with one JSON line: entries, shard_size, files_per_item_layout, files_per_shard_layout,
write_cpu_s_per_item, write_cpu_s_per_shard, write_speedup, lookup_cpu_s_per_item,
lookup_cpu_s_per_shard, lookup_speedup, regrouped_lookup_cpu_s, index_bytes_per_entry,
index_entries, index_build_cpu_s, index_mb, index_peak_mb, same_values.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]
COMPONENT = "eval-answer"


def answers(n: int) -> tuple[list[str], list[dict[str, Any]]]:
    """Keys and values shaped like stored evaluation answers (rules backend)."""
    from storage.reuse_store import item_key

    keys = [item_key(component=COMPONENT, request=f"question {i}", code="bench") for i in range(n)]
    values = [
        {
            "text": f"The answer is option {'ABCD'[i % 4]}: the {['cup', 'dog', 'kite', 'chair'][i % 4]} is still there."
            + " Because" * (i % 7),
            "model_id": "rules-v1",
            "backend": "rules",
            "error": None,
        }
        for i in range(n)
    ]
    return keys, values


def files_under(path: Path) -> int:
    return sum(len(files) for _, _, files in os.walk(path))


def timed(fn: Callable[..., Any], *args: Any) -> tuple[float, Any]:
    """CPU seconds of ``fn(*args)``, and what it returned."""
    started = time.process_time()
    out = fn(*args)
    return time.process_time() - started, out


def per_item_write(run: Any, keys: list[str], values: list[Any]) -> None:
    """What the previous ``ItemReuse.map`` did for each computed item: one sealed entry file."""
    from storage.reuse_store import ReuseStore, _now, entry_checksum

    store = ReuseStore.open(run)
    for key, value in zip(keys, values):
        now = _now().isoformat(timespec="seconds")
        doc = {"component": COMPONENT, "key": key, "value": value, "images": [], "created_at": now, "used_at": now}
        store.root.write_text_atomic(
            store.legacy_rel(COMPONENT, key), json.dumps({**doc, "sha256": entry_checksum(doc)}, sort_keys=True)
        )


def per_item_lookup(run: Any, keys: list[str]) -> list[Any]:
    """What the previous ``ItemReuse.map`` did on a local disk for each key: read, check, serve."""
    from storage.reuse_store import ReuseStore, _verified

    store = ReuseStore.open(run)
    out = []
    for key in keys:
        doc = _verified(store.root.read_bytes(store.legacy_rel(COMPONENT, key)), COMPONENT, key)
        out.append(json.loads(json.dumps(doc["value"])))
    return out


def shards(keys: list[str], size: int) -> list[list[int]]:
    return [list(range(i, min(i + size, len(keys)))) for i in range(0, len(keys), size)]


def per_shard(run: Any, keys: list[str], values: list[Any], size: int) -> list[Any]:
    """``ItemReuse.map`` shard by shard (writes the misses' pack; all hits on a rerun)."""
    from storage.reuse_store import Entry, ReuseStore
    from tasks.engine.reuse import ItemReuse

    out: list[Any] = []
    for shard in shards(keys, size):
        reuse = ItemReuse(ReuseStore.open(run), run, "eval", COMPONENT)
        out += reuse.map(
            [keys[i] for i in shard], lambda misses, shard=shard: [Entry(values[shard[m]]) for m in misses]
        )
    return out


def index_at_size(n: int, size: int) -> dict[str, Any]:
    """The cold build of one component's index over ``n`` stored entries (written per shard)."""
    import tracemalloc

    from storage import reuse_store
    from storage.fs import RunFS

    keys, values = answers(n)
    with tempfile.TemporaryDirectory(prefix="reuse-index-") as tmp:
        run = RunFS.open(tmp)
        per_shard(run, keys, values, size)
        reuse_store.forget_indexes()
        tracemalloc.start()
        cpu, index = timed(reuse_store.ReuseStore.open(run).index, COMPONENT)
        held, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        reuse_store.forget_indexes()
    return {
        "index_entries": len(index),
        "index_build_cpu_s": round(cpu, 2),
        "index_mb": round(held / 1e6, 2),
        "index_peak_mb": round(peak / 1e6, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--entries", type=int, default=16000, help="entries stored (a 900-image evaluation stores ~15,700 answers)"
    )
    parser.add_argument("--shard-size", type=int, default=64, help="keys per shard (run.shard_size's default)")
    parser.add_argument("--runs", type=int, default=3, help="turns of each way")
    parser.add_argument(
        "--index-entries", type=int, default=150000, help="entries of the store whose index is built cold (0: skip)"
    )
    args = parser.parse_args()

    from storage import reuse_store
    from storage.fs import RunFS

    keys, values = answers(args.entries)
    figures: dict[str, list[float]] = {
        k: [] for k in ("write_item", "write_shard", "lookup_item", "lookup_shard", "regrouped")
    }
    files: dict[str, int] = {}
    same = True
    index_bytes = 0.0
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="reuse-packs-") as tmp:
            item_run, shard_run = RunFS.open(f"{tmp}/item"), RunFS.open(f"{tmp}/shard")
            reuse_store.forget_indexes()
            cpu, _ = timed(per_item_write, item_run, keys, values)
            figures["write_item"].append(cpu)
            reuse_store.forget_indexes()
            cpu, _ = timed(per_shard, shard_run, keys, values, args.shard_size)
            figures["write_shard"].append(cpu)
            files = {
                "item": files_under(Path(tmp) / "item" / "reuse"),
                "shard": files_under(Path(tmp) / "shard" / "reuse"),
            }

            reuse_store.forget_indexes()
            cpu, by_item = timed(per_item_lookup, item_run, keys)
            figures["lookup_item"].append(cpu)
            reuse_store.forget_indexes()
            cpu, by_shard = timed(per_shard, shard_run, keys, [None] * len(keys), args.shard_size)
            figures["lookup_shard"].append(cpu)
            reuse_store.forget_indexes()
            cpu, regrouped = timed(per_shard, shard_run, keys, [None] * len(keys), args.shard_size + 7)
            figures["regrouped"].append(cpu)
            index = reuse_store.ReuseStore.open(shard_run).index(COMPONENT)
            index_bytes = (index.digests.itemsize + index.where.itemsize) if len(index) else 0.0
            same = same and by_item == by_shard == regrouped == json.loads(json.dumps(values))
            shutil.rmtree(tmp, ignore_errors=True)
    med = {k: statistics.median(v) for k, v in figures.items()}
    index = index_at_size(args.index_entries, args.shard_size) if args.index_entries else {}
    print(f"{args.entries} evaluation answers, shards of {args.shard_size}, median of {args.runs} (CPU seconds):")
    print(
        f"  files written   per item {files['item']:8d}   per shard {files['shard']:8d}   ({files['item'] / max(1, files['shard']):.0f}x fewer)"
    )
    print(
        f"  write           per item {med['write_item']:8.3f}   per shard {med['write_shard']:8.3f}   ({med['write_item'] / med['write_shard']:.1f}x faster)"
    )
    print(
        f"  cold rerun      per item {med['lookup_item']:8.3f}   per shard {med['lookup_shard']:8.3f}   ({med['lookup_item'] / med['lookup_shard']:.1f}x faster)"
    )
    print(
        f"  regrouped rerun (shards of {args.shard_size + 7}, through the index, writing the new packs): {med['regrouped']:.3f}"
    )
    print(f"  same values: {same}; index: {index_bytes:.0f} bytes an entry")
    if index:
        print(
            f"  index of {index['index_entries']} entries: built in {index['index_build_cpu_s']:.2f} CPU-s, holds {index['index_mb']:.1f} MB"
            f" (peak {index['index_peak_mb']:.1f} MB while built)"
        )
    print(
        json.dumps(
            {
                "entries": args.entries,
                "shard_size": args.shard_size,
                "files_per_item_layout": files["item"],
                "files_per_shard_layout": files["shard"],
                "write_cpu_s_per_item": round(med["write_item"], 3),
                "write_cpu_s_per_shard": round(med["write_shard"], 3),
                "write_speedup": round(med["write_item"] / med["write_shard"], 1),
                "lookup_cpu_s_per_item": round(med["lookup_item"], 3),
                "lookup_cpu_s_per_shard": round(med["lookup_shard"], 3),
                "lookup_speedup": round(med["lookup_item"] / med["lookup_shard"], 1),
                "regrouped_lookup_cpu_s": round(med["regrouped"], 3),
                "index_bytes_per_entry": index_bytes,
                **index,
                "same_values": same,
            }
        )
    )
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
