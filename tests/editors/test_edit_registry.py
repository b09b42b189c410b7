"""Editor registry: built-ins by name, third-party editors through the entry-point group, caching."""

from __future__ import annotations

import sys
import textwrap

import pytest

from editors.base import EditorError
from editors.classical import ClassicalEditor
from editors.registry import ENTRY_POINT_GROUP, available, clear_cache, create_editor, editor_class, get_editor


def test_builtins_are_listed_without_importing_models():
    names = available()
    assert {"classical", "qwen-image-edit", "sam-lama", "instruct-pix2pix"} <= set(names)
    assert editor_class("classical") is ClassicalEditor


def test_unknown_editor_lists_the_known_ones():
    with pytest.raises(EditorError, match=r"unknown editor 'nope'.*classical.*reactbench\.editors"):
        editor_class("nope")


def test_third_party_editor_through_an_entry_point(tmp_path, monkeypatch):
    pkg = tmp_path / "site"
    (pkg / "acme_editor").mkdir(parents=True)
    (pkg / "acme_editor" / "__init__.py").write_text(
        textwrap.dedent("""
        from editors.base import Editor, EditResult

        class Negative(Editor):
            name = "acme-negative"
            def edit_batch(self, requests):
                return [EditResult(255 - r.image) for r in requests]
    """)
    )
    dist = pkg / "acme_editor-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-editor\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        f"[{ENTRY_POINT_GROUP}]\nacme-negative = acme_editor:Negative\nbroken = acme_editor:Missing\n"
    )
    monkeypatch.syspath_prepend(str(pkg))
    assert "acme-negative" in available()
    ed = create_editor("acme-negative")
    assert type(ed).__module__ == "acme_editor"
    with pytest.raises(
        EditorError,
        match=r"editor entry point 'broken' \(acme_editor:Missing, declared by acme-editor 1\.0\) failed to load",
    ):
        editor_class("broken")
    sys.modules.pop("acme_editor", None)


def test_get_editor_loads_once_per_process():
    clear_cache()
    a = get_editor("classical", {"inpaint_method": "ns"})
    b = get_editor("classical", {"inpaint_method": "ns"})
    c = get_editor("classical", {})
    assert a is b and a is not c and a.params.inpaint_method == "ns"


def test_bad_params_fail_up_front_with_the_key():
    with pytest.raises(EditorError, match="dilation_px"):
        create_editor("sam-lama", {"dilation_px": -3})
    with pytest.raises(EditorError, match="unknown_key"):
        create_editor("qwen-image-edit", {"unknown_key": 1})


def test_an_orchestrator_device_fills_auto_only():
    from editors.registry import placed_params

    assert placed_params("qwen-image-edit", {}, "cuda:1")["device"] == "cuda:1"
    assert placed_params("qwen-image-edit", {"device": "cuda:0"}, "cuda:1")["device"] == "cuda:0"
    assert "device" not in placed_params("classical", {}, "cuda:1")  # no device param: untouched
    assert placed_params("sam-lama", {"device": "auto"}, None) == {"device": "auto"}
