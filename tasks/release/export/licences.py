"""Which model licences a release's images carry: the warning lines of the dataset card and the
ablation report (editors/licences.py says each editor's licence)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from editors.licences import Licence


def licence_warnings(editors: Iterable[tuple[str, str, Licence, int]]) -> list[str]:
    """One line per editor whose images are in the release (or kept by the build) and whose weights
    forbid commercial use or declare no licence; ``editors``: (editor key, registered name, its
    licence (``editors.registry.editor_licence``), items)."""
    out = []
    for key, name, lic, items in editors:
        if not items:
            continue
        shown = key if key == name else f"{key} ({name})"
        if lic.commercial_use is False:
            out.append(
                f"{items} item(s) edited by {shown} under {lic.name}: its weights forbid commercial use, so these images may not be used commercially"
            )
        elif lic.commercial_use is None:
            out.append(f"{items} item(s) edited by {shown}: {lic.source}")
    return out
