"""A task's id is spelled only in its own modules (``TaskSpec.modules``): everywhere else the
pipeline reads the spec, so a fifth task plugs in without edits across the core (issue 23).

Checked on the package sources, naming file and line of each finding outside the task's own
modules (a module, or a package with every file under it: a built-in task's folder
``tasks/builtin_tasks/<id>/`` holds its YAML and templates too):
- Python, with the AST: a string constant (f-string parts included) equal to a registered task
  id, and a function, class or top-level name that contains one (``qa_slots_<id>``: a hook that
  belongs in the task's package). Docstrings and comments may mention tasks;
- the data files shipped in the packages (question-template YAML, ``.j2`` / ``.jinja`` prompt
  templates, HTML): the id as a word anywhere.
"""

from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path

from test_one_place import PACKAGES, _docstrings, package_sources

from storage.task_spec import all_tasks

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
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docs
        and node.value in words
    ]


DATA_SUFFIXES = (".yaml", ".yml", ".j2", ".jinja", ".html")


def defined_names(source: str, words: set[str]) -> list[tuple[int, str]]:
    """(line, name) of every function, class or module-level assignment whose name contains one of ``words``."""
    tree = ast.parse(source)
    out = []
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names = [node.name]
        elif isinstance(node, ast.Module):
            for stmt in node.body:
                targets = (
                    stmt.targets
                    if isinstance(stmt, ast.Assign)
                    else [stmt.target]
                    if isinstance(stmt, ast.AnnAssign)
                    else []
                )
                out.extend(
                    (stmt.lineno, t.id)
                    for t in targets
                    if isinstance(t, ast.Name) and any(w in t.id.lower() for w in words)
                )
        out.extend((node.lineno, n) for n in names if any(w in n.lower() for w in words))
    return out


def data_mentions(text: str, words: set[str]) -> list[tuple[int, str]]:
    """(line, word) of every task id written as a word in a data file (YAML, template)."""
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, sorted(words))) + r")\b")
    return [(i, m.group(1)) for i, line in enumerate(text.splitlines(), 1) for m in pattern.finditer(line)]


def _own_files() -> dict[str, set[Path]]:
    """Each task's own files: its modules, and for a package every file under its folder."""
    out: dict[str, set[Path]] = {}
    for tid, spec in all_tasks().items():
        files: set[Path] = set()
        for m in spec.modules:
            f = _module_file(m)
            if f is None:
                continue
            files |= {p.resolve() for p in f.parent.rglob("*") if p.is_file()} if f.name == "__init__.py" else {f}
        out[tid] = files
    return out


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
    assert not found, "task ids outside their task's own modules (read storage.task_spec instead):\n" + "\n".join(
        found
    )


def test_no_core_function_or_name_is_named_after_a_task() -> None:
    own = _own_files()
    ids = set(own)
    mine = set().union(*own.values())
    found = [
        f"{rel}:{line}: {name}"
        for rel in package_sources()
        if (ROOT / rel).resolve() not in mine
        for line, name in defined_names((ROOT / rel).read_text(encoding="utf-8"), ids)
    ]
    assert not found, "names spelling a task id outside that task's package (move the hook into it):\n" + "\n".join(
        found
    )


def test_packaged_yaml_and_templates_name_a_task_only_in_its_own_package() -> None:
    own = _own_files()
    ids = set(own)
    found, seen = [], set()
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*")):
            if path.suffix not in DATA_SUFFIXES or not path.is_file():
                continue
            for line, word in data_mentions(path.read_text(encoding="utf-8"), ids):
                if path.resolve() in own[word]:
                    seen.add(word)
                else:
                    found.append(f"{path.relative_to(ROOT)}:{line}: {word}")
    assert {"relational_erasure", "dense_counting"} <= seen  # the built-ins' question templates declare their task
    assert not found, "task ids in packaged data files outside the task's own package:\n" + "\n".join(found)


def test_the_scans_find_names_and_data_mentions_where_planted() -> None:
    planted = "def qa_slots_dense_counting(e):\n    pass\nDC_DENSE_COUNTING_RULES = 1\nclass Other:\n    pass\n"
    assert defined_names(planted, {"dense_counting"}) == [
        (3, "DC_DENSE_COUNTING_RULES"),
        (1, "qa_slots_dense_counting"),
    ]
    assert data_mentions("task: dense_counting\nsets: [x_dense_counting, dense_countings]\n", {"dense_counting"}) == [
        (1, "dense_counting")
    ]


def test_the_scan_finds_a_literal_where_one_is_planted() -> None:
    planted = 'WEIGHTS = {"dense_counting": 0.3}\ndef f(t):\n    """dense_counting is fine here."""\n    return t == "relational_erasure"\n'
    assert task_literals(planted, {"dense_counting", "relational_erasure"}) == [
        (1, "dense_counting"),
        (4, "relational_erasure"),
    ]
