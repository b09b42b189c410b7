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
# flows/prefect_flows.py is being reworked elsewhere (one stage chain for local and Prefect runs).
KNOWN = {("flows/prefect_flows.py", "reports/build.html")}


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
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs and ARTIFACT_PATH.fullmatch(node.value)
    ]


def package_sources() -> list[Path]:
    return [p.relative_to(ROOT) for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))]


def test_artifact_paths_only_in_addresses() -> None:
    found = [
        f"{rel}:{line}: {text!r}"
        for rel in package_sources()
        if rel != ADDRESSES
        for line, text in artifact_literals((ROOT / rel).read_text(encoding="utf-8"))
        if (rel.as_posix(), text) not in KNOWN
    ]
    assert not found, "artifact paths outside storage/addresses.py (use an Address there):\n" + "\n".join(found)


@pytest.mark.parametrize(
    "source",
    ['ArtifactReader(run, "edit/edits", EDITS)', 'f"eval/{slug}"', 'run.write_text("reports/build.html", html)', 'x = "review/queue"'],
)
def test_a_planted_artifact_path_is_found(source: str) -> None:
    assert artifact_literals(source)


@pytest.mark.parametrize("source", ['"""Reads ``edit/edits``."""', '@app.get("/review/{stage}")\ndef f(): ...', 'msg = "qa/questions holds none"'])
def test_docstrings_routes_and_messages_are_not_paths(source: str) -> None:
    assert not artifact_literals(source)
