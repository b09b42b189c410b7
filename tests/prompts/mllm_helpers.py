"""Hand-built candidate rows for all four tasks (columns of storage.schemas.CANDIDATES) and a
finished ``mine`` stage to run the instruct stage on."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from storage.fs import RunFS
from storage.hashing import stable_id
from storage.schemas import CANDIDATES
from storage.stage_store import ShardResult, StageStore

W, H = 64, 48


def write_image(folder: Path, name: str, seed: int, fmt: str = "PNG") -> str:
    rng = np.random.default_rng(seed)
    arr = rng.integers(0, 255, size=(H, W, 3), dtype=np.uint8)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    Image.fromarray(arr).save(path, format=fmt)
    return str(path)


def png_bytes(seed: int = 0, size: tuple[int, int] = (32, 32)) -> bytes:
    arr = np.random.default_rng(seed).integers(0, 255, size=(size[1], size[0], 3), dtype=np.uint8)
    buf = io.BytesIO()
    Image.fromarray(arr).save(buf, format="PNG")
    return buf.getvalue()


def _objs(*items: tuple[int, str, list[float]]) -> str:
    return json.dumps([{"id": i, "name": n, "box": b, "attributes": []} for i, n, b in items])


def candidate(task: str, image_path: str, **fields: Any) -> dict[str, Any]:
    row = {name: None for name in CANDIDATES.schema.names}
    row.update(
        task=task,
        variant="targeted",
        source="fsc147" if task == "dense_counting" else "visual_genome",
        image_id=Path(image_path).stem,
        image_path=image_path,
        width=W,
        height=H,
    )
    row.update(fields)
    row["id"] = stable_id(
        task,
        row["image_id"],
        row.get("target_object_id"),
        row.get("attribute"),
        row.get("edit_type"),
        row.get("class_name"),
    )
    return row


SCENE = _objs(
    (1, "skateboard", [10, 30, 30, 8]),
    (2, "wheel", [12, 36, 6, 4]),
    (3, "boy", [14, 2, 14, 28]),
    (4, "wall", [40, 0, 24, 20]),
    (5, "tree", [50, 20, 12, 26]),
    (6, "car", [0, 0, 10, 8]),
    (7, "sign", [44, 38, 10, 8]),
)


def re_candidate(image_path: str, **kw: Any) -> dict[str, Any]:
    base = dict(
        target_object_id=2,
        target_name="wheel",
        target_box=[12.0, 36.0, 6.0, 4.0],
        partner_object_id=1,
        partner_name="skateboard",
        partner_box=[10.0, 30.0, 30.0, 8.0],
        predicate="on",
        direction="target_is_subject",
        edit_type="remove",
        context_json=SCENE,
    )
    base.update(kw)
    return candidate("relational_erasure", image_path, **base)


def ca_candidate(
    image_path: str, object_id: int = 1, name: str = "skateboard", attribute: str = "wooden", **kw: Any
) -> dict[str, Any]:
    base = dict(
        target_object_id=object_id,
        target_name=name,
        target_box=[10.0, 20.0, 30.0, 18.0],
        attribute=attribute,
        attribute_rank=1,
        edit_type="attribute",
        context_json=SCENE,
    )
    base.update(kw)
    return candidate("counterfactual_attribute", image_path, **base)


def at_candidate(image_path: str, edit_type: str = "delete", same: int = 1, **kw: Any) -> dict[str, Any]:
    chain = [t for t in ("delete", "add", "replace", "move") if t != edit_type]
    base = dict(
        target_object_id=7,
        target_name="sign",
        target_box=[44.0, 38.0, 10.0, 8.0],
        same_instance_count=same,
        edit_type=edit_type,
        fallback_chain=chain,
        context_json=SCENE,
    )
    base.update(kw)
    return candidate("alteration_tracing", image_path, **base)


def dc_candidate(image_path: str, points: list[list[float]], **kw: Any) -> dict[str, Any]:
    base = dict(class_name="apple", count=len(points), points=points, target_name="apple")
    base.update(kw)
    return candidate("dense_counting", image_path, **base)


def spread_points(n: int) -> list[list[float]]:
    side = int(np.ceil(np.sqrt(n)))
    return [[(i % side + 0.5) * W / side, (i // side + 0.5) * H / side] for i in range(n)]


def crowded_points(n: int) -> list[list[float]]:
    return [[30.0 + 0.3 * (i % 5), 20.0 + 0.3 * (i // 5)] for i in range(n)]


def write_mine_stage(run: RunFS, rows: list[dict[str, Any]]) -> None:
    """A completed ``mine`` stage holding exactly ``rows`` as candidates (one shard)."""
    from storage.schemas import ATTRIBUTE_STATS, PAIR_STATS

    store = StageStore(
        run, "mine", {"candidates": CANDIDATES, "pair_stats": PAIR_STATS, "attribute_stats": ATTRIBUTE_STATS}
    )
    store.reset()
    store.write_shard(0, "k", ShardResult(outputs={"candidates": rows}, rows_in=len(rows)))
    store.write_manifest(
        {"stage": "mine", "status": "complete", "key": "k", "output_fingerprint": store.output_fingerprint()}
    )


def build_config(**sections: Any):
    from flows.config import config_from_dict

    return config_from_dict(sections)
