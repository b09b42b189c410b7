"""Fault injection: a reuse store whose entries or images were changed behind the pipeline's back.

Before entries carried a checksum, entries edited into other valid JSON were reused silently
(8 artifacts differed from a fresh build) and single-bit flips left most entries valid but
altered. Now every entry and image is checked on read: a damaged one is computed again, the
build equals a fresh one byte for byte, and ``reactbench reuse stats`` counts the damage.
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
from typer.testing import CliRunner

from rebuild_helpers import assert_same_build, build, copy_run, demo_config

pytestmark = pytest.mark.slow
PER_COMPONENT = 10
REUSING = ["instruct", "edit", "qa", "review"]  # the stages a rebuild runs again, their items from the store


def entries(run: Path) -> dict[str, list[Path]]:
    """Entry files per component folder (sorted, so the choice of victims is repeatable)."""
    items = run / "reuse" / "items"
    return {d.name: sorted(d.rglob("*.json")) for d in sorted(items.iterdir())}


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
    for component, files in entries(run).items():
        for path in files[:PER_COMPONENT]:
            doc = json.loads(path.read_text())
            doc["value"] = edited(doc["value"])
            path.write_text(json.dumps(doc, sort_keys=True))  # the checksum left as it was
            victims += 1
        # an intact entry copied over another key's file: its checksum holds, its key does not
        shutil.copyfile(files[-1], files[-2])
        victims += 1
    summaries = rebuild(sample_dir, run)
    assert_same_build(run, demo_run)
    assert damaged_count(run) == victims
    assert sum(s.items_computed for s in summaries.values()) >= victims


def test_flipped_bits_are_detected(demo_run: Path, sample_dir: Path, tmp_path: Path) -> None:
    run = copy_run(demo_run, tmp_path / "run")
    rng = random.Random(26)
    changed = 0
    for files in entries(run).values():
        for path in rng.sample(files, PER_COMPONENT):
            data = bytearray(path.read_bytes())
            before = json.loads(data)
            i = rng.randrange(len(data))
            data[i] ^= 1 << rng.randrange(8)
            path.write_bytes(bytes(data))
            try:
                changed += json.loads(data) != before  # a flip may leave the same content (1e-05 -> 1E-05)
            except ValueError:
                changed += 1
    assert changed >= 3 * PER_COMPONENT
    rebuild(sample_dir, run)
    assert_same_build(run, demo_run)
    assert damaged_count(run) == changed


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
        assert hashlib.sha256((run / rel).read_bytes()).hexdigest() == Path(rel).name.split(".")[0], f"{rel} still damaged"
    assert_same_build(run, demo_run)
    # one count per entry that met a damaged image first (an edit's entry names its original and its result)
    assert damaged_count(run) >= len({e["edited_image"] for e in ok[:4]})
