"""Where an output path really points, and whether it lies in a run directory: so that no command
writes into, over or inside a run directory it does not own.

``reactbench export --out runs/X/../X --replace`` once replaced the whole run (config, stage
outputs, images, the review queue) by the release: the check compared paths as written. Here an
output path is first resolved (:func:`resolved`: symlinks, ``..``, ``.``, ``//`` and ``file://``
on a local disk; ``..``, ``.`` and ``//`` in an object store's key), then compared.

**What counts as a run directory** (:func:`is_run_dir`): a folder that holds the write lease
``.reactbench-lock.json`` (a command is writing it), or holds ``config.yaml`` together with at
least one stage manifest ``<folder>/_manifest.json`` (a stage has started there: the runner
writes the manifest before any shard). A folder with only a ``config.yaml`` (a folder of configs)
is not one. The check looks at the target and every folder above it, so a release or a report
can be neither a run directory, nor inside one, nor hold the run it comes from.
"""

from __future__ import annotations

import os
import posixpath

from storage.addresses import CONFIG_FILE
from storage.fs import RunFS
from storage.run_lock import LEASE_FILE
from storage.stage_store import MANIFEST


class InsideRunDir(ValueError):
    """An output path is, holds, or lies inside a run directory; the message says which and the fix."""


def resolved(target: RunFS) -> RunFS:
    """``target`` with its path made canonical: on a local disk the real path (symlinks followed,
    also for the part that does not exist yet), elsewhere the key with ``.``, ``..`` and empty
    segments folded (an object store has no symlinks)."""
    if target.local:
        return RunFS(target.fs, os.path.realpath(target.root))
    lead = "/" if target.root.startswith("/") else ""
    return RunFS(target.fs, lead + posixpath.normpath(target.root).lstrip("/"))


def is_run_dir(folder: RunFS) -> bool:
    """Whether ``folder`` is a run directory (the module docstring says what counts)."""
    if folder.exists(LEASE_FILE):
        return True
    if not folder.exists(CONFIG_FILE):
        return False
    return any(folder.exists(name, MANIFEST) for name in folder.listdir() if name != CONFIG_FILE)


def enclosing_run_dir(target: RunFS) -> RunFS | None:
    """The run directory that ``target`` (resolved) is or lies inside, the nearest one; None when none."""
    here = target.root
    while True:
        folder = RunFS(target.fs, here)
        if folder.fs.isdir(folder.root) and is_run_dir(folder):
            return folder
        parent = posixpath.dirname(here.rstrip("/"))
        if not parent or parent == here or parent.strip("/") == "":
            return None
        here = parent


def within(inner: RunFS, outer: RunFS) -> bool:
    """Whether ``inner`` is ``outer`` or lies below it (both resolved, same store)."""
    if inner.protocol != outer.protocol:
        return False
    a, b = inner.root.rstrip("/") or "/", outer.root.rstrip("/") or "/"
    return a == b or a.startswith(b.rstrip("/") + "/")


def as_written(target: RunFS, canonical: RunFS) -> str:
    """``target``'s URL, followed by what it resolves to when that differs (for messages)."""
    return target.url if target.root == canonical.root else f"{target.url} (= {canonical.url})"


def refuse_release_target(out: RunFS, run: RunFS) -> RunFS:
    """``out`` resolved, after refusing a release folder that is, holds or lies inside a run
    directory (``run``, the one exported, or any other); :class:`InsideRunDir` names it."""
    target, source = resolved(out), resolved(run)
    named = as_written(out, target)
    fix = "choose a folder outside every run directory for the release (e.g. releases/<name>)"
    if within(target, source):
        where = "is" if target.root.rstrip("/") == source.root.rstrip("/") else "is inside"
        raise InsideRunDir(f"--out {named} {where} the run directory {source.url}; {fix}")
    if within(source, target):
        raise InsideRunDir(f"--out {named} holds the run directory {source.url}; {fix}")
    other = enclosing_run_dir(target)
    if other is not None:
        where = "is" if other.root.rstrip("/") == target.root.rstrip("/") else "is inside"
        raise InsideRunDir(f"--out {named} {where} the run directory {other.url}; {fix}")
    blocked = file_in_the_way(target)
    if blocked is not None:
        what = "is an existing file" if blocked == target.root else f"lies below the file {blocked}"
        raise InsideRunDir(
            f"--out {named} {what}; a release is a folder: choose a new or empty folder (e.g. releases/<name>)"
        )
    return target


def file_in_the_way(target: RunFS) -> str | None:
    """The path of a file that is ``target`` or one of the folders above it (a folder cannot be
    made there), or None. Object stores have no such conflict."""
    if not target.local:
        return None
    path = target.root
    while True:
        if os.path.lexists(path):
            return path if not os.path.isdir(path) else None
        parent = os.path.dirname(path)
        if parent == path:
            return None
        path = parent


def refuse_report_target(out: RunFS, run: RunFS, reports_dir: str) -> RunFS:
    """The report file ``out`` resolved, after refusing one that is a folder or lies inside a run
    directory other than below ``run``'s own ``reports_dir`` (the folder the report command owns)."""
    target, source = resolved(out), resolved(run)
    named = as_written(out, target)
    if target.fs.isdir(target.root):
        raise InsideRunDir(f"--out {named} is a folder; name the HTML file to write, outside every run directory")
    if within(target, source.sub(reports_dir)):
        return target
    parent = RunFS(target.fs, posixpath.dirname(target.root.rstrip("/")) or "/")
    other = source if within(target, source) else enclosing_run_dir(parent)
    if other is not None:
        raise InsideRunDir(
            f"--out {named} is inside the run directory {other.url}; write the report outside every run directory, "
            f"or leave --out out to write {source.sub(reports_dir).url}/<kind>.html"
        )
    return target
