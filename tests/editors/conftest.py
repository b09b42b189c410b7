"""Editor fixtures: sample scenes with exact object masks, and tiny models built once per session."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest


@pytest.fixture(scope="session")
def truth(sample_dir: Path) -> dict[str, Any]:
    from miners.sample_data import load_truth

    return load_truth(sample_dir)


@pytest.fixture(scope="session")
def scene_objects(sample_dir: Path, truth: dict[str, Any]) -> list[dict[str, Any]]:
    """Fully visible, mid-sized drawn objects of the sample (image, exact mask, box, colour)."""
    from miners.sample_data import object_mask

    out = []
    for image_id in sorted(truth["images"], key=int)[:60]:
        im = truth["images"][image_id]
        path = sample_dir / im["file"]
        if not path.exists():
            continue
        for oid, obj in sorted(im["objects"].items()):
            full = object_mask(truth, image_id, oid)
            vis = object_mask(truth, image_id, oid, visible_only=True)
            area = int(vis.sum())
            if area < 250 or area > 0.2 * vis.size or vis.sum() < 0.98 * full.sum():
                continue
            out.append(
                {
                    "image_id": image_id,
                    "object_id": oid,
                    "path": path,
                    "mask": vis,
                    "box": tuple(float(v) for v in obj["box"]),
                    "name": obj["name"],
                    "colour": obj["colour"],
                    "rgb": obj["rgb"],
                }
            )
    assert len(out) >= 10, "the sample should hold enough unoccluded objects"
    return out


# --------------------------------------------------------------------------- tiny models
@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("tiny-models")


@pytest.fixture(scope="session")
def tiny_qwen_edit(tiny_models: Path) -> Path:
    from tiny_checkpoints import build_qwen_image_edit

    return build_qwen_image_edit(tiny_models / "qwen-image-edit", plus=False)


@pytest.fixture(scope="session")
def tiny_qwen_edit_plus(tiny_models: Path) -> Path:
    from tiny_checkpoints import build_qwen_image_edit

    return build_qwen_image_edit(tiny_models / "qwen-image-edit-plus", plus=True)


@pytest.fixture(scope="session")
def tiny_sam(tiny_models: Path) -> tuple[Path, str]:
    """(checkpoint, builder name) of a random 2-layer SAM registered with segment-anything."""
    from tiny_checkpoints import TINY_SAM, build_tiny_sam

    return build_tiny_sam(tiny_models / "sam-tiny.pth"), TINY_SAM


@pytest.fixture(scope="session")
def tiny_lama(tiny_models: Path) -> Path:
    from tiny_checkpoints import build_tiny_lama

    return build_tiny_lama(tiny_models / "lama-tiny.pt")


@pytest.fixture(scope="session")
def tiny_pix2pix(tiny_models: Path) -> Path:
    from tiny_checkpoints import build_instruct_pix2pix

    return build_instruct_pix2pix(tiny_models / "instruct-pix2pix")


@pytest.fixture(scope="session")
def tiny_edit_families(tiny_models: Path, tiny_qwen_edit: Path, tiny_qwen_edit_plus: Path) -> dict[str, Path]:
    """Every diffusers-edit family as a tiny random pipeline saved with save_pretrained (~10 s
    in all): folder per family, loaded back through the editor's own from_pretrained path."""
    from tiny_checkpoints import TINY_EDIT_FAMILIES, build_edit_family

    out = {fam: build_edit_family(tiny_models / fam, fam) for fam in TINY_EDIT_FAMILIES}
    return out | {"qwen-image-edit": tiny_qwen_edit, "qwen-image-edit-plus": tiny_qwen_edit_plus}
