"""``croissant.json``: the release described in Croissant 1.1 with its Responsible-AI fields.

Written at export from the run's own records (:mod:`tasks.release.export.provenance`), the rows
released and the files written, never typed by hand: a FileObject per file with its sha256, one
RecordSet per ``datasets`` config (``all`` over a FileSet of every task's Parquet file, one per
task over its file) whose typed fields read the Parquet columns (images as ``sc:ImageObject``
from the image structs' bytes), and the RAI fields. What the run cannot know comes from the
``datasheet:`` config section; an empty one is written as "not stated" and named in a warning.
``rai:dataBiases`` adds the measured part (the release health figures' text,
:func:`tasks.release.health.figures.health_biases_text`) to what the run records about its sources.

Checked by ``mlcroissant`` in the tests: ``validate`` passes with no warning and every RecordSet
loads with the counts and values of the Parquet files.
"""

from __future__ import annotations

import datetime as _dt
import json
import posixpath
from collections import Counter
from typing import Any

from storage.fs import RunFS
from storage.hashing import sha256_file
from storage.task_spec import task_order
from tasks.engine.build_config import BuildConfig
from tasks.release.export.canary import canary_string
from tasks.release.export.content import EditorStat, ReleaseContent
from tasks.release.export.datasheet import DatasheetConfig, empty_fields
from tasks.release.export.front_matter import SOURCE_LICENCES, licence_rollup
from tasks.release.export.hf import data_file
from tasks.release.export.provenance import Provenance
from tasks.release.export.rows import ReleaseRow

FILE = "croissant.json"
CONFORMS_TO = "http://mlcommons.org/croissant/1.1"
RAI_CONFORMS_TO = "http://mlcommons.org/croissant/RAI/1.0"
NOT_STATED = "Not stated by the benchmark's authors (datasheet.{key} is empty)."

ENCODINGS = {
    ".parquet": "application/x-parquet",
    ".md": "text/markdown",
    ".tsv": "text/tab-separated-values",
    ".json": "application/json",
    ".yaml": "application/x-yaml",
    ".py": "text/x-python",
    ".j2": "text/plain",
    ".txt": "text/plain",
}

# (column, Croissant dataType, array?, what it holds)
FIELDS: tuple[tuple[str, str, bool, str], ...] = (
    ("id", "sc:Text", False, "stable question id"),
    ("task", "sc:Text", False, "benchmark task (config) of the question"),
    ("question_set", "sc:Text", False, "main, control or beaf"),
    ("qid", "sc:Text", False, "question template id within its task"),
    ("qtype", "sc:Text", False, "question type: YN (yes/no), MC (multiple choice), SA (short answer)"),
    ("dimension", "sc:Text", False, "what the question probes"),
    ("question", "sc:Text", False, "the question as asked"),
    ("options", "sc:Text", True, "MC options in presented order (empty otherwise)"),
    ("answer", "sc:Text", False, "gold answer: Yes/No, an option letter, or text"),
    ("answer_text", "sc:Text", False, "gold answer in words"),
    ("rotation", "sc:Integer", False, "cyclic MC rotation of the options (0 when shuffled once)"),
    ("image_role", "sc:Text", False, "which image(s) the question is asked about"),
    ("images", "sc:ImageObject", True, "the image(s): one, or a before/after pair"),
    ("rubric", "sc:Text", False, "JSON facts a judge needs for short answers"),
    ("prior_terms", "sc:Text", True, "what a hallucinating answer falls back on"),
    ("edit_id", "sc:Text", False, "id of the edit the question is about"),
    ("editor", "sc:Text", False, "editor that drew the edited image (none: unedited)"),
    ("variant", "sc:Text", False, "targeted or control edit"),
    ("source", "sc:Text", False, "source dataset of the original image"),
    ("source_image_id", "sc:Text", False, "image id in the source dataset"),
    ("verified", "sc:Boolean", False, "whether human review accepted the item"),
)


