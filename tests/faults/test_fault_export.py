"""Fault injection: `reactbench export` as a real process, killed, refused, or racing a build.

Issue 26.3: a kill while re-exporting left old and new files side by side (and `load_dataset(out,
"all")` loaded the mix), a one-task export into a four-task folder left three stale tasks, and an
export during a build read half-written inputs. Now a release is one sealed set swapped in whole
(`tasks/release/export/seal.py`), a shrinking export is refused without `--replace`, and export holds
the run's lease (issue 24.5).
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from flows.config import resolve_run_config
from storage.fs import RunFS
from storage.parquet_io import table_from_rows, write_table
from storage.schemas import QUESTIONS
from tasks.release.export.export import ExportOptions, export_benchmark
from tasks.release.export.seal import MANIFEST, ReleaseRefused, read_release, verify_release

ROOT = Path(__file__).resolve().parents[2]
CLI = str(Path(sys.executable).with_name("reactbench"))
sys.path.insert(0, str(ROOT / "tests" / "evaluate"))
from eval_helpers import write_run  # noqa: E402  (tests/evaluate put on sys.path just above)

pytestmark = pytest.mark.slow
KILLS = 10


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    env.update(PYTHONPATH=str(ROOT), HF_DATASETS_OFFLINE="1")
    return env


def _export(run: Path, out: Path, *extra: str) -> list[str]:
    return [CLI, "export", "--run-dir", str(run), "--out", str(out), "--unverified", *extra]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, RunFS]:
    """old: 4 tasks x 1 editor (24 rows); new: 4 tasks x 40 editors (960 rows, a ~3 s export);
    one: the new run's dense-counting questions only; two: 4 tasks x 2 editors (a small new release)."""
    root = tmp_path_factory.mktemp("export-runs")
    old = write_run(root / "old", verified=False)
    new = write_run(root / "new", verified=False, editors=tuple(f"ed{i:02d}" for i in range(40)))
    one = write_run(root / "one", verified=False)
    dc = [q for q in _questions(one) if q["task"] == "dense_counting"]
    write_table(one, "qa/questions/part-00000.parquet", table_from_rows(QUESTIONS, dc))
    two = write_run(root / "two", verified=False, editors=("ed00", "ed01"))
    return {"old": old, "new": new, "one": one, "two": two}


def _questions(run: RunFS) -> list[dict]:
    from storage.parquet_io import ArtifactReader

    return ArtifactReader(run, "qa/questions", "questions").rows()


def _loaded_rows(out: Path, cache: Path) -> int:
    import datasets

    return len(datasets.load_dataset(str(out), "all", split="test", cache_dir=str(cache)))


def test_export_killed_at_random_points_leaves_the_old_or_the_new_release(runs: dict[str, RunFS], tmp_path: Path):
    out = tmp_path / "release"
    old_rows = sum(
        export_benchmark(
            runs["old"],
            RunFS.open(str(out)),
            resolve_run_config(run_dir=runs["old"].url),
            ExportOptions(unverified=True),
        ).counts.values()
    )
    new_rows = len(_questions(runs["new"]))
    # calibrate: how long a whole export runs, from start and from its staging folder's appearance
    started = time.monotonic()
    proc = subprocess.Popen(
        _export(Path(runs["new"].root), out), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=_env()
    )
    staged_at = None
    while proc.poll() is None:
        if staged_at is None and any(p.name.startswith(".release.export-tmp-") for p in tmp_path.iterdir()):
            staged_at = time.monotonic()
        time.sleep(0.002)
    assert proc.returncode == 0, proc.stderr.read()
    whole = time.monotonic() - started
    writing = time.monotonic() - (staged_at or started)
    assert _loaded_rows(out, tmp_path / "hf") == new_rows

    rng = random.Random(26)
    outcomes = []
    for i in range(KILLS):
        export_benchmark(
            runs["old"],
            RunFS.open(str(out)),
            resolve_run_config(run_dir=runs["old"].url),
            ExportOptions(unverified=True, replace=True),
        )  # back to the old release
        # half the kills at any instant of the command, half inside the writing / sealing / swap window
        anchor_on_staging = i % 2 == 1
        delay = rng.uniform(0, writing if anchor_on_staging else whole)
        proc = subprocess.Popen(
            _export(Path(runs["new"].root), out), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=_env()
        )
        t0 = time.monotonic()
        if anchor_on_staging:
            while proc.poll() is None and not any(
                p.name.startswith(".release.export-tmp-") for p in tmp_path.iterdir()
            ):
                time.sleep(0.002)
            t0 = time.monotonic()
        while proc.poll() is None and time.monotonic() - t0 < delay:
            time.sleep(0.002)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        manifest = verify_release(RunFS.open(str(out)))  # exactly the files it names, unchanged
        rows = _loaded_rows(out, tmp_path / f"hf{i}")
        assert rows in (old_rows, new_rows), f"kill {i} after {delay:.2f} s: {rows} rows, a mix of releases"
        assert rows == sum(manifest["counts"].values())
        outcomes.append("new" if rows == new_rows else "old")
    print(
        {
            "kills": KILLS,
            "old": outcomes.count("old"),
            "new": outcomes.count("new"),
            "whole_s": round(whole, 2),
            "writing_s": round(writing, 2),
        }
    )
    # whatever the kills left behind, the next export completes and cleans up
    done = subprocess.run(
        _export(Path(runs["new"].root), out), capture_output=True, text=True, env=_env(), timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert _loaded_rows(out, tmp_path / "hf-final") == new_rows
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".release.")] == []


