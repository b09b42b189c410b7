"""constraints.txt pins the releases `make test` passed with; it must stay inside pyproject's ranges."""

from __future__ import annotations

import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]


def _pins() -> dict[str, Version]:
    pins: dict[str, Version] = {}
    for n, line in enumerate((ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, sep, version = line.partition("==")
        assert sep and version, f"constraints.txt:{n}: {line!r} is not an exact pin (name==version)"
        key = canonicalize_name(name)
        assert key not in pins, f"constraints.txt:{n}: {name} is pinned twice"
        pins[key] = Version(version)
    return pins


def test_every_pin_is_inside_the_range_pyproject_declares() -> None:
    """A pyproject edit (a raised floor, a new cap) without `make constraints` would make the
    next install fail in pip's resolver; this names the package and both sides instead."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    declared = list(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        declared += extra
    pins = _pins()
    own = canonicalize_name(project["name"])
    checked = 0
    for text in declared:
        req = Requirement(text)
        key = canonicalize_name(req.name)
        if key == own:  # the test extra names the project's other extras
            continue
        assert key in pins, (
            f"pyproject requires {req.name} but constraints.txt does not pin it: run `make constraints`"
        )
        assert req.specifier.contains(pins[key], prereleases=True), (
            f"constraints.txt pins {req.name}=={pins[key]} outside pyproject's {req.specifier}: run `make constraints`"
        )
        checked += 1
    assert checked >= 40, checked  # the core and every extra were read
