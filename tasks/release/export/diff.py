"""``reactbench release diff OLD NEW``: which items a release added, removed and changed, and why.

Both releases are read from their item index (``release_items.jsonl``,
:mod:`tasks.release.export.versions`), or, for a release written before it existed, from its
Parquet rows. Items are matched by id (ids are content-derived upstream, so an item kept is an
item with the same id); an item with the same id whose question, options, answer, images,
rubric or prior terms differ is *changed*. Reasons come from what the releases record:

* removed: the new release's own note on it (not accepted in review, image missing), else its
  editor or its source image is in no item of the new release, else a new item took its place
  (same source image, editor, question set, question and presentation: the edit or the question
  template was made again), else it was no longer selected;
* added: a new editor, a new source image, or the re-made counterpart of a removed item;
* changed: the parts that differ.
"""

from __future__ import annotations

import io
import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, TypedDict

from storage.fs import RunFS
from tasks.release.export.seal import MANIFEST, read_release
from tasks.release.export.versions import CONTENT, INDEX, ItemEntry, item_entry, read_index_text

KINDS = ("added", "removed", "changed")


class ItemChange(TypedDict):
    """One item added, removed or changed between two releases, and why."""

    id: str
    change: str  # one of KINDS
    task: str | None
    qtype: str | None
    reason: str
    detail: str


@dataclass
class Release:
    """One release as the diff sees it: version, released items by id, notes on items it left out."""

    url: str
    version: str | None
    items: dict[str, ItemEntry]
    dropped: dict[str, str] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return self.version or self.url


@dataclass
class ReleaseDiff:
    old: Release
    new: Release
    changes: list[ItemChange]

    def summary(self) -> dict[str, int]:
        counts = Counter(c["change"] for c in self.changes)
        return {k: counts.get(k, 0) for k in KINDS}

    def by_group(self) -> dict[str, dict[str, dict[str, int]]]:
        """task -> question type -> {added, removed, changed}."""
        out: dict[str, dict[str, dict[str, int]]] = {}
        for c in self.changes:
            group = out.setdefault(c["task"] or "?", {}).setdefault(c["qtype"] or "?", dict.fromkeys(KINDS, 0))
            group[c["change"]] += 1
        return {t: dict(sorted(g.items())) for t, g in sorted(out.items())}

    def reasons(self) -> dict[str, dict[str, int]]:
        """change kind -> reason -> items."""
        out: dict[str, Counter[str]] = {k: Counter() for k in KINDS}
        for c in self.changes:
            out[c["change"]][c["reason"]] += 1
        return {k: dict(v.most_common()) for k, v in out.items() if v}

    def as_json(self) -> dict[str, Any]:
        return {
            "old": {"url": self.old.url, "version": self.old.version, "items": len(self.old.items)},
            "new": {"url": self.new.url, "version": self.new.version, "items": len(self.new.items)},
            "summary": self.summary(),
            "by_task": self.by_group(),
            "reasons": self.reasons(),
            "items": self.changes,
        }


def load_release(url: str) -> Release:
    """A release folder (path or fsspec URL) as the diff reads it; a folder that is no release is
    refused with one line naming it."""
    folder = RunFS.open(url)
    manifest = read_release(folder)
    if manifest is None:
        raise ValueError(f"{folder.path(MANIFEST)}: not found or unreadable: {url} is not a reactbench release")
    items: dict[str, ItemEntry] = {}
    dropped: dict[str, str] = {}
    if folder.exists(INDEX):
        for e in read_index_text(folder.read_text(INDEX), folder.path(INDEX)):
            if e.get("released", True):
                items[e["id"]] = e
            else:
                dropped[e["id"]] = str(e.get("reason") or "")
    else:
        for row in _parquet_rows(folder, manifest):
            items[row["id"]] = item_entry(row)
    return Release(folder.url, manifest.get("version"), items, dropped)


