"""A release folder as one sealed set: written aside, checked, swapped in whole.

``reactbench export`` used to write straight into ``--out``: a kill left old and new files side
by side, and a one-task export into a four-task folder left three stale tasks that
``datasets.load_dataset(out, "all")`` loaded with the new one. Now, as the review export does
for its set (``tasks.review.export_set``):

* every file is written into a sibling folder ``.<name>.export-tmp-<token>``;
* :data:`MANIFEST` is written last into it, naming every file with its sha256 and size;
* the folder is swapped in. Local folders: one ``renameat2(RENAME_EXCHANGE)`` (Linux), so a
  reader sees the old release or the new one at every instant; the old one, now at the
  temporary name, is deleted afterwards. Elsewhere (fsspec URLs, other kernels): the old release
  is moved aside, then the new one in, file by file with the manifest last (and, when a folder
  is removed, its manifest first), so a folder holding a manifest holds every file it names. A
  kill or a store failure between the two leaves the old release aside: the next command that
  writes or checks the release (``export``, :func:`verify_release`) puts it back first;
* an existing folder that is not a sealed release (no manifest, or files the manifest does not
  name) is refused, ``replace`` or not: ``replace`` only ever replaces a sealed release, and
  allows the new one to drop tasks or formats the old one had (refused without it).

One writer at a time: an export holds the release's own lease (``.<name>.export-lock.json``
beside it, ``storage.run_lock``) from its first look at ``out`` to the end of the swap, so a
second export, or a reader putting back a release left aside, never works on a swap in flight.
Leftover temporary folders of a killed export are removed by the next one.
"""

from __future__ import annotations

import ctypes
import json
import os
import posixpath
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from storage.fs import RunFS, rm_literal
from storage.hashing import sha256_file
from storage.run_lock import RunLock, RunLocked
from tasks.engine.progress import StepProgress, no_progress

if TYPE_CHECKING:
    from fsspec import AbstractFileSystem

MANIFEST = "release_manifest.json"
FORMAT = 1
TMP_TAG = ".export-tmp-"
OLD_TAG = ".export-old-"
LOCK_TAG = ".export-lock.json"


class ReleaseRefused(ValueError):
    """``--out`` holds something this export must not silently replace; the message says what."""


Advance = Callable[[int], None]  # bytes just hashed


def file_entries(folder: RunFS, advance: Advance | None = None) -> dict[str, dict[str, Any]]:
    """Every file below ``folder`` (relative path -> sha256 and size), the manifest excluded;
    ``advance`` is told the bytes hashed as it goes."""
    entries = {}
    for path in folder.walk_files():
        rel = posixpath.relpath(path, folder.root)
        if rel != MANIFEST:
            sha, size = sha256_file(folder.fs, path, advance)
            entries[rel] = {"sha256": sha, "bytes": size}
    return dict(sorted(entries.items()))


def folder_bytes(folder: RunFS) -> int:
    """The bytes of every file below ``folder`` (what sealing it hashes), from one listing."""
    if not folder.exists():
        return 0
    return sum(int(info["size"]) for info in folder.fs.find(folder.root, detail=True).values())


def read_release(out: RunFS) -> dict[str, Any] | None:
    """The manifest of the release in ``out``, or None when there is none (or it is unreadable)."""
    try:
        return json.loads(out.read_text(MANIFEST))
    except (FileNotFoundError, IsADirectoryError, ValueError, UnicodeDecodeError):
        return None


def verify_release(out: RunFS) -> dict[str, Any]:
    """The manifest, after checking that the folder holds exactly the files it names, unchanged
    (each file's sha256 and size against the manifest's).

    An export killed in the middle of an object-store swap leaves the old release aside: it is
    put back first (under the release's lock), so a reader sees the old release or the new one."""
    if _leftovers(out):
        try:
            with release_lock(out):
                recover(out)
        except ReleaseRefused:
            if read_release(out) is None:  # a live export is swapping it in: nothing whole to check yet
                raise
    manifest = read_release(out)
    if manifest is None:
        raise ReleaseRefused(f"{out.url}: no {MANIFEST}; not a sealed release (export it again)")
    found = file_entries(out)
    if found != manifest.get("files"):
        named, present = set(manifest.get("files") or {}), set(found)
        diff = (
            sorted(present - named)[:3]
            or sorted(named - present)[:3]
            or sorted(k for k in named if found[k] != manifest["files"][k])[:3]
        )
        raise ReleaseRefused(f"{out.url}: the files differ from {MANIFEST} (e.g. {', '.join(diff)}); export it again")
    return manifest


