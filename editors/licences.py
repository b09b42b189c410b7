"""Whose weights drew an edit, and may the images be used commercially.

A benchmark that ships edited images inherits the terms of the model that drew them: FLUX.1
Kontext dev and FLUX.2 klein 9B forbid commercial use of their outputs' model, Qwen-Image-Edit
and FLUX.2 klein 4B are Apache-2.0. The release's dataset card and the ablation report list the
licence per editor (``editors.registry.editor_licence``) and warn when non-commercial weights
drew images in a release.

Where a licence comes from, in order: the editor class's own ``licence(params)`` (editors
without weights, SAM + LaMa, a third-party editor), else for model editors the table of known
checkpoints below, then the ``license`` field of the model card (``README.md`` front matter) in a
local folder or the local Hugging Face cache; otherwise ``unknown`` (``commercial_use`` None),
which the card and the report flag as not cleared. The one lookup by an edit row's editor is
``editors.registry.editor_licence``.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

# Model-card licence ids whose terms allow commercial use of the weights' outputs.
PERMISSIVE = frozenset(
    {
        "apache-2.0",
        "mit",
        "bsd-2-clause",
        "bsd-3-clause",
        "cc-by-4.0",
        "cc0-1.0",
        "openrail",
        "openrail++",
        "creativeml-openrail-m",
        "bigscience-openrail-m",
    }
)


@dataclass(frozen=True)
class Licence:
    """The licence of an editor's weights: its name, whether outputs may be used commercially,
    and where this was read (``known checkpoint``, ``model card``, ``no weights``, ``unknown``)."""

    name: str
    commercial_use: bool | None
    source: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def label(self) -> str:
        """What the card and the report print: the name and, unless commercial use is allowed, why to look."""
        if self.commercial_use is None:
            return f"{self.name} (commercial use unknown)"
        return self.name if self.commercial_use else f"{self.name} (non-commercial)"


NO_WEIGHTS = Licence("none (no model weights)", True, "no weights")
UNKNOWN = Licence("unknown", None, "unknown: check the weights' terms before redistributing")
_APACHE = Licence("Apache-2.0", True, "known checkpoint")
_FLUX_DEV_NC = Licence("FLUX.1 [dev] Non-Commercial License", False, "known checkpoint")
_FLUX_NC = Licence("FLUX Non-Commercial License", False, "known checkpoint")

# Hub ids of the checkpoints the editors name in their docs and presets.
KNOWN_LICENCES: dict[str, Licence] = {
    "black-forest-labs/FLUX.1-Kontext-dev": _FLUX_DEV_NC,
    "black-forest-labs/FLUX.2-klein-4B": _APACHE,
    "black-forest-labs/FLUX.2-klein-base-4B": _APACHE,
    "black-forest-labs/FLUX.2-klein-9B": _FLUX_NC,
    "black-forest-labs/FLUX.2-klein-base-9B": _FLUX_NC,
    "meituan-longcat/LongCat-Image-Edit": _APACHE,
    "meituan-longcat/LongCat-Image-Edit-Turbo": _APACHE,
    "Qwen/Qwen-Image-Edit": _APACHE,
    "Qwen/Qwen-Image-Edit-2509": _APACHE,
    "Qwen/Qwen-Image-Edit-2511": _APACHE,
    "timbrooks/instruct-pix2pix": Licence("MIT", True, "known checkpoint"),
}


def card_licence(text: str) -> Licence | None:
    """The licence a model card's YAML front matter declares (``license:`` and, for ``other``,
    ``license_name:``); None when it declares none."""
    m = re.match(r"\A---\s*\n(.*?)\n---", text, re.S)
    if not m:
        return None
    import yaml

    try:
        meta = yaml.safe_load(m.group(1)) or {}
    except yaml.YAMLError:
        return None
    lic = meta.get("license") if isinstance(meta, dict) else None
    if not isinstance(lic, str) or not lic.strip():
        return None
    lic = lic.strip().lower()
    name = str(meta.get("license_name") or lic) if lic == "other" else lic
    commercial = lic in PERMISSIVE and "nc" not in lic.split("-")
    return Licence(name, commercial, "model card")


def _card_text(ref: str) -> str | None:
    path = Path(ref).expanduser()
    if path.is_dir():
        card = path / "README.md"
        return card.read_text(encoding="utf-8", errors="replace") if card.is_file() else None
    from editors.weights import cached_file, looks_like_path

    if looks_like_path(ref):
        return None
    found = cached_file(ref, "README.md")
    return found.read_text(encoding="utf-8", errors="replace") if found is not None else None


def weights_licence(ref: str | None) -> Licence:
    """The licence of the weights at ``ref`` (hub id or local folder); see the module docstring."""
    if not ref:
        return UNKNOWN
    if ref in KNOWN_LICENCES:
        return KNOWN_LICENCES[ref]
    text = _card_text(ref)
    found = card_licence(text) if text else None
    return found or UNKNOWN
