"""Extending a benchmark with more source images (``mine.extend_from``) shows only additions.

Through the real CLI: a small sample (a prefix of the bundled one) built and exported as v1; a
larger sample holding the same images plus more, built in extension mode from v1 and exported as
v2 with ``--previous``; ``release diff`` lists additions only, every v1 item is in v2 byte for byte,
and the audit of the extended build is 1.0. (Without extension mode the same build removes
items: ``benchmarks/release_versions.py`` measures it as ``diff_more_images_plain``.)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import yaml
from typer.testing import CliRunner

from flows.cli import app

cli = CliRunner()
ROOT = Path(__file__).resolve().parents[2]
SMALL = ("--vg-images", "60", "--fsc-images", "12")
LARGE = ("--vg-images", "100", "--fsc-images", "18")


def _ok(*args: str) -> str:
    res = cli.invoke(app, list(args))
    assert res.exit_code == 0, res.output
    return res.stdout


def _config(tmp: Path, name: str, data: Path, extend_from: Path | None = None) -> Path:
    cfg = yaml.safe_load((ROOT / "configs" / "demo.yaml").read_text())
    cfg["sources"] = {"visual_genome": str(data / "visual_genome"), "fsc147": str(data / "fsc147")}
    if extend_from is not None:
        cfg["mine"]["extend_from"] = str(extend_from)
    path = tmp / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def _build_export(
    tmp: Path, name: str, data: Path, version: str, *extra: str, extend_from: Path | None = None
) -> Path:
    run, out = tmp / f"run-{name}", tmp / name
    _ok("build", "-c", str(_config(tmp, name, data, extend_from)), "--run-dir", str(run))
    _ok("export", "--run-dir", str(run), "--out", str(out), "--unverified", "--release-version", version, *extra)
    return out


def _diff(old: Path, new: Path) -> dict[str, Any]:
    return json.loads(_ok("release", "diff", str(old), str(new), "--json").strip().splitlines()[-1])


def _items(release: Path) -> dict[str, Any]:
    out = {}
    for f in sorted((release / "data").glob("*/*.parquet")):
        for r in pq.read_table(f).to_pylist():
            out[r["id"]] = (r["question"], r["options"], r["answer"], [im["bytes"] for im in r["images"]])
    return out


@pytest.fixture(scope="module")
def extended(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("extend")
    _ok("sample-data", str(tmp / "small"), *SMALL)
    _ok("sample-data", str(tmp / "large"), *LARGE)
    v1 = _build_export(tmp, "v1", tmp / "small", "1.0.0")
    v2 = _build_export(tmp, "v2", tmp / "large", "1.1.0", "--previous", str(v1), extend_from=v1)
    return tmp, v1, v2


def test_more_images_in_extension_mode_show_only_additions(extended):
    tmp, v1, v2 = extended
    d = _diff(v1, v2)
    assert d["summary"]["added"] > 0, d["summary"]
    assert d["summary"]["removed"] == 0 and d["summary"]["changed"] == 0, d["reasons"]
    old, new = _items(v1), _items(v2)
    assert old and all(new.get(k) == v for k, v in old.items())
    assert f"{d['summary']['added']} items added, 0 removed, 0 changed" in (v2 / "CHANGELOG.md").read_text()
    audit = json.loads(_ok("audit", "--run-dir", str(tmp / "run-v2")).strip().splitlines()[-1])
    assert audit["fraction"] == 1.0 and audit["items"] > 0


def test_extension_from_a_run_directory_keeps_the_same_selection(extended):
    """``extend_from`` also takes the previous run directory (its mine candidates): only the mine
    stage is run, and every candidate v1 mined is mined again: same id, image, target and edit."""
    tmp, _, _ = extended
    run = tmp / "run-from-run"
    _ok(
        "build",
        "-c",
        str(_config(tmp, "from-run", tmp / "large", tmp / "run-v1")),
        "--run-dir",
        str(run),
        "--stages",
        "mine",
    )
    old = {r["id"]: r for r in pq.read_table(tmp / "run-v1" / "mine" / "candidates").to_pylist()}
    new = {r["id"]: r for r in pq.read_table(run / "mine" / "candidates").to_pylist()}
    assert len(new) > len(old)
    # the sample folder differs; extra_json holds whole-dataset counts (pair / attribute statistics) that grow with the data
    drop = ("image_path", "extra_json")
    assert all(
        {k: v for k, v in new.get(i, {}).items() if k not in drop} == {k: v for k, v in r.items() if k not in drop}
        for i, r in old.items()
    )


def test_extend_from_a_folder_that_is_neither_is_refused_up_front(extended):
    tmp, _, _ = extended
    res = cli.invoke(
        app,
        [
            "build",
            "-c",
            str(_config(tmp, "bad", tmp / "large", tmp / "small")),
            "--run-dir",
            str(tmp / "run-bad"),
            "--stages",
            "mine",
        ],
    )
    assert res.exit_code != 0
    assert f"mine.extend_from: {tmp / 'small'} is neither a release folder" in res.output
    assert not (tmp / "run-bad").exists()  # refused before the run starts
