"""Release versions end to end (issue 39, items 3 and 4): versions, stable ids, diff, pins.

Steps, each through the real CLI (``reactbench`` in a subprocess) on the bundled sample:

  v1        sample-data (default size), build the demo config, export 1.0.0 (lmms-eval pinned to a
            hub revision, VLMEvalKit TSVs)
  v2        extension by one more editor (``classical-ns``) in the same run (finished items reused),
            export 1.1.0 with ``--previous v1`` -> CHANGELOG.md; ``release diff v1 v2``
  images    extension by more source images: the sample regenerated with 220 VG / 40 FSC147 images
            (the default images unchanged) and built fresh with the demo's caps and
            ``mine.extend_from: v1`` (extension mode), export with ``--previous v1``, diff against
            v1: additions only (``diff_more_images``); the same build without extension mode is
            measured beside it (``diff_more_images_plain``)
  rebuild   the v1 config built from scratch in a new run with other shards (``run.shard_size`` 7,
            one worker) and exported: same ids and same content as v1 (``ids_stable``)

Why a plain rebuild on more images is not additions only: the demo's miners take a fixed number of
images per pair / attribute / count bin / task (bottom-k of a seeded per-image hash), so new images
with smaller keys displace old ones under the same caps. Extension mode puts the images the previous
release used first in every such order (miners/extend.py), so new images only fill the room left.

Run: ``python benchmarks/release_versions.py`` (a few minutes on two cores). Ends with one JSON line:
``diff`` (the editor extension), ``ids_stable``, ``pinned_revision``, and ``diff_more_images``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
CLI = str(Path(sys.executable).with_name("reactbench"))
REVISION = "0123456789abcdef0123456789abcdef01234567"
HUB_REPO = "someone/reactbench-demo"
EXTRA_EDITOR = {"name": "classical", "label": "classical-ns", "params": {"dilation_px": 5, "inpaint_method": "ns"}}


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def cli(*args: str) -> tuple[str, float]:
    """Run ``reactbench ARGS``; (stdout, seconds); a failure stops the script with its output."""
    t = time.perf_counter()
    proc = subprocess.run([CLI, *args], env=_env(), capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(
            f"reactbench {' '.join(args)} failed ({proc.returncode}):\n{(proc.stdout + proc.stderr)[-3000:]}"
        )
    return proc.stdout, time.perf_counter() - t


def config(work: Path, name: str, data: Path, editors: int = 1, extend_from: Path | None = None, **run: Any) -> Path:
    """The demo config on ``data``, with the extra editor when ``editors`` is 2 and extension mode
    from ``extend_from`` when given."""
    cfg = yaml.safe_load((ROOT / "configs" / "demo.yaml").read_text())
    cfg["sources"] = {"visual_genome": str(data / "visual_genome"), "fsc147": str(data / "fsc147")}
    if extend_from is not None:
        cfg["mine"]["extend_from"] = str(extend_from)
    if editors == 2:
        cfg["editors"].append(EXTRA_EDITOR)
    cfg["run"].update(run)
    path = work / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def export(run: Path, out: Path, version: str, *extra: str) -> float:
    _, s = cli(
        "export",
        "--run-dir",
        str(run),
        "--out",
        str(out),
        "--unverified",
        "--release-version",
        version,
        "--lmms-eval",
        "--vlmevalkit",
        "--hub-repo",
        HUB_REPO,
        "--revision",
        REVISION,
        *extra,
    )
    return s


def diff(old: Path, new: Path) -> dict[str, Any]:
    out, _ = cli("release", "diff", str(old), str(new), "--json")
    return json.loads(out.strip().splitlines()[-1])


def pinned(release: Path, version: str) -> bool:
    """Every lmms-eval task loads the hub repo at the revision; every VLMEvalKit TSV names the
    version and has the md5 the shipped table gives VLMEvalKit."""
    yamls = sorted((release / "lmms_eval").glob("reactbench_*.yaml"))
    tasks_ok = bool(yamls) and all(
        (cfg := yaml.safe_load(f.read_text().replace("!function ", "")))["dataset_kwargs"] == {"revision": REVISION}
        and cfg["dataset_path"] == HUB_REPO
        for f in yamls
    )
    md5s = json.loads((release / "vlmevalkit" / "reactbench_md5.json").read_text())
    md5s.pop("canary", None)  # the release's canary line (tasks.release.export.canary), not a TSV
    token = "reactbench_v" + version.replace(".", "_") + "_"
    tsvs_ok = bool(md5s) and all(
        name.startswith(token)
        and hashlib.md5((release / "vlmevalkit" / f"{name}.tsv").read_bytes()).hexdigest() == digest
        for name, digest in md5s.items()
    )
    return tasks_ok and tsvs_ok


def measure(work: Path) -> dict[str, Any]:
    """Every step above in ``work``; prints the side-by-side table and returns the JSON line's figures
    (also called by ``benchmarks/release_metadata.py``)."""
    times: dict[str, float] = {}
    small, big = work / "sample", work / "sample-more"
    _, times["sample-data"] = cli("sample-data", str(small))
    cli("sample-data", str(big), "--vg-images", "220", "--fsc-images", "40")

    _, times["build v1"] = cli("build", "-c", str(config(work, "v1", small)), "--run-dir", str(work / "run"))
    times["export v1"] = export(work / "run", work / "v1", "1.0.0")

    _, times["build +editor"] = cli("build", "-c", str(config(work, "v2", small, 2)), "--run-dir", str(work / "run"))
    times["export v2"] = export(work / "run", work / "v2", "1.1.0", "--previous", str(work / "v1"))
    d_editor = diff(work / "v1", work / "v2")

    _, times["build +images (extend)"] = cli(
        "build", "-c", str(config(work, "imgs", big, extend_from=work / "v1")), "--run-dir", str(work / "run-imgs")
    )
    export(work / "run-imgs", work / "v2-images", "1.1.0-images", "--previous", str(work / "v1"))
    d_images = diff(work / "v1", work / "v2-images")
    _, times["build +images (plain)"] = cli(
        "build", "-c", str(config(work, "imgs-plain", big)), "--run-dir", str(work / "run-imgs-plain")
    )
    export(work / "run-imgs-plain", work / "v2-images-plain", "1.1.0-plain")
    d_plain = diff(work / "v1", work / "v2-images-plain")
    audit_images = json.loads(cli("audit", "--run-dir", str(work / "run-imgs"))[0].strip().splitlines()[-1])

    rebuild_cfg = config(work, "rebuild", small, shard_size=7, workers=1)
    _, times["rebuild v1"] = cli("build", "-c", str(rebuild_cfg), "--run-dir", str(work / "run-rebuild"))
    export(work / "run-rebuild", work / "v1-rebuild", "1.0.0")
    d_rebuild = diff(work / "v1", work / "v1-rebuild")
    ids_stable = d_rebuild["summary"] == {"added": 0, "removed": 0, "changed": 0} and d_rebuild["old"]["items"] > 0
    pinned_revision = pinned(work / "v1", "1.0.0") and pinned(work / "v2", "1.1.0")
    changelog = (work / "v2" / "CHANGELOG.md").exists()

    print(f"{'release':<30}{'items':>8}{'added':>8}{'removed':>9}{'changed':>9}")
    print(f"{'v1 (demo)':<30}{d_editor['old']['items']:>8}")
    for label, d in (
        ("v2: + one editor", d_editor),
        ("v2: + images, extend_from v1", d_images),
        ("v2: + images, plain rebuild", d_plain),
        ("v1 rebuilt, other shards", d_rebuild),
    ):
        s = d["summary"]
        print(f"{label:<30}{d['new']['items']:>8}{s['added']:>8}{s['removed']:>9}{s['changed']:>9}")
    for kind, reasons in d_plain["reasons"].items():
        for reason, n in reasons.items():
            print(f"  plain rebuild on more images, {kind}: {n} x {reason}")
    print(f"audit of the extended build: {audit_images['fraction']} ({audit_images['items']} items)")
    print("seconds: " + ", ".join(f"{k} {v:.1f}" for k, v in times.items()))
    print(
        f"CHANGELOG.md written with --previous: {changelog}; lmms-eval revision and VLMEvalKit md5 pinned: {pinned_revision}"
    )
    return {
        "diff": d_editor["summary"],
        "ids_stable": ids_stable,
        "pinned_revision": pinned_revision,
        "changelog": changelog,
        "diff_more_images": d_images["summary"],
        "diff_more_images_plain": d_plain["summary"],
        "audit_more_images": audit_images["fraction"],
        "items_v1": d_editor["old"]["items"],
        "items_v2": d_editor["new"]["items"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", type=Path, default=None, help="working folder (default: a temporary one, removed)")
    args = ap.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="release-versions-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        figures = measure(work)
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
