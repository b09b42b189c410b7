"""Reuse-store entries and images are checked on every read (the fast, storage-level half of
``tests/faults/test_fault_reuse_tamper.py``): a damaged one is a counted miss, never a hit.
A shard's entries are one pack: a damaged line, a line under another key or a pack cut short
loses only those entries, never their intact neighbours."""

from __future__ import annotations

import datetime as dt
import json
import threading
import uuid
from typing import Any

import numpy as np
import pytest

from storage import reuse_store
from storage.fs import RunFS
from storage.image_store import ImageStore
from storage.reuse_store import Entry, ReuseStore, entry_checksum
from tasks.engine.reuse import ItemReuse


def _run(local: Any = None) -> RunFS:
    """A run directory in memory, or in the local folder ``local`` (temporary files and renames)."""
    return RunFS.open(str(local / "run") if local is not None else f"memory://reuse-verify-{uuid.uuid4().hex}")


def _keys(n: int, start: int = 0) -> list[str]:
    return [f"{i:02x}" * 32 for i in range(start, start + n)]


def _map(
    run: RunFS, keys: list[Any], *, keep: Any = lambda i: True, tag: str = "fresh", enabled: bool = True
) -> tuple[list[Any], list[int], ItemReuse]:
    """One shard through ``ItemReuse.map`` (answers as an evaluation stores them): values, the computed indices, the view."""
    computed: list[int] = []

    def compute(misses: list[int]) -> list[Entry]:
        computed.extend(misses)
        return [Entry({"text": f"{tag} {i}"}, keep=keep(i)) for i in misses]

    reuse = ItemReuse(ReuseStore.open(run), run, "eval", "eval-answer", enabled=enabled)
    return reuse.map(keys, compute), computed, reuse


def _packs(run: RunFS) -> list[str]:
    store = ReuseStore.open(run)
    return sorted(p for p in store.root.walk_files(reuse_store.PACKS_DIR) if p.endswith(".pack"))


def _edit_pack(run: RunFS, change: Any) -> None:
    """Rewrite the store's only pack: ``change(lines)`` gets and returns its lines (header first)."""
    (path,) = _packs(run)
    lines = run.fs.cat_file(path).split(b"\n")
    run.fs.pipe_file(path, b"\n".join(change(lines)))


def _line_of(lines: list[bytes], key: str) -> int:
    return next(i for i, line in enumerate(lines) if line.startswith(key.encode() + b" "))


def test_an_edited_line_is_a_counted_miss_and_its_neighbours_are_served() -> None:
    run = _run()
    keys = _keys(3)
    _map(run, keys, tag="stored")
    assert len(_packs(run)) == 1  # three entries, one file

    def edit(lines: list[bytes]) -> list[bytes]:
        i = _line_of(lines, keys[1])
        key, _, raw = lines[i].partition(b" ")
        doc = json.loads(raw)
        doc["value"]["text"] = "remove the cat"  # other valid JSON, checksum unchanged
        lines[i] = key + b" " + json.dumps(doc).encode()
        return lines

    _edit_pack(run, edit)
    values, computed, reuse = _map(run, keys)
    assert values == [{"text": "stored 0"}, {"text": "fresh 1"}, {"text": "stored 2"}] and computed == [1]
    assert reuse.counts.as_dict() == {"reused": 2, "computed": 1, "damaged": 1}
    records = reuse.store.quarantined()
    assert len(records) == 1 and "checksum" in records[0]["why"] and "remove the cat" in records[0]["text"]
    assert records[0]["entry"].endswith(f".pack#{keys[1]}")
    # the recomputed entry and the intact ones are one pack again; the damaged pack is gone
    assert len(_packs(run)) == 1
    values, computed, reuse = _map(run, keys)
    assert (
        values == [{"text": "stored 0"}, {"text": "fresh 1"}, {"text": "stored 2"}]
        and computed == []
        and reuse.store.damaged == 0
    )


def test_a_line_under_another_key_is_refused() -> None:
    run = _run()
    a, b = _keys(2)
    _map(run, [a, b], tag="stored")

    def swap(lines: list[bytes]) -> list[bytes]:
        raw_a = lines[_line_of(lines, a)].partition(b" ")[2]
        lines[_line_of(lines, b)] = b.encode() + b" " + raw_a  # a's intact entry, stored under b
        return lines

    _edit_pack(run, swap)
    values, computed, reuse = _map(run, [a, b])
    assert values == [{"text": "stored 0"}, {"text": "fresh 1"}] and computed == [1]
    assert "stored under" in reuse.store.quarantined()[0]["why"]


