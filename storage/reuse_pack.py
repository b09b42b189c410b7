"""The reuse store's pack files and the index that finds a key among them (``storage.reuse_store``).

A pack holds the entries one shard stored for one component::

    {"component": ..., "format": 1, "keys": [<key>, ...]}     the header: what the pack holds
    <key> <entry JSON>                                         one line per entry, sorted by key

Each entry line is judged on its own (the store checks its seal and that it names the key it is
stored under), so damage stays with the lines it touched; the header lets the index learn a
pack's keys from its first bytes, without reading its entries. A pack's file name is a sortable
UTC time stamp and a random id: of two copies of a key, the newer pack's decides.
"""

from __future__ import annotations

import bisect
import datetime as _dt
import hashlib
import json
import posixpath
import uuid
from array import array
from collections.abc import Iterable
from dataclasses import dataclass

PACK_SUFFIX = ".pack"
PACK_FORMAT = 1
LEGACY = 0xFFFFFFFF  # an index entry that is a file of the previous layout (one file per entry)


def encode_pack(component: str, lines: dict[str, str]) -> bytes:
    """A pack's bytes: a header naming the component and keys, then ``<key> <entry JSON>`` lines."""
    keys = sorted(lines)
    header = json.dumps({"format": PACK_FORMAT, "component": component, "keys": keys}, sort_keys=True)
    return "".join([header, "\n", *(f"{k} {lines[k]}\n" for k in keys)]).encode("utf-8")


@dataclass
class Pack:
    """A parsed pack: the keys its header lists (None when the header is unreadable) and each
    line's entry bytes by the key it is stored under; lines are judged only when asked for."""

    rel: str
    keys: list[str] | None
    lines: dict[str, bytes]
    broken: int = 0  # lines without a key to store them under

    @classmethod
    def parse(cls, rel: str, raw: bytes) -> Pack:
        head, _, body = raw.partition(b"\n")
        keys = header_keys(head)
        lines: dict[str, bytes] = {}
        broken = 0
        for line in body.split(b"\n"):
            if not line:
                continue
            key, sep, doc = line.partition(b" ")
            try:
                name = key.decode("ascii")
            except UnicodeDecodeError:
                name = ""
            if not sep or not name:
                broken += 1
            else:
                lines.setdefault(name, doc)  # a repeated key (tampering) keeps its first line
        return cls(rel, keys, lines, broken)

    def held(self) -> list[str]:
        """Every key this pack holds or claims to (a key in the header without a line is torn)."""
        return sorted(set(self.lines) | set(self.keys or ()))


def header_keys(head: bytes) -> list[str] | None:
    """The keys a pack's header line lists; None when it is not a readable header."""
    try:
        doc = json.loads(head.decode("utf-8"))
        keys = doc["keys"] if isinstance(doc, dict) and doc.get("format") == PACK_FORMAT else None
    except (UnicodeDecodeError, ValueError, KeyError, TypeError):
        return None
    return [str(k) for k in keys] if isinstance(keys, list) else None


def stamp_name(stamp: str | None = None) -> str:
    """A pack's file name: a sortable UTC time stamp (newest sorts last) and a random id."""
    return f"{stamp or _dt.datetime.now(_dt.UTC).strftime('%Y%m%dT%H%M%S%fZ')}-{uuid.uuid4().hex[:12]}{PACK_SUFFIX}"


def newest_first(rels: Iterable[str]) -> list[str]:
    """Pack paths, the newest first (by file name: time stamp, then random id)."""
    return sorted(rels, key=lambda rel: posixpath.basename(rel), reverse=True)


def key_digest(key: str) -> int:
    """8 bytes of a key's hash, as the index keeps it (any key, hex or not, spreads evenly)."""
    return int.from_bytes(hashlib.blake2b(key.encode("utf-8"), digest_size=8).digest(), "big")


class KeyIndex:
    """Which packs (or previous-layout files) of one component hold a key: 8-byte key digests,
    sorted, each with the number of its pack (``LEGACY`` for a file of the previous layout), 12
    bytes an entry. Packs this process writes are added as they are written (kept aside, then
    merged into the sorted arrays once they are a quarter of them); other processes' are seen
    when the index is built again."""

    def __init__(self, packs: list[str], entries: Iterable[tuple[str, int]]):
        """``entries``: (key, number of its pack in ``packs``), consumed once (it may fill ``packs`` as it goes)."""
        self.packs = packs
        self.digests = array("Q")
        self.where = array("I")
        self._recent: dict[int, list[int]] = {}
        self._recent_n = 0
        self._merge((key_digest(k) << 32) | w for k, w in entries)

    def _merge(self, packed: Iterable[int]) -> None:
        """Sort the entries (one int each, digest then pack: a third of the memory of tuples) in."""
        merged = sorted([*((d << 32) | w for d, w in zip(self.digests, self.where)), *packed])
        self.digests = array("Q", (m >> 32 for m in merged))
        self.where = array("I", (m & 0xFFFFFFFF for m in merged))
        self._recent, self._recent_n = {}, 0

    def __len__(self) -> int:
        return len(self.digests) + self._recent_n

    def add(self, rel: str, keys: Iterable[str]) -> None:
        self.packs.append(rel)
        for key in keys:
            self._recent.setdefault(key_digest(key), []).append(len(self.packs) - 1)
            self._recent_n += 1
        if self._recent_n > max(4096, len(self.digests) // 4):  # merges grow with the index: n log n in all
            self._merge([(d << 32) | w for d, ws in self._recent.items() for w in ws])

    def find(self, keys: Iterable[str]) -> dict[str, list[int]]:
        """Per key, the pack numbers that may hold it (``LEGACY``: its own file)."""
        out: dict[str, list[int]] = {}
        for key in keys:
            d = key_digest(key)
            i = bisect.bisect_left(self.digests, d)
            found = []
            while i < len(self.digests) and self.digests[i] == d:
                found.append(self.where[i])
                i += 1
            found += self._recent.get(d, [])
            if found:
                out[key] = found
        return out
