"""Fault injection: source images that cannot be used, and what the rejects then say.

Rejects for an unreadable image used to embed Pillow's ``<_io.BytesIO object at 0x7f...>``, so
two builds of the same input differed; and Visual Genome images were decoded up to Pillow's own
limit (~179 MP) while FSC147 images stopped at 50 MP. Now every source image meets one limit
(``storage.image_store.MAX_SOURCE_PIXELS``) and two builds give the same reject rows.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from image_bombs import png_header
from rebuild_helpers import artifacts, build, copy_run, demo_config

from storage.image_store import MAX_SOURCE_PIXELS, BadImage, decode_source

pytestmark = pytest.mark.slow
REPR = re.compile(r"0x[0-9a-fA-F]{6,}| object at |<[\w.]+ object")


def test_one_pixel_limit_for_every_source_image() -> None:
    from miners.fsc147 import MAX_IMAGE_PIXELS

    assert MAX_IMAGE_PIXELS is MAX_SOURCE_PIXELS == 50_000_000
    # 54 MP: under Pillow's own bomb threshold (~89 MP warning, ~179 MP error), above ours
    with pytest.raises(BadImage, match=r"9,000x6,000|9000x6000") as caught:
        decode_source(png_header(9000, 6000), "big.png")
    assert caught.value.too_large and "50,000,000-pixel limit" in str(caught.value)
    with pytest.raises(BadImage) as garbage:
        decode_source(b"not an image at all", "junk.jpg")
    assert not garbage.value.too_large and not REPR.search(str(garbage.value)), str(garbage.value)


def _reject_texts(run: Path) -> list[str]:
    from storage.fs import RunFS
    from storage.parquet_io import ArtifactReader

    out = []
    for stage in ("mine", "instruct", "edit", "qa", "review"):
        for r in ArtifactReader(RunFS.open(str(run)), f"{stage}/rejects", "rejects").rows():
            out.append(f"{stage} {r['reason']} {r['detail']} {r['payload_json']}")
    return out


def test_bad_source_images_give_the_same_named_rejects_on_every_build(sample_dir: Path, tmp_path: Path) -> None:
    from storage.fs import RunFS
    from storage.parquet_io import ArtifactReader

    data = tmp_path / "data"
    shutil.copytree(sample_dir, data)
    cfg = demo_config(data)
    first = tmp_path / "first"
    build_stages = ["mine", "instruct"]
    from flows.runtime import run_pipeline

    run_pipeline(cfg, str(first), build_stages, orchestrator="local")
    rows = ArtifactReader(RunFS.open(str(first)), "instruct/instructions", "instructions").rows()
    paths = sorted(
        {r["image_path"] for r in rows if r["status"] == "applicable" and r["task"] == "relational_erasure"}
    )
    assert len(paths) >= 3
    garbage, truncated, huge = paths[:3]
    Path(garbage).write_bytes(b"not an image at all")
    Path(truncated).write_bytes(Path(truncated).read_bytes()[: Path(truncated).stat().st_size // 2])
    Path(huge).write_bytes(png_header(9000, 6000))
    second = copy_run(first, tmp_path / "second")
    build(cfg, first)
    build(cfg, second)

    texts = _reject_texts(first)
    edit_rejects = [t for t in texts if t.startswith("edit ")]
    for path in (garbage, truncated):
        assert any(t.startswith("edit image_unreadable ") and path in t for t in edit_rejects), (path, edit_rejects)
    assert any(
        t.startswith("edit image_too_large ") and huge in t and f"{MAX_SOURCE_PIXELS:,}" in t for t in edit_rejects
    ), edit_rejects
    leaked = [t for t in texts if REPR.search(t)]
    assert not leaked, leaked[:3]
    rejects = [k for k in artifacts(first) if "/rejects/" in k]
    assert rejects and {k: artifacts(first)[k] for k in rejects} == {k: artifacts(second)[k] for k in rejects}
