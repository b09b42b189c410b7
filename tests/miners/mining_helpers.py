"""Helpers of the miner tests: tiny Visual Genome folders in the published shapes, a sample config."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tasks.engine.mine_config import MineConfig

ALL_TASKS = ["relational_erasure", "counterfactual_attribute", "alteration_tracing", "dense_counting"]

# Thresholds that suit the generated sample (the values configs/demo.yaml is told to use).
SAMPLE_MINE: dict[str, Any] = {
    "tasks": ALL_TASKS,
    "relational_erasure": {"n_min": 20, "theta": 0.2, "area_range": [0.003, 0.5], "images_per_pair": 6},
    "counterfactual_attribute": {"n_min": 20, "theta": 0.3, "area_range": [0.003, 0.8], "images_per_attribute": 2},
    "alteration_tracing": {"max_images": 24},
    "dense_counting": {"count_range": [5, 150], "bins": [5, 10, 25, 50, 100, 150], "per_bin": 3},
}


def mine_config(**changes: Any) -> MineConfig:
    """The sample config with changes given as ``relational_erasure__n_min=3``."""
    data = json.loads(json.dumps(SAMPLE_MINE))
    for dotted, value in changes.items():
        node = data
        keys = dotted.split("__")
        for k in keys[:-1]:
            node = node.setdefault(k, {})
        node[keys[-1]] = value
    return MineConfig.model_validate(data)


def write_vg(
    root: Path,
    images: list[dict[str, Any]],
    objects: list[dict[str, Any]],
    relationships: list[dict[str, Any]] | None = None,
    attributes: list[dict[str, Any]] | None = None,
    with_files: bool = True,
) -> str:
    """Write a tiny Visual Genome folder (the published JSON shapes) and blank JPEGs."""
    from PIL import Image

    root.mkdir(parents=True, exist_ok=True)
    (root / "image_data.json").write_text(json.dumps(images))
    (root / "objects.json").write_text(json.dumps(objects))
    (root / "relationships.json").write_text(json.dumps(relationships or []))
    (root / "attributes.json").write_text(json.dumps(attributes or []))
    if with_files:
        (root / "VG_100K").mkdir(exist_ok=True)
        for im in images:
            Image.new("RGB", (8, 8)).save(root / "VG_100K" / f"{im['image_id']}.jpg")
    return str(root)


def image(iid: int, w: int = 100, h: int = 100) -> dict[str, Any]:
    return {
        "image_id": iid,
        "url": f"https://example.org/VG_100K/{iid}.jpg",
        "width": w,
        "height": h,
        "coco_id": None,
        "flickr_id": None,
    }


def obj(
    oid: int, name: str, x: float = 10, y: float = 10, w: float = 20, h: float = 20, **extra: Any
) -> dict[str, Any]:
    return {"object_id": oid, "x": x, "y": y, "w": w, "h": h, "names": [name], "synsets": [], **extra}


def rel(rid: int, s: dict[str, Any], pred: str, o: dict[str, Any]) -> dict[str, Any]:
    return {"relationship_id": rid, "predicate": pred, "synsets": [], "subject": s, "object": o}
