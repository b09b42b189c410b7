"""Editors by name: the built-ins, plus third-party ones through the ``reactbench.editors`` entry points.

A third-party package declares, in its own pyproject::

    [project.entry-points."reactbench.editors"]
    my-editor = "my_pkg.editor:MyEditor"

and ``editors: [{name: my-editor}]`` then works without any change here. Built-ins are named
by import string so that listing them imports nothing heavy; the lookup is the one sources and
tasks use (``storage.plugins.PluginRegistry``: same order, same errors).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from editors.base import Editor, EditorError
from editors.capabilities import EditorLimits, combine
from storage.plugins import PluginRegistry

if TYPE_CHECKING:
    from editors.licences import Licence

ENTRY_POINT_GROUP = "reactbench.editors"

BUILTIN: dict[str, str] = {
    "classical": "editors.classical:ClassicalEditor",
    "qwen-image-edit": "editors.qwen_image_edit:QwenImageEditEditor",
    "sam-lama": "editors.sam_lama:SamLamaEditor",
    "instruct-pix2pix": "editors.instruct_pix2pix:InstructPix2PixEditor",
    "diffusers-edit": "editors.diffusers_edit:DiffusersEditEditor",
}


def _check(name: str, obj: object) -> type[Editor]:
    if not (isinstance(obj, type) and issubclass(obj, Editor)):
        raise EditorError(f"editor {name!r} resolves to {obj!r}, which is not an editors.base.Editor subclass")
    return obj


REGISTRY: PluginRegistry[type[Editor]] = PluginRegistry(
    kind="editor", group=ENTRY_POINT_GROUP, error=EditorError, check=_check, builtin=BUILTIN
)
_EXTRA = REGISTRY.registered  # the editors registered in this process
_CACHE: dict[str, Editor] = {}
_CACHE_LOCK = threading.Lock()


def register(cls: type[Editor]) -> type[Editor]:
    """Register an editor class in this process (tests, notebooks); entry points are the durable way."""
    return REGISTRY.register(cls.name, cls)


def available() -> list[str]:
    """Every editor name this process can create."""
    return sorted(REGISTRY.names())


def editor_class(name: str) -> type[Editor]:
    """The class registered under ``name``; unknown names list what exists."""
    return REGISTRY.get(name)


def create_editor(name: str, params: Mapping[str, object] | None = None) -> Editor:
    """A new editor instance (params validated now, weights loaded on first use)."""
    return editor_class(name)(params)


def cache_key(name: str, params: Mapping[str, object] | None) -> str:
    from storage.hashing import canonical_json

    return canonical_json([name, dict(params or {})])


def placed_params(name: str, params: Mapping[str, object] | None, device: str | None) -> dict[str, object]:
    """``params`` with ``device`` set when the orchestrator placed the shard on a device (e.g.
    ``cuda:1``) and the editor has a ``device`` param left at ``auto``."""
    out = dict(params or {})
    if device and "device" in editor_class(name).Params.model_fields and out.get("device", "auto") == "auto":
        out["device"] = device
    return out


def get_editor(
    name: str, params: Mapping[str, object] | None = None, keep_loaded: int = 1, device: str | None = None
) -> Editor:
    """The process-wide instance for (name, params, device), loaded once per worker process.

    At most ``keep_loaded`` model editors stay cached (an ablation of several 20B models would
    not fit one GPU); cheap editors are always kept.
    """
    params = placed_params(name, params, device)
    key = cache_key(name, params)
    with _CACHE_LOCK:
        editor = _CACHE.get(key)
        if editor is None:
            editor = create_editor(name, params)
            if editor.uses_model:
                models = [k for k, e in _CACHE.items() if e.uses_model]
                for old in models[: max(0, len(models) - keep_loaded + 1)]:
                    _CACHE.pop(old, None)
            _CACHE[key] = editor
        else:  # most recently used last
            _CACHE.pop(key)
            _CACHE[key] = editor
    editor.ensure_loaded()
    return editor


def clear_cache() -> None:
    """Drop every cached editor (tests; freeing GPU memory between builds)."""
    with _CACHE_LOCK:
        _CACHE.clear()


def limits_for(editor_names: Sequence[str]) -> EditorLimits:
    """The instruct stage's view of the configured editors (by registry name)."""
    return combine([editor_class(n).capabilities() for n in editor_names])


def editor_licence(name: str, params: Mapping[str, object] | None = None) -> Licence:
    """The ``editors.licences.Licence`` of the weights editor ``name`` (registered name) loads with
    ``params`` (an edit row's recorded ``params``); ``unknown`` when the editor cannot be loaded
    here (a plugin uninstalled since the build) or its params no longer validate."""
    from editors.licences import NO_WEIGHTS, UNKNOWN, weights_licence

    try:
        cls = editor_class(name)
        resolved = cls(params).params
    except (EditorError, ImportError, ValueError):
        return UNKNOWN
    declared = cls.licence(resolved)
    if declared is not None:
        return declared
    return weights_licence(getattr(resolved, "model", None)) if cls.uses_model else NO_WEIGHTS
