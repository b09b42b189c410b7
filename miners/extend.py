"""Extension mode (``mine.extend_from``): what a previous build or release selected is kept, and
images added to the sources only fill the room left under each cap.

Why it is needed: every miner takes the first k of a group (pair, attribute, count bin, task)
in :func:`miners.candidates.seeded_order`, a per-image hash order. An added image whose hash is
smaller would take an old image's place; a release built that way removes items although only
images were added. In extension mode the images the previous selection used for the task come
first (still in hash order among themselves), then every other image in hash order. For each
group whose old images are unchanged this takes exactly the old choice first: an old image that
was a candidate of the group but not chosen sorts after the group's chosen ones, as before.

Data flows one way: the mine stage reads the previous run's ``mine/candidates`` or the previous
release's ``release_items.jsonl`` (``task``, ``source``, ``source_image_id`` of released items).
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TypeVar

from storage import addresses
from storage.fs import RunFS

RELEASE_INDEX = "release_items.jsonl"  # tasks.release.export.versions.INDEX (a higher layer)

_FIRST: ContextVar[frozenset[str]] = ContextVar("extend_first", default=frozenset())
T = TypeVar("T")  # an image id, or "<image id>:<class>" (COCO DC)


def previous_selection(where: str) -> dict[tuple[str, str], frozenset[str]]:
    """(task, source) -> the image ids the build or release at ``where`` selected; one clear
    error naming the path when it is neither a release folder nor a mined run."""
    folder = RunFS.open(where)
    found: dict[tuple[str, str], set[str]] = {}
    if folder.exists(RELEASE_INDEX):
        for n, line in enumerate(folder.read_text(RELEASE_INDEX).splitlines(), 1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
            except ValueError as exc:
                raise ValueError(f"mine.extend_from: {where}/{RELEASE_INDEX}: line {n} is not JSON ({exc})") from None
            if not isinstance(entry, dict) or not entry.get("released"):
                continue  # the canary line and the questions the release did not hold
            if not entry.get("task") or not entry.get("source") or entry.get("source_image_id") is None:
                raise ValueError(
                    f"mine.extend_from: {where}/{RELEASE_INDEX}: line {n} lacks task, source or source_image_id"
                )
            found.setdefault((entry["task"], entry["source"]), set()).add(str(entry["source_image_id"]))
    else:
        reader = addresses.CANDIDATES.reader(folder)
        if not reader.exists():
            raise FileNotFoundError(_neither(where))
        for r in reader.rows(columns=["task", "source", "image_id"]):
            found.setdefault((r["task"], r["source"]), set()).add(str(r["image_id"]))
    return {k: frozenset(v) for k, v in found.items()}


def _neither(where: str) -> str:
    return (
        f"mine.extend_from: {where} is neither a release folder ({RELEASE_INDEX}) "
        "nor a run directory whose mine stage finished (mine/candidates)"
    )


def extend_problem(where: str | None) -> str | None:
    """Why ``mine.extend_from`` cannot be read (checked before a run starts), or None."""
    if not where:
        return None
    folder = RunFS.open(where)
    if folder.exists(RELEASE_INDEX) or addresses.CANDIDATES.reader(folder).exists():
        return None
    return _neither(where)


def selection_file(where: str) -> str:
    """The file whose change means another previous selection (the mine stage fingerprints it,
    so rewriting the previous release re-mines): the release index, else the run's mine manifest."""
    base = where.rstrip("/")
    if RunFS.open(where).exists(RELEASE_INDEX):
        return posixpath.join(base, RELEASE_INDEX)
    return posixpath.join(base, "mine", "_manifest.json")


@contextmanager
def keeping_first(image_ids: frozenset[str]) -> Iterator[None]:
    """While a task's miner runs: the seeded orders put these image ids first."""
    token = _FIRST.set(image_ids)
    try:
        yield
    finally:
        _FIRST.reset(token)


def kept_first(ordered: list[T]) -> list[T]:
    """``ordered`` with the values of the current previous selection first (a stable partition:
    hash order within each part). A value is an image id, or ``<image id>:<class>`` (COCO DC)."""
    first = _FIRST.get()
    if not first:
        return ordered
    head = [v for v in ordered if str(v).split(":", 1)[0] in first]
    if not head:
        return ordered
    return head + [v for v in ordered if str(v).split(":", 1)[0] not in first]
