"""Bad input becomes reject rows with reason codes; the rest is mined."""

from __future__ import annotations

from pathlib import Path

import pytest
from mining_helpers import image, obj, rel, write_vg

from miners.jsonstream import JSONStreamError
from miners.mine import mine_visual_genome
from tasks.engine.mine_config import MineConfig


def test_sample_defects_are_rejected_with_reasons(mined_vg) -> None:
    reasons = {(r["reason"], r["id"]) for r in mined_vg.rejects}
    assert ("unknown_image_id", "vg:objects:999999") in reasons
    assert any(reason == "box_outside_image" and rid.startswith("vg:objects:7:") for reason, rid in reasons)
    assert any(reason == "duplicate_object_id" and rid.startswith("vg:objects:11:") for reason, rid in reasons)
    assert any(reason == "malformed_entry" and rid.startswith("vg:objects:17:") for reason, rid in reasons)
    assert all(r["stage"] == "mine" and r["detail"] for r in mined_vg.rejects)


def test_each_kind_of_bad_entry(tmp_path: Path) -> None:
    good = [obj(1, "cup"), obj(2, "table", w=60, h=30)]
    objects = [
        {
            "image_id": 1,
            "objects": good
            + [
                obj(3, "cup", x=95, w=30),
                obj(1, "cup"),
                obj(4, "cup", w=0),
                {"object_id": 5, "x": 1, "y": 1, "w": 2, "h": 2},
            ],
        },
        {
            "image_id": 2,
            "objects": [
                obj(21, "cup"),
                {"object_id": 22, "names": ["cup"], "x": "left", "y": 1, "w": 2, "h": 2},
                {**obj(23, "cup"), "object_id": None},
            ],
        },
        {"image_id": 77, "objects": [obj(71, "cup")]},
        {"image_id": 3, "objects": [obj(31, "cup"), obj(32, "table", w=60, h=30)]},
    ]
    rels = [
        {"image_id": 1, "relationships": [rel(9, good[0], "on", good[1])]},
        {"image_id": 3, "relationships": [rel(10, obj(31, "cup"), "on", obj(32, "table", w=60, h=30))]},
    ]
    root = write_vg(tmp_path / "vg", [image(1), image(2), image(3)], objects, rels)
    (tmp_path / "vg" / "VG_100K" / "3.jpg").unlink()
    cfg = MineConfig(
        tasks=("relational_erasure",), relational_erasure={"n_min": 1, "theta": 0.1, "images_per_pair": 5}
    )
    res = mine_visual_genome(root, cfg, seed=0)
    got = {(r["id"], r["reason"]) for r in res.rejects}
    assert {
        ("vg:objects:1:3", "box_outside_image"),
        ("vg:objects:1:1", "duplicate_object_id"),
        ("vg:objects:1:4", "box_empty"),
        ("vg:objects:1:5", "malformed_entry"),  # no name
        ("vg:objects:2:#1", "malformed_entry"),  # x is not a number: the rest of image 2 is kept
        ("vg:objects:77", "unknown_image_id"),
        ("vg:objects:2:-1", "malformed_entry"),  # "object_id": null
        ("vg:image:3", "missing_image"),
    } <= got
    assert [c["image_id"] for c in res.candidates] == ["1"]  # image 3 links the pair but has no file
    assert res.summary["objects"] == 10  # rows read; image 2's unparseable object is only a reject
    assert res.summary["valid_objects"] == 5  # 1, 2, 21, 31, 32


def test_truncated_vg_file_is_a_clear_error(tmp_path: Path) -> None:
    root = write_vg(
        tmp_path / "vg",
        [image(i) for i in range(1, 40)],
        [{"image_id": i, "objects": [obj(i * 10, "cup")]} for i in range(1, 40)],
    )
    path = tmp_path / "vg" / "objects.json"
    data = path.read_bytes()
    path.write_bytes(data[:-50])
    with pytest.raises(JSONStreamError) as err:
        mine_visual_genome(root, MineConfig(tasks=("alteration_tracing",)), seed=0)
    assert (
        "objects.json" in str(err.value)
        and f"byte {len(data) - 50}" in str(err.value)
        and "truncated" in str(err.value)
    )


def test_missing_source_file_names_it(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="image_data.json"):
        mine_visual_genome(str(tmp_path), MineConfig(), seed=0)
