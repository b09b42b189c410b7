"""The dataset card (README.md): what is in the release, where it came from, how it was built."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import yaml

from storage.task_spec import all_tasks, task_order
from tasks.release.export.content import EditorStat, ReleaseContent
from tasks.release.export.hf import configs_yaml
from tasks.release.export.licences import licence_warnings
from tasks.release.export.rows import ReleaseRow

SOURCES = {
    "visual_genome": (
        "Visual Genome 1.2/1.4 (Krishna et al., 2017): images, objects, attributes and relationships.",
        "Annotations under CC BY 4.0; images are from YFCC100M/MS-COCO and keep their Creative Commons licenses.",
    ),
    "fsc147": (
        "FSC-147 (Ranjan et al., 2021): images with point annotations for class-agnostic counting.",
        "Distributed by its authors for research; check the FSC-147 repository's terms before redistribution.",
    ),
    # the COCO-format source (miners/coco.py) reads COCO or LVIS (or another COCO-format file): the
    # card names both, and the build configuration below says which file was read
    "coco": (
        "COCO-format instance annotations (the file `sources.coco` names in the build configuration below): "
        'COCO (Lin et al., "Microsoft COCO: Common Objects in Context", ECCV 2014) or LVIS (Gupta, Dollár and '
        'Girshick, "LVIS: A Dataset for Large Vocabulary Instance Segmentation", CVPR 2019), whose annotations '
        "cover COCO 2017 images.",
        "COCO annotations under CC BY 4.0 (the COCO Consortium); LVIS annotations under CC BY 4.0. The images of both "
        "are COCO's, taken from Flickr: each keeps its own license (the image's `license` entry in the annotation "
        "file) and Flickr's terms of use. Another COCO-format dataset read through this source has its own terms.",
    ),
}


def task_text(task: str) -> str:
    """The card's line on a task (``TaskSpec.card_text``; the id for a task not registered here)."""
    spec = all_tasks().get(task)
    return spec.card_text if spec and spec.card_text else task


def _order(tasks: list[str]) -> list[str]:
    return sorted(tasks, key=task_order)


def editor_stats(edits_all: list[dict[str, Any]], kept_edit_ids: set[str], verified: bool) -> list[EditorStat]:
    """Per editor: edits made, auto-QC pass rate, (verified builds) human acceptance of the passed
    ones, and the licence of its weights (editors/licences.py). Unedited items (dense counting's
    ``none`` rows) are no editor's and are left out."""
    from editors.registry import editor_licence
    from tasks.stages.edit import NO_EDITOR

    out: list[EditorStat] = []
    for ed in sorted({e["editor"] for e in edits_all} - {NO_EDITOR}):
        mine = [e for e in edits_all if e["editor"] == ed]
        passed = [e for e in mine if e["status"] == "ok"]
        kept = [e for e in passed if e["id"] in kept_edit_ids]
        params = sorted({e["editor_params_json"] for e in mine})
        doc = json.loads(params[0] or "{}")
        name = doc.get("name") or ed
        lic = editor_licence(name, doc.get("params"))
        out.append(
            {
                "editor": ed,
                "name": name,
                "edits": len(mine),
                "auto_qc_pass_rate": round(100.0 * len(passed) / len(mine), 2) if mine else None,
                "human_acceptance": (round(100.0 * len(kept) / len(passed), 2) if passed else None)
                if verified
                else None,
                "licence": lic,
                "params": params[0] if len(params) == 1 else params,
            }
        )
    return out


def render_card(
    content: ReleaseContent,
    mllm_ids: list[str],
    config_text: str | None,
    *,
    vlmevalkit: bool = False,
    health: dict[str, Any] | None = None,
    extra_header: dict[str, Any] | None = None,
) -> str:
    """The README.md text: YAML header (configs, license, task categories) + markdown body;
    ``vlmevalkit``: the release holds the VLMEvalKit files, so the card says how to score them;
    ``health``: the release's health figures (``tasks.release.health``), summarised in a section;
    ``extra_header``: keys added to (or replacing) the header's (``tasks.release.export.front_matter``)."""
    rows = content.rows
    tasks = _order(sorted({r["task"] for r in rows}))
    released = Counter(ed for ed, _ in {(r.get("editor"), r["edit_id"]) for r in rows})
    lines = _header_lines(content, tasks, extra_header)
    lines += _intro_lines(content.editors, released, tasks)
    lines += _count_lines(rows, tasks)
    if health:
        from tasks.release.health.figures import health_card_lines

        lines += ["", *health_card_lines(health)]
    lines += FIELD_LINES
    lines += _source_lines(sorted({r["source"] for r in rows if r.get("source")}))
    lines += _editor_lines(content.editors, released)
    lines += ["", "## Models used to build it", ""]
    lines += [f"- `{m}`" for m in mllm_ids] or ["- (not recorded)"]
    lines += ["", "## Build configuration", ""]
    if config_text:
        lines += ["```yaml", config_text.rstrip(), "```"]
    else:
        lines.append("(no config.yaml in the run directory)")
    lines += _loading_lines(tasks)
    if vlmevalkit:
        from tasks.release.export.vlmevalkit import card_lines

        lines += card_lines()
    return "\n".join(lines)


