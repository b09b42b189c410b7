"""Stream the elements of a huge top-level JSON array (Visual Genome's files) in batches.

Why this design: ``json.load`` of VG's 0.4 GB ``objects.json`` builds ~4 GB of Python dicts.
msgspec decodes straight into typed ``Struct`` objects (fast, compact) but has no incremental
mode. So the file is read in blocks; a regular expression proposes a boundary between two
top-level elements near the end of the block (``}, {"image_id"`` and similar); the slice
from the last verified boundary to the proposed one is decoded as one JSON array. Because
the slice starts at a verified boundary, msgspec's parse of it is exactly the parse of the
whole file up to that point, so a successful decode *proves* the proposed boundary (a
false one, inside a string or a nested object, leaves the slice truncated and is skipped).
Memory stays at a few blocks; speed is msgspec's.

Errors: a syntax error names the file and the absolute byte offset; a file that ends
inside an element is reported as truncated at its byte size. Elements that are valid JSON
but do not match the expected type come back as :class:`BadElement` so the caller can
turn them into reject rows (and keep the rest of the batch).
"""

from __future__ import annotations

import gc
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TypeVar

import fsspec
import msgspec

DEFAULT_BLOCK = 8 << 20
T = TypeVar("T")  # the element type (a msgspec Struct) or the file's type
MAX_ATTEMPTS = 8  # false boundary proposals tried per block before reading further
_BYTE = re.compile(r"\(byte (\d+)\)")


class JSONStreamError(ValueError):
    """The file is not a well-formed JSON array; the message names file and byte offset."""


@dataclass(frozen=True)
class BadElement:
    """A top-level element that parsed as JSON but not as the expected type (or holds a
    string that is not valid UTF-8)."""

    raw: bytes
    error: str
    offset: int  # byte offset of the batch the element belongs to
    at: int | None = None  # byte offset of the element itself in the file


def utf8_error_at(data: bytes) -> int | None:
    """Offset of the first byte of ``data`` that is not valid UTF-8 (None when all is valid)."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start
    return None


def is_invalid_utf8(exc: BaseException) -> bool:
    """Whether a decode failed on a string that is not valid UTF-8 (bad bytes, not bad syntax).

    msgspec before 0.23 raises ``UnicodeDecodeError``; 0.23 raises a ``DecodeError`` saying
    "Invalid UTF-8 encoded string", with no offset. Both must become reject rows, never a
    "truncated JSON" or "malformed JSON" error for the whole file.
    """
    if isinstance(exc, UnicodeDecodeError):
        return True
    return isinstance(exc, msgspec.DecodeError) and "invalid utf-8" in str(exc).lower()


def is_element_error(exc: BaseException) -> bool:
    """A failure that belongs to one element (wrong shape or bad bytes), not to the file's syntax."""
    return isinstance(exc, msgspec.ValidationError) or is_invalid_utf8(exc)


def describe_error(exc: Exception, raw: bytes, at: int | None) -> str:
    """The decoder's message; for invalid UTF-8, the absolute byte offset of the bad byte."""
    if is_invalid_utf8(exc):
        rel = utf8_error_at(raw)
        if rel is not None:
            where = f"byte offset {at + rel}" if at is not None else f"byte {rel} of the entry"
            return f"invalid UTF-8 (byte 0x{raw[rel]:02x}) at {where}"
    return str(exc)


def decode_part(raw: msgspec.Raw | bytes, type_: type, at: int | None = None) -> object | str:
    """Decode one entry (a VG object or relationship, a COCO entry, an FSC147 annotation; at file
    offset ``at`` when known); on failure return the error message for its reject (invalid UTF-8:
    with the bad byte's offset)."""
    try:
        return msgspec.json.decode(raw, type=type_)
    except (msgspec.DecodeError, UnicodeDecodeError) as exc:
        return describe_error(exc, bytes(raw), at)


