"""Which model licences a release's images carry: the warning lines of the dataset card and the
ablation report (editors/licences.py says each editor's licence)."""

from __future__ import annotations

from typing import Iterable


def licence_warnings(editors: Iterable[tuple[str, str, int]]) -> list[str]:
    """One line per editor whose images are in the release (or kept by the build) and whose weights
    forbid commercial use or declare no licence; ``editors``: (editor key, registered name, items)."""
    from editors.licences import editor_licence

    out = []
    for key, name, items in editors:
        if not items:
            continue
        lic = editor_licence(name)
        shown = key if key == name else f"{key} ({name})"
        if lic.commercial_use is False:
            out.append(f"{items} item(s) edited by {shown} under {lic.id}: its weights forbid commercial use, so these images may not be used commercially")
        elif lic.commercial_use is None:
            out.append(f"{items} item(s) edited by {shown}: {lic.note}")
    return out