def test_a_truncated_pack_loses_only_the_lines_it_lacks() -> None:
    run = _run()
    keys = _keys(5)
    _map(run, keys, tag="stored")
    (path,) = _packs(run)
    raw = run.fs.cat_file(path)
    cut = raw.index(b"\n" + keys[2].encode() + b" ") + 100  # in the middle of the third entry's line
    run.fs.pipe_file(path, raw[:cut])
    values, computed, reuse = _map(run, keys)
    assert computed == [2, 3, 4] and values[:2] == [{"text": "stored 0"}, {"text": "stored 1"}]
    assert reuse.counts.damaged == 3
    whys = sorted(r["why"] for r in reuse.store.quarantined())
    assert whys[0].startswith("listed in its pack's header but has no line") and whys[2].startswith("not JSON"), whys
    again, computed, reuse = _map(run, keys)
    assert again == values and computed == [] and reuse.store.damaged == 0


def test_a_pack_cut_inside_its_header_is_recorded_and_recomputed() -> None:
    run = _run()
    keys = _keys(3)
    _map(run, keys, tag="stored")
    (path,) = _packs(run)
    run.fs.pipe_file(path, run.fs.cat_file(path)[:40])
    values, computed, reuse = _map(run, keys)
    assert computed == [0, 1, 2] and reuse.counts.damaged == 1
    assert "header is unreadable" in reuse.store.quarantined()[0]["why"]
    again, computed, _ = _map(run, keys)
    assert again == values and computed == []


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


