"""Per-item reuse store: finished item results keyed by what determines them.

A stage whose key changed (an editor added, more images, a new template) resets its folder and
plans its shards again, but an item whose *item key* is already here is taken from the store
instead of calling the editor or the model again. Item keys hash the item's input content, the
component's resolved parameters, the seed and the component's code version, so a hit is the
same result a fresh computation would give, byte for byte.

Layout (images content-addressed as in the image store)::

    <reuse>/packs/<component>/<ab>/<shard>/<stamp>-<uid>.pack   a shard's entries: one write per shard
    <reuse>/items/<component>/<ab>/<key>.json                    one entry per file (the previous layout, still read)
    <reuse>/quarantine/<digest>.json                             one record per entry or image that failed its check
    <images>/ab/<sha256>.<ext>                                   the images entries refer to

**Packs, one per shard.** A shard's new entries are one file (an evaluation at 3,600 images
wrote 58,208 small files, one per answer). ``<shard>`` is the SHA-256 of the sorted item keys
the shard asked for, so a rerun with the same grouping (the common case) finds its pack by
listing one small folder and reads it in the same round: its cost does not depend on the size
of the store. A pack is a header line (its component and keys) followed by one line per entry,
``<key> <entry JSON>``; each entry is sealed on its own (``sha256`` of its content) and names
its component and key, so a damaged line, a line copied under another key, or a pack cut short
(keys in its header without a line) loses only those entries: they are misses, recomputed and
recorded in the quarantine, and their intact neighbours are served.

**When the grouping changed** (``run.shard_size``, items added) the shard's folder is absent and
the keys are looked up in a per-component index, built once per process (and again after
``INDEX_MAX_AGE_S``) from every pack's header and the previous layout's file names. It keeps 8
bytes of a digest of each key plus 4 for the pack it is in, ~12 bytes an entry (~2 MB at the
paper's ~150k answers), sorted for bisection; a digest that collides only costs a read, since
the entry itself must name the key. Entries found this way are written again into the new
shard's pack, so the next rerun with the new grouping is direct; the old copies age out through
``reuse prune``. A shard whose folder exists does not consult the index: a key missing there
was not kept by that shard (a transient failure) and is computed, which keeps a rerun's lookups
independent of the store's size. The index is not told of other processes' later writes: an
entry it does not know is computed again, never served wrongly.

**Many writers.** A pack's name carries a time stamp and a random id, so two writers never
write the same file (shards of one run, or two runs sharing ``run.reuse_dir`` on S3 that reach
the same shard). A local pack is written to a temporary file and renamed; on an object store it
goes to its final key in one PUT. When a shard's folder holds several packs, or a hit must be
re-stamped (``used_at``, at most every ``TOUCH_AFTER``), or a hit came from elsewhere, or a line
was damaged, the shard writes one new pack holding every entry it read intact plus what it
computed, then deletes the packs it read: only files whose entries it has just re-published,
never one written meanwhile. For a key held by several packs the newest (by name) decides.
``prune`` rewrites a pack without its stale entries the same way (new name, same stamp).

**The previous layout** (one file per entry, ``items/``) is read through the index; an entry
found there is written into the shard's pack and its file removed, so an old store moves into
packs as it is used. ``entries``, ``prune`` and ``reuse stats`` cover both layouts.

Nothing found here is trusted: an entry carries the SHA-256 of its content (``sha256``) and must
name the component and key it is read for; an image's bytes must hash to its file name. An entry
or image that fails (edited, a flipped bit, torn, copied to another key) is a miss: the item is
computed again, its entry written anew, a damaged image replaced, and a quarantine record (the
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
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from storage.fs import RunFS
from storage.hashing import canonical_json, sha256_hex
from storage.image_store import IMAGES_DIR, ImageDamaged, ImageStore
from storage.reuse_pack import LEGACY, PACK_SUFFIX, KeyIndex, Pack, encode_pack, header_keys, newest_first, stamp_name

REUSE_DIR = "reuse"
PACKS_DIR = "packs"
ITEMS_DIR = "items"  # the previous layout, one file per entry: read, and moved into packs when used
QUARANTINE_DIR = "quarantine"
CHECKSUM = "sha256"  # the entry field holding the hash of the rest of the entry
# Entries used again are re-stamped at most this often (a hit is then a read, not a write).
TOUCH_AFTER = _dt.timedelta(hours=12)
ENTRY_BATCH = 256  # files read in one round by entries(), prune() and the index on an object store
HEAD_BYTES = 16384  # a pack's header is read alone for the index (~240 keys fit; a longer one is read whole)
INDEX_MAX_AGE_S = 600.0  # a process builds a component's index again after this long (others' writes)
INDEX_CACHE = 16  # components' indexes a process keeps


def _now() -> _dt.datetime:
    return _dt.datetime.now(_dt.UTC)


def item_key(**parts: Any) -> str:
    """The key of one item: a hash of everything that determines its result."""
    return sha256_hex(canonical_json(parts))


def entry_checksum(doc: dict[str, Any]) -> str:
    """SHA-256 of an entry's content (every field but the checksum itself), as canonical JSON:
    JSON parsing round-trips exactly, so any change to what is read back changes it."""
    return sha256_hex(canonical_json({k: v for k, v in doc.items() if k != CHECKSUM}))


def _sealed(doc: dict[str, Any]) -> str:
    return json.dumps({**doc, CHECKSUM: entry_checksum(doc)}, sort_keys=True)


def shard_digest(keys: Iterable[str]) -> str:
    """The name of a shard's pack folder: a hash of the item keys it asks for, in sorted order."""
    return sha256_hex("\n".join(sorted(set(keys))))


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


