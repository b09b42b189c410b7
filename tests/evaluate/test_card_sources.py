"""The dataset card's "Sources and licenses": each source the release holds, with its citation and terms."""

from __future__ import annotations

from tasks.release.export.card import render_card
from tasks.release.export.content import ReleaseContent


def _rows(*sources: str) -> list[dict]:
    return [
        {"task": "relational_erasure", "qtype": "YN", "question_set": "main", "edit_id": f"e{i}", "source": s}
        for i, s in enumerate(sources)
    ]


def _sources_section(card: str) -> str:
    return card.split("## Sources and licenses", 1)[1].split("## Editors", 1)[0]


def test_coco_sourced_items_name_coco_and_lvis_terms_and_citations() -> None:
    section = _sources_section(
        render_card(ReleaseContent("t", _rows("coco", "visual_genome"), [], verified=True), [], None)
    )
    coco = next(line for line in section.splitlines() if line.startswith("- **coco**"))
    assert "Lin et al." in coco and "Microsoft COCO: Common Objects in Context" in coco and "ECCV 2014" in coco
    assert "LVIS: A Dataset for Large Vocabulary Instance Segmentation" in coco and "CVPR 2019" in coco
    assert (
        "COCO annotations under CC BY 4.0" in coco and "LVIS annotations under CC BY 4.0" in coco and "Flickr" in coco
    )
    assert "- **visual_genome**: Visual Genome" in section and "see the source's terms" not in section


def test_a_release_without_coco_items_does_not_mention_coco() -> None:
    section = _sources_section(
        render_card(ReleaseContent("t", _rows("visual_genome", "fsc147"), [], verified=True), [], None)
    )
    assert "**coco**" not in section and "LVIS" not in section
    assert "- **fsc147**: FSC-147" in section
