"""Release versions: the version in manifest, card and VLMEvalKit names; ``reactbench release diff``
and the CHANGELOG an export writes from ``--previous``; the revision the lmms-eval tasks pin.

Runs are the hand-made ones of ``eval_helpers`` (no build): an extension by one more editor, a
review that rejects questions, a question whose text changed. Every release is written and
compared through the real CLI.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from eval_helpers import write_run
from typer.testing import CliRunner

from flows.cli import app
from storage.parquet_io import ArtifactReader

cli = CliRunner()


def _export(run: Path, out: Path, *extra: str) -> Any:
    res = cli.invoke(app, ["export", "--run-dir", str(run), "--out", str(out), *extra])
    assert res.exit_code == 0, res.output
    return res


def _diff(old: Path, new: Path) -> dict[str, Any]:
    res = cli.invoke(app, ["release", "diff", str(old), str(new), "--json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def releases(tmp_path_factory):
    """v1: one editor; v2: the same run plus a second editor (an extension), with CHANGELOG."""
    root = tmp_path_factory.mktemp("versions")
    write_run(root / "run1", editors=("classical",))
    write_run(root / "run2", editors=("classical", "lama"))
    _export(root / "run1", root / "v1", "--unverified", "--release-version", "1.0.0", "--lmms-eval")
    _export(
        root / "run2",
        root / "v2",
        "--unverified",
        "--release-version",
        "1.1.0",
        "--previous",
        str(root / "v1"),
        "--vlmevalkit",
        "--lmms-eval",
        "--hub-repo",
        "someone/reactbench",
        "--revision",
        "0123abcd",
    )
    return root


def _ids(release: Path) -> dict[str, Any]:
    out = {}
    for f in sorted((release / "data").glob("*/*.parquet")):
        for r in pq.read_table(f).to_pylist():
            out[r["id"]] = (r["question"], r["options"], r["answer"], [im["bytes"] for im in r["images"]])
    return out


def test_extension_by_one_editor_shows_only_additions(releases):
    d = _diff(releases / "v1", releases / "v2")
    assert d["old"]["version"] == "1.0.0" and d["new"]["version"] == "1.1.0"
    assert d["summary"]["added"] > 0 and d["summary"]["removed"] == 0 and d["summary"]["changed"] == 0
    assert {c["reason"] for c in d["items"]} == {"new editor lama"}
    # the same items under the same ids, byte for byte, plus the new editor's
    v1, v2 = _ids(releases / "v1"), _ids(releases / "v2")
    assert all(v2[i] == v1[i] for i in v1)
    assert len(v2) - len(v1) == d["summary"]["added"]
    per_group = sum(c["added"] for groups in d["by_task"].values() for c in groups.values())
    assert per_group == d["summary"]["added"]


def test_changelog_and_card_and_manifest_carry_the_version(releases):
    manifest = json.loads((releases / "v2" / "release_manifest.json").read_text())
    assert manifest["version"] == "1.1.0"
    assert "CHANGELOG.md" in manifest["files"] and "release_items.jsonl" in manifest["files"]
    log = (releases / "v2" / "CHANGELOG.md").read_text()
    d = _diff(releases / "v1", releases / "v2")
    assert log.startswith("# Changelog: 1.0.0 -> 1.1.0")
    assert f"{d['summary']['added']:,} items added, 0 removed, 0 changed" in log
    assert all(f"`{c['id']}`" in log for c in d["items"])
    card = (releases / "v2" / "README.md").read_text()
    assert "Version: **1.1.0**" in card and "CHANGELOG.md" in card
    assert not (releases / "v1" / "CHANGELOG.md").exists()


def test_readable_table_lists_each_task_and_type(releases):
    res = cli.invoke(app, ["release", "diff", str(releases / "v1"), str(releases / "v2")])
    assert res.exit_code == 0, res.output
    assert "1.0.0 -> 1.1.0" in res.stdout and "new editor lama" in res.stdout
    assert "relational_erasure" in res.stdout and "YN" in res.stdout


def test_vlmevalkit_names_carry_the_version_and_their_md5(releases):
    folder = releases / "v2" / "vlmevalkit"
    md5s = json.loads((folder / "reactbench_md5.json").read_text())
    assert "canary GUID" in md5s.pop("canary")  # the release's canary, which the launcher skips
    assert md5s and all(name.startswith("reactbench_v1_1_0_") for name in md5s)
    for name, digest in md5s.items():
        assert hashlib.md5((folder / f"{name}.tsv").read_bytes()).hexdigest() == digest
    config = json.loads((folder / "reactbench.json").read_text())
    assert set(config["data"]) == set(md5s)
    assert "DATASET_MD5" in (folder / "reactbench_vlmeval.py").read_text()


def test_lmms_eval_tasks_pin_the_pushed_revision(releases):
    for f in (releases / "v2" / "lmms_eval").glob("reactbench_*.yaml"):
        text = f.read_text().replace("!function ", "")
        cfg = yaml.safe_load(text)
        assert cfg["dataset_path"] == "someone/reactbench"
        assert cfg["dataset_kwargs"] == {"revision": "0123abcd"}
    # without a revision the tasks read the release's own Parquet files, as before
    cfg = yaml.safe_load((releases / "v1" / "lmms_eval" / "reactbench_all.yaml").read_text().replace("!function ", ""))
    assert cfg["dataset_path"] == "parquet" and "revision" not in cfg["dataset_kwargs"]


def test_revision_without_repo_is_refused_before_writing(releases, tmp_path):
    res = cli.invoke(
        app,
        [
            "export",
            "--run-dir",
            str(releases / "run1"),
            "--out",
            str(tmp_path / "r"),
            "--unverified",
            "--revision",
            "abc",
        ],
    )
    assert res.exit_code == 2
    assert "export.revision 'abc' needs export.hub_repo" in res.output
    assert not (tmp_path / "r").exists()


def test_bad_version_is_refused(releases, tmp_path):
    res = cli.invoke(
        app,
        [
            "export",
            "--run-dir",
            str(releases / "run1"),
            "--out",
            str(tmp_path / "r"),
            "--unverified",
            "--release-version",
            "1 0/x",
        ],
    )
    assert res.exit_code == 2 and "export.version" in res.output
    assert not (tmp_path / "r").exists()


def test_review_rejections_and_changed_questions_have_their_reasons(releases, tmp_path):
    """v3 is v1's run, reviewed: two questions not accepted, one question's text edited."""
    from tasks.review.export_set import write_export_set

    run = tmp_path / "run3"
    shutil.copytree(releases / "run1", run)
    from storage.fs import RunFS

    fs = RunFS.open(str(run))
    questions = ArtifactReader(fs, "review/verified_questions", "verified_questions").rows()
    edits = ArtifactReader(fs, "review/verified_edits", "verified_edits").rows()
    questions.sort(key=lambda q: q["id"])
    dropped, edited = {questions[0]["id"], questions[1]["id"]}, questions[2]["id"]
    kept = [dict(q, text=q["text"] + " (reworded)") if q["id"] == edited else q for q in questions[2:]]
    from storage.schemas import VERIFIED_EDITS, VERIFIED_QUESTIONS

    write_export_set(
        fs,
        {
            "verified_edits": pa.Table.from_pylist(edits, schema=VERIFIED_EDITS.schema),
            "verified_questions": pa.Table.from_pylist(kept, schema=VERIFIED_QUESTIONS.schema),
        },
        0,
    )
    _export(run, tmp_path / "v3", "--release-version", "1.0.1", "--previous", str(releases / "v1"))
    d = _diff(releases / "v1", tmp_path / "v3")
    assert d["summary"] == {"added": 0, "removed": 2, "changed": 1}
    removed = {c["id"]: c["reason"] for c in d["items"] if c["change"] == "removed"}
    assert set(removed) == dropped
    assert all(r.startswith("not accepted in review") for r in removed.values())
    (changed,) = [c for c in d["items"] if c["change"] == "changed"]
    assert changed["id"] == edited and changed["reason"] == "changed: question"
    assert "not accepted in review" in (tmp_path / "v3" / "CHANGELOG.md").read_text()


def test_release_without_item_index_is_read_from_its_parquet(releases, tmp_path):
    """A release written before the index existed: the same diff, from its rows."""
    old = tmp_path / "v1-old"
    shutil.copytree(releases / "v1", old)
    (old / "release_items.jsonl").unlink()
    assert _diff(old, releases / "v2")["items"] == _diff(releases / "v1", releases / "v2")["items"]


def test_diff_of_a_folder_that_is_no_release_names_it(releases, tmp_path):
    res = cli.invoke(app, ["release", "diff", str(tmp_path), str(releases / "v2")])
    assert res.exit_code == 2
    assert "release_manifest.json" in res.output and "is not a reactbench release" in res.output