def test_one_task_export_into_a_four_task_folder_is_refused_or_replaces_it_whole(
    runs: dict[str, RunFS], tmp_path: Path
):
    out = tmp_path / "release"
    four = export_benchmark(
        runs["old"], RunFS.open(str(out)), resolve_run_config(run_dir=runs["old"].url), ExportOptions(unverified=True)
    )
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    refused = subprocess.run(
        _export(Path(runs["one"].root), out), capture_output=True, text=True, env=_env(), timeout=300
    )
    assert refused.returncode == 2, refused.stderr
    message = " ".join(refused.stderr.split())
    assert "--replace" in message and "relational_erasure" in message and "dense_counting" in message, message
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before, "a refused export changed the release"
    assert not RunFS.open(runs["one"].root).exists("export", "rejects"), "a refused export recorded rejects"

    replaced = subprocess.run(
        _export(Path(runs["one"].root), out, "--replace"), capture_output=True, text=True, env=_env(), timeout=300
    )
    assert replaced.returncode == 0, replaced.stderr
    manifest = verify_release(RunFS.open(str(out)))
    assert list(manifest["counts"]) == ["dense_counting"] and sorted(p.name for p in (out / "data").iterdir()) == [
        "dense_counting"
    ]
    assert _loaded_rows(out, tmp_path / "hf") == manifest["counts"]["dense_counting"] < sum(four.counts.values())


def test_a_folder_that_is_no_release_is_refused_even_with_replace(runs: dict[str, RunFS], tmp_path: Path):
    """``--replace`` only ever replaces a sealed release (issue 31.3): a folder without a
    manifest, or a release holding files its manifest does not name, is the user's to empty."""
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    config = resolve_run_config(run_dir=runs["old"].url)
    for replace in (False, True):
        with pytest.raises(ReleaseRefused, match=f"holds no {MANIFEST}"):
            export_benchmark(
                runs["old"], RunFS.open(str(out)), config, ExportOptions(unverified=True, replace=replace)
            )
        assert [p.name for p in out.iterdir()] == ["notes.txt"]
    (out / "notes.txt").unlink()
    export_benchmark(runs["old"], RunFS.open(str(out)), config, ExportOptions(unverified=True))
    (out / "data" / "notes.txt").write_text("added to the release by hand")
    for replace in (False, True):
        with pytest.raises(ReleaseRefused, match=f"1 file\\(s\\) its {MANIFEST} does not name \\(data/notes.txt\\)"):
            export_benchmark(
                runs["old"], RunFS.open(str(out)), config, ExportOptions(unverified=True, replace=replace)
            )
    assert (out / "data" / "notes.txt").exists()
    (out / "data" / "notes.txt").unlink()
    export_benchmark(runs["old"], RunFS.open(str(out)), config, ExportOptions(unverified=True, replace=True))
    assert verify_release(RunFS.open(str(out)))["counts"]


def test_export_during_a_build_is_refused_by_the_lease(tmp_path: Path):
    """Export reads a consistent run: while a build holds the lease it is refused (exit 3, holder
    named) before reading anything, and it writes neither the release nor the run's rejects."""
    from lock_holder import held_by_another_process

    run_dir = tmp_path / "run"
    write_run(run_dir, verified=False)
    out = tmp_path / "release"
    with held_by_another_process(run_dir) as holder:
        proc = subprocess.run(_export(run_dir, out), capture_output=True, text=True, env=_env(), timeout=120)
    assert proc.returncode == 3, proc.stderr
    assert f"pid {holder.pid}" in proc.stderr and "`reactbench build`" in proc.stderr
    assert not out.exists() and not (run_dir / "export").exists()


