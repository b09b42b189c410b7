"""Fault injection: a reuse store whose entries or images were changed behind the pipeline's back.

Before entries carried a checksum, entries edited into other valid JSON were reused silently
(8 artifacts differed from a fresh build) and single-bit flips left most entries valid but
altered. Now every entry and image is checked on read: a damaged one is computed again, the
build equals a fresh one byte for byte, and ``reactbench reuse stats`` counts the damage. A
shard's entries share one pack file: damage to one line, or a pack cut short, costs only the
entries it touched.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from rebuild_helpers import assert_same_build, build, copy_run, demo_config
from typer.testing import CliRunner

pytestmark = pytest.mark.slow
PER_COMPONENT = 10
REUSING = ["instruct", "edit", "qa", "review"]  # the stages a rebuild runs again, their items from the store


def entries(run: Path) -> dict[str, list[tuple[Path, str]]]:
    """(pack, key) of every entry per component folder, sorted, so the choice of victims is repeatable."""
    packs = run / "reuse" / "packs"
    out: dict[str, list[tuple[Path, str]]] = {}
    for folder in sorted(packs.iterdir()):
        out[folder.name] = sorted(
            (path, line.split(" ", 1)[0])
            for path in folder.rglob("*.pack")
            for line in path.read_text().splitlines()[1:]
        )
    return out


def change_line(path: Path, key: str, change: Any) -> None:
    """Replace the JSON of ``key``'s line in its pack with ``change(json bytes)``."""
    lines = path.read_bytes().split(b"\n")
    i = next(i for i, line in enumerate(lines) if line.startswith(key.encode() + b" "))
    lines[i] = key.encode() + b" " + change(lines[i].partition(b" ")[2])
    path.write_bytes(b"\n".join(lines))


def line_of(path: Path, key: str) -> bytes:
    return next(
        line.partition(b" ")[2] for line in path.read_bytes().split(b"\n") if line.startswith(key.encode() + b" ")
    )


def rebuild(sample_dir: Path, run: Path) -> dict[str, Any]:
    """Reset the reusing stages (as a changed key would) and build: their items come from the store."""
    for stage in REUSING:
        shutil.rmtree(run / stage)
    return build(demo_config(sample_dir), run)


def damaged_count(run: Path) -> int:
    from flows.cli import app

    out = CliRunner().invoke(app, ["reuse", "stats", "--run-dir", str(run)])
    assert out.exit_code == 0, out.output
    found = re.search(r"failed verification \(recomputed\): (\d+)", out.output)
    assert found, out.output
    return int(found.group(1))


def edited(value: Any) -> Any:
    """Other valid JSON of the same shape: the first string (or number) leaf changed."""
    if isinstance(value, dict):
        for k in sorted(value):
            new = edited(value[k])
            if new != value[k]:
                return {**value, k: new}
    if isinstance(value, list):
        for i, v in enumerate(value):
            new = edited(v)
            if new != v:
                return [*value[:i], new, *value[i + 1 :]]
    if isinstance(value, str):
        return value + " (edited)"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value + 1
    return value


def test_entries_edited_into_other_valid_json_are_recomputed(demo_run: Path, sample_dir: Path, tmp_path: Path) -> None:
    run = copy_run(demo_run, tmp_path / "run")
    victims = 0
    for found in entries(run).values():
        for path, key in found[:PER_COMPONENT]:

            def edit(raw: bytes) -> bytes:
                doc = json.loads(raw)
                doc["value"] = edited(doc["value"])
                return json.dumps(doc, sort_keys=True).encode()  # the checksum left as it was

            change_line(path, key, edit)
            victims += 1
        # an intact entry copied over another key's line: its checksum holds, its key does not
        (source, source_key), (target, target_key) = found[-1], found[-2]
        intact = line_of(source, source_key)
        change_line(target, target_key, lambda _, intact=intact: intact)
        victims += 1
    summaries = rebuild(sample_dir, run)
    assert_same_build(run, demo_run)
    assert damaged_count(run) == victims
    assert sum(s.items_computed for s in summaries.values()) >= victims


def test_flipped_bits_are_detected(demo_run: Path, sample_dir: Path, tmp_path: Path) -> None:
    run = copy_run(demo_run, tmp_path / "run")
    rng = random.Random(26)
    changed = 0
    for found in entries(run).values():
        for path, key in rng.sample(found, PER_COMPONENT):
            data = bytearray(line_of(path, key))
            before = json.loads(data)
            i = rng.randrange(len(data))
            data[i] ^= 1 << rng.randrange(8)
            change_line(path, key, lambda _, data=data: bytes(data))
            try:
                changed += json.loads(data) != before  # a flip may leave the same content (1e-05 -> 1E-05)
            except ValueError:
                changed += 1
    assert changed >= 3 * PER_COMPONENT
    rebuild(sample_dir, run)
    assert_same_build(run, demo_run)
    assert damaged_count(run) == changed


def test_a_truncated_pack_loses_only_its_missing_entries(demo_run: Path, sample_dir: Path, tmp_path: Path) -> None:
    """A pack cut short (a copy interrupted, a full disk outside the store's atomic writes):
    the entries it lacks are recomputed and counted, its intact lines are still served."""
    run = copy_run(demo_run, tmp_path / "run")
    found = entries(run)
    path = max((p for p, _ in found["instruct"]), key=lambda p: len(p.read_text().splitlines()))
    lines = path.read_bytes().split(b"\n")
    held = len(lines) - 2  # the header and the empty end
    assert held >= 3
    path.write_bytes(
        b"\n".join(lines[:-3]) + b"\n" + lines[-3][: len(lines[-3]) // 2]
    )  # the last line cut, the one before it half gone
    summaries = rebuild(sample_dir, run)
    assert_same_build(run, demo_run)
    assert damaged_count(run) == 2
    assert summaries["instruct"].items_computed == 2 and summaries["instruct"].items_reused > 0


def test_corrupted_images_are_replaced(demo_run: Path, sample_dir: Path, tmp_path: Path) -> None:
    from storage import schemas
    from storage.fs import RunFS
    from storage.stage_store import read_artifact

    run = copy_run(demo_run, tmp_path / "run")
    edits = read_artifact(RunFS.open(str(run)), "edit", "edits", schemas.EDITS).to_pylist()
    ok = sorted((e for e in edits if e["status"] == "ok" and e["editor"] != "none"), key=lambda e: e["id"])
    victims = sorted({e["edited_image"] for e in ok[:4]} | {ok[0]["original_image"]})
    for rel in victims:
        data = bytearray((run / rel).read_bytes())
        data[len(data) // 2] ^= 0x10
        (run / rel).write_bytes(bytes(data))
    rebuild(sample_dir, run)
    for rel in victims:
        assert hashlib.sha256((run / rel).read_bytes()).hexdigest() == Path(rel).name.split(".")[0], (
            f"{rel} still damaged"
        )
    assert_same_build(run, demo_run)
    # one count per entry that met a damaged image first (an edit's entry names its original and its result)
    assert damaged_count(run) >= len({e["edited_image"] for e in ok[:4]})