def _parquet_rows(folder: RunFS, manifest: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Rows of a release without an index, one batch at a time (image bytes dropped as read)."""
    import pyarrow.parquet as pq

    for rel in sorted(f for f in manifest.get("files", {}) if f.startswith("data/") and f.endswith(".parquet")):
        with folder.fs.open(folder.path(rel), "rb") as f:
            for batch in pq.ParquetFile(f).iter_batches(batch_size=256):
                for row in batch.to_pylist():
                    row["images"] = [{"path": im.get("path")} for im in row.get("images") or []]
                    yield row


def _slot(e: ItemEntry) -> tuple:
    """Where an item sits: the same slot in both releases under another id means it was made again."""
    return tuple(
        e.get(k)
        for k in ("task", "source", "source_image_id", "editor", "question_set", "qid", "image_role", "rotation")
    )


def _image(e: ItemEntry) -> tuple:
    return (e.get("source"), e.get("source_image_id"))


def diff_releases(old: Release, new: Release) -> ReleaseDiff:
    """Every item added, removed or changed from ``old`` to ``new``, with its reason."""
    added = [new.items[i] for i in sorted(set(new.items) - set(old.items))]
    removed = [old.items[i] for i in sorted(set(old.items) - set(new.items))]
    old_editors = {e.get("editor") for e in old.items.values()}
    new_editors = {e.get("editor") for e in new.items.values()}
    old_images = {_image(e) for e in old.items.values()}
    new_images = {_image(e) for e in new.items.values()}
    added_slots = {_slot(e): e for e in added}
    removed_slots = {_slot(e): e for e in removed}
    changes: list[ItemChange] = []

    def note(e: ItemEntry, change: str, reason: str, detail: str = "") -> None:
        changes.append(
            {
                "id": e["id"],
                "change": change,
                "task": e.get("task"),
                "qtype": e.get("qtype"),
                "reason": reason,
                "detail": detail,
            }
        )

    for e in removed:
        twin = added_slots.get(_slot(e))
        if e["id"] in new.dropped:
            note(e, "removed", new.dropped[e["id"]])
        elif e.get("editor") not in new_editors:
            note(e, "removed", f"editor {e.get('editor')} removed")
        elif _image(e) not in new_images:
            note(e, "removed", "its source image is in no item of the new release", _image_name(e))
        elif twin is not None:
            note(e, "removed", _remade(e, twin), f"made again as {twin['id']}")
        else:
            note(e, "removed", "no longer selected by the build (mining, instruction or edit outcome)", _image_name(e))
    for e in added:
        twin = removed_slots.get(_slot(e))
        if e.get("editor") not in old_editors:
            note(e, "added", f"new editor {e.get('editor')}")
        elif _image(e) not in old_images:
            note(e, "added", "new source image", _image_name(e))
        elif twin is not None:
            note(e, "added", _remade(twin, e), f"replaces {twin['id']}")
        else:
            note(e, "added", "new item on a source image already released", _image_name(e))
    for i in sorted(set(old.items) & set(new.items)):
        a, b = old.items[i].get("content") or {}, new.items[i].get("content") or {}
        parts = [k for k in CONTENT if a.get(k) != b.get(k)]
        if parts:
            note(new.items[i], "changed", "changed: " + ", ".join(parts), _image_name(new.items[i]))
    changes.sort(key=lambda c: (KINDS.index(c["change"]), c["task"] or "", c["qtype"] or "", c["id"]))
    return ReleaseDiff(old, new, changes)


def _image_name(e: ItemEntry) -> str:
    return f"{e.get('source')} image {e.get('source_image_id')}"


def _remade(old: ItemEntry, new: ItemEntry) -> str:
    if old.get("edit_id") != new.get("edit_id"):
        return "edit made again (instruction or editor settings changed)"
    return "question made again (question template changed)"


def diff_urls(old: str, new: str) -> ReleaseDiff:
    return diff_releases(load_release(old), load_release(new))


def json_line(d: ReleaseDiff) -> str:
    """The whole diff as one JSON line."""
    return json.dumps(d.as_json(), sort_keys=True, ensure_ascii=False)


def changelog(d: ReleaseDiff) -> str:
    """The diff as a release's CHANGELOG.md: the counts per task and question type, the reasons,
    then every item."""
    s = d.summary()
    buf = io.StringIO()
    w = buf.write
    w(f"# Changelog: {d.old.label} -> {d.new.label}\n\n")
    w(f"{s['added']:,} items added, {s['removed']:,} removed, {s['changed']:,} changed ")
    w(f"({len(d.old.items):,} items before, {len(d.new.items):,} now).\n\n")
    w("| task | question type | added | removed | changed |\n|---|---|---:|---:|---:|\n")
    for task, groups in d.by_group().items():
        for qtype, c in groups.items():
            w(f"| {task} | {qtype} | {c['added']} | {c['removed']} | {c['changed']} |\n")
    for kind, reasons in d.reasons().items():
        w(f"\n## {kind.capitalize()}: reasons\n\n")
        for reason, n in reasons.items():
            w(f"- {n:,} x {reason}\n")
    for kind in KINDS:
        rows = [c for c in d.changes if c["change"] == kind]
        if rows:
            w(f"\n## {kind.capitalize()} items\n\n")
            for c in rows:
                more = f" ({c['detail']})" if c.get("detail") else ""
                w(f"- `{c['id']}` {c['task']} {c['qtype']}: {c['reason']}{more}\n")
    return buf.getvalue()