def _context() -> dict[str, Any]:
    return {
        "@language": "en",
        "@vocab": "https://schema.org/",
        "sc": "https://schema.org/",
        "cr": "http://mlcommons.org/croissant/",
        "rai": "http://mlcommons.org/croissant/RAI/",
        "prov": "http://www.w3.org/ns/prov#",
        "dct": "http://purl.org/dc/terms/",
        "citeAs": "cr:citeAs",
        "column": "cr:column",
        "conformsTo": "dct:conformsTo",
        "containedIn": "cr:containedIn",
        "data": {"@id": "cr:data", "@type": "@json"},
        "dataType": {"@id": "cr:dataType", "@type": "@vocab"},
        "equivalentProperty": "cr:equivalentProperty",
        "examples": {"@id": "cr:examples", "@type": "@json"},
        "extract": "cr:extract",
        "field": "cr:field",
        "fileObject": "cr:fileObject",
        "fileProperty": "cr:fileProperty",
        "fileSet": "cr:fileSet",
        "format": "cr:format",
        "includes": "cr:includes",
        "isArray": "cr:isArray",
        "isLiveDataset": "cr:isLiveDataset",
        "jsonPath": "cr:jsonPath",
        "key": "cr:key",
        "md5": "cr:md5",
        "parentField": "cr:parentField",
        "path": "cr:path",
        "recordSet": "cr:recordSet",
        "references": "cr:references",
        "regex": "cr:regex",
        "repeated": "cr:repeated",
        "replace": "cr:replace",
        "samplingRate": "cr:samplingRate",
        "separator": "cr:separator",
        "source": "cr:source",
        "subField": "cr:subField",
        "transform": "cr:transform",
    }


def _file_id(rel: str) -> str:
    return "file/" + rel


def distribution(out: RunFS, files: list[str], tasks: list[str]) -> list[dict[str, Any]]:
    """A FileObject per release file (path relative to the release, sha256 of its bytes) and a
    FileSet of every task's Parquet file (the ``all`` config)."""
    entries: list[dict[str, Any]] = []
    for rel in sorted(files):
        sha, size = sha256_file(out.fs, out.path(rel))
        entries.append(
            {
                "@type": "cr:FileObject",
                "@id": _file_id(rel),
                "name": rel,
                "contentUrl": rel,
                "contentSize": f"{size} B",
                "encodingFormat": ENCODINGS.get(posixpath.splitext(rel)[1], "application/octet-stream"),
                "sha256": sha,
            }
        )
    if tasks:
        entries.append(
            {
                "@type": "cr:FileSet",
                "@id": "parquet-all",
                "name": "parquet-all",
                "description": "The Parquet file of every task (the `all` config).",
                "encodingFormat": "application/x-parquet",
                "includes": "data/*/test-*.parquet",
            }
        )
    return entries


def record_set(config: str, source: dict[str, str], description: str) -> dict[str, Any]:
    """One config's RecordSet: a typed field per released column, read from ``source``."""
    fields = []
    for column, dtype, array, what in FIELDS:
        f: dict[str, Any] = {
            "@type": "cr:Field",
            "@id": f"{config}/{column}",
            "name": column,
            "description": what,
            "dataType": dtype,
            "source": {**source, "extract": {"column": column}},
        }
        if array:
            f["isArray"] = True
            f["repeated"] = True  # mlcroissant 1.1.1 reads a list column through `repeated`
        if dtype == "sc:ImageObject":
            f["source"]["transform"] = {"jsonPath": "bytes"}  # each image is a {bytes, path} struct
        fields.append(f)
    return {
        "@type": "cr:RecordSet",
        "@id": config,
        "name": config,
        "description": description,
        "key": {"@id": f"{config}/id"},
        "field": fields,
    }


def _sentence_list(items: list[str]) -> str:
    return "; ".join(items)