def test_out_may_not_be_or_hold_the_run_directory(runs: dict[str, RunFS], tmp_path: Path):
    """`--replace` swaps the whole of --out: pointed at the run (or a folder above it) it would
    throw the run away, so that is refused whatever the flags."""
    from storage.run_dirs import InsideRunDir

    run = runs["old"]
    for out, why in ((run.root, "is the run directory"), (str(Path(run.root).parent), "holds the run directory")):
        with pytest.raises(InsideRunDir, match=why):
            export_benchmark(
                run, RunFS.open(out), resolve_run_config(run_dir=run.url), ExportOptions(unverified=True, replace=True)
            )
    assert run.exists("qa", "questions")


def test_fsspec_release_is_swapped_by_moves_and_a_kill_between_them_is_undone(runs: dict[str, RunFS]):
    """Without renameat2 (an object store, here fsspec's memory://) the old release is moved
    aside, then the new one in; an export killed between the two moves leaves the old release
    aside, and the next export puts it back before anything else."""
    from tasks.release.export.seal import OLD_TAG, recover

    out = RunFS.open("memory://rb-seal-test/release")
    first = export_benchmark(
        runs["old"], out, resolve_run_config(run_dir=runs["old"].url), ExportOptions(unverified=True)
    )
    assert verify_release(out)["counts"] == first.counts
    aside = RunFS.open(f"memory://rb-seal-test/.release{OLD_TAG}0123")
    out.fs.mv(out.root, aside.root, recursive=True)  # the state a kill between the two moves leaves
    assert not out.exists()
    recover(out)
    assert verify_release(out)["counts"] == first.counts and not aside.exists()
    # A kill while the new release was being copied in leaves a part of it without its manifest
    # (copied last): that part is discarded and the old release put back.
    out.fs.mv(out.root, aside.root, recursive=True)
    out.write_text_atomic("half-copied.parquet", "part of a newer release")
    recover(out)
    assert (
        verify_release(out)["counts"] == first.counts and not aside.exists() and not out.exists("half-copied.parquet")
    )
    second = export_benchmark(
        runs["new"], out, resolve_run_config(run_dir=runs["new"].url), ExportOptions(unverified=True)
    )
    assert verify_release(out)["counts"] == second.counts != first.counts
    assert [n for n in RunFS.open("memory://rb-seal-test").listdir() if n != "release"] == []


STORE_WRITES = (
    "pipe_file",
    "put_file",
    "copy",
    "cp_file",  # the swap copies one object at a time by its literal name (storage.fs, seal._move_tree)
    "rm_file",
    "rm",
)  # every call by which the export changes an object store


def test_on_s3_a_swap_cut_at_any_write_leaves_the_old_or_the_new_release(runs: dict[str, RunFS], s3_server) -> None:
    """Issue 31.3: on an object store a swap is copies and deletes, one object at a time. Cut it at
    every one of its writes (the store fails that write and every later one, as a kill would):
    the next command that reads the release (``verify_release``) or writes it (``export``) finds
    the old release or the new one, whole, never the 3-4 files and no manifest that a plain
    export used to refuse ("not a release this tool sealed")."""
    out = RunFS.open(f"s3://{s3_server.bucket()}/release")
    old_cfg, new_cfg = resolve_run_config(run_dir=runs["old"].url), resolve_run_config(run_dir=runs["two"].url)
    old = export_benchmark(runs["old"], out, old_cfg, ExportOptions(unverified=True)).counts
    fs, writes, failing_from = out.fs, [], [0]
    real = {name: getattr(fs, name) for name in STORE_WRITES}

    def counted(name: str):
        def call(*args, **kwargs):
            writes.append(f"{name} {' '.join(str(a) for a in args[:2] if isinstance(a, str))}")
            if failing_from[0] and len(writes) >= failing_from[0]:
                raise OSError(f"injected store failure at write {len(writes)} ({writes[-1]})")
            return real[name](*args, **kwargs)

        return call

    with pytest.MonkeyPatch.context() as patch:
        for name in STORE_WRITES:
            patch.setattr(fs, name, counted(name))
        assert RunFS.open(out.url).fs is fs  # fsspec hands every opener this one instance
        new = export_benchmark(runs["two"], out, new_cfg, ExportOptions(unverified=True)).counts
        total = len(writes)
        assert new != old and total >= 20, writes
        outcomes, torn = [], 0
        cuts = cut_points(writes, out.fs._strip_protocol(out.root))
        for k in cuts:
            failing_from[0] = 0
            export_benchmark(runs["old"], out, old_cfg, ExportOptions(unverified=True))  # back to the old release
            writes.clear()
            failing_from[0] = k
            with pytest.raises(OSError, match="injected"):
                export_benchmark(runs["two"], out, new_cfg, ExportOptions(unverified=True))
            failing_from[0] = 0
            torn += read_release(out) is None  # what a reader met before: no manifest, part of a copy
            if k % 2:  # a reader comes first and puts the release back
                counts = verify_release(out)["counts"]
                assert counts in (old, new), f"cut at write {k} ({writes[k - 1]}): {counts}"
                outcomes.append("new" if counts == new else "old")
            export_benchmark(
                runs["two"], out, new_cfg, ExportOptions(unverified=True)
            )  # a plain export: no --replace needed
            assert verify_release(out)["counts"] == new, f"cut at write {k} ({writes[k - 1]})"
            leftovers = [n for n in RunFS.open(out.url.rsplit("/", 1)[0]).listdir() if n != "release"]
            assert leftovers == [], (k, leftovers)
    assert torn > 0, "no cut fell inside the swap: the test did not reach the window it guards"
    print(
        {
            "writes": total,
            "cuts": len(cuts),
            "torn_before_recovery": torn,
            "reader_saw": {o: outcomes.count(o) for o in ("old", "new")},
        }
    )


