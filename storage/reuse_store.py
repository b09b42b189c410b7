"""Per-item reuse store: finished item results keyed by what determines them.

A stage whose key changed (an editor added, more images, a new template) resets its folder and
plans its shards again, but an item whose *item key* is already here is taken from the store
instead of calling the editor or the model again. Item keys hash the item's input content, the
component's resolved parameters, the seed and the component's code version, so a hit is the
same result a fresh computation would give, byte for byte.

Layout (content-addressed like the image store)::

    <reuse>/items/<component>/<ab>/<key>.json   one entry: the result, its images, when used
    <images>/ab/<sha256>.<ext>                  the images entries refer to

By default the store is ``<run>/reuse/`` and its images are the run's own image store, so
nothing is stored twice and ``StageStore.reset()`` (which removes ``<run>/<stage>/``) leaves
it alone. ``run.reuse_dir`` (any fsspec URL) points several run directories at one shared
store; it then keeps its own copy of the images under ``<reuse_dir>/images/``.
"""

from __future__ import annotations

import datetime as _dt
import json
import posixpath
from dataclasses import dataclass, field
from typing import Any, Iterable

from storage.fs import RunFS
from storage.hashing import canonical_json, sha256_hex
from storage.image_store import IMAGES_DIR, ImageStore

REUSE_DIR = "reuse"
ITEMS_DIR = "items"
# Entries used again are re-stamped at most this often (a hit is then a read, not a write).
TOUCH_AFTER = _dt.timedelta(hours=12)


def _now() -> _dt.datetime:
    return _dt.datetime.now(_dt.timezone.utc)


def item_key(**parts: Any) -> str:
    """The key of one item: a hash of everything that determines its result."""
    return sha256_hex(canonical_json(parts))


@dataclass
class ReuseCounts:
    """How many items of a shard came from the store and how many were computed."""

    reused: int = 0
    computed: int = 0

    def as_dict(self) -> dict[str, int]:
        return {"reused": self.reused, "computed": self.computed}


@dataclass
class Entry:
    """A stored item result: ``value`` is JSON; ``images`` the image-store paths it refers to."""

    value: Any
    images: list[str] = field(default_factory=list)
    keep: bool = True  # False: a transient outcome (out of memory, a network error) that must be retried


