"""The editor contract: a batch of edit requests in, one result (or failure) per request out.

An editor is a small subclass of :class:`Editor` with a registry name, a pydantic ``Params``
model (validated up front, recorded on every edit row) and one method, :meth:`Editor.edit_batch`.
Editors take images in and give images out; they never touch the run directory or the image
store (the edit stage does that), so they can be benchmarked and tested on plain arrays.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from pydantic import ValidationError

from editors.capabilities import UNSUPPORTED, Capabilities, check_capabilities
from storage.config_base import Section

if TYPE_CHECKING:
    from editors.memory import Profile

Box = tuple[float, float, float, float]  # [x, y, w, h] in source pixels (Visual Genome convention)

# Edit types the tasks ask for, and the spellings the instruct stage may use for them.
EDIT_TYPES = ("remove", "attribute", "add", "replace", "move")
_ALIASES = {
    "remove": "remove",
    "delete": "remove",
    "erase": "remove",
    "removal": "remove",
    "erasure": "remove",
    "attribute": "attribute",
    "color": "attribute",
    "colour": "attribute",
    "texture": "attribute",
    "material": "attribute",
    "pattern": "attribute",
    "state": "attribute",
    "finish": "attribute",
    "shape": "attribute",
    "add": "add",
    "insert": "add",
    "replace": "replace",
    "swap": "replace",
    "move": "move",
}


def canonical_edit_type(edit_type: str | None) -> str | None:
    """Map the instruct stage's edit type (``delete``, ``colour``, ...) to one of :data:`EDIT_TYPES`."""
    if not edit_type:
        return None
    return _ALIASES.get(str(edit_type).strip().lower())


@dataclass
class EditRequest:
    """One edit to perform. ``fields`` carries the instruction's free-form structured output."""

    id: str
    image: np.ndarray  # H x W x 3 uint8 RGB
    instruction: str
    task: str
    edit_type: str | None
    seed: int
    box: Box | None = None
    mask: np.ndarray | None = None  # H x W bool: exact object pixels, when known
    target_name: str | None = None
    fields: dict[str, object] = field(default_factory=dict)

    def __post_init__(self) -> None:
        img = self.image
        if not isinstance(img, np.ndarray) or img.dtype != np.uint8 or img.ndim != 3 or img.shape[2] != 3:
            raise ValueError(
                f"request {self.id}: image must be an HxWx3 uint8 array, got {getattr(img, 'dtype', type(img))} {getattr(img, 'shape', '')}"
            )
        if self.mask is not None and self.mask.shape != img.shape[:2]:
            raise ValueError(f"request {self.id}: mask shape {self.mask.shape} differs from image {img.shape[:2]}")

    @property
    def kind(self) -> str | None:
        return canonical_edit_type(self.edit_type)


@dataclass
class EditResult:
    """An edited image (any size; the stage brings it back to the source size), the mask used, notes."""

    image: np.ndarray
    mask: np.ndarray | None = None
    meta: dict[str, object] = field(default_factory=dict)  # JSON-able: e.g. destination_box, approximation


@dataclass
class EditFailure:
    """An item the editor refused or could not do; becomes a reject row with ``reason``."""

    reason: str  # snake_case code
    detail: str = ""


class EditorError(RuntimeError):
    """A configuration or loading problem that concerns the whole editor (not one item)."""


def missing_extra(editor: str, exc: ImportError, what: str = "the gpu extra") -> EditorError:
    """The error for a model editor whose libraries are not installed, with the install command."""
    return EditorError(f"editor {editor!r} needs {what}: pip install 'reactbench-pipeline[gpu]' ({exc})")


class NoParams(Section):
    pass