def rai_fields(prov: Provenance, config: BuildConfig, content: ReleaseContent) -> dict[str, Any]:
    """The ``rai:`` properties, each from the run's records or the datasheet (``NOT_STATED`` when
    neither has it)."""
    sheet: DatasheetConfig = config.datasheet
    times = sorted(prov.stage_times.values())
    review = _review_fields(prov, content.verified)

    def author(key: str) -> str:
        return (getattr(sheet, key) or "").strip() or NOT_STATED.format(key=key)

    out = {
        "rai:dataCollection": (
            "No new data was collected: real annotated images of existing datasets were mined for scenes "
            "where a prior (co-occurrence, typical attribute, count) can be tested, and edited so that the prior is wrong."
        ),
        "rai:dataCollectionType": ["Secondary Data Analysis", "Synthetic Data"],
        "rai:dataCollectionRawData": " ".join(_raw_data(prov, content.rows)) or "No source rows released.",
        "rai:dataCollectionMissingData": "Items whose image is missing from the run's image store are not released (export/rejects, reason image_missing).",
        "rai:dataPreprocessingProtocol": _preprocessing(config),
        "rai:dataManipulationProtocol": " | ".join(_manipulation(content.editors))
        or "No edits (dense counting only).",
        "rai:machineAnnotationTools": [
            f"{model} with prompt {name} v{version}" for model, name, version in prov.prompts
        ]
        or [f"{config.mllm.backend}:{config.mllm.model} (no prompt rows recorded)"],
        **review,
        "rai:dataBiases": _biases(content, sheet),
        "rai:dataLimitations": _limitations(content.verified, sheet),
        "rai:dataUseCases": [author("intended_use")],
        "rai:dataSocialImpact": author("social_impact"),
        "rai:personalSensitiveInformation": [author("personal_sensitive_information")],
        "rai:dataReleaseMaintenancePlan": author("maintenance_plan"),
    }
    if times:
        out["rai:dataCollectionTimeframe"] = [times[0], times[-1]]
    if sheet.annotator_demographics:
        out["rai:annotatorDemographics"] = [sheet.annotator_demographics]
    return out


def _raw_data(prov: Provenance, rows: list[ReleaseRow]) -> list[str]:
    """Per source released from: what it is, its licence, the files read and the counts read."""
    from tasks.release.export.card import SOURCES

    raw = []
    for s in sorted({r["source"] for r in rows if r.get("source")}):
        desc, lic = SOURCES.get(s, (s, "see the source's terms"))
        info = prov.sources.get(s) or {}
        files = ", ".join(f"{f} ({fp})" for f, fp in sorted(info.get("files", {}).items())) or "not recorded"
        counts = ", ".join(
            f"{k}={v}" for k, v in sorted((info.get("counts") or {}).items()) if not isinstance(v, dict)
        )
        raw.append(f"{desc} {lic} Files read: {files}." + (f" Read: {counts}." if counts else ""))
    return raw


def _preprocessing(config: BuildConfig) -> list[str]:
    """The mining settings and the question modes, from the run config."""
    mine = config.mine.model_dump(mode="json")
    return [
        f"Mining (`mine`): tasks {', '.join(mine.get('tasks') or [])}; thresholds and caps per task: "
        + json.dumps({t: mine[t] for t in mine.get("tasks") or [] if t in mine}, sort_keys=True),
        "Candidates whose annotations fail a task's checks (size range, co-occurrence threshold, caps) are rejected with a reason in mine/rejects.",
        f"Questions: multiple choice in `{config.qa.mc_mode}` mode"
        + (" (every cyclic rotation of the options released)" if config.qa.mc_mode == "cyclic" else "")
        + f", BEAF-style before/after questions {'on' if config.qa.beaf else 'off'}.",
    ]


def _manipulation(editors: list[EditorStat]) -> list[str]:
    """One line per editor: edits, auto-QC pass rate, weights licence, parameters."""
    return [
        f"editor {e['editor']} ({e['name']}): {e['edits']} edits, auto-QC pass {e['auto_qc_pass_rate']}%, "
        f"weights licence {e['licence'].label}, parameters {json.dumps(e['params'])}"
        for e in editors
    ]