def cut_points(writes: list[str], release: str) -> list[int]:
    """The writes (1-based) to cut at: every write whose target is the release folder itself, and
    the first and last of each run of writes that land elsewhere (the staged copy, the backup of
    the old release). A cut inside such a run leaves the release exactly as a cut at its edges
    does (it is not touched yet, or no longer), so its middle adds nothing but minutes."""
    release = release.rstrip("/")

    def in_release(write: str) -> bool:
        target = write.split()[-1]  # what is written or removed: the last path of the call
        return target == release or target.startswith(release + "/")

    keep, run = [], []
    for k, write in enumerate(writes, start=1):
        if in_release(write):
            keep += [run[0], run[-1]] if run else []
            run = []
            keep.append(k)
        else:
            run.append(k)
    keep += [run[0], run[-1]] if run else []
    return sorted(set(keep))


def test_verify_release_refuses_a_file_whose_name_is_right_and_content_changed(
    runs: dict[str, RunFS], tmp_path: Path
) -> None:
    """docs/eval.md tells a release's receivers to run ``verify_release``: a file changed in place
    (same name, same size, one byte different), added or removed must fail it, naming the file."""
    out = tmp_path / "release"
    export_benchmark(
        runs["old"], RunFS.open(str(out)), resolve_run_config(run_dir=runs["old"].url), ExportOptions(unverified=True)
    )
    assert verify_release(RunFS.open(str(out)))["counts"]
    pristine = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    victims = [p for p in sorted(pristine) if p.name != MANIFEST]
    assert any(p.suffix == ".parquet" for p in victims) and any(p.name == "README.md" for p in victims)
    for victim in victims:
        data = bytearray(pristine[victim])
        data[len(data) // 2] ^= 0x01  # same name, same size
        victim.write_bytes(bytes(data))
        rel = str(victim.relative_to(out))
        with pytest.raises(ReleaseRefused, match=f"differ from {MANIFEST} \\(e.g. {rel}\\)"):
            verify_release(RunFS.open(str(out)))
        victim.write_bytes(pristine[victim])
    (out / "data" / "extra.parquet").write_bytes(b"not named")
    with pytest.raises(ReleaseRefused, match="data/extra.parquet"):
        verify_release(RunFS.open(str(out)))
    (out / "data" / "extra.parquet").unlink()
    victims[0].unlink()
    with pytest.raises(ReleaseRefused, match=str(victims[0].relative_to(out))):
        verify_release(RunFS.open(str(out)))


def test_one_export_writes_a_release_at_a_time(runs: dict[str, RunFS], tmp_path: Path) -> None:
    """A second export into a folder another export is writing is refused (naming the holder), so
    neither it nor a reader putting back a release left aside works on a swap in flight."""
    from tasks.release.export.seal import release_lock

    out = tmp_path / "release"
    export_benchmark(
        runs["old"], RunFS.open(str(out)), resolve_run_config(run_dir=runs["old"].url), ExportOptions(unverified=True)
    )
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    with release_lock(RunFS.open(str(out))):
        with pytest.raises(
            ReleaseRefused, match=rf"--out {out} is being written by `reactbench export` \(pid {os.getpid()}"
        ):
            export_benchmark(
                runs["two"],
                RunFS.open(str(out)),
                resolve_run_config(run_dir=runs["two"].url),
                ExportOptions(unverified=True),
            )
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    export_benchmark(
        runs["two"], RunFS.open(str(out)), resolve_run_config(run_dir=runs["two"].url), ExportOptions(unverified=True)
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["release"]  # the lease is gone with its holder
