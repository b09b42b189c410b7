"""The one name -> object lookup (storage/plugins.py) editors, sources and tasks share: the order of
lookup, the choices listed for an unknown name, the declaring package named for a broken entry
point, and imports made by the owner's import function."""

from __future__ import annotations

import importlib
from importlib.metadata import EntryPoint
from types import ModuleType

import pytest

from storage.plugins import PluginRegistry, instance_check, load_target


class Thing:
    def __init__(self, name: str) -> None:
        self.name = name


BUILT = Thing("built")
GROUP = "reactbench.test_things"


class ThingError(ValueError):
    pass


def _registry(**extra: object) -> PluginRegistry[Thing]:
    named: dict[str, object] = {"builtin": {"built": f"{__name__}:BUILT"}, **extra}
    return PluginRegistry(
        kind="thing", group=GROUP, error=ThingError, check=instance_check(Thing, ThingError, "thing"), **named
    )  # type: ignore[arg-type]


def test_registered_then_builtin_then_entry_points(monkeypatch: pytest.MonkeyPatch) -> None:
    reg = _registry()
    assert reg.get("built") is BUILT
    mine = reg.register("built", Thing("mine"))  # this process's registration wins over the built-in
    assert reg.get("built") is mine
    eps = {"ep": EntryPoint("ep", f"{__name__}:BUILT", GROUP)}
    monkeypatch.setattr(reg, "entry_points", lambda: eps)
    assert reg.get("ep") is BUILT and reg.names() == ["built", "ep"]


def test_unknown_names_list_the_choices_and_wrong_objects_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    reg = _registry(builtin={"built": f"{__name__}:BUILT", "odd": f"{__name__}:GROUP"})
    with pytest.raises(
        ThingError, match=r"unknown thing 'nope'; available: \['built', 'odd'\] .*reactbench\.test_things"
    ):
        reg.get("nope")
    with pytest.raises(ThingError, match=r"thing 'odd' resolves to 'reactbench.test_things', which is not a .*Thing"):
        reg.get("odd")
    broken = EntryPoint("broken", "no_such_module_here:X", GROUP)
    monkeypatch.setattr(reg, "entry_points", lambda: {"broken": broken})
    with pytest.raises(ThingError, match=r"thing entry point 'broken' \(no_such_module_here:X\) failed to load"):
        reg.get("broken")


def test_imports_are_made_by_the_owner_import_function() -> None:
    seen: list[str] = []

    def owner_import(name: str) -> ModuleType:
        seen.append(name)
        return importlib.import_module(name)

    assert _registry(import_module=owner_import).get("built") is BUILT
    assert seen == [__name__]
    assert load_target("os.path:join") is importlib.import_module("os.path").join
