"""Per-item reuse store: finished item results keyed by what determines them.

A stage whose key changed (an editor added, more images, a new template) resets its folder and
plans its shards again, but an item whose *item key* is already here is taken from the store
instead of calling the editor or the model again. Item keys hash the item's input content, the
component's resolved parameters, the seed and the component's code version, so a hit is the
same result a fresh computation would give, byte for byte.

Layout (content-addressed like the image store)::

    <reuse>/items/<component>/<ab>/<key>.json   one entry: the result, its images, when used
    <reuse>/quarantine/<what>-<digest>.json     one record per entry or image that failed its check
    <images>/ab/<sha256>.<ext>                  the images entries refer to

Nothing found here is trusted: an entry carries the SHA-256 of its content (``sha256``) and must
name the component and key it is read for; an image's bytes must hash to its file name. An entry
or image that fails (edited, a flipped bit, torn, copied to another key) is a miss: the item is
computed again, its entry overwritten, a damaged image replaced, and a quarantine record (the
damaged entry's text included) counts it for ``reactbench reuse stats``.

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
QUARANTINE_DIR = "quarantine"
CHECKSUM = "sha256"  # the entry field holding the hash of the rest of the entry
# Entries used again are re-stamped at most this often (a hit is then a read, not a write).
TOUCH_AFTER = _dt.timedelta(hours=12)
ENTRY_BATCH = 256  # entry files read in one round by entries() on an object store


def _now() -> _dt.datetime:
    return _dt.datetime.now(_dt.timezone.utc)


def item_key(**parts: Any) -> str:
    """The key of one item: a hash of everything that determines its result."""
    return sha256_hex(canonical_json(parts))


def entry_checksum(doc: dict[str, Any]) -> str:
    """SHA-256 of an entry's content (every field but the checksum itself), as canonical JSON:
    JSON parsing round-trips exactly, so any change to what is read back changes it."""
    return sha256_hex(canonical_json({k: v for k, v in doc.items() if k != CHECKSUM}))


def _sealed(doc: dict[str, Any]) -> str:
    return json.dumps({**doc, CHECKSUM: entry_checksum(doc)}, sort_keys=True)


class Damaged(ValueError):
    """A stored entry or image that fails its check; the message says how."""


@dataclass
class ReuseCounts:
    """How many items of a shard came from the store and how many were computed."""

    reused: int = 0
    computed: int = 0
    damaged: int = 0  # of the computed: stored but failing the check (see ``reuse stats``)

    def as_dict(self) -> dict[str, int]:
        out = {"reused": self.reused, "computed": self.computed}
        return {**out, "damaged": self.damaged} if self.damaged else out


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
        self.damaged = 0  # entries this instance found failing their check (each recorded in the quarantine)

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
    def read_entries(self, component: str, keys: Iterable[str]) -> dict[str, bytes] | None:
        """The stored entry files of ``keys`` (absent keys left out), read in one concurrent
        round on an object store, where a read per key is a request or two one after the other
        (an evaluation on S3 asks for thousands); None on a local disk, where :meth:`get` reads."""
        if not self.root.object_store:
            return None
        rels = {self._rel(component, k): k for k in keys}
        got = self._read_chunk(sorted(rels))
        return None if got is None else {rels[rel]: raw for rel, raw in got.items()}

    def _entry_bytes(self, component: str, key: str, prefetched: dict[str, bytes] | None) -> bytes | None:
        """The entry file of ``key``: from ``prefetched`` (:meth:`read_entries`) when it was read,
        else from the store; None when absent or unreadable now (permissions, a remote store):
        such an item is computed, not judged."""
        if prefetched is not None:
            return prefetched.get(key)
        try:
            return self.root.read_bytes(self._rel(component, key))
        except OSError:
            return None

    def get(self, component: str, key: str, run: RunFS, prefetched: dict[str, bytes] | None = None) -> Entry | None:
        """The stored result, with its images copied into ``run``'s image store; None on a miss
        (also when an image it refers to has gone, e.g. pruned: the item is then recomputed).
        An entry or image failing its check is a miss too, recorded in the quarantine and
        counted in ``self.damaged``. ``prefetched``: :meth:`read_entries` of the keys, if read."""
        rel = self._rel(component, key)
        raw = self._entry_bytes(component, key, prefetched)
        if raw is None:
            return None
        try:
            doc = _verified(raw, component, key)
            images = [str(i) for i in doc.get("images") or []]
            if not self._materialise(images, run):
                return None
        except Damaged as exc:
            self._quarantine(rel, str(exc), raw)
            return None
        used = _parse(doc.get("used_at"))
        if used is None or _now() - used > TOUCH_AFTER:
            doc["used_at"] = _now().isoformat(timespec="seconds")
            self.root.write_text_atomic(rel, _sealed(doc))
        return Entry(doc["value"], images)

    def holds(self, component: str, key: str, run: RunFS, prefetched: dict[str, bytes] | None = None) -> bool:
        """Whether :meth:`get` would hit, without copying images or touching ``used_at`` (for
        estimates): the entry must pass its checksum; its images need only exist (hashing every
        image would cost an estimate as much as the reuse itself). ``prefetched`` as for :meth:`get`."""
        raw = self._entry_bytes(component, key, prefetched)
        if raw is None:
            return False
        try:
            doc = _verified(raw, component, key)
        except Damaged:
            return False
        where = run if self._same_images(run) else self.images_root
        return all(run.exists(rel) or where.exists(rel) for rel in doc.get("images") or [])

    def put(self, component: str, key: str, value: Any, images: Iterable[str], run: RunFS) -> None:
        """Store one result; the images it refers to are copied from ``run`` when the store keeps its own."""
        images = sorted({i for i in images if i})
        if not self._same_images(run):
            target = ImageStore(self.images_root)
            for rel in images:
                target.put_bytes(run.read_bytes(rel), posixpath.splitext(rel)[1])  # replaces a damaged copy
        now = _now().isoformat(timespec="seconds")
        doc = {"component": component, "key": key, "value": value, "images": images, "created_at": now, "used_at": now}
        self.root.write_text_atomic(self._rel(component, key), _sealed(doc))

    def _same_images(self, run: RunFS) -> bool:
        """True for the run's own store, whose images are the run's image store."""
        return self.images_root.protocol == run.protocol and self.images_root.root == run.root

    def _materialise(self, images: list[str], run: RunFS) -> bool:
        """True when every image is in ``run``'s store with the bytes its name promises (copied
        from a shared store when missing); False when one is gone; ``Damaged`` when one fails."""
        own = ImageStore(run)
        for rel in images:
            if run.exists(rel):
                if own.intact(rel):
                    continue
                if self._same_images(run):
                    raise Damaged(f"image {rel}: its bytes do not hash to its name")
            elif self._same_images(run):
                return False
            if not self.images_root.exists(rel):
                return False
            if not ImageStore(self.images_root).intact(rel):
                raise Damaged(f"image {self.images_root.url}/{rel}: its bytes do not hash to its name")
            run.write_bytes_atomic(rel, self.images_root.read_bytes(rel))  # also replaces a damaged copy in the run
        return True

    def _quarantine(self, rel: str, why: str, raw: bytes) -> None:
        """Record a failed check (one file per damage: threads and workers never share one)."""
        self.damaged += 1
        record = {"entry": rel, "why": why, "detected_at": _now().isoformat(timespec="seconds"), "bytes_sha256": sha256_hex(raw),
                  "text": raw.decode("utf-8", errors="replace")}
        name = f"{QUARANTINE_DIR}/{sha256_hex(canonical_json([rel, why, record['bytes_sha256']]))[:32]}.json"
        self.root.write_text_atomic(name, json.dumps(record, sort_keys=True))

    def quarantined(self) -> list[dict[str, Any]]:
        """The records of every entry or image that failed its check (newest last)."""
        out = [r for r in map(self._record, self.root.listdir(QUARANTINE_DIR)) if r is not None]
        return sorted(out, key=lambda r: str(r.get("detected_at")))

    def _record(self, name: str) -> dict[str, Any] | None:
        if not name.endswith(".json") or name.startswith(".tmp-"):
            return None
        try:
            return dict(json.loads(self.root.read_text(QUARANTINE_DIR, name)))
        except (OSError, ValueError, TypeError):
            return {"entry": name, "why": "unreadable quarantine record"}

    # -- the whole store ---------------------------------------------------------------
    def entries(self) -> Iterable[tuple[str, dict[str, Any]]]:
        """(relative path, document) of every entry (``{}`` for one that cannot be read or
        parsed). On an object store they are read ``ENTRY_BATCH`` at a time in one concurrent
        round each (``reuse stats`` / ``prune`` of a large store took a request or two per entry
        one after the other)."""
        base = self.root.path(ITEMS_DIR)
        rels = [f"{ITEMS_DIR}/{posixpath.relpath(path, base)}" for path in self.root.walk_files(ITEMS_DIR)
                if path.endswith(".json") and not posixpath.basename(path).startswith(".tmp-")]
        for start in range(0, len(rels), ENTRY_BATCH):
            chunk = rels[start : start + ENTRY_BATCH]
            got = self._read_chunk(chunk)
            for rel in chunk:
                try:
                    raw = got[rel] if got is not None else self.root.read_bytes(rel)
                    yield rel, json.loads(raw)
                except (KeyError, OSError, ValueError):
                    yield rel, {}

    def _read_chunk(self, rels: list[str]) -> dict[str, bytes] | None:
        """The entry files of ``rels`` in one round on an object store; None elsewhere (or when
        the round fails: each is then read, and fails, on its own)."""
        if not self.root.object_store:
            return None
        try:
            return self.root.read_many(rels)
        except OSError:
            return None

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
        quarantine_removed = 0
        for name in self.root.listdir(QUARANTINE_DIR):
            record = self._record(name) or {}
            seen = _parse(record.get("detected_at"))
            if seen is not None and seen < cutoff:
                self.root.rm(QUARANTINE_DIR, name)
                quarantine_removed += 1
        return {"entries_removed": removed, "entries_kept": kept, "images_removed": images_removed, "quarantine_removed": quarantine_removed}


def _verified(raw: bytes, component: str, key: str) -> dict[str, Any]:
    """The entry in ``raw`` when it is intact and is the one asked for; ``Damaged`` otherwise."""
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise Damaged(f"not JSON ({exc.__class__.__name__}: {exc})") from None
    if not isinstance(doc, dict) or CHECKSUM not in doc:
        raise Damaged("no checksum (not an entry of this store, or written before entries carried one)")
    if doc[CHECKSUM] != entry_checksum(doc):
        raise Damaged("content does not match its checksum (edited or damaged)")
    if doc.get("component") != component or doc.get("key") != key or "value" not in doc:
        raise Damaged(f"an entry for {doc.get('component')!r} {str(doc.get('key'))[:16]}..., stored under {component!r} {key[:16]}...")
    return doc


def _safe(component: str) -> str:
    """A component name as one folder name (editor keys are user labels)."""
    clean = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in component)
    return clean if clean == component else f"{clean}-{sha256_hex(component)[:8]}"


def _parse(value: Any) -> _dt.datetime | None:
    try:
        return _dt.datetime.fromisoformat(str(value))
    except (TypeError, ValueError):
        return None
