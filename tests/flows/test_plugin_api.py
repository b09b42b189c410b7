"""The public plugin API (``tasks.plugin_api``): every name it lists resolves, an unknown one
fails naming the API version, and a spec module that imports ``TaskSpec`` from it loads no
miner, stage or model code (names resolve lazily)."""

from __future__ import annotations

import subprocess
import sys

import pytest

import tasks.plugin_api as api


def test_every_listed_name_resolves() -> None:
    missing = []
    for name in api.__all__:
        try:
            getattr(api, name)
        except (AttributeError, ImportError) as exc:
            missing.append(f"{name}: {exc}")
    assert not missing, missing
    assert set(dir(api)) == set(api.__all__)


def test_each_name_is_declared_once_and_documented() -> None:
    """The names are the imports of the module's ``TYPE_CHECKING`` block (what type checkers see),
    not a second list kept in step by hand; the module docstring says what each one is."""
    assert api._EXPORTS == api._declared()
    assert "TaskSpec" in api._EXPORTS and "npx" in api._EXPORTS
    undocumented = [name for name in api._EXPORTS if f"``{name}``" not in (api.__doc__ or "")]
    assert not undocumented, undocumented


def test_an_unknown_name_fails_naming_the_api_version() -> None:
    with pytest.raises(AttributeError, match=rf"has no 'Stage' \(API {api.API_VERSION}"):
        api.Stage  # noqa: B018


def test_importing_the_spec_loads_no_miner_stage_or_model_code() -> None:
    code = (
        "import sys\n"
        "from tasks.plugin_api import TaskSpec\n"
        "import tasks.builtin_tasks.relational_erasure as re_pkg\n"
        "heavy = sorted(m for m in sys.modules if m.startswith(('miners.', 'tasks.stages', 'tasks.tools', 'prompts.', 'torch', 'editors')))\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "", out
