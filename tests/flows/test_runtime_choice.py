"""Which orchestration a CLI run gets: Prefect only when an API is configured."""

from __future__ import annotations

from pathlib import Path

import pytest

from flows.runtime import prefect_api_configured, resolve_orchestrator


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for var in ("PREFECT_API_URL", "PREFECT_PROFILES_PATH", "PREFECT_PROFILE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("PREFECT_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_no_api_anywhere_runs_locally(clean_env: Path) -> None:
    assert not prefect_api_configured()
    assert resolve_orchestrator("auto") == "local"
    assert resolve_orchestrator("prefect") == "prefect"


def test_environment_variable_selects_prefect(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PREFECT_API_URL", "http://127.0.0.1:4200/api")
    assert resolve_orchestrator("auto") == "prefect"


def test_profile_with_api_url_selects_prefect(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    profiles = clean_env / "profiles.toml"
    profiles.write_text('active = "team"\n\n[profiles.team]\nPREFECT_API_URL = "http://127.0.0.1:4200/api"\n')
    monkeypatch.setenv("PREFECT_PROFILES_PATH", str(profiles))
    assert prefect_api_configured()


def test_a_profile_set_after_prefect_was_imported_is_read(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Prefect builds its global settings context when ``prefect.context`` is first imported;
    answering from it missed a profile set later in the same process (this test failed whenever
    an earlier test of the session had imported Prefect, e.g. after tests/orchestration)."""
    import prefect.context

    # the context as a process that imported Prefect before any profile named an API holds it
    monkeypatch.setattr(prefect.context, "GLOBAL_SETTINGS_CONTEXT", prefect.context.root_settings_context())
    profiles = clean_env / "profiles.toml"
    profiles.write_text('active = "team"\n\n[profiles.team]\nPREFECT_API_URL = "http://127.0.0.1:4200/api"\n')
    monkeypatch.setenv("PREFECT_PROFILES_PATH", str(profiles))
    assert prefect_api_configured()
    assert resolve_orchestrator("auto") == "prefect"