class Editor(ABC):
    """Base class of every editor. Subclasses set ``name``, ``Params`` and implement ``edit_batch``.

    Heavy editors override :meth:`load` (called once per worker process by the registry cache)
    and import torch/diffusers inside it. ``lock`` serialises model calls across threads,
    because pipelines keep scheduler state and are not re-entrant.
    """

    name: ClassVar[str]
    Params: ClassVar[type[Section]] = NoParams
    supported: ClassVar[frozenset[str]] = frozenset(EDIT_TYPES)
    uses_model: ClassVar[bool] = False  # True: loaded weights, batches, OOM handling matter
    # Attribute values the editor draws (family -> {value: what is drawn}); None = an open set
    # (a generative model asked in words, checked afterwards by editors.verify).
    attribute_values: ClassVar[Mapping[str, Mapping[str, str]] | None] = None
    clone_from_image: ClassVar[bool] = False  # move/add clone the target; replace clones an annotated instance

    @classmethod
    def capabilities(cls) -> Capabilities:
        """What this editor can render (editors/capabilities.py); requests outside it are refused."""
        return Capabilities(frozenset(cls.supported), cls.attribute_values, cls.clone_from_image)

    def __init__(self, params: Mapping[str, object] | None = None):
        try:
            self.params = self.Params.model_validate(dict(params or {}))
        except ValidationError as exc:
            bad = "; ".join(f"{'.'.join(map(str, e['loc'])) or '<params>'}: {e['msg']}" for e in exc.errors())
            raise EditorError(f"editor {self.name!r}: invalid params ({bad})") from None
        self.lock = threading.RLock()
        self._loaded = False

    def params_dict(self) -> dict[str, object]:
        """The resolved parameters (defaults filled), as recorded on every edit row."""
        return self.params.model_dump(mode="json")

    def ensure_loaded(self) -> None:
        with self.lock:
            if not self._loaded:
                self.load()
                self._loaded = True

    def load(self) -> None:
        """Load weights (heavy editors). Default: nothing to load."""

    @property
    def max_batch(self) -> int:
        return int(getattr(self.params, "batch_size", 0) or 64)

    @classmethod
    def memory_profile(cls, params: Section, key: str, target: str) -> Profile | None:
        """For the preflight: an ``editors.memory.Profile`` of the models ``params`` load, sized for
        ``target`` (``cuda`` or ``cpu``); None for editors without model weights."""
        return None

    @classmethod
    def edit_flops(cls, params: Section, key: str) -> float | None:
        """Floating-point operations of one edit at ``params`` (the build-time estimate's last
        resort, editors/timing.py); None when the editor has no formula."""
        return None

    @classmethod
    def edit_steps(cls, params: Section) -> int | None:
        """Denoising steps one edit at ``params`` runs (the build-time estimate scales by them)."""
        return getattr(params, "steps", None)

    @classmethod
    def licence(cls, params: Section) -> Any:
        """The ``editors.licences.Licence`` of the weights ``params`` load, for editors whose
        weights are not the one checkpoint their ``model`` param names (SAM + LaMa, a third-party
        editor); None: ``editors.registry.editor_licence`` reads the weights' licence (none for
        editors without model weights)."""
        return None

    @staticmethod
    def plan_params(layout: str, quant: str) -> dict[str, str]:
        """What :meth:`resolved_params` records for a memory plan, so a preflight can compute the
        item keys a build will use without loading the model; {} for editors without plans."""
        return {}

    def resolved_params(self) -> dict[str, str]:
        """Choices made when loading (e.g. the memory plan), recorded on every row beside the params."""
        return {}

    @property
    def encodes_first(self) -> bool:
        """True when the stage should call ``encode(requests)`` on a whole shard before editing it."""
        return False

    def supports(self, request: EditRequest) -> EditFailure | None:
        """``None`` when this editor can do the request, else the failure to record."""
        if request.kind is None:
            return EditFailure(
                "unknown_edit_type", f"edit type {request.edit_type!r} is not one of {list(EDIT_TYPES)} (or an alias)"
            )
        if request.kind not in self.supported:
            return EditFailure(
                "unsupported_edit_type", f"editor {self.name!r} does {sorted(self.supported)}, not {request.kind!r}"
            )
        refusal = check_capabilities(
            self.name, self.capabilities(), request.kind, request.fields, request.instruction, request.box
        )
        if refusal is not None:
            return EditFailure(UNSUPPORTED, f"field {refusal.field}: {refusal.detail}")
        return None

    @abstractmethod
    def edit_batch(self, requests: Sequence[EditRequest]) -> list[EditResult | EditFailure]:
        """Edit every request; the i-th output answers the i-th request."""