@contextmanager
def gc_paused() -> Iterator[None]:
    """Decoding millions of small objects is much faster with the cyclic GC paused."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def boundary_pattern(keys: Sequence[str]) -> re.Pattern[bytes]:
    """``}`` ``,`` ``{`` followed by one of the keys a top-level element may start with."""
    alt = b"|".join(re.escape(k.encode()) for k in keys)
    return re.compile(rb"\}\s*,\s*(\{)\s*\"(?:" + alt + rb")\"")


def _error_offset(exc: Exception) -> int | None:
    m = _BYTE.search(str(exc))
    return int(m.group(1)) if m else None


def iter_array(
    path: str,
    elem_type: type[T],
    keys: Sequence[str],
    *,
    block_bytes: int = DEFAULT_BLOCK,
) -> Iterator[list[T | BadElement]]:
    """Yield batches of decoded elements (``elem_type`` or :class:`BadElement`) of the array in ``path``.

    ``keys``: the keys a top-level element may start with (used only to propose boundaries;
    wrong proposals are rejected by decoding, never trusted).
    """
    pattern = boundary_pattern(keys)
    typed = msgspec.json.Decoder(list[elem_type])
    raw_dec = msgspec.json.Decoder(list[msgspec.Raw])
    one = msgspec.json.Decoder(elem_type)
    with fsspec.open(path, "rb") as f:
        data = f.read(block_bytes)
        base = 0  # file offset of data[0]
        eof = len(data) < block_bytes
        pos = _skip_ws(data, 0)
        while pos >= len(data) and not eof:  # leading whitespace longer than a block
            more = f.read(block_bytes)
            eof = len(more) < block_bytes
            data += more
            pos = _skip_ws(data, 0)
        if pos >= len(data):
            raise JSONStreamError(f"{path}: empty file (expected a JSON array)")
        if data[pos : pos + 1] != b"[":
            raise JSONStreamError(f"{path}: byte {pos}: expected a JSON array '[', found {data[pos : pos + 20]!r}")
        start = _skip_ws(data, pos + 1)
        if data[start : start + 1] == b"]":
            return
        attempts_left = MAX_ATTEMPTS
        resume = 0  # proposals before this offset were already refuted
        while True:
            if not eof and len(data) - start < block_bytes:
                more = f.read(block_bytes)
                eof = len(more) < block_bytes
                data += more
                continue
            batch = None
            if eof and len(data) - start <= block_bytes + block_bytes // 2:
                yield _last_batch(path, data, start, base, typed, raw_dec, one, pattern)
                return
            if attempts_left > 0:
                # propose boundaries from half a block on, so batches hold about a block
                probe = max(start + block_bytes // 2, resume)
                for m in pattern.finditer(data, probe):
                    batch = _try_batch(path, data, start, m.start() + 1, base, typed, raw_dec, one)
                    if batch is not None:
                        start = m.start(1)
                        break
                    resume = m.end()
                    attempts_left -= 1
                    if attempts_left <= 0:
                        break
            if batch is not None:
                yield batch
                data = data[start:]
                base += start
                start = 0
                attempts_left = MAX_ATTEMPTS
                resume = 0
                continue
            if eof:
                yield _last_batch(path, data, start, base, typed, raw_dec, one, pattern)
                return
            more = f.read(block_bytes)  # no boundary proven in this block: look further
            eof = len(more) < block_bytes
            data += more
            attempts_left = MAX_ATTEMPTS


def _skip_ws(data: bytes, pos: int) -> int:
    n = len(data)
    while pos < n and data[pos] in b" \t\r\n":
        pos += 1
    return pos


def _try_batch(
    path: str,
    data: bytes,
    start: int,
    end: int,
    base: int,
    typed: msgspec.json.Decoder[list[T]],
    raw_dec: msgspec.json.Decoder[list[msgspec.Raw]],
    one: msgspec.json.Decoder[T],
) -> list[T | BadElement] | None:
    """Decode ``data[start:end]`` as elements; None when ``end`` is not a real boundary."""
    chunk = b"[" + data[start:end] + b"]"
    try:
        return typed.decode(chunk)
    except (msgspec.DecodeError, UnicodeDecodeError) as exc:
        if not is_element_error(exc):
            _raise_if_inner(path, exc, len(chunk), base + start)
            return None
        # valid JSON maybe, wrong shape or bad bytes somewhere: check the syntax, then per element
    try:
        raws = raw_dec.decode(chunk)
    except msgspec.DecodeError as exc:
        _raise_if_inner(path, exc, len(chunk), base + start)
        return None
    return _per_element(raws, one, base + start, chunk)


def _raise_if_inner(path: str, exc: Exception, chunk_len: int, chunk_offset: int) -> None:
    """A syntax error before the proposed end is a real one (the prefix is the true parse)."""
    off = _error_offset(exc)
    if off is not None and off < chunk_len - 2:
        raise JSONStreamError(f"{path}: malformed JSON at byte offset {chunk_offset + off - 1}: {exc}") from None


def _per_element(
    raws: list[msgspec.Raw], one: msgspec.json.Decoder[T], offset: int, chunk: bytes
) -> list[T | BadElement]:
    """Decode elements one by one; a failing one becomes a :class:`BadElement` that knows its
    file offset (``chunk`` is ``b"[" + data[offset:...]``)."""
    out: list[T | BadElement] = []
    cursor = 1
    for raw in raws:
        try:
            out.append(one.decode(raw))
        except (msgspec.DecodeError, UnicodeDecodeError) as exc:
            if not is_element_error(exc):
                raise  # raw_dec already parsed this element, so its syntax cannot fail here
            body = bytes(raw)
            pos = chunk.find(body, cursor)
            at = offset + pos - 1 if pos >= 0 else None
            if pos >= 0:
                cursor = pos + len(body)
            out.append(BadElement(body, describe_error(exc, body, at), offset, at))
    return out


def _last_batch(
    path: str,
    data: bytes,
    start: int,
    base: int,
    typed: msgspec.json.Decoder[list[T]],
    raw_dec: msgspec.json.Decoder[list[msgspec.Raw]],
    one: msgspec.json.Decoder[T],
    pattern: re.Pattern[bytes],
) -> list[T | BadElement]:
    """The tail: from the last boundary to the end of the file, which must close the array."""
    end = len(data)
    while end > start and data[end - 1] in b" \t\r\n":
        end -= 1
    size = base + len(data)
    if end <= start or data[end - 1 : end] != b"]":
        last = _last_complete_end(data, start, pattern, raw_dec)
        raise JSONStreamError(
            f"{path}: truncated JSON: the file ends at byte {size} inside the top-level array "
            f"(the last complete element ends at byte offset {base + last}); re-download or repair the file"
        )
    chunk = b"[" + data[start:end]
    try:
        return typed.decode(chunk)
    except (msgspec.DecodeError, UnicodeDecodeError) as exc:
        if not is_element_error(exc):
            raise _tail_error(path, exc, base, start, size) from None
    try:
        raws = raw_dec.decode(chunk)
    except msgspec.DecodeError as exc:
        raise _tail_error(path, exc, base, start, size) from None
    return _per_element(raws, one, base + start, chunk)


def _last_complete_end(data: bytes, start: int, pattern: re.Pattern[bytes], raw_dec: msgspec.json.Decoder) -> int:
    """Offset just past the last whole top-level element of ``data[start:]`` (``start`` if none):
    the latest proposed boundary whose prefix decodes as complete elements."""
    proposals = [m.start() + 1 for m in pattern.finditer(data, start)]
    for end in reversed(proposals[-MAX_ATTEMPTS:]):
        try:
            raw_dec.decode(b"[" + data[start:end] + b"]")
        except msgspec.DecodeError:
            continue
        return end
    return start


def _tail_error(path: str, exc: Exception, base: int, start: int, size: int) -> JSONStreamError:
    off = _error_offset(exc)
    if off is None:
        return JSONStreamError(
            f"{path}: truncated JSON: the file ends at byte {size} inside an element that starts at byte offset {base + start}"
        )
    return JSONStreamError(f"{path}: malformed JSON at byte offset {base + start + off - 1}: {exc}")


def decode_file(path: str, type_: type[T]) -> T:
    """Decode a small JSON file (FSC147 annotations, VG image_data) whole, with a clear error."""
    with fsspec.open(path, "rb") as f:
        data = f.read()
    try:
        return msgspec.json.decode(data, type=type_)
    except msgspec.ValidationError as exc:
        raise JSONStreamError(f"{path}: unexpected structure: {exc}") from None
    except (msgspec.DecodeError, UnicodeDecodeError) as exc:
        if is_invalid_utf8(exc):
            raise JSONStreamError(f"{path}: {describe_error(exc, data, 0)}") from None
        off = _error_offset(exc)
        if off is None:
            raise JSONStreamError(
                f"{path}: truncated JSON: the file ends at byte {len(data)} before the value is complete"
            ) from None
        raise JSONStreamError(f"{path}: malformed JSON at byte offset {off}: {exc}") from None