class ReuseStore:
    """Item results by key, for one component (``edit:<editor>``, ``instruct``, ``analysis``, ...)."""

    def __init__(self, root: RunFS, images_root: RunFS):
        self.root = root
        self.images_root = images_root

    @classmethod
    def open(cls, run: RunFS, reuse_dir: str | None = None) -> "ReuseStore":
        """The run's own store (``<run>/reuse``, images shared with the run), or a shared one."""
        if not reuse_dir:
            return cls(run.sub(REUSE_DIR), run)
        shared = RunFS.open(reuse_dir)
        return cls(shared, shared)

    def _rel(self, component: str, key: str) -> str:
        return f"{ITEMS_DIR}/{_safe(component)}/{key[:2]}/{key}.json"

    # -- one entry ---------------------------------------------------------------------
    def get(self, component: str, key: str, run: RunFS) -> Entry | None:
        """The stored result, with its images copied into ``run``'s image store; None on a miss
        (also when an image it refers to has gone, e.g. pruned: the item is then recomputed)."""
        rel = self._rel(component, key)
        try:
            doc = json.loads(self.root.read_text(rel))
        except FileNotFoundError:
            return None
        except (OSError, ValueError):  # a torn or foreign file: recompute and overwrite it
            return None
        images = list(doc.get("images") or [])
        if not self._materialise(images, run):
            return None
        used = _parse(doc.get("used_at"))
        if used is None or _now() - used > TOUCH_AFTER:
            doc["used_at"] = _now().isoformat(timespec="seconds")
            self.root.write_text_atomic(rel, json.dumps(doc, sort_keys=True))
        return Entry(doc["value"], images)

    def holds(self, component: str, key: str, run: RunFS) -> bool:
        """Whether :meth:`get` would hit, without copying images or touching ``used_at`` (for estimates)."""
        try:
            doc = json.loads(self.root.read_text(self._rel(component, key)))
        except (OSError, ValueError):
            return False
        where = run if self._same_images(run) else self.images_root
        return all(run.exists(rel) or where.exists(rel) for rel in doc.get("images") or [])

    def put(self, component: str, key: str, value: Any, images: Iterable[str], run: RunFS) -> None:
        """Store one result; the images it refers to are copied from ``run`` when the store keeps its own."""
        images = sorted({i for i in images if i})
        if not self._same_images(run):
            target = ImageStore(self.images_root)
            for rel in images:
                if not self.images_root.exists(rel):
                    target.put_bytes(run.read_bytes(rel), posixpath.splitext(rel)[1])
        now = _now().isoformat(timespec="seconds")
        doc = {"component": component, "key": key, "value": value, "images": images, "created_at": now, "used_at": now}
        self.root.write_text_atomic(self._rel(component, key), json.dumps(doc, sort_keys=True))

    def _same_images(self, run: RunFS) -> bool:
        """True for the run's own store, whose images are the run's image store."""
        return self.images_root.protocol == run.protocol and self.images_root.root == run.root

    def _materialise(self, images: list[str], run: RunFS) -> bool:
        if self._same_images(run):
            return all(run.exists(rel) for rel in images)
        for rel in images:
            if run.exists(rel):
                continue
            if not self.images_root.exists(rel):
                return False
            run.write_bytes_atomic(rel, self.images_root.read_bytes(rel))
        return True

    # -- the whole store ---------------------------------------------------------------
    def entries(self) -> Iterable[tuple[str, dict[str, Any]]]:
        """(relative path, document) of every entry."""
        base = self.root.path(ITEMS_DIR)
        for path in self.root.walk_files(ITEMS_DIR):
            if not path.endswith(".json") or posixpath.basename(path).startswith(".tmp-"):
                continue
            rel = f"{ITEMS_DIR}/{posixpath.relpath(path, base)}"
            try:
                yield rel, json.loads(self.root.read_text(rel))
            except (OSError, ValueError):
                yield rel, {}

    def prune(self, keep_days: float, *, now: _dt.datetime | None = None) -> dict[str, int]:
        """Delete entries not used for ``keep_days`` days; in a store with its own images, also
        the images no remaining entry refers to. A run's own image store is never touched (the
        run's artifacts point into it)."""
        if keep_days < 0:
            raise ValueError(f"keep_days must be >= 0, got {keep_days}")
        cutoff = (now or _now()) - _dt.timedelta(days=keep_days)
        kept_images: set[str] = set()
        removed = kept = 0
        for rel, doc in self.entries():
            used = _parse(doc.get("used_at")) or _parse(doc.get("created_at"))
            if used is None or used < cutoff:
                self.root.rm(rel)
                removed += 1
            else:
                kept += 1
                kept_images.update(doc.get("images") or [])
        images_removed = 0
        if self.images_root.url == self.root.url:  # a shared store: its images are its own
            for path in self.images_root.walk_files(IMAGES_DIR):
                rel = f"{IMAGES_DIR}/{posixpath.relpath(path, self.images_root.path(IMAGES_DIR))}"
                if rel not in kept_images and not posixpath.basename(rel).startswith(".tmp-"):
                    self.images_root.rm(rel)
                    images_removed += 1
        return {"entries_removed": removed, "entries_kept": kept, "images_removed": images_removed}


def _safe(component: str) -> str:
    """A component name as one folder name (editor keys are user labels)."""
    clean = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in component)
    return clean if clean == component else f"{clean}-{sha256_hex(component)[:8]}"


def _parse(value: Any) -> _dt.datetime | None:
    try:
        return _dt.datetime.fromisoformat(str(value))
    except (TypeError, ValueError):
        return None
