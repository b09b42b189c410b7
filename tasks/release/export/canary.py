"""The contamination canary: one GUID per benchmark in every text file of its releases.

A release with its answers gets crawled into training sets. Following BIG-bench's convention,
every text file carries a fixed GUID so that training pipelines can drop the files and anyone can
test whether a model has seen them (docs/publishing.md). The GUID belongs to the benchmark, not
to a release: ``datasheet.canary_guid`` when set, else derived from the benchmark's name, so every
version of one benchmark carries the same one.

Each format carries it without changing what its readers read: a comment in Python and YAML
(lmms-eval's task files), a Jinja comment that renders to nothing in templates, a ``canary`` key in
JSON objects (and a first entry without an ``id`` in the task tables, whose
readers skip it), a section in Markdown, a ``canary`` column in the VLMEvalKit TSVs (written by
``tasks.release.export.vlmevalkit``).
"""

from __future__ import annotations

import json
import posixpath
import uuid

from storage.fs import RunFS

# uuid5 namespace of derived canaries (itself a fixed random GUID: names map to the same GUID forever)
NAMESPACE = uuid.UUID("6f3c2b1e-5a7d-4c89-9e12-0b4d8a6f1c35")
KEY = "canary"
# text formats of a release and how each carries the canary; anything else is binary (Parquet)
TEXT_SUFFIXES = (".py", ".yaml", ".yml", ".j2", ".md", ".json", ".tsv", ".txt", ".jsonl")


class CanaryError(ValueError):
    """A text file of a release that cannot carry the canary without breaking its readers."""


def canary_guid(name: str, configured: str | None = None) -> str:
    """The benchmark's GUID: ``configured`` (``datasheet.canary_guid``), else one derived from ``name``."""
    return configured or str(uuid.uuid5(NAMESPACE, name.strip().lower()))


def canary_string(guid: str) -> str:
    """The sentence every text file carries (the GUID is what filters and tests look for)."""
    return f"Evaluation data: keep this benchmark out of training corpora. reactbench canary GUID {guid}"


def is_text(rel: str) -> bool:
    return rel.endswith(TEXT_SUFFIXES)


def stamp(rel: str, text: str, guid: str) -> str:
    """``text`` of the release file ``rel`` with the canary in the form its format allows."""
    line = canary_string(guid)
    if guid in text:
        return text
    if rel.endswith((".py", ".yaml", ".yml")):
        return f"# {line}\n{text}"
    if rel.endswith(".j2"):
        return "{# " + line + " -#}\n" + text  # the comment and its newline render to nothing
    if rel.endswith(".md"):
        return text.rstrip("\n") + f"\n\n## Canary\n\n{line}\n"
    if rel.endswith(".json"):
        doc = json.loads(text)
        indent = 1 if text.startswith(("{\n ", "[\n ")) and not text.startswith(("{\n  ", "[\n  ")) else 2
        end = "\n" if text.endswith("\n") else ""
        if isinstance(doc, dict):
            return json.dumps({KEY: line, **doc}, indent=indent, ensure_ascii=False) + end
        if isinstance(doc, list) and all(isinstance(e, dict) and "id" in e for e in doc):
            # a table of objects keyed by "id" (reactbench_tasks.json): its readers skip the entry without one
            return json.dumps([{KEY: line}, *doc], indent=indent, ensure_ascii=False) + end
        raise CanaryError(f"{rel}: a JSON {type(doc).__name__} of this shape cannot carry a canary; make it an object")
    if rel.endswith(".jsonl"):
        # a first record of its own (release_items.jsonl): its readers skip the line without an id
        return json.dumps({KEY: line}, ensure_ascii=False) + "\n" + text
    if rel.endswith(".txt"):
        return f"{line}\n{text}"
    raise CanaryError(f"{rel}: no way to add the canary to a {posixpath.splitext(rel)[1]} file without breaking it")


def stamp_release(out: RunFS, files: list[str], guid: str) -> None:
    """Add the canary to every text file among ``files`` (release-relative) in ``out``."""
    for rel in files:
        if is_text(rel) and not rel.endswith(".tsv"):  # TSVs get their column as they are written
            text = out.read_text(rel)
            stamped = stamp(rel, text, guid)
            if stamped != text:
                out.write_text_atomic(rel, stamped)


def files_without(out: RunFS, guid: str) -> list[str]:
    """Text files of the release in ``out`` that lack the GUID (empty when the release is complete)."""
    missing = []
    for path in out.walk_files():
        rel = posixpath.relpath(path, out.root)
        if is_text(rel) and not _holds(out, path, guid.encode()):
            missing.append(rel)
    return sorted(missing)


def _holds(out: RunFS, path: str, needle: bytes, chunk: int = 1 << 22) -> bool:
    """Whether the file at ``path`` contains ``needle``, read a chunk at a time (TSVs hold images)."""
    tail = b""
    with out.fs.open(path, "rb") as f:
        while block := f.read(chunk):
            if needle in tail + block:
                return True
            tail = block[-len(needle) :]
    return False