@pytest.mark.parametrize("shared_on", ["local", "s3"])
def test_an_image_from_a_shared_store_is_hash_checked_before_it_is_copied_into_the_run(
    shared_on: str, tmp_path: Any, request: pytest.FixtureRequest
) -> None:
    """``run.reuse_dir`` (a store several runs share, local or S3): an image whose bytes no longer
    hash to its name is a counted miss and never lands in the run reading it; intact, it is copied
    byte for byte (issue 31: only the run's own store was tamper-tested)."""
    shared_url = (
        str(tmp_path / "shared")
        if shared_on == "local"
        else request.getfixturevalue("s3_run_url").rsplit("/", 1)[0] + "/shared"
    )
    first, second = RunFS.open(str(tmp_path / "a")), RunFS.open(str(tmp_path / "b"))
    rel = ImageStore(first).put_array(np.full((8, 8, 3), 90, np.uint8))
    ReuseStore.open(first, shared_url).put("edit:box", "d" * 64, {"edited_image": rel}, [rel], first)
    shared = RunFS.open(shared_url)
    good = shared.read_bytes(rel)
    assert good == first.read_bytes(rel)
    bad = bytearray(good)
    bad[len(bad) // 2] ^= 1  # same name, same size, other bytes
    shared.fs.pipe_file(shared.path(rel), bytes(bad))

    reader = ReuseStore.open(second, shared_url)
    assert reader.get("edit:box", "d" * 64, second) is None and reader.damaged == 1
    assert not second.exists(rel), "an image that fails its hash was copied into the run"
    (record,) = reader.quarantined()
    assert "do not hash to its name" in record["why"] and rel in record["why"]

    second.write_bytes_atomic(rel, bytes(bad))  # the run's own copy damaged too: replaced from the intact shared one
    shared.fs.pipe_file(shared.path(rel), good)
    again = ReuseStore.open(second, shared_url)
    assert again.get("edit:box", "d" * 64, second) is not None and again.damaged == 0
    assert second.read_bytes(rel) == good


@pytest.mark.parametrize("disk", [False, True], ids=["memory", "local"])
def test_a_rerun_with_the_same_grouping_never_builds_the_index(
    disk: bool, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The common rerun reads its shard's folder: its cost does not depend on the store's size.
    A regrouped shard finds its entries through the index, then has a folder of its own."""
    run = _run(tmp_path if disk else None)
    keys = _keys(8)
    _map(run, keys[:4], tag="stored", keep=lambda i: i != 3)  # the last one transient: not stored
    _map(run, keys[4:], tag="stored")
    reuse_store.forget_indexes()
    built: list[str] = []
    real = ReuseStore._build_index

    def counting(self: ReuseStore, component: str) -> Any:
        built.append(component)
        return real(self, component)

    monkeypatch.setattr(ReuseStore, "_build_index", counting)
    values, computed, _ = _map(run, keys[:4])
    assert computed == [3] and values[:3] == [{"text": f"stored {i}"} for i in range(3)] and built == []

    values, computed, _ = _map(run, keys[2:6])  # another grouping: found through the index
    assert computed == [] and built == ["eval-answer"]
    assert values == [{"text": "stored 2"}, {"text": "fresh 3"}, {"text": "stored 0"}, {"text": "stored 1"}]
    reuse_store.forget_indexes()
    again, computed, _ = _map(run, keys[2:6])
    assert again == values and computed == [] and built == ["eval-answer"]  # its own folder now


@pytest.mark.parametrize("disk", [False, True], ids=["memory", "local"])
def test_a_store_of_the_previous_layout_is_read_and_moves_into_a_pack(disk: bool, tmp_path: Any) -> None:
    run = _run(tmp_path if disk else None)
    store = ReuseStore.open(run)
    keys = _keys(3)
    for i, key in enumerate(keys):  # as the previous layout wrote them: one sealed file per entry
        doc = {
            "component": "eval-answer",
            "key": key,
            "value": {"text": f"old {i}"},
            "images": [],
            "created_at": "2026-01-01T00:00:00+00:00",
            "used_at": "2026-01-01T00:00:00+00:00",
        }
        store.root.write_text_atomic(
            store.legacy_rel("eval-answer", key), json.dumps({**doc, "sha256": entry_checksum(doc)})
        )
    damaged = json.loads(store.root.read_text(store.legacy_rel("eval-answer", keys[2])))
    damaged["value"]["text"] = "edited"
    store.root.write_text_atomic(store.legacy_rel("eval-answer", keys[2]), json.dumps(damaged))
    assert store.layout() == {"packs": 0, "entry_files": 3}
    values, computed, reuse = _map(run, keys)
    assert (
        values == [{"text": "old 0"}, {"text": "old 1"}, {"text": "fresh 2"}]
        and computed == [2]
        and reuse.counts.damaged == 1
    )
    assert store.layout() == {"packs": 1, "entry_files": 0}
    assert _map(run, keys)[:2] == (values, [])


def test_two_writers_of_one_shard_write_two_files_and_a_reader_joins_them() -> None:
    run = _run()
    keys = _keys(6)
    barrier = threading.Barrier(2)

    def writer(tag: str) -> None:
        barrier.wait()
        _map(run, keys, tag=tag, enabled=False)  # --force: nothing read, everything written

    threads = [threading.Thread(target=writer, args=(t,)) for t in ("one", "two")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(_packs(run)) == 2
    values, computed, reuse = _map(run, keys)
    assert computed == [] and len({v["text"].split()[0] for v in values}) == 1  # one pack decides, whole
    assert len(_packs(run)) == 1 and reuse.store.damaged == 0


def test_used_at_is_restamped_only_when_due(monkeypatch: pytest.MonkeyPatch) -> None:
    run = _run()
    keys = _keys(4)
    _map(run, keys, tag="stored")
    (first,) = _packs(run)
    _map(run, keys)
    assert _packs(run) == [first]  # a hit within TOUCH_AFTER is a read, not a write
    later = reuse_store._now() + reuse_store.TOUCH_AFTER + dt.timedelta(minutes=1)
    monkeypatch.setattr(reuse_store, "_now", lambda: later)
    values, computed, _ = _map(run, keys)
    (second,) = _packs(run)
    assert second != first and computed == [] and values == [{"text": f"stored {i}"} for i in range(4)]
    docs = [doc for _, doc in ReuseStore.open(run).entries()]
    assert {d["used_at"] for d in docs} == {later.isoformat(timespec="seconds")}


def test_prune_drops_stale_entries_and_keeps_a_packs_fresh_ones() -> None:
    run = _run()
    store = ReuseStore.open(run)
    keys = _keys(4)
    _map(run, keys, tag="stored")
    _map(run, _keys(2, start=10), tag="other")
    old = (reuse_store._now() - dt.timedelta(days=5)).isoformat(timespec="seconds")
    for path in _packs(run):
        pack = reuse_store.Pack.parse(path, run.fs.cat_file(path))
        docs = {k: json.loads(raw) for k, raw in pack.lines.items()}
        for key, doc in docs.items():
            if key in keys[:2] or key not in keys:  # half of one pack, all of the other
                doc["used_at"] = old
                doc["sha256"] = entry_checksum(doc)
        run.fs.pipe_file(
            path, reuse_store.encode_pack("eval-answer", {k: json.dumps(d, sort_keys=True) for k, d in docs.items()})
        )
    before = _packs(run)
    counts = store.prune(keep_days=2)
    assert (counts["entries_removed"], counts["entries_kept"]) == (4, 2)
    (after,) = _packs(run)
    assert after not in before and any(
        after.rsplit("/", 1)[1][:22] == b.rsplit("/", 1)[1][:22] for b in before
    )  # same time stamp
    assert sorted(doc["key"] for _, doc in store.entries()) == keys[2:]
    values, computed, _ = _map(run, keys)
    assert computed == [0, 1] and values[2:] == [{"text": "stored 2"}, {"text": "stored 3"}]


def test_on_s3_one_shard_reads_its_entries_in_one_round_with_the_same_checks(
    s3_run_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``ItemReuse.map`` on an object store lists its shard's folder and reads its pack in one
    round: hits, misses and a damaged entry come out as one by one."""
    run = RunFS.open(s3_run_url)
    keys = _keys(6)
    _map(run, keys, tag="stored", keep=lambda i: i < 4)
    (path,) = _packs(run)
    lines = run.fs.cat_file(path).split(b"\n")
    i = _line_of(lines, keys[3])
    key, _, raw = lines[i].partition(b" ")
    doc = json.loads(raw)
    doc["value"]["text"] = "tampered"
    lines[i] = key + b" " + json.dumps(doc).encode()
    run.fs.pipe_file(path, b"\n".join(lines))

    rounds: list[list[str]] = []
    real = RunFS.read_many

    def spy(self: RunFS, rels: list[str]) -> dict[str, bytes]:
        rounds.append(rels)
        return real(self, rels)

    monkeypatch.setattr(RunFS, "read_many", spy)
    values, computed, reuse = _map(run, [*keys, None])
    assert values == [
        {"text": "stored 0"},
        {"text": "stored 1"},
        {"text": "stored 2"},
        {"text": "fresh 3"},
        {"text": "fresh 4"},
        {"text": "fresh 5"},
        {"text": "fresh 6"},
    ]
    assert computed == [3, 4, 5, 6] and reuse.counts.as_dict() == {"reused": 3, "computed": 4, "damaged": 1}
    assert len(rounds) == 1 and len(rounds[0]) == 1  # one round, one file
    again, computed, reuse = _map(run, keys)
    assert again == values[:6] and computed == [] and reuse.counts.as_dict() == {"reused": 6, "computed": 0}
    assert len(_packs(run)) == 1

    reuse_store.forget_indexes()
    rounds.clear()
    regrouped, computed, _ = _map(run, keys[4:])  # the index on S3: pack headers read by range
    assert regrouped == values[4:6] and computed == [] and len(rounds) == 1


def test_on_s3_entries_reads_every_entry_and_names_the_unreadable(
    s3_run_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``entries`` (behind ``reuse stats`` and ``prune``) reads an object store's packs in rounds
    of ``ENTRY_BATCH``: every entry once, one that is not JSON as ``{}``."""
    monkeypatch.setattr(reuse_store, "ENTRY_BATCH", 2)  # several rounds on a small store
    run = RunFS.open(s3_run_url)
    store = ReuseStore.open(run)
    keys = _keys(5)
    for i, key in enumerate(keys):
        store.put("instruct", key, {"n": i}, [], run)
    broken = next(rel for rel, doc in store.entries() if doc.get("key") == keys[2])
    path = store.root.path(broken.split("#")[0])
    store.root.fs.pipe_file(path, store.root.fs.cat_file(path).split(b"\n")[0] + f"\n{keys[2]} not json\n".encode())
    found = dict(store.entries())
    assert len(found) == 5 and found[broken] == {}
    assert sorted(doc["value"]["n"] for doc in found.values() if doc) == [0, 1, 3, 4]
    assert store.prune(keep_days=0, now=reuse_store._now() + dt.timedelta(days=1))["entries_removed"] == 5
    assert dict(store.entries()) == {}


def test_the_index_reads_a_header_longer_than_its_window(monkeypatch: pytest.MonkeyPatch) -> None:
    run = _run()
    keys = _keys(6)
    _map(run, keys, tag="stored")
    reuse_store.forget_indexes()
    monkeypatch.setattr(reuse_store, "HEAD_BYTES", 64)  # the header of 6 keys is ~450 bytes: read whole
    values, computed, _ = _map(run, keys[1:4])
    assert computed == [] and values == [{"text": f"stored {i}"} for i in range(1, 4)]
