"""instruct-pix2pix with a tiny random-weight pipeline (locally trained CLIP tokenizer) from a local folder."""

from __future__ import annotations

import numpy as np

from editors.base import EditRequest, EditResult
from editors.instruct_pix2pix import InstructPix2PixEditor, working_size


def test_batches_by_size_and_returns_source_sizes(tiny_pix2pix):
    ed = InstructPix2PixEditor({"model": str(tiny_pix2pix), "steps": 2, "max_side": 64, "batch_size": 2})
    ed.ensure_loaded()
    rng = np.random.default_rng(0)
    shapes = [(75, 100), (75, 100), (90, 60), (75, 100)]
    reqs = [EditRequest(str(i), rng.integers(0, 255, (*s, 3), dtype=np.uint8), "make it blue", "t", "attribute", i) for i, s in enumerate(shapes)]
    out = ed.edit_batch(reqs)
    for r, res in zip(reqs, out):
        assert isinstance(res, EditResult) and res.image.shape == r.image.shape
        assert res.meta["working_size"] == list(working_size(r.image.shape[1], r.image.shape[0], 64))
    # per-item generators: an item's output does not depend on its batch neighbours
    alone = ed.edit_batch([reqs[3]])[0]
    assert np.abs(alone.image.astype(int) - out[3].image.astype(int)).max() <= 2
