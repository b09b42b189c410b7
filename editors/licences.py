"""Whose terms the edited images carry: the licence of each editor's default weights.

An edited image is a derivative of the model that drew it as well as of the source photo, so a
release whose images came from a non-commercial model may not be used commercially. The dataset
card (tasks/release/export/card.py) and the ablation report list the licence per editor and warn
when such an editor's images are in a release.

One lookup, :func:`editor_licence`: an editor class may declare its own ``licence`` (a
:class:`Licence` class attribute: how a third-party editor or a new family says it), else the
table below holds the built-ins, else the licence is unknown (``commercial_use`` None), which the
card and the report also flag. The table speaks of each editor's *default* weights; a run that
points an editor at other weights (``params.model``) must check those weights' terms itself.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Licence:
    """An SPDX-style id (or the licence's name), whether commercial use is allowed (None: unknown), and a note."""

    id: str
    commercial_use: bool | None
    note: str = ""

    @property
    def label(self) -> str:
        """What the card and the report print: the id and, unless commercial use is allowed, why to look."""
        if self.commercial_use is None:
            return f"{self.id} (commercial use unknown)"
        return self.id if self.commercial_use else f"{self.id} (non-commercial)"


UNKNOWN = Licence("unknown", None, "the editor declares no licence; check its weights' terms before redistributing")

BUILTIN_LICENCES: dict[str, Licence] = {
    "classical": Licence("Apache-2.0", True, "OpenCV inpainting and colour operations; no model weights"),
    "instruct-pix2pix": Licence(
        "MIT", True, "timbrooks/instruct-pix2pix weights; fine-tuned from Stable Diffusion v1.5, whose CreativeML OpenRAIL-M use restrictions carry over"
    ),
    "qwen-image-edit": Licence("Apache-2.0", True, "Qwen/Qwen-Image-Edit, -2509 and -2511 weights"),
    "sam-lama": Licence("Apache-2.0", True, "Segment Anything (SAM) weights and big-lama (LaMa) weights"),
}


def editor_licence(name: str) -> Licence:
    """The licence of editor ``name``'s weights (the registered name, not an ablation label)."""
    declared = _declared(name)
    if declared is not None:
        return declared
    return BUILTIN_LICENCES.get(name, UNKNOWN)


def _declared(name: str) -> Licence | None:
    """The ``licence`` attribute of the editor's class, when it has one (an editor that cannot be
    loaded here, e.g. a plugin uninstalled since the build, falls back to the table)."""
    from editors.base import EditorError
    from editors.registry import editor_class

    try:
        cls = editor_class(name)
    except (EditorError, ImportError):  # a report or export on an install without that editor's module still lists the table's licence
        return None
    lic = getattr(cls, "licence", None)
    return lic if isinstance(lic, Licence) else None