def _review_fields(prov: Provenance, verified: bool) -> dict[str, Any]:
    """The annotation fields: the review's protocol, agreement and platform (or their absence)."""
    review = prov.review
    if not verified or review is None:
        return {
            "rai:dataAnnotationProtocol": [
                "UNVERIFIED release: no human has reviewed these items; questions and gold answers come from the automatic pipeline."
            ],
            "rai:dataAnnotationPlatform": ["none (automatic pipeline only)"],
            "rai:annotationsPerItem": "0 human annotations per item (unverified release)",
            "rai:dataAnnotationAnalysis": ["No human review: no agreement figures."],
        }
    protocol = [
        f"Human review in the reactbench review app: every edit is checked (edit stage: is the change made, "
        f"nothing else altered) and then its questions (qa stage: is each question valid, is its gold right); "
        f"{review.k} annotation(s) required per item (review.k), disagreements adjudicated.",
        "Only edits accepted at both stages are released, with the questions reviewers did not mark invalid.",
    ]
    per_item = ", ".join(
        f"{s}: {v['mean']:.2f} (min {v['min']}, max {v['max']})" for s, v in sorted(review.per_item.items())
    )
    analysis = [
        f"{s} stage: decisions {dict(sorted(review.decisions.get(s, Counter()).items()))}, "
        f"{review.adjudicated.get(s, 0)} adjudicated, Fleiss' kappa "
        + (
            f"{review.fleiss[s]:.3f} over {review.multi_items[s]} items with several reviewers"
            if review.fleiss.get(s) is not None
            else "not defined (no item has two or more reviewers)"
        )
        for s in sorted(review.per_item)
    ] or ["No decision trail recorded in review/verified_edits."]
    analysis.append(f"{review.annotators} pseudonymised annotator(s); decisions from {review.first} to {review.last}.")
    return {
        "rai:dataAnnotationProtocol": protocol,
        "rai:dataAnnotationPlatform": [
            "reactbench review app (FastAPI, review queue on SQLite or PostgreSQL; Label Studio import/export)"
        ],
        "rai:annotationsPerItem": f"{review.k} required per item (review.k); recorded per released item: {per_item or 'none'}",
        "rai:dataAnnotationAnalysis": analysis,
    }


def _biases(content: ReleaseContent, sheet: DatasheetConfig) -> list[str]:
    """The sources' sampling, the mining's design, the measured figures and the datasheet's word."""
    released = Counter(r["source"] for r in content.rows if r.get("source"))
    biases = [
        "Images come from "
        + ", ".join(f"{s} ({n} released questions)" for s, n in sorted(released.items()))
        + ": they inherit those datasets' sampling (mostly Flickr photographs of everyday scenes, English object names).",
        "Questions target objects and attributes frequent enough in the source annotations to form a prior "
        "(mining thresholds above), so rare categories are under-represented by design.",
    ]
    biases += content.measured_biases
    if sheet.biases:
        biases.append(sheet.biases)
    return biases


def _limitations(verified: bool, sheet: DatasheetConfig) -> list[str]:
    """What the release cannot do, first of all (unverified builds) be reported as benchmark numbers."""
    limitations = [
        "Edited images are machine-drawn; auto-QC and review reduce but do not remove artefacts a model could exploit.",
        "Questions are rendered from templates in English only.",
    ]
    if not verified:
        limitations.insert(0, "UNVERIFIED: not human-reviewed; do not report results on it as benchmark numbers.")
    if sheet.limitations:
        limitations.append(sheet.limitations)
    return limitations


def _cite(name: str, version: str, sheet: DatasheetConfig, year: int) -> str:
    if sheet.citation:
        return sheet.citation
    key = "".join(c for c in name.lower() if c.isalnum())[:24] + str(year)
    authors = " and ".join(sheet.creators) or "{The " + name + " authors}"
    return f"@misc{{{key},\n  title = {{{name}}},\n  author = {{{authors}}},\n  year = {{{year}}},\n  note = {{version {version}}}\n}}"


