"""The README's config reference is generated from the models and must stay in sync."""

from pathlib import Path

from flows.config_reference import update_readme

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_config_reference_is_current() -> None:
    text = README.read_text()
    assert text == update_readme(text), (
        "README config reference is stale: run `python -m flows.config_reference README.md`"
    )


def test_the_plugin_walkthrough_runs_without_an_activated_venv() -> None:
    """Issue 31: docs/plugins.md said `uv pip install ...`, which fails unless the venv is
    activated (uv is installed into .venv/bin only). Every command of its walkthrough starts
    with `make` or a program the project's venv holds, named by its path."""
    import re
    import sys

    text = (README.parent / "docs" / "plugins.md").read_text()
    block = re.search(r"```bash\n(make sample.*?)```", text, re.S)
    assert block, "docs/plugins.md lost its install-and-build walkthrough"
    venv_bin = Path(sys.executable).parent  # this interpreter's venv: what .venv/bin is after `make demo`
    for line in block.group(1).splitlines():
        program = line.split()[0]
        if program == "make":  # a system tool the README's quick start needs anyway
            continue
        assert program.startswith(".venv/bin/"), (
            f"{line!r}: name the venv's program by its path (.venv/bin/...), not one found on PATH"
        )
        assert (venv_bin / program.removeprefix(".venv/bin/")).exists(), f"{line!r}: {program} is not in the venv"