FIELD_LINES = [
    "",
    "## Fields",
    "",
    "`question`, `options` (MC, in presented order), `answer` (Yes/No, an option letter, or text),",
    "`answer_text` (the answer in words), `images` (1 image, or 2 for before/after pairs), `rubric` (JSON: the",
    "facts a judge needs for short answers), `prior_terms` (what a hallucinating answer falls back on: the erased",
    "object or the original attribute; the judge needs them), `question_set` (main / control / beaf), `qid`, `qtype`, `dimension`,",
    "`rotation` (cyclic MC rotation), `editor`, `variant` (targeted / control), `source`, `source_image_id`.",
    "",
]


def _header_lines(content: ReleaseContent, tasks: list[str], extra_header: dict[str, Any] | None) -> list[str]:
    """The YAML front matter, the title and (unverified builds) the warning under it."""
    header = {
        "pretty_name": content.name,
        "license": "other",
        "task_categories": ["visual-question-answering"],
        "language": ["en"],
        "tags": ["hallucination", "multimodal", "benchmark", "reactbench"]
        + ([] if content.verified else ["unverified"]),
        "size_categories": [_size_category(len(content.rows))],
        "configs": configs_yaml(tasks),
    }
    header.update(extra_header or {})
    lines = ["---", yaml.safe_dump(header, sort_keys=False).rstrip(), "---", "", f"# {content.name}", ""]
    if not content.verified:
        lines += [
            "> **UNVERIFIED BUILD.** These questions come straight from the automatic pipeline",
            "> (`qa/questions`); no human has checked the edits or the questions yet. Do not report",
            "> numbers on this release as benchmark results.",
            "",
        ]
    return lines


def _intro_lines(editors: list[EditorStat], released: Counter[str | None], tasks: list[str]) -> list[str]:
    """The editor-licence warning (when a weight licence restricts use), the summary and the tasks."""
    warnings = licence_warnings(
        [(e["editor"], e["name"], e["licence"], released.get(e["editor"], 0)) for e in editors]
    )
    lines: list[str] = []
    if warnings:
        lines += [
            "> **EDITOR LICENCES.** Some images in this release were drawn by models whose weights restrict their use:"
        ]
        lines += [f"> - {w}" for w in warnings]
        lines += [""]
    lines += [
        "A cause-driven multimodal-hallucination benchmark built with reactbench-pipeline: real annotated",
        "images are edited so that a model relying on priors rather than on the pixels answers wrongly.",
        "Each row is one question with the image(s) it is asked about.",
        "",
        "## Tasks",
        "",
    ]
    return lines + [f"- `{t}`: {task_text(t)}" for t in tasks]


def _count_lines(rows: list[ReleaseRow], tasks: list[str]) -> list[str]:
    """The counts table: edits, questions, question types and sets per task, and the total."""
    lines = [
        "",
        "## Counts",
        "",
        "| task | edits | questions | YN | MC | SA | main | control | beaf |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for t in tasks:
        mine = [r for r in rows if r["task"] == t]
        qt = Counter(r["qtype"] for r in mine)
        qs = Counter(r["question_set"] for r in mine)
        edits = len({r["edit_id"] for r in mine})
        lines.append(
            f"| {t} | {edits} | {len(mine)} | {qt['YN']} | {qt['MC']} | {qt['SA']} | {qs['main']} | {qs['control']} | {qs['beaf']} |"
        )
    lines.append(f"| **total** | {len({r['edit_id'] for r in rows})} | {len(rows)} | | | | | | |")
    return lines


def _source_lines(sources: list[str]) -> list[str]:
    """Each source dataset released from, with its licence."""
    lines = ["## Sources and licenses", ""]
    for s in sources:
        desc, lic = SOURCES.get(s, (s, "see the source's terms"))
        lines.append(f"- **{s}**: {desc} {lic}")
    return lines + ["- Edited images are derivatives of the source images and inherit their terms.", ""]


def _editor_lines(editors: list[EditorStat], released: Counter[str | None]) -> list[str]:
    """The editors table (edits, released, auto-QC and human acceptance, licence, parameters)."""
    lines = [
        "## Editors",
        "",
        "| editor | edits | in this release | auto-QC pass % | human acceptance % | licence of its weights | parameters |",
        "|---|---|---|---|---|---|---|",
    ]
    for e in editors:
        acc = "not reviewed" if e["human_acceptance"] is None else e["human_acceptance"]
        lines.append(
            f"| {e['editor']} | {e['edits']} | {released.get(e['editor'], 0)} | {e['auto_qc_pass_rate']} | {acc} | {e['licence'].label} | `{json.dumps(e['params'])}` |"
        )
    if "none" in released:
        lines.append(
            f"\n{released['none']} item(s) of tasks that edit nothing (dense counting) show their source image unedited."
        )
    return lines


def _loading_lines(tasks: list[str]) -> list[str]:
    """How to load the release with ``datasets``."""
    return [
        "",
        "## Loading",
        "",
        "```python",
        "import datasets",
        "",
        'ds = datasets.load_dataset("path/to/this/folder")            # all tasks',
        *[f'one = datasets.load_dataset("path/to/this/folder", "{t}")  # one task' for t in tasks[:1]],
        "```",
        "",
    ]


def _size_category(n: int) -> str:
    for limit, label in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M")):
        if n < limit:
            return label
    return "n>1M"