_INDEXES: dict[tuple[str, str], tuple[float, KeyIndex]] = {}
_INDEX_LOCK = threading.Lock()


def forget_indexes() -> None:
    """Drop every index this process built (the next lookup that needs one lists the store again)."""
    with _INDEX_LOCK:
        _INDEXES.clear()


class ReuseStore:
    """Item results by key, for one component (``edit:<editor>``, ``instruct``, ``analysis``, ...)."""

    def __init__(self, root: RunFS, images_root: RunFS):
        self.root = root
        self.images_root = images_root
        self.damaged = 0  # entries this instance found failing their check (each recorded in the quarantine)

    @classmethod
    def open(cls, run: RunFS, reuse_dir: str | None = None) -> ReuseStore:
        """The run's own store (``<run>/reuse``, images shared with the run), or a shared one."""
        if not reuse_dir:
            return cls(run.sub(REUSE_DIR), run)
        shared = RunFS.open(reuse_dir)
        return cls(shared, shared)

    # -- where things are --------------------------------------------------------------
    def legacy_rel(self, component: str, key: str) -> str:
        """An entry's file in the previous layout (one file per entry)."""
        return f"{ITEMS_DIR}/{_safe(component)}/{key[:2]}/{key}.json"

    def shard_dir(self, component: str, keys: Iterable[str]) -> str:
        digest = shard_digest(keys)
        return f"{PACKS_DIR}/{_safe(component)}/{digest[:2]}/{digest}"

    def _list_packs(self, folder: str) -> list[str]:
        """The packs in one shard folder, newest first (one listing; none when it is absent)."""
        try:
            names = self.root.fs.ls(self.root.path(folder), detail=False)
        except (FileNotFoundError, NotADirectoryError):
            return []
        except OSError:
            return []  # unreadable now: its items are computed, not judged
        rels = [f"{folder}/{posixpath.basename(n.rstrip('/'))}" for n in names]
        return newest_first(
            r for r in rels if r.endswith(PACK_SUFFIX) and not posixpath.basename(r).startswith(".tmp-")
        )

    def _walk(self, top: str, suffix: str) -> list[str]:
        """Relative paths of the files under ``top`` ending in ``suffix`` (temporaries left out)."""
        base = self.root.path(top)
        return [
            f"{top}/{posixpath.relpath(p, base)}"
            for p in self.root.walk_files(top)
            if p.endswith(suffix) and not posixpath.basename(p).startswith(".tmp-")
        ]

    def _read(self, rels: list[str]) -> dict[str, bytes]:
        """The files among ``rels`` that can be read now: one concurrent round on an object store."""
        try:
            return self.root.read_many(rels)
        except OSError:
            out = {}
            for rel in rels:
                try:
                    out[rel] = self.root.read_bytes(rel)
                except OSError:
                    pass
            return out

    # -- a shard -----------------------------------------------------------------------
    def shard(self, component: str, keys: Iterable[str], *, read: bool = True) -> ShardEntries:
        """One shard's view of ``component``: its stored entries read in one round (none when
        ``read`` is False, as for ``--force``), judged per key by :meth:`ShardEntries.get`, and
        written back as one pack by :meth:`ShardEntries.publish`."""
        return ShardEntries(self, component, keys, read=read)

    def get(self, component: str, key: str, run: RunFS) -> Entry | None:
        """One item through a shard of one (tests, tools): :meth:`ShardEntries.get`, then touched."""
        view = self.shard(component, [key])
        hit = view.get(key, run)
        view.publish({}, run)
        return hit

    def put(self, component: str, key: str, value: Any, images: Iterable[str], run: RunFS) -> None:
        """Store one result as a shard of one (tests, tools); stages store a shard's results together."""
        self.shard(component, [key], read=False).publish({key: Entry(value, list(images))}, run)

    def index(self, component: str) -> KeyIndex:
        """The component's key index: built from the store's listing and pack headers once per
        process (again after ``INDEX_MAX_AGE_S``), then kept up to date with this process's writes."""
        cache_key = (self.root.url, component)
        with _INDEX_LOCK:
            cached = _INDEXES.get(cache_key)
            if cached is not None and time.monotonic() - cached[0] < INDEX_MAX_AGE_S:
                return cached[1]
            built = self._build_index(component)
            _INDEXES.pop(cache_key, None)
            _INDEXES[cache_key] = (time.monotonic(), built)
            while len(_INDEXES) > INDEX_CACHE:
                _INDEXES.pop(next(iter(_INDEXES)))
            return built

    def _build_index(self, component: str) -> KeyIndex:
        rels = self._walk(f"{PACKS_DIR}/{_safe(component)}", PACK_SUFFIX)
        legacy = self._walk(f"{ITEMS_DIR}/{_safe(component)}", ".json")
        packs: list[str] = []

        def held() -> Iterator[tuple[str, int]]:
            for start in range(0, len(rels), ENTRY_BATCH):
                chunk = rels[start : start + ENTRY_BATCH]
                for rel, keys in zip(chunk, self._heads(chunk)):
                    if keys:
                        packs.append(rel)
                        yield from ((k, len(packs) - 1) for k in keys)
            yield from ((posixpath.basename(rel)[: -len(".json")], LEGACY) for rel in legacy)

        return KeyIndex(packs, held())

    def _heads(self, rels: list[str]) -> list[list[str] | None]:
        """The header keys of each pack (None when unreadable), reading only its first bytes."""
        paths = [self.root.path(rel) for rel in rels]
        try:
            heads = self.root.fs.cat_ranges(paths, 0, HEAD_BYTES, on_error="return")
        except OSError:
            heads = [OSError()] * len(rels)
        out: list[list[str] | None] = []
        for rel, head in zip(rels, heads):
            if isinstance(head, BaseException):
                out.append(None)
                continue
            if b"\n" not in head and len(head) >= HEAD_BYTES:  # a header longer than the window
                try:
                    head = self.root.read_bytes(rel)
                except OSError:
                    out.append(None)
                    continue
            out.append(header_keys(head.partition(b"\n")[0]))
        return out

    def _registered(self, component: str, rel: str, keys: list[str]) -> None:
        """Add a pack this process wrote to the component's index, if one is built."""
        with _INDEX_LOCK:
            cached = _INDEXES.get((self.root.url, component))
            if cached is not None:
                cached[1].add(rel, keys)

    # -- checks ------------------------------------------------------------------------
    def _same_images(self, run: RunFS) -> bool:
        """True for the run's own store, whose images are the run's image store."""
        return self.images_root.protocol == run.protocol and self.images_root.root == run.root

    def _materialise(self, images: list[str], run: RunFS) -> bool:
        """True when every image is in ``run``'s store with the bytes its name promises (copied
        from a shared store when missing); False when one is gone; ``Damaged`` when one fails.

        An image from a shared store (``run.reuse_dir``) is read once and the bytes that hash to
        its name are the bytes written into the run: nothing unchecked is copied."""
        own = ImageStore(run)
        for rel in images:
            if run.exists(rel):
                if own.intact(rel):
                    continue
                if self._same_images(run):
                    raise Damaged(f"image {rel}: its bytes do not hash to its name")
            elif self._same_images(run):
                return False
            try:
                data = ImageStore(self.images_root).read_intact(rel)
            except ImageDamaged as exc:
                raise Damaged(str(exc)) from None
            if data is None:
                return False
            run.write_bytes_atomic(rel, data)  # also replaces a damaged copy in the run
        return True

    def _copy_images(self, images: Iterable[str], run: RunFS) -> None:
        """A shared store keeps its own copy of the images its entries refer to."""
        if self._same_images(run):
            return
        target = ImageStore(self.images_root)
        for rel in images:
            target.put_bytes(run.read_bytes(rel), posixpath.splitext(rel)[1])  # replaces a damaged copy

    def _quarantine(self, where: str, why: str, raw: bytes) -> None:
        """Record a failed check (one file per damage: threads and workers never share one)."""
        self.damaged += 1
        record = {
            "entry": where,
            "why": why,
            "detected_at": _now().isoformat(timespec="seconds"),
            "bytes_sha256": sha256_hex(raw),
            "text": raw.decode("utf-8", errors="replace"),
        }
        name = f"{QUARANTINE_DIR}/{sha256_hex(canonical_json([where, why, record['bytes_sha256']]))[:32]}.json"
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
    def layout(self) -> dict[str, int]:
        """How many pack files and previous-layout entry files the store holds (names only)."""
        return {"packs": len(self._walk(PACKS_DIR, PACK_SUFFIX)), "entry_files": len(self._walk(ITEMS_DIR, ".json"))}

    def _packs(self) -> Iterator[Pack | str]:
        """Every pack, parsed, ``ENTRY_BATCH`` at a time (one round each on an object store); the
        path alone for a pack that cannot be read."""
        rels = self._walk(PACKS_DIR, PACK_SUFFIX)
        for start in range(0, len(rels), ENTRY_BATCH):
            chunk = rels[start : start + ENTRY_BATCH]
            got = self._read(chunk)
            for rel in chunk:
                yield Pack.parse(rel, got[rel]) if rel in got else rel

    def _legacy_files(self) -> Iterator[tuple[str, dict[str, Any]]]:
        rels = self._walk(ITEMS_DIR, ".json")
        for start in range(0, len(rels), ENTRY_BATCH):
            chunk = rels[start : start + ENTRY_BATCH]
            got = self._read(chunk)
            for rel in chunk:
                yield rel, _loads(got.get(rel))

    def entries(self) -> Iterable[tuple[str, dict[str, Any]]]:
        """(where, document) of every entry: ``<pack>#<key>`` for a pack's line, the file for
        the previous layout; ``{}`` for one that cannot be read or parsed (a whole unreadable
        pack is one such item). Files are read ``ENTRY_BATCH`` at a time, in one concurrent
        round each on an object store."""
        for pack in self._packs():
            if isinstance(pack, str):
                yield pack, {}
                continue
            for key in pack.held():
                yield f"{pack.rel}#{key}", _loads(pack.lines.get(key))
            for n in range(pack.broken):
                yield f"{pack.rel}#line-without-key-{n}", {}
        yield from self._legacy_files()

    def prune(self, keep_days: float, *, now: _dt.datetime | None = None) -> dict[str, int]:
        """Delete entries not used for ``keep_days`` days (a pack keeping some is written again
        without the others, under a new name with the same time stamp, then the old one
        removed); in a store with its own images, also the images no remaining entry refers to.
        A run's own image store is never touched (the run's artifacts point into it)."""
        if keep_days < 0:
            raise ValueError(f"keep_days must be >= 0, got {keep_days}")
        cutoff = (now or _now()) - _dt.timedelta(days=keep_days)

        def fresh(doc: dict[str, Any]) -> bool:
            used = _parse(doc.get("used_at")) or _parse(doc.get("created_at"))
            return used is not None and used >= cutoff

        kept_images: set[str] = set()
        removed = kept = 0
        for pack in self._packs():
            if isinstance(pack, str):
                continue  # unreadable now: left for a later prune
            keep: dict[str, str] = {}
            for key in pack.held():
                doc = _loads(pack.lines.get(key))
                if fresh(doc):
                    keep[key] = pack.lines[key].decode("utf-8")
                    kept_images.update(doc.get("images") or [])
            dropped = len(pack.held()) + pack.broken - len(keep)
            removed, kept = removed + dropped, kept + len(keep)
            if not dropped and pack.keys is not None:
                continue
            if keep:
                folder, name = posixpath.split(pack.rel)
                component = str(_loads(next(iter(keep.values())).encode("utf-8")).get("component"))
                self.root.write_bytes_atomic(
                    f"{folder}/{stamp_name(name.split('-', 1)[0])}", encode_pack(component, keep)
                )
            self.root.rm(pack.rel)
        for rel, doc in self._legacy_files():
            if fresh(doc):
                kept += 1
                kept_images.update(doc.get("images") or [])
            else:
                self.root.rm(rel)
                removed += 1
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
        forget_indexes()  # packs were renamed or removed
        return {
            "entries_removed": removed,
            "entries_kept": kept,
            "images_removed": images_removed,
            "quarantine_removed": quarantine_removed,
        }


