"""Fault injection: hostile or mistaken config files through the real `reactbench build` (issue 26.4).

Each case was accepted (an empty or silently empty run), hung (a "billion laughs" under a
free-form section), or refused with several lines, a wrong status or no file name, and every
refusal left an empty run directory behind. Now: exit 2, one line naming the file and the
field, and no run directory. The cases run through the real entry point in one process
(``cli_batch``); the saved-config and override cases each keep a subprocess of their own.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_batch import CliCall, CliResult, run_cli_batch

ROOT = Path(__file__).resolve().parents[2]
CLI = str(Path(sys.executable).with_name("reactbench"))

LAUGHS = "orchestration:\n  ray_init:\n    l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"    l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]\n" for i in range(1, 10)
)

# (id, file content, text the one line must contain besides the file name)
CASES: list[tuple[str, bytes, str]] = [
    ("empty-task-list", b"mine:\n  tasks: []\n", "mine.tasks"),
    (
        "inverted-area-range",
        b"mine:\n  relational_erasure: {area_range: [0.5, 0.003]}\n",
        "mine.relational_erasure.area_range",
    ),
    (
        "inverted-ca-area-range",
        b"mine:\n  counterfactual_attribute: {area_range: [0.8, 0.05]}\n",
        "mine.counterfactual_attribute.area_range",
    ),
    ("inverted-count-range", b"mine:\n  dense_counting: {count_range: [150, 5]}\n", "mine.dense_counting.count_range"),
    ("decreasing-bins", b"mine:\n  dense_counting: {bins: [150, 5]}\n", "mine.dense_counting.bins"),
    (
        "inverted-target-area",
        b"mine:\n  alteration_tracing: {min_target_area: 0.5, max_target_area: 0.2}\n",
        "min_target_area",
    ),
    ("duplicate-key", b"run:\n  seed: 1\n  seed: 2\n", "run.seed: duplicate key"),
    ("duplicate-top-level-key", b"qa: {beaf: true}\nqa: {beaf: false}\n", "qa: duplicate key"),
    ("billion-laughs", LAUGHS.encode(), "orchestration.ray_init"),
    ("recursive-alias", b"orchestration:\n  ray_init: &x {a: *x}\n", "orchestration.ray_init"),
    ("deep-nesting", b"orchestration:\n  ray_init: {a: " + b"[" * 200 + b"]" * 200 + b"}\n", "nested deeper than"),
    ("too-many-aliases", b"a: &a 1\nb: [" + b", ".join([b"*a"] * 300) + b"]\n", "aliases"),
    ("oversized-file", b"run: {seed: 1}\n" + b"# padding\n" * 120_000, "byte limit"),
    ("bad-editor-params", b"editors:\n  - name: classical\n    params: {bogus: 3}\n", "editors[0].params.bogus"),
    ("unknown-editor", b"editors:\n  - name: nope\n", "editors[0].name"),
    ("invalid-utf8", b"run:\n  seed: 1\n# caf\xe9\n", "not UTF-8"),
    ("bad-yaml", b"run: [unclosed\n", "not valid YAML"),
    ("unknown-key", b"run: {sede: 1}\n", "run.sede"),
    # issue 31.5: values finite and of their type, for every section (storage/config_base.py)
    (
        "repeated-bin-edge",
        b"mine:\n  dense_counting: {bins: [5, 5, 10]}\n",
        "mine.dense_counting.bins: [5, 5, 10]: bin edges must increase",
    ),
    (
        "nan-in-a-range",
        b"mine:\n  relational_erasure: {area_range: [0.003, .nan]}\n",
        "mine.relational_erasure.area_range: item 1: nan is not a finite number",
    ),
    (
        "nan-alone",
        b"mine:\n  relational_erasure: {theta: .NaN}\n",
        "mine.relational_erasure.theta: nan is not a finite number",
    ),
    (
        "infinite-float",
        b"orchestration: {retry_delay_s: .inf}\n",
        "orchestration.retry_delay_s: inf is not a finite number",
    ),
    (
        "negative-infinity-in-a-range",
        b"mine:\n  dense_counting: {count_range: [-.inf, 150]}\n",
        "mine.dense_counting.count_range: item 0: -inf",
    ),
    (
        "nan-in-a-free-form-section",
        b"orchestration:\n  ray_init: {num_cpus: .nan}\n",
        "orchestration.ray_init: num_cpus: nan",
    ),
    ("bool-for-an-int", b"run: {seed: true}\n", "run.seed: true is a boolean, not a number"),
    (
        "bool-for-a-float",
        b"mine:\n  relational_erasure: {theta: false}\n",
        "mine.relational_erasure.theta: false is a boolean",
    ),
    (
        "bool-in-an-int-list",
        b"orchestration: {gpu_devices: [0, true]}\n",
        "orchestration.gpu_devices: item 1: true is a boolean",
    ),
    (
        "bool-in-editor-params",
        b"editors:\n  - name: classical\n    params: {dilation_px: true}\n",
        "editors[0].params.dilation_px: true is a boolean",
    ),
    (
        "nul-in-a-source-path",
        b'sources: {visual_genome: "data/sample\\0/visual_genome"}\n',
        "sources.visual_genome: 'data/sample\\x00/visual_genome' contains a NUL byte",
    ),
    ("nul-in-the-reuse-dir", b'run: {reuse_dir: "/tmp/shared-reuse\\0"}\n', "run.reuse_dir"),
    ("nul-in-an-alias-path", b'mine: {object_alias: "aliases\\0.txt"}\n', "mine.object_alias"),
    # issue 42.9: accepted, or refused by `mine` with exit 1 after the run directory was made
    ("empty-file", b"", "the config file is empty"),
    ("comment-only-file", b"# a config\n# to fill in\n", "the config file is empty (or holds only comments)"),
    ("no-sources", b"sources: {}\n", "need sources.visual_genome"),
    (
        "task-listed-twice",
        b"mine: {tasks: [dense_counting, dense_counting]}\n",
        "mine.tasks: dense_counting listed more",
    ),
    (
        "area-over-one",
        b"mine:\n  relational_erasure: {area_range: [0.003, 8]}\n",
        "area_range: [0.003, 8.0] is outside [0, 1]",
    ),
    ("workers-past-any-machine", b"run: {workers: 100000000}\n", "run.workers: 100000000 is outside 1 .. 4096"),
    ("workers-past-this-machine", b"run: {workers: 4096}\n", "run.workers: 4096 is more than this machine can run"),
    ("shard-size-huge", b"run: {shard_size: 1.0e+23}\n", "run.shard_size"),
    ("seed-past-numpy", b"run: {seed: 340282366920938463463374607431768211456}\n", "run.seed: 3402823669209384634"),
    ("seed-negative", b"run: {seed: -1}\n", "run.seed: -1 is outside 0 .. 4294967295"),
    ("model-name-5000-chars", b"mllm: {model: " + b"m" * 5000 + b"}\n", "mllm.model: 5,000 characters"),
]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    env.update(PYTHONPATH=str(ROOT), COLUMNS="80")
    return env


@pytest.fixture(scope="module")
def refused(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, CliResult]]:
    """Every case of CASES through ``reactbench build``, all in one process (``cli_batch``): its
    folder (holding ``bad.yaml``) and what the command did."""
    base = tmp_path_factory.mktemp("refused")
    calls = []
    for case_id, content, _ in CASES:
        folder = base / case_id
        folder.mkdir()
        (folder / "bad.yaml").write_bytes(content)
        args = ["build", "--config", str(folder / "bad.yaml"), "--run-dir", str(folder / "runs" / "r")]
        calls.append(CliCall([*args, "--orchestrator", "local"], folder))
    return {case[0]: (call.cwd, got) for case, call, got in zip(CASES, calls, run_cli_batch(calls), strict=True)}


@pytest.mark.parametrize("case_id, field", [(c[0], c[2]) for c in CASES], ids=[c[0] for c in CASES])
def test_bad_config_exits_2_with_one_line_and_writes_nothing(
    refused: dict[str, tuple[Path, CliResult]], case_id: str, field: str
):
    folder, proc = refused[case_id]
    config = folder / "bad.yaml"
    lines = proc.lines()
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert len(lines) == 1, lines
    assert str(config) in lines[0] and field in lines[0], lines[0]
    assert "Traceback" not in lines[0]
    assert not (folder / "runs").exists(), "a refused config left a run directory"
    assert proc.seconds < 60, f"refusing took {proc.seconds:.0f} s"


SOURCE_CASES = [
    (
        "missing-folder",
        {"visual_genome": "{tmp}/no/such/folder"},
        "sources.visual_genome: source annotation files not found",
    ),
    (
        "another-sources-folder",
        {"visual_genome": "{sample}/fsc147"},
        "sources.visual_genome: source annotation files not found",
    ),
    ("folder-for-a-file", {"coco": "{sample}/visual_genome"}, "sources.coco: {sample}/visual_genome is a folder"),
    ("text-for-json", {"coco": "{sample}/fsc147/ImageClasses_FSC147.txt"}, "is not JSON"),
]


@pytest.fixture(scope="module")
def refused_sources(tmp_path_factory: pytest.TempPathFactory, sample_dir: Path) -> dict[str, tuple[Path, CliResult]]:
    """Each of SOURCE_CASES through ``reactbench mine`` (one process, ``cli_batch``)."""
    base = tmp_path_factory.mktemp("refused-sources")
    calls = []
    for case_id, sources, _ in SOURCE_CASES:
        folder = base / case_id
        folder.mkdir()
        fill = {"tmp": str(folder), "sample": str(sample_dir)}
        text = "mine: {tasks: [relational_erasure]}\nsources: {"
        text += ", ".join(f"{k}: {v.format(**fill)}" for k, v in sources.items()) + "}\n"
        (folder / "bad.yaml").write_text(text)
        calls.append(
            CliCall(["mine", "--config", str(folder / "bad.yaml"), "--run-dir", str(folder / "runs" / "r")], folder)
        )
    return {
        case[0]: (call.cwd, got) for case, call, got in zip(SOURCE_CASES, calls, run_cli_batch(calls), strict=True)
    }


@pytest.mark.parametrize("case_id, field", [(c[0], c[2]) for c in SOURCE_CASES], ids=[c[0] for c in SOURCE_CASES])
def test_bad_source_paths_refused_before_the_run_directory(
    refused_sources: dict[str, tuple[Path, CliResult]], sample_dir: Path, case_id: str, field: str
):
    """Issue 42.9: a missing or wrong source passed validation; `mine` then exited 1 leaving a
    run directory holding only config.yaml."""
    folder, proc = refused_sources[case_id]
    lines = proc.lines()
    assert proc.returncode == 2 and len(lines) == 1, lines
    expected = field.format(tmp=folder, sample=sample_dir)
    assert lines[0].startswith(f"{folder / 'bad.yaml'}: ") and expected in lines[0], lines[0]
    assert not (folder / "runs").exists(), "a refused config left a run directory"


def test_bad_saved_config_is_named_and_the_run_is_untouched(tmp_path: Path):
    """No --config: the run's own config.yaml is read; a broken one is named, and nothing changes."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "config.yaml").write_bytes(b"run:\n  seed: 1\n  seed: 2\n")
    proc = subprocess.run(
        [CLI, "build", "--run-dir", str(run_dir)],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=120,
        cwd=tmp_path,
    )
    lines = [line for line in (proc.stdout + proc.stderr).splitlines() if line.strip()]
    assert proc.returncode == 2 and len(lines) == 1, lines
    assert f"{run_dir}/config.yaml: run.seed: duplicate key" in lines[0]
    assert sorted(p.name for p in run_dir.iterdir()) == ["config.yaml"]


