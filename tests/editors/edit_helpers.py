"""Helpers of the editor tests (a module, not conftest, so test files can import them)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from editors.base import EditRequest


def load_rgb(path: Path) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(path.read_bytes())).convert("RGB"))


def colour_fraction(image: np.ndarray, mask: np.ndarray, rgb: list[int] | tuple[int, ...], tol: float = 60.0) -> float:
    """Share of the masked pixels within ``tol`` (RGB distance) of ``rgb``."""
    if not mask.any():
        return 0.0
    d = np.linalg.norm(image[mask].astype(np.float64) - np.asarray(rgb, np.float64), axis=1)
    return float((d < tol).mean())


def make_request(
    obj: dict[str, Any], edit_type: str, instruction: str, seed: int = 0, with_mask: bool = True, **fields: Any
) -> EditRequest:
    return EditRequest(
        id=f"{obj['image_id']}-{obj['object_id']}-{edit_type}",
        image=load_rgb(obj["path"]),
        instruction=instruction,
        task="test",
        edit_type=edit_type,
        seed=seed,
        box=obj["box"],
        mask=obj["mask"] if with_mask else None,
        target_name=obj["name"],
        fields=dict(fields),
    )


def write_instructions(run_root: Path, rows: list[dict[str, Any]]) -> None:
    """Lay down a completed ``instruct`` stage holding ``rows`` (what the edit stage reads)."""
    from storage.fs import RunFS
    from storage.stage_store import ShardResult, StageStore

    run = RunFS.open(str(run_root))
    store = StageStore(run, "instruct", {"instructions": "instructions"})
    store.write_shard(0, "k", ShardResult(outputs={"instructions": rows}, rows_in=len(rows)))
    store.write_manifest(
        {"stage": "instruct", "status": "complete", "key": "k", "output_fingerprint": store.output_fingerprint()}
    )


def instruction_row(
    obj: dict[str, Any],
    sample_dir: Path,
    edit_type: str,
    instruction: str,
    task: str = "alteration_tracing",
    **fields: Any,
) -> dict[str, Any]:
    from storage.hashing import canonical_json, stable_id

    h, w = obj["mask"].shape
    cand = {"id": f"c-{obj['image_id']}-{obj['object_id']}", "context_json": "[]"}
    return {
        "id": stable_id(obj["image_id"], obj["object_id"], edit_type),
        "task": task,
        "variant": "targeted",
        "source": "visual_genome",
        "image_id": str(obj["image_id"]),
        "image_path": str(obj["path"]),
        "width": w,
        "height": h,
        "candidate_id": cand["id"],
        "candidate_json": canonical_json(cand),
        "status": "applicable",
        "instruction": instruction,
        "edit_type": edit_type,
        "target_box": list(obj["box"]),
        "target_name": obj["name"],
        "fields_json": json.dumps(fields, sort_keys=True),
    }