@dataclass
class _Copy:
    """One stored copy of a key: where (``<pack>#<key>`` or a previous-layout file), its entry
    bytes (None: listed in its pack's header without a line), and whether it is in the shard's folder."""

    where: str
    raw: bytes | None
    own: bool


class ShardEntries:
    """One shard's stored entries of one component, read together and written back as one pack.

    :meth:`get` judges a key's newest copy (checksum, component and key, images); :meth:`publish`
    writes the shard's new results, with the hits it must carry, as one pack."""

    def __init__(self, store: ReuseStore, component: str, keys: Iterable[str], *, read: bool = True):
        self.store = store
        self.component = component
        self.keys = sorted({k for k in keys if k})
        for key in self.keys:
            if any(ch.isspace() for ch in key):
                raise ValueError(f"reuse key {key!r}: keys name pack lines and cannot hold white space")
        self.folder = store.shard_dir(component, self.keys)
        self.copies: dict[str, list[_Copy]] = {}
        self._read_packs: list[str] = []  # the shard folder's packs that were read (replaced by a publish)
        self._legacy: list[str] = []  # previous-layout files that were read (moved into the pack by a publish)
        self._hits: dict[str, tuple[dict[str, Any], bool]] = {}  # key -> (entry, must be written again)
        self._damage = False
        if read and self.keys:
            self._load()

    def _load(self) -> None:
        wanted = set(self.keys)
        listed = self.store._list_packs(self.folder)
        if listed:
            got = self.store._read(listed)
            self._read_packs = [rel for rel in listed if rel in got]
            for rel in self._read_packs:
                self._add(Pack.parse(rel, got[rel]), got[rel], wanted, own=True)
            return
        index = self.store.index(self.component)
        with _INDEX_LOCK:  # another thread may be adding its pack
            found = index.find(self.keys)
            packs = newest_first({index.packs[w] for ws in found.values() for w in ws if w != LEGACY})
        if not found:
            return
        legacy = sorted(self.store.legacy_rel(self.component, k) for k, ws in found.items() if LEGACY in ws)
        got = self.store._read([*packs, *legacy])
        for rel in packs:
            if rel in got:
                self._add(Pack.parse(rel, got[rel]), got[rel], wanted, own=False)
        for key, ws in sorted(found.items()):
            rel = self.store.legacy_rel(self.component, key)
            if LEGACY in ws and rel in got:
                self._legacy.append(rel)
                self.copies.setdefault(key, []).append(_Copy(rel, got[rel], own=False))

    def _add(self, pack: Pack, raw: bytes, wanted: set[str], *, own: bool) -> None:
        for key in pack.held():
            if key in wanted:
                self.copies.setdefault(key, []).append(_Copy(f"{pack.rel}#{key}", pack.lines.get(key), own))
        if own and pack.keys is None:  # a pack cut inside its header, or not a pack: what it held is unknown
            self.store._quarantine(pack.rel, "a pack whose header is unreadable (torn, truncated or not a pack)", raw)
        if own and (pack.broken or pack.keys is None):
            self._damage = True  # the publish leaves such lines behind

    def _judge(self, key: str) -> tuple[_Copy, dict[str, Any]] | None:
        """The key's newest copy, verified; None when there is none; ``Damaged`` when it fails."""
        copies = self.copies.get(key)
        if not copies:
            return None
        copy = copies[0]
        if copy.raw is None:
            raise Damaged("listed in its pack's header but has no line (a torn or truncated pack)")
        return copy, _verified(copy.raw, self.component, key)

    def get(self, key: str, run: RunFS) -> Entry | None:
        """The stored result, with its images copied into ``run``'s image store; None on a miss
        (also when an image it refers to has gone, e.g. pruned: the item is then recomputed).
        An entry or image failing its check is a miss too, recorded in the quarantine and
        counted in ``store.damaged``."""
        try:
            judged = self._judge(key)
        except Damaged as exc:
            first = self.copies[key][0]
            self.store._quarantine(first.where, str(exc), first.raw or b"")
            self._damage = self._damage or first.own  # the publish leaves the damaged line behind
            return None
        if judged is None:
            return None
        copy, doc = judged
        images = [str(i) for i in doc.get("images") or []]
        try:
            if not self.store._materialise(images, run):
                return None
        except Damaged as exc:
            self.store._quarantine(copy.where, str(exc), copy.raw or b"")
            return None
        used = _parse(doc.get("used_at"))
        stale = used is None or _now() - used > TOUCH_AFTER
        self._hits[key] = (doc, stale or not copy.own)
        return Entry(doc["value"], images)

    def holds(self, key: str, run: RunFS) -> bool:
        """Whether :meth:`get` would hit, without copying images, touching ``used_at`` or
        recording damage (for estimates): the entry must pass its checks; its images need only
        exist (hashing every image would cost an estimate as much as the reuse itself)."""
        try:
            judged = self._judge(key)
        except Damaged:
            return False
        if judged is None:
            return False
        where = run if self.store._same_images(run) else self.store.images_root
        return all(run.exists(rel) or where.exists(rel) for rel in judged[1].get("images") or [])

    def publish(self, new: dict[str, Entry], run: RunFS) -> None:
        """Write the shard's pack: ``new`` results (their images copied into a shared store)
        plus every hit this view read, re-stamped where due. Nothing is written when nothing
        changed; otherwise the packs read from the shard's folder and the previous-layout files
        read are removed once the new pack is in place (their entries are all in it)."""
        carried = {k: doc for k, (doc, _) in self._hits.items() if k not in new}
        for key in self.keys:  # other intact entries of the folder's packs (an image gone or damaged, not asked for)
            if key in new or key in carried or not self.copies.get(key) or not self.copies[key][0].own:
                continue
            try:
                judged = self._judge(key)
            except Damaged:
                continue
            if judged is not None:
                carried[key] = judged[1]
        touch = any(again for k, (_, again) in self._hits.items() if k not in new)
        if not (new or touch or len(self._read_packs) > 1 or self._legacy or self._damage):
            return
        now = _now().isoformat(timespec="seconds")
        lines: dict[str, str] = {}
        for key, doc in carried.items():
            again = self._hits.get(key, (None, False))[1]
            lines[key] = _sealed({**doc, "used_at": now}) if again else self.copies[key][0].raw.decode("utf-8")  # type: ignore[union-attr]
        for key, entry in new.items():
            images = sorted({i for i in entry.images if i})
            self.store._copy_images(images, run)
            doc = {
                "component": self.component,
                "key": key,
                "value": entry.value,
                "images": images,
                "created_at": now,
                "used_at": now,
            }
            lines[key] = _sealed(doc)
        if lines:
            rel = f"{self.folder}/{stamp_name()}"
            self.store.root.write_bytes_atomic(rel, encode_pack(self.component, lines))
            self.store._registered(self.component, rel, sorted(lines))
        for rel in [*self._read_packs, *self._legacy]:
            try:
                self.store.root.rm(rel)
            except OSError:
                pass  # removed meanwhile by another writer of the same shard
        self._read_packs, self._legacy, self._damage = [], [], False


def _loads(raw: bytes | None) -> dict[str, Any]:
    """An entry document, or ``{}`` when absent or not a JSON object."""
    if raw is None:
        return {}
    try:
        doc = json.loads(raw)
    except ValueError:
        return {}
    return doc if isinstance(doc, dict) else {}


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
        raise Damaged(
            f"an entry for {doc.get('component')!r} {str(doc.get('key'))[:16]}..., stored under {component!r} {key[:16]}..."
        )
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
