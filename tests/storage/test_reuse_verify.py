"""Reuse-store entries and images are checked on every read (the fast, storage-level half of
``tests/faults/test_fault_reuse_tamper.py``): a damaged one is a counted miss, never a hit."""

from __future__ import annotations

import json
import uuid

import numpy as np

from storage.fs import RunFS
from storage.image_store import ImageStore
from storage.reuse_store import ReuseStore


def _run() -> RunFS:
    return RunFS.open(f"memory://reuse-verify-{uuid.uuid4().hex}")


def _entry_path(store: ReuseStore, key: str) -> str:
    return next(rel for rel, doc in store.entries() if doc.get("key") == key)


def test_an_intact_entry_is_served_and_an_edited_one_is_a_counted_miss() -> None:
    run = _run()
    store = ReuseStore.open(run)
    key, other = "a" * 64, "b" * 64
    store.put("instruct", key, {"text": "remove the dog"}, [], run)
    store.put("instruct", other, {"text": "remove the cat"}, [], run)
    hit = store.get("instruct", key, run)
    assert hit is not None and hit.value == {"text": "remove the dog"} and store.damaged == 0

    rel = _entry_path(store, key)
    doc = json.loads(store.root.read_text(rel))
    doc["value"]["text"] = "remove the cat"  # other valid JSON, checksum unchanged
    store.root.write_text_atomic(rel, json.dumps(doc))
    assert store.get("instruct", key, run) is None and store.damaged == 1
    records = store.quarantined()
    assert len(records) == 1 and "checksum" in records[0]["why"] and "remove the cat" in records[0]["text"]

    store.put("instruct", key, {"text": "remove the dog"}, [], run)  # the recomputed result overwrites it
    assert store.get("instruct", key, run).value == {"text": "remove the dog"}


def test_an_entry_under_another_key_is_refused() -> None:
    run = _run()
    store = ReuseStore.open(run)
    store.put("instruct", "a" * 64, 1, [], run)
    store.put("instruct", "b" * 64, 2, [], run)
    store.root.write_bytes_atomic(_entry_path(store, "b" * 64), store.root.read_bytes(_entry_path(store, "a" * 64)))
    assert store.get("instruct", "b" * 64, run) is None and "stored under" in store.quarantined()[0]["why"]


def test_a_damaged_image_is_a_miss_and_is_replaced_when_stored_again() -> None:
    run = _run()
    store = ReuseStore.open(run)
    pixels = np.full((8, 8, 3), 200, np.uint8)
    rel = ImageStore(run).put_array(pixels)
    store.put("edit:box", "c" * 64, {"edited_image": rel}, [rel], run)
    good = run.read_bytes(rel)
    bad = bytearray(good)
    bad[len(bad) // 2] ^= 1
    run.write_bytes_atomic(rel, bytes(bad))
    assert not ImageStore(run).intact(rel)
    assert store.get("edit:box", "c" * 64, run) is None and store.damaged == 1
    assert ImageStore(run).put_array(pixels) == rel and run.read_bytes(rel) == good  # not kept because it "exists"
    assert store.get("edit:box", "c" * 64, run) is not None


def test_on_s3_one_shard_reads_its_entries_in_one_round_with_the_same_checks(s3_run_url: str) -> None:
    """``ItemReuse.map`` on an object store reads the shard's entries together
    (``ReuseStore.read_entries``): hits, misses and a damaged entry come out as one by one."""
    from storage.reuse_store import Entry
    from tasks.engine.reuse import ItemReuse

    run = RunFS.open(s3_run_url)
    store = ReuseStore.open(run)
    keys = [f"{i:02d}" * 32 for i in range(6)]
    for i, key in enumerate(keys[:4]):
        store.put("eval-answer", key, {"text": f"stored {i}"}, [], run)
    rel = _entry_path(store, keys[3])
    doc = json.loads(run.sub("reuse").read_text(rel))
    doc["value"]["text"] = "tampered"
    run.sub("reuse").write_text_atomic(rel, json.dumps(doc))
    assert set(store.read_entries("eval-answer", keys)) == set(keys[:4])  # the absent two are left out

    computed: list[int] = []

    def compute(misses: list[int]) -> list[Entry]:
        computed.extend(misses)
        return [Entry({"text": f"fresh {i}"}) for i in misses]

    reuse = ItemReuse(ReuseStore.open(run), run, "eval", "eval-answer")
    values = reuse.map([*keys, None], compute)
    assert values == [{"text": "stored 0"}, {"text": "stored 1"}, {"text": "stored 2"}, {"text": "fresh 3"}, {"text": "fresh 4"},
                      {"text": "fresh 5"}, {"text": "fresh 6"}]
    assert computed == [3, 4, 5, 6] and reuse.counts.as_dict() == {"reused": 3, "computed": 4, "damaged": 1}
    again = ItemReuse(ReuseStore.open(run), run, "eval", "eval-answer")
    assert again.map(keys, compute) == [{"text": f"stored {i}"} for i in range(3)] + [{"text": f"fresh {i}"} for i in range(3, 6)]
    assert again.counts.as_dict() == {"reused": 6, "computed": 0}  # (damaged is listed only when non-zero)


def test_on_s3_entries_reads_every_entry_and_names_the_unreadable(s3_run_url: str, monkeypatch) -> None:
    """``entries`` (behind ``reuse stats`` and ``prune``) reads an object store's entries in
    rounds of ``ENTRY_BATCH``: every entry once, one that is not JSON as ``{}``."""
    from storage import reuse_store

    monkeypatch.setattr(reuse_store, "ENTRY_BATCH", 2)  # several rounds on a small store
    run = RunFS.open(s3_run_url)
    store = ReuseStore.open(run)
    keys = [f"{i:02d}" * 32 for i in range(5)]
    for i, key in enumerate(keys):
        store.put("instruct", key, {"n": i}, [], run)
    broken = _entry_path(store, keys[2])
    store.root.write_bytes_atomic(broken, b"not json")
    found = dict(store.entries())
    assert len(found) == 5 and found[broken] == {}
    assert sorted(doc["value"]["n"] for doc in found.values() if doc) == [0, 1, 3, 4]
    assert store.prune(keep_days=0, now=reuse_store._now() + reuse_store._dt.timedelta(days=1))["entries_removed"] == 5
    assert dict(store.entries()) == {}
