"""Repeated items: question texts asked again with the same gold, and source images that are
near-identical (perceptual hash, :mod:`imagehash`), across items and across the release's
configs (one per task; the release has one split, ``test``, per config).

A template question ("Comparing the two pictures, has anything changed?") is asked of every
item by design, so a repeated text alone is reported, not failed: an item is a *duplicate*
when another item asks the same question (same normalised text, same gold) about the same
image(s): the same edited image, or the same or a near-identical source image. That share,
and the share of items whose source image is a near-duplicate of a different image, are what
``health.max_duplicate_share`` bounds.

Near-duplicate images are pairs within ``health.image_hash_distance`` bits of pHash that also
agree on their colour distribution (``imagehash.colorhash``, within :data:`COLOUR_DISTANCE` bits).
"""

from __future__ import annotations

import hashlib
import io
from collections import defaultdict
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from storage.fs import RunFS
from tasks.release.health.answers import normalised_gold
from tasks.release.health.questions import first_presentations

HASH_SIZE = 8  # 64-bit pHash
HASH_THREADS = 2  # the 2 cores the report is sized for
COLOUR_DISTANCE = 2  # colour-hash bits (of 42) two near-duplicates may differ by
_CHUNK = 1024
# Hashes by the image's bytes (blake2b), kept for the process: decoding and hashing is most of a
# health figure's cost, and an export, its strict check and a report see the same images again.
# Keyed by content, so a changed file is hashed anew; ~200 bytes an entry, bounded.
_HASHED: dict[bytes, tuple[int, Any]] = {}
_HASHED_MAX = 500_000


def near_text(texts: pa.ChunkedArray) -> pa.ChunkedArray:
    """Text as compared for near-duplicates: lower case, letters and digits only, single spaces."""
    t = pc.utf8_lower(texts)
    t = pc.replace_substring_regex(t, r"[^a-z0-9]+", " ")
    return pc.utf8_trim_whitespace(t)


def image_hashes(run: RunFS, paths: list[str]) -> tuple[list[str], np.ndarray, list[Any]]:
    """The paths that could be read, the pHash (64 bits, as uint64) of each and its colour hash
    (``imagehash.colorhash``), from the run's image store; a missing or unreadable image is left
    out (the export makes it a reject row). JPEGs are decoded at a reduced scale (``draft``):
    pHash looks at 32 x 32 pixels only."""
    from concurrent.futures import ThreadPoolExecutor

    import imagehash
    from PIL import Image, UnidentifiedImageError

    def one(rel: str) -> tuple[int, Any] | None:
        try:
            data = run.read_bytes(rel)
            key = hashlib.blake2b(data, digest_size=16).digest()
            if key in _HASHED:  # the same bytes hashed before in this process (an export, then its report)
                return _HASHED[key]
            with Image.open(io.BytesIO(data)) as im:
                im.draft("RGB", (32, 32))
                rgb = im.convert("RGB")
                bits = imagehash.phash(rgb, hash_size=HASH_SIZE).hash.flatten()
                got = int("".join("1" if b else "0" for b in bits), 2), imagehash.colorhash(rgb, binbits=3)
        except (OSError, UnidentifiedImageError):
            return None
        if len(_HASHED) < _HASHED_MAX:
            _HASHED[key] = got
        return got

    kept, out, colours = [], [], []
    with ThreadPoolExecutor(max_workers=HASH_THREADS) as pool:  # reading and decoding release the GIL
        for rel, got in zip(paths, pool.map(one, paths, chunksize=64)):
            if got is not None:
                kept.append(rel)
                out.append(got[0])
                colours.append(got[1])
    return kept, np.array(out, dtype=np.uint64), colours


def near_pairs(hashes: np.ndarray, max_distance: int) -> list[tuple[int, int, int]]:
    """(i, j, distance) of every pair i < j within ``max_distance`` bits, in blocks of rows
    (memory stays ``_CHUNK`` x n bytes)."""
    pairs: list[tuple[int, int, int]] = []
    h = hashes.astype(np.uint64)
    for start in range(0, len(h), _CHUNK):
        block = h[start : start + _CHUNK]
        dist = np.bitwise_count(block[:, None] ^ h[None, :])
        ii, jj = np.nonzero(dist <= max_distance)
        for i, j in zip(ii.tolist(), jj.tolist()):
            if start + i < j:
                pairs.append((start + i, j, int(dist[i, j])))
    return pairs