def check_target(out: RunFS, replace: bool, new_files: dict[str, Any] | None = None) -> None:
    """Refuse an ``out`` holding something else than an older version of this release.

    A folder that is not a sealed release (no manifest, or files its manifest does not name) is
    refused whatever ``replace`` says: ``--replace`` only ever replaces a release. Without
    ``new_files`` (before any work) that is all; with them, a release holding files the new one
    lacks is refused too, unless ``replace``."""
    if not out.exists() or not out.listdir():
        return
    old = read_release(out)
    if old is None:
        listed = ", ".join(out.listdir()[:4])
        raise ReleaseRefused(
            f"--out {out.url} is not empty and holds no {MANIFEST} (found {listed}): not a release this tool sealed, "
            "and --replace only replaces one; choose another --out, or remove that folder yourself if it is yours to delete"
        )
    foreign = sorted(set(_relative_files(out)) - set(old.get("files") or {}) - {MANIFEST})
    if foreign:
        raise ReleaseRefused(
            f"--out {out.url} holds a release plus {len(foreign)} file(s) its {MANIFEST} does not name "
            f"({', '.join(foreign[:3])}{', ...' if len(foreign) > 3 else ''}); --replace would delete them: move them out first"
        )
    if replace or new_files is None:
        return
    dropped = sorted(set(old.get("files") or {}) - set(new_files))
    if dropped:
        had, has = (
            sorted(old.get("counts") or {}),
            sorted({f.split("/")[1] for f in new_files if f.startswith("data/")}),
        )
        raise ReleaseRefused(
            f"--out {out.url} holds a release with tasks {', '.join(had) or '-'}; this export has {', '.join(has) or 'none'} "
            f"and would drop {len(dropped)} file(s) ({', '.join(dropped[:3])}{', ...' if len(dropped) > 3 else ''}): "
            "pass --replace to replace the whole folder, or choose another --out"
        )


@contextmanager
def sealed_release(
    out: RunFS, *, replace: bool, extra: dict[str, Any], progress: StepProgress = no_progress
) -> Iterator[RunFS]:
    """Yield a staging folder to write the release into; on success seal it and swap it in.

    ``extra`` goes into the manifest (counts per task, verified, source run). On an error the
    staging folder is removed and ``out`` is left as it was (on an object store, a failure in the
    middle of the swap leaves the old release aside for :func:`recover`). The caller holds
    :func:`release_lock` and has called :func:`recover`. ``progress`` sees the ``seal`` step
    (bytes hashed)."""
    parent, name = posixpath.split(out.root.rstrip("/"))
    check_target(out, replace)
    token = uuid.uuid4().hex[:12]
    stage = RunFS(out.fs, posixpath.join(parent, f".{name}{TMP_TAG}{token}"))
    stage.makedirs()
    try:
        yield stage
        total, hashed = folder_bytes(stage), 0
        progress("seal", 0, total)

        def advance(n: int) -> None:
            nonlocal hashed
            hashed += n
            progress("seal", hashed, total)

        files = file_entries(stage, advance)
        check_target(out, replace, files)
        manifest = {"format": FORMAT, "files": files, **extra}
        stage.write_text_atomic(MANIFEST, json.dumps(manifest, indent=1, sort_keys=True) + "\n")
        _swap_in(stage, out, posixpath.join(parent, f".{name}{OLD_TAG}{token}"))
        progress(
            "seal",
            total,
            total,
            f"sealed {len(files) + 1} files ({total / 1e6:,.1f} MB hashed into {MANIFEST}) and swapped them into {out.url}",
        )
    finally:
        stage.rm()


@contextmanager
def release_lock(out: RunFS) -> Iterator[None]:
    """Hold the release's own lease (``.<name>.export-lock.json`` beside ``out``) for the block;
    :class:`ReleaseRefused` names the live holder when another process has it."""
    parent, name = posixpath.split(out.root.rstrip("/"))
    created = _first_missing(parent) if out.local else None  # taking the lease creates the folder
    # a stale lease (a killed export) is taken over without a notice: recover() says what it puts back
    lock = RunLock(
        RunFS(out.fs, parent or "/"), "reactbench export", lease_file=f".{name}{LOCK_TAG}", on_message=lambda _: None
    )
    try:
        lock.acquire()
    except RunLocked as exc:
        who = exc.holder.describe() if exc.holder is not None else "another process"
        raise ReleaseRefused(f"--out {out.url} is being written by {who}; wait for that export to finish") from None
    try:
        yield
    finally:
        lock.release()
        while created is not None:  # a refused or failed first export leaves no empty folder behind
            try:
                os.rmdir(parent)  # only ever an empty folder
            except OSError:
                break
            if parent == created:
                break
            parent = os.path.dirname(parent)


