"""The "one place" rows of docs/architecture.md, checked on the package sources: a second copy
of an artifact path fails here instead of drifting silently."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("flows", "tasks", "editors", "prompts", "miners", "storage")
ADDRESSES = Path("storage/addresses.py")
# Top-level run-directory folders: a string constant naming a path under one of them is an
# artifact path ("edit/edits", "eval/", "reports/build.html"); URL routes ("/review/...") and
# messages (with spaces) are not.
ARTIFACT_PATH = re.compile(r"(mine|instruct|edit|verify|qa|review|eval|reports|export|audit)/[\w.{}-]*")


def _docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def artifact_literals(source: str) -> list[tuple[int, str]]:
    """(line, text) of every string constant (f-string parts included) that is an artifact path."""
    tree = ast.parse(source)
    docs = _docstrings(tree)
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docs
        and ARTIFACT_PATH.fullmatch(node.value)
    ]


def package_sources() -> list[Path]:
    return [p.relative_to(ROOT) for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))]


def test_artifact_paths_only_in_addresses() -> None:
    found = [
        f"{rel}:{line}: {text!r}"
        for rel in package_sources()
        if rel != ADDRESSES
        for line, text in artifact_literals((ROOT / rel).read_text(encoding="utf-8"))
    ]
    assert not found, "artifact paths outside storage/addresses.py (use an Address there):\n" + "\n".join(found)


@pytest.mark.parametrize(
    "source",
    [
        'ArtifactReader(run, "edit/edits", EDITS)',
        'f"eval/{slug}"',
        'run.write_text("reports/build.html", html)',
        'x = "review/queue"',
    ],
)
def test_a_planted_artifact_path_is_found(source: str) -> None:
    assert artifact_literals(source)


@pytest.mark.parametrize(
    "source",
    ['"""Reads ``edit/edits``."""', '@app.get("/review/{stage}")\ndef f(): ...', 'msg = "qa/questions holds none"'],
)
def test_docstrings_routes_and_messages_are_not_paths(source: str) -> None:
    assert not artifact_literals(source)


# Config: every read of a run config goes through flows/config.py (resolve_run_config and the
# helpers beside it); a stage or command parsing YAML itself would take settings from a second copy.
CONFIG_MODULES = {"flows/config.py", "flows/config_yaml.py"}
CONFIG_READERS = {
    "safe_load",
    "load",
    "full_load",
    "unsafe_load",
    "load_bounded",
    "decode_config",
    "read_config_text",
    "load_config",
    "config_from_yaml",
    "config_from_dict",
    "saved_config",
}
# tasks/stages/qa/templates.py parses the packaged question templates, not a run config.
# editors/licences.py reads a model card's front matter (its `license:`), not a run config.
CONFIG_KNOWN = {("tasks/stages/qa/templates.py", "safe_load"), ("editors/licences.py", "safe_load")}


def config_reads(source: str) -> list[tuple[int, str]]:
    """(line, function) of every call that parses YAML or builds a run config."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            fn = node.func
            name = fn.attr if isinstance(fn, ast.Attribute) else fn.id if isinstance(fn, ast.Name) else None
            if name in CONFIG_READERS and (name != "load" or _is_yaml(fn)):
                out.append((node.lineno, name))
    return out


def _is_yaml(fn: ast.expr) -> bool:
    """``yaml.load(...)`` (a bare ``load`` is some other library's)."""
    return isinstance(fn, ast.Attribute) and isinstance(fn.value, ast.Name) and fn.value.id == "yaml"


def test_config_reads_only_through_the_resolver() -> None:
    found = [
        f"{rel}:{line}: {name}()"
        for rel in package_sources()
        if rel.as_posix() not in CONFIG_MODULES
        for line, name in config_reads((ROOT / rel).read_text(encoding="utf-8"))
        if (rel.as_posix(), name) not in CONFIG_KNOWN
    ]
    assert not found, (
        "run config read outside flows/config.py (use resolve_run_config and pass the config down):\n"
        + "\n".join(found)
    )


@pytest.mark.parametrize(
    "source",
    [
        'cfg = yaml.safe_load(run.read_text("config.yaml"))',
        "from flows.config import load_config\ncfg = load_config(path)",
        "data = load_bounded(text, where)",
    ],
)
def test_a_planted_config_read_is_found(source: str) -> None:
    assert config_reads(source)


def test_other_loads_are_not_config_reads() -> None:
    assert not config_reads("json.load(f)\npickle.load(f)\nresolve_run_config(path)")


# Shard size: a stage plans with ``ctx.shard_size`` (tasks/engine/base.py), never reading
# ``config.run.shard_size`` itself, so a change to how shards are sized is made once.
SHARD_SIZE_MODULE = "tasks/engine/base.py"


def shard_size_reads(source: str) -> list[int]:
    """Lines that read ``<x>.run.shard_size``."""
    return [
        node.lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Attribute)
        and node.attr == "shard_size"
        and isinstance(node.value, ast.Attribute)
        and node.value.attr == "run"
    ]


