"""Image editors: the ``Editor`` contract, the registry (built-ins + ``reactbench.editors`` entry
points), the classical OpenCV editors, model editors (loaded lazily) and auto-QC."""

from editors.base import EDIT_TYPES, EditFailure, Editor, EditorError, EditRequest, EditResult, canonical_edit_type
from editors.registry import available, create_editor, get_editor, register

__all__ = [
    "EDIT_TYPES",
    "EditFailure",
    "EditRequest",
    "EditResult",
    "Editor",
    "EditorError",
    "available",
    "canonical_edit_type",
    "create_editor",
    "get_editor",
    "register",
]