def _first_missing(folder: str) -> str | None:
    """The outermost folder of a local path that does not exist yet (None when it exists)."""
    missing = None
    while folder and not os.path.exists(folder):
        missing, folder = folder, os.path.dirname(folder)
    return missing


def _leftovers(out: RunFS) -> list[str]:
    """The temporary and set-aside folders a killed export of ``out`` left beside it."""
    parent, name = posixpath.split(out.root.rstrip("/"))
    return [
        n for n in RunFS(out.fs, parent or "/").listdir() if n.startswith((f".{name}{TMP_TAG}", f".{name}{OLD_TAG}"))
    ]


def _relative_files(folder: RunFS) -> list[str]:
    """Every file below ``folder``, relative to it (one listing)."""
    return [posixpath.relpath(path, folder.root) for path in folder.walk_files()]


def recover(out: RunFS) -> None:
    """Undo what a killed export left, so that ``out`` holds a whole release again: when it holds
    none (a swap cut short: part of a copy, no manifest), put back the old release set aside, or
    else move in the sealed new one; then remove the other leftovers. Call it holding
    :func:`release_lock`. A folder holding a manifest holds every file it names (the manifest is
    copied last and removed first), so a manifest is what "whole" means here."""
    parent = posixpath.dirname(out.root.rstrip("/"))
    here = RunFS(out.fs, parent or "/")
    for n in sorted(_leftovers(out), key=lambda n: OLD_TAG not in n):  # the old release first, then a new one
        if read_release(out) is None and read_release(here.sub(n)) is not None:
            if out.exists():
                out.rm()  # a copy that a kill cut short
            _move_tree(out.fs, here.path(n), out.root)
            continue
        here.rm(n)


def _swap_in(stage: RunFS, out: RunFS, old: str) -> None:
    """Put the sealed ``stage`` folder at ``out``: atomically where the kernel can exchange."""
    if out.local:
        if not os.path.exists(out.root):
            os.makedirs(os.path.dirname(out.root) or ".", exist_ok=True)
            os.rename(stage.root, out.root)  # atomic; nothing to replace
            return
        if _exchange(stage.root, out.root):
            stage.rm()  # the old release, now under the temporary name
            return
    if out.exists():
        _move_tree(out.fs, out.root, old)  # a kill from here on: recover() puts the old release back
    _move_tree(out.fs, stage.root, out.root)
    if out.fs.exists(old):
        rm_literal(out.fs, old)


def _move_tree(fs: AbstractFileSystem, src: str, dst: str) -> None:
    """Move every file under ``src`` to the same place under ``dst``, the manifest last, then
    remove ``src``. Object stores have no rename (a move is a copy and a delete), and fsspec's
    recursive ``mv`` also tries to copy the folder's own key, which does not exist there; copying
    file by file with the manifest last means a folder holding a manifest holds all its files."""
    src, dst = src.rstrip("/"), dst.rstrip("/")
    files = sorted(fs.find(src), key=lambda f: (posixpath.basename(f) == MANIFEST, f))
    for f in files:
        target = posixpath.join(dst, posixpath.relpath(f.rstrip("/"), fs._strip_protocol(src)))
        fs.makedirs(posixpath.dirname(target), exist_ok=True)  # local folders need their parents
        fs.cp_file(f, target)  # one file, its name taken literally (copy() would expand a glob)
    manifest = posixpath.join(src, MANIFEST)
    if fs.exists(manifest):  # first: a folder that still has its manifest still has all its files
        fs.rm_file(manifest)
    rm_literal(fs, src)


def _exchange(a: str, b: str) -> bool:
    """Swap two paths in one step (Linux ``renameat2(RENAME_EXCHANGE)``); False where unsupported."""
    try:
        fn = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    if fn(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    err = ctypes.get_errno()
    if err in (22, 38, 95):  # EINVAL / ENOSYS / EOPNOTSUPP: a filesystem without the flag
        return False
    raise OSError(err, os.strerror(err), b)