def test_shard_size_read_in_one_place() -> None:
    found = [
        f"{rel}:{line}"
        for rel in package_sources()
        if rel.as_posix() != SHARD_SIZE_MODULE
        for line in shard_size_reads((ROOT / rel).read_text(encoding="utf-8"))
    ]
    assert not found, "run.shard_size read outside RunContext.shard_size (use ctx.shard_size):\n" + "\n".join(found)


def test_a_planted_shard_size_read_is_found() -> None:
    assert shard_size_reads("shards = chunk(rows, ctx.config.run.shard_size)")
    assert not shard_size_reads("shards = chunk(rows, ctx.shard_size)")


# Box geometry: the [x, y, w, h] intersection is written once, in storage/annotation/boxes.py.
BOX_INTERSECTION = re.compile(r"min\(\s*(\w+)\[0\]\s*\+\s*\1\[2\]")


def test_box_geometry_only_in_storage_boxes() -> None:
    found = [
        f"{rel}:{n}: {line.strip()}"
        for rel in package_sources()
        if rel.as_posix() != "storage/annotation/boxes.py"
        for n, line in enumerate((ROOT / rel).read_text(encoding="utf-8").splitlines(), 1)
        if BOX_INTERSECTION.search(line)
    ]
    assert not found, (
        "box overlap written outside storage/annotation/boxes.py (use intersection / iou / overlap / intersects):\n"
        + "\n".join(found)
    )


def test_a_planted_box_intersection_is_found() -> None:
    assert BOX_INTERSECTION.search("ix = max(0.0, min(a[0] + a[2], b[0] + b[2]) - max(a[0], b[0]))")


# The candidate and its context: parsed by storage.json_columns.candidate_of / context_objects only.
CANDIDATE_COLUMNS = {"candidate_json", "context_json"}


def candidate_reads(source: str) -> list[int]:
    """Lines that read ``candidate_json`` / ``context_json`` from a row (``.get`` or ``[...]``)."""
    out = []
    for node in ast.walk(ast.parse(source)):
        key = None
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and node.args
        ):
            key = node.args[0]
        elif isinstance(node, ast.Subscript):
            key = node.slice
        if isinstance(key, ast.Constant) and key.value in CANDIDATE_COLUMNS:
            out.append(node.lineno)
    return out


def test_candidates_parsed_in_one_place() -> None:
    found = [
        f"{rel}:{line}"
        for rel in package_sources()
        if rel.as_posix() != "storage/json_columns.py"
        for line in candidate_reads((ROOT / rel).read_text(encoding="utf-8"))
    ]
    assert not found, (
        "candidate_json / context_json read outside storage/json_columns.py (use candidate_of / context_objects):\n"
        + "\n".join(found)
    )


@pytest.mark.parametrize("source", ['json.loads(e.get("candidate_json") or "{}")', 'json.loads(cand["context_json"])'])
def test_a_planted_candidate_read_is_found(source: str) -> None:
    assert candidate_reads(source)


INSTRUCTION_FIELD_COLUMNS = {"fields_json", "instruction_fields_json"}


def raw_field_decodes(source: str) -> list[int]:
    """Lines that decode an instruction's fields with ``json.loads`` / ``json.loads(... or "{}")``
    instead of ``storage.json_columns.instruction_fields`` (which rejects a malformed value)."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "loads"
            and node.args
        ):
            continue
        for sub in ast.walk(node.args[0]):
            key = (
                sub.args[0]
                if isinstance(sub, ast.Call)
                and isinstance(sub.func, ast.Attribute)
                and sub.func.attr == "get"
                and sub.args
                else sub.slice
                if isinstance(sub, ast.Subscript)
                else None
            )
            if isinstance(key, ast.Constant) and key.value in INSTRUCTION_FIELD_COLUMNS:
                out.append(node.lineno)
    return out


def test_instruction_fields_decoded_in_one_place() -> None:
    found = [
        f"{rel}:{line}"
        for rel in package_sources()
        for line in raw_field_decodes((ROOT / rel).read_text(encoding="utf-8"))
    ]
    assert not found, (
        "fields_json / instruction_fields_json decoded raw (use storage.json_columns.instruction_fields):\n"
        + "\n".join(found)
    )


@pytest.mark.parametrize(
    "source", ['json.loads(row.get("fields_json") or "{}")', 'json.loads(r["instruction_fields_json"])["x"]']
)
def test_a_planted_raw_field_decode_is_found(source: str) -> None:
    assert raw_field_decodes(source) == [1]


def test_item_columns_declared_once() -> None:
    """The columns carried forward are the schema's ITEM_FIELDS, named nowhere else as a list."""
    from storage.schemas import ITEM_COLUMNS, ITEM_FIELDS

    assert ITEM_COLUMNS == tuple(f.name for f in ITEM_FIELDS)
    found = [
        f"{rel}:{node.lineno}"
        for rel in package_sources()
        for node in ast.walk(ast.parse((ROOT / rel).read_text(encoding="utf-8")))
        if isinstance(node, (ast.Tuple, ast.List))
        and {"candidate_id", "candidate_json", "image_path"}
        <= {e.value for e in node.elts if isinstance(e, ast.Constant)}
    ]
    assert not found, "item columns listed by hand (use storage.schemas.ITEM_COLUMNS):\n" + "\n".join(found)
