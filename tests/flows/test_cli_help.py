"""``--help`` as a user reads it (issue 31.6): every command ends with an example that runs as
written, a flag shows no value type (``--force``, not ``--force <bool>``), and an option name
means one thing across the CLI."""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from typing import Any

import pytest
import typer.main
from typer.testing import CliRunner

from flows.cli import app
from flows.cli_help import EXAMPLES

# Option names that several commands take, each with its one meaning. A name used by a second
# command must be added here, with the meaning both uses share.
SHARED_OPTIONS = {
    "--run-dir": "the run directory the command reads or writes",
    "--config": "the YAML run config (default: the run's saved config.yaml)",
    "--force": "recompute what is already complete",
    "--orchestrator": "auto | local | prefect",
    "--force-items": "recompute one component's items",
    "--mllm": "the MLLM backend of the build stages (mllm.backend)",
    "--mllm-model": "the MLLM model of the build stages (mllm.model)",
    "--base-url": "the OpenAI-compatible endpoint of the model the command calls",
    "--no-cache": "bypass the MLLM response cache",
    "--db": "the review queue's database URL",
    "--out": "where the command writes its output (a release folder, a report file)",
    "--reuse-dir": "a shared reuse store instead of the run's",
    "--unverified": "read qa/questions and edit/edits instead of the review export",
    "--help": "show the help",
    "--json": "print the result as JSON on stdout instead of a table",
}


def _tree(root: Any) -> Iterator[tuple[str, Any]]:
    """(path, click command) of every command and group under ``root``, itself included."""
    todo = [("", root)]
    while todo:
        path, cmd = todo.pop()
        yield path, cmd
        todo += [(f"{path} {name}".strip(), sub) for name, sub in getattr(cmd, "commands", {}).items()]


def _commands() -> Iterator[tuple[str, Any]]:
    return _tree(typer.main.get_command(app))


PATHS = sorted(path for path, _ in _commands())


def test_every_command_has_an_example_and_no_example_is_left_over() -> None:
    assert sorted(EXAMPLES) == PATHS


@pytest.mark.parametrize("path", PATHS, ids=lambda p: p or "reactbench")
def test_help_ends_with_the_example_and_shows_flags_as_flags(path: str) -> None:
    result = CliRunner().invoke(app, [*path.split(), "--help"], env={"COLUMNS": "250"}, terminal_width=250)
    assert result.exit_code == 0, result.output
    assert f"Example: {EXAMPLES[path]}" in result.output
    assert "<bool>" not in result.output
    help_line = next(ln for ln in result.output.splitlines() if "--help" in ln and "Show this message" in ln)
    assert "<" not in help_line, help_line
    cmd = dict(_commands())[path]
    for p in cmd.params:
        if p.param_type_name == "option" and not p.hidden and not getattr(p, "is_flag", False):
            long = next(o for o in p.opts if o.startswith("--"))
            line = next(
                ln
                for ln in result.output.splitlines()
                if ln.startswith("│") and [w for w in ln.split() if w not in ("│", "*")][:1] == [long]
            )
            assert "<" in line, f"{p.opts}: an option that takes a value shows its type: {line}"


@pytest.mark.parametrize("path", PATHS, ids=lambda p: p or "reactbench")
def test_the_example_parses_as_written(path: str) -> None:
    """Each example, run with every command's body replaced by a recorder: its command exists and
    every option and argument it gives is accepted."""
    root = typer.main.get_command(app)
    ran: list[str] = []
    for p, cmd in _tree(root):
        cmd.callback = (lambda name: lambda *a, **kw: ran.append(name))(p)
    argv = shlex.split(EXAMPLES[path])
    assert argv[0] == "reactbench"
    root.main(argv[1:], prog_name="reactbench", standalone_mode=False)
    example_path = " ".join(w for w in argv[1:] if not w.startswith("-"))
    assert ran and ran[-1] in example_path, (ran, argv)


def test_an_option_name_means_one_thing() -> None:
    """``--model`` was a model id in build, BACKEND:MODEL in eval and a folder in report: now it
    is eval's alone (the old spellings are hidden, with a deprecation notice)."""
    users: dict[str, set[str]] = {}
    for path, cmd in _commands():
        for p in cmd.params:
            if p.param_type_name == "option" and not p.hidden:
                for opt in p.opts:
                    if opt.startswith("--"):
                        users.setdefault(opt, set()).add(path)
    shared = {opt for opt, paths in users.items() if len(paths) > 1}
    assert shared <= set(SHARED_OPTIONS), (
        f"options several commands take, without one meaning recorded: {sorted(shared - set(SHARED_OPTIONS))}"
    )
    assert users["--model"] == {"eval"} and users["--eval"] == {"report"}
    assert users["--mllm-model"] == {"build", "instruct", "qa"}
