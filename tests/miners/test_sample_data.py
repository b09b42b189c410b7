"""The sample generator: published formats, known shapes, determinism."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
from PIL import Image

from miners.sample_data import generate_sample, load_truth, object_mask


def _digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*")) if p.is_file()}


def test_same_seed_same_bytes_and_other_seed_differs(sample_dir: Path, tmp_path: Path) -> None:
    again = tmp_path / "again"
    summary = generate_sample(again, seed=0)
    assert _digest(again) == _digest(sample_dir)
    assert summary["vg_images"] >= 150 and summary["fsc_images"] >= 20
    other = tmp_path / "other"
    generate_sample(other, seed=1)
    assert _digest(other)["visual_genome/objects.json"] != _digest(sample_dir)["visual_genome/objects.json"]


def test_visual_genome_files_have_the_published_shapes(sample_dir: Path) -> None:
    vg = sample_dir / "visual_genome"
    images = json.loads((vg / "image_data.json").read_text())
    assert len(images) >= 150
    assert set(images[0]) == {"image_id", "url", "width", "height", "coco_id", "flickr_id"}
    objects = json.loads((vg / "objects.json").read_text())
    o = objects[0]["objects"][0]
    assert {"object_id", "x", "y", "w", "h", "names", "synsets"} <= set(o) and isinstance(o["names"], list)
    rels = json.loads((vg / "relationships.json").read_text())
    ends = [r[k] for e in rels for r in e["relationships"] for k in ("subject", "object")]
    assert any("name" in e for e in ends) and any("names" in e for e in ends)
    assert all({"relationship_id", "predicate", "synsets", "subject", "object"} <= set(r) for e in rels for r in e["relationships"])
    attrs = [a for e in json.loads((vg / "attributes.json").read_text()) for a in e["attributes"]]
    assert any("attributes" not in a for a in attrs)
    flat = [t for a in attrs for t in a.get("attributes", [])]
    assert any(t != t.strip() for t in flat) and any(t != t.lower() for t in flat)
    assert max(len(e["objects"]) for e in objects) > 15
    folders = {p.parent.name for p in vg.rglob("*.jpg")}
    assert folders == {"VG_100K", "VG_100K_2"}
    assert len(list(vg.rglob("*.jpg"))) >= 150


def test_truth_masks_match_the_drawn_pixels_and_boxes(sample_dir: Path) -> None:
    truth = load_truth(sample_dir)
    objects = {o["object_id"]: o for e in json.loads((sample_dir / "visual_genome" / "objects.json").read_text()) for o in e["objects"]}
    checked = 0
    for iid in ("1", "2", "3", "6"):
        img = truth["images"][iid]
        pixels = np.asarray(Image.open(sample_dir / img["file"]).convert("RGB"), dtype=np.int32)
        assert pixels.shape[:2] == (img["height"], img["width"])
        for oid, t in img["objects"].items():
            mask = object_mask(truth, iid, oid, visible_only=True)
            if mask.sum() < 30:
                continue
            core = mask & np.roll(mask, 2, 0) & np.roll(mask, -2, 0) & np.roll(mask, 2, 1) & np.roll(mask, -2, 1)  # away from JPEG edges
            if core.sum() < 10:
                continue
            diff = np.abs(pixels[core] - np.array(t["rgb"])).mean()
            assert diff < 12, (iid, oid, t["name"], diff)
            full = object_mask(truth, iid, oid)
            ys, xs = np.nonzero(full)
            if int(oid) not in objects:  # drawn over too far to be annotated (test below)
                continue
            o = objects[int(oid)]
            assert [o["x"], o["y"], o["w"], o["h"]] == [xs.min(), ys.min(), xs.max() - xs.min() + 1, ys.max() - ys.min() + 1]
            checked += 1
    assert checked >= 10


def test_only_objects_that_can_be_seen_are_annotated(sample_dir: Path) -> None:
    """Annotators label what they see: a drawn object mostly covered by later ones stays in the
    truth (its pixels are in the picture) but is in no annotation file, relations included."""
    from miners.sample_data import MIN_VISIBLE

    truth = load_truth(sample_dir)
    vg = sample_dir / "visual_genome"
    annotated = {o["object_id"] for e in json.loads((vg / "objects.json").read_text()) for o in e["objects"]}
    ends = {r[k]["object_id"] for e in json.loads((vg / "relationships.json").read_text()) for r in e["relationships"] for k in ("subject", "object")}
    hidden = seen = 0
    for iid, img in truth["images"].items():
        for oid, _ in img["objects"].items():
            full = object_mask(truth, iid, oid)
            shown = object_mask(truth, iid, oid, visible_only=True).sum() / max(1, full.sum())
            if shown < MIN_VISIBLE:
                hidden += 1
                assert int(oid) not in annotated and int(oid) not in ends, (iid, oid, shown)
            else:
                seen += 1
                assert int(oid) in annotated, (iid, oid, shown)
    assert hidden >= 5 and seen > 1000, (hidden, seen)


def test_fsc147_files_and_known_counts(sample_dir: Path) -> None:
    fsc = sample_dir / "fsc147"
    ann = json.loads((fsc / "annotation_FSC147_384.json").read_text())
    truth = load_truth(sample_dir)["fsc147"]
    for name, a in ann.items():
        assert {"H", "W", "points", "box_examples_coordinates", "ratio_h", "ratio_w", "img_path"} <= set(a)
        assert len(a["points"]) == truth[name]["count"]
        assert all(len(box) == 4 for box in a["box_examples_coordinates"])
    lines = (fsc / "ImageClasses_FSC147.txt").read_text().splitlines()
    assert all(len(line.split("\t")) == 2 for line in lines)
    split = json.loads((fsc / "Train_Test_Val_FSC_147.json").read_text())
    assert {"train", "val", "test"} <= set(split)
    assert sorted(split["train"] + split["val"] + split["test"]) == sorted(ann)
    present = {p.name for p in (fsc / "images_384_VarV2").glob("*.jpg")}
    assert len(present) == len(ann) - 1  # one image deliberately missing (a reject path)
    some = sorted(present)[0]
    assert Image.open(fsc / "images_384_VarV2" / some).size == (ann[some]["W"], ann[some]["H"])
