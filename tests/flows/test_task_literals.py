"""A task's id is spelled only in its own modules (``TaskSpec.modules``): everywhere else the
pipeline reads the spec, so a fifth task plugs in without edits across the core (issue 23).

Checked on the package sources with the AST: a string constant (f-string parts included) equal
to a registered task id outside that task's own modules fails here, naming file and line.
Docstrings and comments may mention tasks.
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

from storage.task_spec import all_tasks
from test_one_place import _docstrings, package_sources

ROOT = Path(__file__).resolve().parents[2]


def _module_file(name: str) -> Path | None:
    spec = importlib.util.find_spec(name)
    return Path(spec.origin).resolve() if spec and spec.origin else None


def task_literals(source: str, words: set[str]) -> list[tuple[int, str]]:
    """(line, text) of every non-docstring string constant that is one of ``words``."""
    tree = ast.parse(source)
    docs = _docstrings(tree)
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs and node.value in words
    ]


def _own_files() -> dict[str, set[Path]]:
    return {tid: {f for m in spec.modules if (f := _module_file(m))} for tid, spec in all_tasks().items()}


def test_every_task_names_its_own_modules() -> None:
    for tid, files in _own_files().items():
        assert files, f"task {tid!r}: TaskSpec.modules names no importable module"


def test_task_ids_appear_only_in_their_own_modules() -> None:
    own = _own_files()
    ids = set(own)
    found = []
    seen_in_own = set()
    for rel in package_sources():
        path = (ROOT / rel).resolve()
        for line, text in task_literals(path.read_text(encoding="utf-8"), ids):
            if path in own[text]:
                seen_in_own.add(text)
                continue
            found.append(f"{rel}:{line}: {text!r}")
    # the scan itself works: every built-in task's id is found in its own spec module
    assert {"relational_erasure", "dense_counting"} <= seen_in_own
    assert not found, "task ids outside their task's own modules (read storage.task_spec instead):\n" + "\n".join(found)


def test_the_scan_finds_a_literal_where_one_is_planted() -> None:
    planted = 'WEIGHTS = {"dense_counting": 0.3}\ndef f(t):\n    """dense_counting is fine here."""\n    return t == "relational_erasure"\n'
    assert task_literals(planted, {"dense_counting", "relational_erasure"}) == [(1, "dense_counting"), (4, "relational_erasure")]
