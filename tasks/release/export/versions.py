"""What a release records so that the next one can say what changed: its version and an item index.

``release_items.jsonl`` lists every released question, one JSON line each: its id, where it
sits (task, question type, question set, dimension), where it comes from (source image, edit,
editor) and a hash of each part a reader sees (question, options, answer, images, rubric). An
item's id is derived from its content upstream (candidate -> instruction -> edit -> question,
``storage.hashing.stable_id``), never from shard layout or order, so the same source image,
instruction, editor and question set give the same id in every build; the hashes tell a
changed item from an unchanged one. Questions the run holds but did not release (not accepted
in review, image missing) are listed too, with ``released: false`` and the reason, so that
``reactbench release diff`` can say why an item left. :mod:`tasks.release.export.diff` compares two
indexes; releases written before the index existed are read from their Parquet rows instead.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from typing import Any, TypedDict

from storage import addresses
from storage.fs import RunFS
from storage.hashing import canonical_json, sha256_hex, stable_id
from tasks.release.export.rows import ReleaseRow

INDEX = "release_items.jsonl"
CHANGELOG = "CHANGELOG.md"
VERSION_RE = re.compile(r"^[0-9A-Za-z][0-9A-Za-z.+_-]{0,63}$")
# what places an item (the diff's groups and its "re-made" match), and what a reader sees of it
PLACE = ("task", "qtype", "question_set", "dimension", "qid", "image_role", "rotation", "variant")
ORIGIN = ("source", "source_image_id", "edit_id", "editor")
CONTENT = ("question", "options", "answer", "images", "rubric", "prior_terms")


class ItemEntry(TypedDict, total=False):
    """One line of :data:`INDEX`: a released item (its place, its origin and a hash of each part a
    reader sees, :data:`CONTENT`) or, ``released`` false, a question left out and why (``reason``)."""

    id: str
    released: bool
    reason: str
    task: str | None
    qtype: str | None
    question_set: str | None
    dimension: str | None
    qid: str | None
    image_role: str | None
    rotation: int | None
    variant: str | None
    source: str | None
    source_image_id: str | None
    edit_id: str | None
    editor: str | None
    content: dict[str, str]


def check_version(version: str | None) -> str | None:
    """The version as given, or a ValueError naming what a version may hold."""
    if version is not None and not VERSION_RE.match(version):
        raise ValueError(
            f"release version {version!r}: use letters, digits and . + _ - (at most 64, starting with a letter or digit), e.g. 1.1.0"
        )
    return version


def version_token(version: str | None) -> str:
    """The version as it goes into a file name (``1.1.0`` -> ``v1_1_0``); empty when unversioned."""
    if not version:
        return ""
    token = re.sub(r"[^0-9A-Za-z]+", "_", version).strip("_")
    return token if token[:1].lower() == "v" else f"v{token}"


def content_hashes(row: dict[str, Any]) -> dict[str, str]:
    """A short hash of each part of a released row a reader sees; images by their content-hash names."""
    values = {
        "question": row.get("question"),
        "options": list(row.get("options") or []),
        "answer": row.get("answer"),
        "images": [im["path"] for im in row.get("images") or []],
        "rubric": row.get("rubric"),
        "prior_terms": list(row.get("prior_terms") or []),
    }
    return {k: stable_id(v, length=12) for k, v in values.items()}


def item_entry(row: dict[str, Any]) -> ItemEntry:
    """A released row's index line (``tasks.release.export.rows.release_row`` or a Parquet row)."""
    entry: ItemEntry = {"id": row["id"], "released": True}
    entry.update({k: row.get(k) for k in (*PLACE, *ORIGIN)})  # type: ignore[typeddict-item]
    entry["content"] = content_hashes(row)
    return entry


def not_released(
    run: RunFS, released: set[str], unverified: bool, rejects: Iterable[dict[str, Any]]
) -> dict[str, str]:
    """Question id -> why the run holds it but the release does not: the export's own rejects
    (image missing) and, for a verified release, every question of ``qa/questions`` that the
    review did not accept."""
    out = {r["id"]: f"not released: {r['reason']} ({r['detail']})" for r in rejects}
    reader = addresses.QUESTIONS.reader(run)
    if not unverified and reader.exists():
        for r in reader.rows(columns=["id"]):
            if r["id"] not in released and r["id"] not in out:
                out[r["id"]] = "not accepted in review (absent from review/verified_questions)"
    return out


def index_lines(rows: Iterable[ReleaseRow], dropped: dict[str, str]) -> Iterator[str]:
    """The index file's lines: every released row, then every question not released."""
    for r in rows:
        yield canonical_json(item_entry(r))
    for qid, why in sorted(dropped.items()):
        yield canonical_json({"id": qid, "released": False, "reason": why})


def write_index(out: RunFS, rows: Iterable[ReleaseRow], dropped: dict[str, str]) -> str:
    """Write :data:`INDEX` into the release folder ``out``; returns its path."""
    out.write_text_atomic(INDEX, "".join(line + "\n" for line in index_lines(rows, dropped)))
    return INDEX


def card_lines(version: str | None, previous: str | None, summary: dict[str, int] | None) -> list[str]:
    """The card's section on the release's version and what changed since the previous one."""
    lines = ["## Version", "", f"Version: **{version or 'unversioned'}**."]
    if summary is not None:
        lines += [
            "",
            f"Changes since {previous or 'the previous release'}: {summary['added']:,} items added, "
            f"{summary['removed']:,} removed, {summary['changed']:,} changed; `{CHANGELOG}` lists them with the reasons.",
        ]
    lines += [
        "",
        f"Item ids do not change between builds: the same source image, instruction, editor and question set give the same id. "
        f"`{INDEX}` lists every item with a hash of what a reader sees, and `reactbench release diff OLD NEW` compares two releases.",
        "",
    ]
    return lines


def md5_file(folder: RunFS, rel: str) -> str:
    """The md5 of a release file (what VLMEvalKit checks a TSV against), read in blocks."""
    import hashlib

    digest = hashlib.md5(usedforsecurity=False)
    with folder.fs.open(folder.path(rel), "rb") as f:
        while block := f.read(8 * 1024 * 1024):
            digest.update(block)
    return digest.hexdigest()


def read_index_text(text: str, where: str) -> list[ItemEntry]:
    """Parse an index file; a bad line is named by file and line number."""
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except ValueError as exc:
            raise ValueError(f"{where}: line {n} is not JSON ({exc})") from None
        if isinstance(entry, dict) and set(entry) == {"canary"}:
            continue  # the release's canary line (tasks.release.export.canary)
        if not isinstance(entry, dict) or "id" not in entry:
            raise ValueError(f"{where}: line {n} has no item id")
        out.append(entry)
    return out


def fingerprint(entries: Iterable[ItemEntry]) -> str:
    """One hash over the released ids (what ``ids_stable`` compares between two builds)."""
    return sha256_hex(canonical_json(sorted(e["id"] for e in entries if e.get("released", True))))[:16]
