"""The README's config reference is generated from the models and must stay in sync."""

from pathlib import Path

from flows.config_reference import update_readme

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_config_reference_is_current() -> None:
    text = README.read_text()
    assert text == update_readme(text), "README config reference is stale: run `python -m flows.config_reference README.md`"
