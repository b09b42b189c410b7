"""Issue 39: croissant.json checked by mlcroissant itself (validate + every RecordSet loaded and
compared with the Parquet rows) for a cyclic and a shuffled export, locally and on S3; the canary
in every text file; the card's front matter read back by huggingface_hub."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from eval_helpers import write_run

from flows.config import BuildConfig, resolve_run_config
from storage.fs import RunFS
from storage.parquet_io import table_from_rows
from storage.schemas import DECISIONS, VERIFIED_EDITS, VERIFIED_QUESTIONS
from tasks.release.export.canary import canary_guid, files_without
from tasks.release.export.croissant import FILE
from tasks.release.export.export import ExportOptions, export_benchmark

BIN = Path(sys.executable).parent
ROOT = Path(__file__).resolve().parents[2]
SHEET = {
    "name": "Tiny hallucination benchmark",
    "url": "https://example.org/tiny-benchmark",
    "intended_use": "Evaluating MLLMs for prior-driven hallucination; not for training.",
    "social_impact": "Helps measure a failure mode of deployed assistants.",
    "personal_sensitive_information": "Source photographs may show people; no identities are annotated.",
    "maintenance_plan": "Issues on the project tracker; fixed in a new version.",
}


def _reviewed(run: RunFS) -> None:
    """Replace write_run's review export with one whose trails name two reviewers per item (one
    edit-stage disagreement, adjudicated), as ``reactbench review export`` writes them."""
    from tasks.review.export_set import write_export_set

    edits = ArtifactRows(run, "review/verified_edits", "verified_edits")
    questions = ArtifactRows(run, "review/verified_questions", "verified_questions")
    rows, log = [], []
    for i, e in enumerate(edits):
        split = i == 0
        trail = {
            "edit": {
                "outcome": "accept",
                "adjudicated": split,
                "decisions": [
                    {"annotator": "annotator_001", "verdict": "accept", "reasons": []},
                    {"annotator": "annotator_002", "verdict": "reject" if split else "accept", "reasons": []},
                ],
            },
            "qa": {
                "outcome": "accept",
                "adjudicated": False,
                "decisions": [
                    {"annotator": a, "verdict": "accept", "reasons": []} for a in ("annotator_001", "annotator_002")
                ],
            },
        }
        rows.append({**e, "decisions_json": json.dumps(trail)})
        for stage in ("edit", "qa"):
            for d in trail[stage]["decisions"]:
                log.append(
                    {
                        "event_id": len(log) + 1,
                        "item_id": e["id"],
                        "item_kind": stage,
                        "action": d["verdict"],
                        "annotator": d["annotator"],
                        "created_at": f"2026-01-0{1 + len(log) % 5}T10:00:00+00:00",
                        "before_json": None,
                        "after_json": None,
                    }
                )
    write_export_set(
        run,
        {
            "verified_edits": table_from_rows(VERIFIED_EDITS, rows),
            "verified_questions": table_from_rows(VERIFIED_QUESTIONS, questions),
            "decisions": table_from_rows(DECISIONS, log),
        },
        len(log),
    )


def ArtifactRows(run: RunFS, folder: str, name: str) -> list[dict]:
    from storage.parquet_io import ArtifactReader

    return ArtifactReader(run, folder, name).rows()


@pytest.fixture(scope="module")
def releases(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """A cyclic-MC and a shuffled build of one benchmark; the cyclic one reviewed by two
    annotators, its datasheet filled in and exported with every format."""
    root = tmp_path_factory.mktemp("metadata")
    out = {}
    for mode, cyclic in (("cyclic", True), ("shuffle", False)):
        run = write_run(root / f"run-{mode}", cyclic=cyclic)
        if cyclic:
            _reviewed(run)
            config = BuildConfig.model_validate({"qa": {"mc_mode": "cyclic"}, "datasheet": SHEET})
        else:
            config = BuildConfig.model_validate({"datasheet": {"name": SHEET["name"]}})
        release = RunFS.open(str(root / f"release-{mode}"))
        summary = export_benchmark(run, release, config, ExportOptions(vlmevalkit=cyclic, lmms_eval=cyclic))
        out[mode] = {"run": run, "out": release, "summary": summary}
    return out


def _validate(path: Path) -> str:
    """``mlcroissant validate`` as a venue's checker runs it; its log (warnings included)."""
    proc = subprocess.run(
        [str(BIN / "mlcroissant"), "validate", "--jsonld", str(path)], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout + proc.stderr


def _check_loads(folder: Path) -> dict[str, int]:
    """Load every RecordSet with mlcroissant and compare it with the release's Parquet rows: the
    record count, and id, question, gold, options, rotation, verified and the images of every record."""
    import mlcroissant as mlc

    ds = mlc.Dataset(str(folder / FILE))
    assert not ds.metadata.ctx.issues.warnings, ds.metadata.ctx.issues.report()
    parquet = {}
    for f in sorted((folder / "data").glob("*/*.parquet")):
        for r in pq.read_table(f).to_pylist():
            parquet[r["id"]] = r
    counts = {}
    for rs in ds.metadata.record_sets:
        name = rs.uuid
        want = {i: r for i, r in parquet.items() if name == "all" or r["task"] == name}
        seen = set()
        for rec in ds.records(name):
            rid = rec[f"{name}/id"].decode()
            row = want[rid]
            seen.add(rid)
            assert rec[f"{name}/question"].decode() == row["question"]
            assert rec[f"{name}/answer"].decode() == row["answer"]
            assert [o.decode() for o in rec[f"{name}/options"]] == row["options"]
            assert rec[f"{name}/rotation"] == row["rotation"] and rec[f"{name}/verified"] == row["verified"]
            assert [im.size for im in rec[f"{name}/images"]] == [(32, 24)] * len(row["images"])
        assert seen == set(want), name
        counts[name] = len(seen)
    return counts


@pytest.mark.parametrize("mode", ["cyclic", "shuffle"])
def test_croissant_validates_and_every_record_set_loads_as_the_parquet(releases, mode):
    rel = releases[mode]
    folder = Path(rel["out"].root)
    log = _validate(folder / FILE)
    assert "WARNING" not in log, log
    counts = _check_loads(folder)
    summary = rel["summary"]
    assert counts == {"all": sum(summary.counts.values()), **summary.counts}
    if mode == "cyclic":  # the MC question in its four rotations is four records
        rotations = {
            r["rotation"] for f in (folder / "data").glob("*/*.parquet") for r in pq.read_table(f).to_pylist()
        }
        assert rotations == {0, 1, 2, 3}
    doc = json.loads((folder / FILE).read_text())
    manifest = json.loads((folder / "release_manifest.json").read_text())["files"]
    objects = {d["contentUrl"]: d["sha256"] for d in doc["distribution"] if d["@type"] == "cr:FileObject"}
    assert objects == {f: e["sha256"] for f, e in manifest.items() if f != FILE}  # every file, its hash


def test_rai_fields_come_from_the_run_and_the_datasheet(releases):
    cyc = json.loads(Path(releases["cyclic"]["out"].root, FILE).read_text())
    rai = {k: v for k, v in cyc.items() if k.startswith("rai:") and v}
    assert len(rai) >= 14, sorted(rai)
    assert "annotator_001" not in json.dumps(rai)  # pseudonyms are counted, never listed
    analysis = " ".join(cyc["rai:dataAnnotationAnalysis"])
    assert "1 adjudicated" in analysis and "2 pseudonymised annotator(s)" in analysis and "Fleiss' kappa" in analysis
    assert cyc["rai:annotationsPerItem"].endswith("edit: 2.00 (min 2, max 2), qa: 2.00 (min 2, max 2)")
    assert cyc["rai:dataUseCases"] == [SHEET["intended_use"]] and cyc["rai:dataSocialImpact"] == SHEET["social_impact"]
    assert "cyclic" in " ".join(cyc["rai:dataPreprocessingProtocol"])
    assert "classical" in cyc["rai:dataManipulationProtocol"]
    assert releases["cyclic"]["summary"].warnings == []
    assert [d["name"] for d in cyc["prov:wasDerivedFrom"]] and cyc["prov:wasGeneratedBy"]["@type"] == "prov:Activity"
    # the shuffled export left the author's fields empty: named in warnings, written as "not stated"
    shuf = json.loads(Path(releases["shuffle"]["out"].root, FILE).read_text())
    warned = " ".join(releases["shuffle"]["summary"].warnings)
    for key in ("url", "intended_use", "social_impact", "personal_sensitive_information", "maintenance_plan"):
        assert f"datasheet.{key}" in warned
    assert "datasheet.intended_use is empty" in shuf["rai:dataUseCases"][0] and "url" not in shuf
    assert cyc["url"] == SHEET["url"]


def test_canary_in_every_text_file_same_across_builds_and_printed_by_the_cli(releases):
    guid = canary_guid(SHEET["name"])
    for rel in releases.values():
        assert files_without(rel["out"], guid) == []
        assert guid in json.loads(Path(rel["out"].root, FILE).read_text())["description"]
    folder = Path(releases["cyclic"]["out"].root)
    # readers still read each format: the TSV gains a column, the task table an entry without id
    for tsv in folder.glob("vlmevalkit/*.tsv"):
        rows = list(csv.reader(io.StringIO(tsv.read_text()), delimiter="\t"))
        assert rows[0][-1] == "canary" and all(r[-1] == guid for r in rows[1:])
    for table in ("lmms_eval/reactbench_tasks.json", "vlmevalkit/reactbench_tasks.json"):
        entries = json.loads((folder / table).read_text())
        assert [e for e in entries if "id" not in e] == [{"canary": entries[0]["canary"]}]
    compile((folder / "lmms_eval/utils.py").read_text(), "utils.py", "exec")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    config = folder.parent / "named.yaml"
    config.write_text(f"version: 1\ndatasheet: {{name: {SHEET['name']}}}\n")
    for args in (["--release", str(folder)], ["--run-dir", releases["shuffle"]["run"].root, "-c", str(config)]):
        proc = subprocess.run(
            [str(BIN / "reactbench"), "release", "canary", *args], capture_output=True, text=True, env=env, timeout=120
        )
        assert proc.returncode == 0 and proc.stdout.strip() == guid, proc.stdout + proc.stderr


def test_card_front_matter_reads_back_with_huggingface_hub(releases):
    from huggingface_hub import DatasetCard

    card = DatasetCard((Path(releases["cyclic"]["out"].root) / "README.md").read_text())
    data = card.data.to_dict()
    assert data["pretty_name"] == SHEET["name"]
    assert data["task_ids"] == ["multiple-choice-qa", "visual-question-answering"]
    assert data["size_categories"] == ["n<1K"] and data["annotations_creators"] == [
        "machine-generated",
        "expert-generated",
    ]
    assert data["source_datasets"] == ["extended|other-fsc147", "extended|visual_genome"]
    # FSC-147's terms are unknown: the roll-up is "other" and names it
    assert data["license"] == "other" and "source fsc147" in data["license_details"]


def test_licence_rollup_keeps_a_non_commercial_editor_restricted():
    from editors.licences import Licence
    from tasks.release.export.front_matter import licence_rollup

    flux = Licence("FLUX.1 [dev] Non-Commercial License", False, "known checkpoint")
    apache = Licence("Apache-2.0", True, "known checkpoint")
    mixed = licence_rollup(["visual_genome"], [{"editor": "flux", "licence": flux}])
    assert mixed["id"] == "other" and mixed["restricted"] == ["editor flux"]
    same = licence_rollup(["visual_genome", "coco"], [{"editor": "x", "licence": apache}])
    assert same["id"] == "other" and same["restricted"] == []  # CC BY 4.0 sources + Apache weights: two licences
    only = licence_rollup(["visual_genome"], [])
    assert only["id"] == "cc-by-4.0" and only["urls"] == ["https://creativecommons.org/licenses/by/4.0/"]


def test_export_to_s3_carries_a_croissant_that_validates_once_downloaded(tmp_path, s3_server):
    run = write_run(tmp_path / "run", cyclic=False)
    out = RunFS.open(f"s3://{s3_server.bucket()}/release")
    export_benchmark(run, out, resolve_run_config(run_dir=run.url), ExportOptions(unverified=True))
    local = tmp_path / "downloaded"
    out.fs.get(out.root + "/", str(local), recursive=True)
    counts = _check_loads(local)  # mlcroissant's own validation (what `validate` runs), then every record
    assert counts["all"] == sum(counts.values()) - counts["all"]