def build_croissant(
    out: RunFS,
    files: list[str],
    prov: Provenance,
    config: BuildConfig,
    content: ReleaseContent,
    *,
    version: str,
    published: _dt.date | None = None,
) -> dict[str, Any]:
    """The JSON-LD document (``files``: the release files already in ``out``, Croissant not among them)."""
    sheet: DatasheetConfig = config.datasheet
    name, rows, guid = content.name, content.rows, content.guid
    tasks = sorted({r["task"] for r in rows}, key=task_order)
    published = published or _dt.date.fromisoformat(
        (max(prov.stage_times.values()) if prov.stage_times else _dt.date.today().isoformat())[:10]
    )
    counts = Counter(r["task"] for r in rows)
    description = (
        f"A cause-driven multimodal-hallucination benchmark built with reactbench-pipeline: real annotated images are "
        f"edited so that a model relying on priors rather than on the pixels answers wrongly. {len(rows)} questions over "
        f"{len(tasks)} task(s)"
        + ("" if content.verified else " (UNVERIFIED build: not human-reviewed)")
        + ". "
        + canary_string(guid)
    )
    record_sets = [record_set("all", {"fileSet": {"@id": "parquet-all"}}, f"Every task ({len(rows)} questions).")] + [
        record_set(t, {"fileObject": {"@id": _file_id(data_file(t))}}, f"Task {t} ({counts[t]} questions).")
        for t in tasks
    ]
    rollup = licence_rollup(sorted({r["source"] for r in rows if r.get("source")}), content.editors)
    doc: dict[str, Any] = {
        "@context": _context(),
        "@type": "sc:Dataset",
        "conformsTo": [CONFORMS_TO, RAI_CONFORMS_TO],
        "name": name,
        "description": description,
        "alternateName": "reactbench",
        "creator": [{"@type": "sc:Person", "name": c} for c in sheet.creators]
        or [{"@type": "sc:Organization", "name": f"The {name} authors"}],
        "citeAs": _cite(name, version, sheet, published.year),
        "license": rollup["urls"],
        "version": version,
        "datePublished": published.isoformat(),
        "keywords": ["hallucination", "multimodal", "benchmark", "visual question answering", "reactbench"],
        "inLanguage": ["en"],
        "isAccessibleForFree": True,
        "distribution": distribution(out, files, tasks),
        "recordSet": record_sets,
        "prov:wasDerivedFrom": [
            {
                "@id": SOURCE_LICENCES.get(s, {}).get("home", f"urn:reactbench:source:{s}"),
                "name": s,
                "description": (prov.sources.get(s) or {}).get("config") or s,
            }
            for s in sorted({r["source"] for r in rows if r.get("source")})
        ],
        "prov:wasGeneratedBy": {
            "@type": "prov:Activity",
            "name": "reactbench build and export",
            "description": "reactbench-pipeline "
            + (prov.code_version or "unknown version")
            + ": mine -> instruct -> edit -> qa -> review -> export; stage completion times "
            + json.dumps(prov.stage_times, sort_keys=True),
            "prov:wasAssociatedWith": sorted({m for m, _, _ in prov.prompts})
            or [f"{config.mllm.backend}:{config.mllm.model}"],
        },
    }
    if sheet.url:  # no made-up address: an empty datasheet.url is named in the export's warnings
        doc["url"] = sheet.url
    doc.update(rai_fields(prov, config, content))
    return doc


def write_croissant(out: RunFS, doc: dict[str, Any]) -> str:
    """Write ``doc`` as ``croissant.json`` into ``out``; returns its release path."""
    out.write_text_atomic(FILE, json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    return FILE


def warnings_for(sheet: DatasheetConfig) -> list[str]:
    """One line per author's field left empty (the export prints them)."""
    return [
        f"{k} is empty: croissant.json "
        + ("has no url" if k == "datasheet.url" else "says 'not stated' for it")
        + "; fill it in the run config before publishing"
        for k in empty_fields(sheet)
    ]