def _groups(n: int, pairs: list[tuple[int, int, int]]) -> list[int]:
    parent = list(range(n))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for i, j, _ in pairs:
        parent[find(i)] = find(j)
    return [find(i) for i in range(n)]


def duplicate_figures(run: RunFS, questions: pa.Table, originals: pa.Table, max_distance: int) -> dict[str, Any]:
    """The duplicates section of the health figures."""
    wanted = sorted(set(originals.column("original_image").to_pylist()))
    paths, hashes, colours = image_hashes(run, wanted)
    # pHash sees grey-level structure only: two flat scenes of one layout in other colours
    # (a grey car and a red one) agree on it, so a pair must also agree on its colours
    pairs = [(i, j, d) for i, j, d in near_pairs(hashes, max_distance) if colours[i] - colours[j] <= COLOUR_DISTANCE]
    group_of_path = dict(zip(paths, _groups(len(paths), pairs)))
    edit_ids = originals.column("edit_id").to_pylist()
    edit_task = dict(zip(edit_ids, originals.column("task").to_pylist()))
    edit_path = dict(zip(edit_ids, originals.column("original_image").to_pylist()))
    edits_of_path: dict[str, list[str]] = defaultdict(list)
    for e, p in edit_path.items():
        edits_of_path[p].append(e)
    near_items: set[str] = set()
    across_tasks = 0
    listed = []
    for i, j, d in pairs:
        a, b = edits_of_path[paths[i]], edits_of_path[paths[j]]
        near_items.update(a + b)
        cross = {edit_task[x] for x in a} != {edit_task[x] for x in b} or len({edit_task[x] for x in a + b}) > 1
        across_tasks += cross
        if len(listed) < 50:
            listed.append(
                {"images": [paths[i], paths[j]], "distance": d, "items": sorted(a + b), "across_tasks": cross}
            )
    shared = sum(len(v) for v in edits_of_path.values() if len(v) > 1)

    q = first_presentations(questions)
    # what each question is asked about: a source image by its near-duplicate group, any other
    # image (an edit's output) by its content address
    image_key = [
        "|".join(f"g{group_of_path[p]}" if p in group_of_path else p for p in imgs or ())
        for imgs in q.column("images").to_pylist()
    ]
    t = pa.table(
        {
            "exact": q.column("text"),
            "near": near_text(q.column("text")),
            "gold": normalised_gold(q),
            "edit_id": q.column("edit_id"),
            "img": pa.array(image_key, pa.string()),
        }
    )
    figures: dict[str, Any] = {"n_questions": q.num_rows, "n_items": len(edit_ids)}
    for kind in ("exact", "near"):
        per_text = t.group_by([kind, "gold"]).aggregate([("edit_id", "count_distinct")])
        repeated = per_text.filter(pc.greater(per_text.column("edit_id_count_distinct"), 1))
        n_rep = pc.sum(repeated.column("edit_id_count_distinct")).as_py() or 0
        figures[f"questions_{kind}_text"] = {"texts": repeated.num_rows, "questions": int(n_rep)}
        per_img = t.group_by([kind, "gold", "img"]).aggregate([("edit_id", "count_distinct"), ([], "count_all")])
        dup = per_img.filter(pc.greater(per_img.column("edit_id_count_distinct"), 1))
        figures[f"questions_{kind}_duplicate"] = int(pc.sum(dup.column("count_all")).as_py() or 0)
    n_q = max(1, q.num_rows)
    n_items = max(1, len(edit_ids))
    figures.update(
        {
            "duplicate_question_share": round(figures["questions_near_duplicate"] / n_q, 4),
            "images": len(paths),
            "images_unreadable": len(wanted) - len(paths),
            "image_pairs": len(pairs),
            "image_pairs_across_tasks": across_tasks,
            "items_near_duplicate_image": len(near_items),
            "duplicate_image_share": round(len(near_items) / n_items, 4),
            "items_sharing_a_source_image": shared,
            "max_distance": max_distance,
            "pairs": listed,
        }
    )
    return figures