def test_bad_override_leaves_no_run_directory(tmp_path: Path):
    """An override that fails validation is only seen after the lease is taken: the run
    directory (and the parents) that taking it created are removed again."""
    run_dir = tmp_path / "runs" / "deep" / "r"
    proc = subprocess.run(
        [CLI, "build", "--mllm", "openai", "--run-dir", str(run_dir), "--stages", "mine"],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=120,
        cwd=tmp_path,
    )
    lines = [line for line in (proc.stdout + proc.stderr).splitlines() if line.strip()]
    assert proc.returncode == 2 and len(lines) == 1 and "mllm.model" in lines[0], lines
    assert not (tmp_path / "runs").exists()


def test_anchors_within_bounds_still_load(tmp_path: Path):
    """The bounds refuse abuse, not YAML's ordinary sharing: anchors reused a few times load."""
    from flows.config import load_config

    config = tmp_path / "anchors.yaml"
    config.write_text(
        "editors:\n  - {name: classical, label: a, params: &p {dilation_px: 5}}\n  - {name: classical, label: b, params: *p}\n"
        "mine:\n  relational_erasure: {area_range: &r [0.01, 0.5]}\n  counterfactual_attribute: {area_range: *r}\n"
    )
    cfg = load_config(config)
    assert [e.params for e in cfg.editors] == [{"dilation_px": 5}] * 2
    assert cfg.mine.counterfactual_attribute.area_range == (0.01, 0.5)
