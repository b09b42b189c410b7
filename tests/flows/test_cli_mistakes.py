"""Issue 31.6: a hurried command line gets one clear line naming the fix and a non-zero exit,
never a traceback, a Python repr or a wrong hint, and nothing is written for it.

Through the real ``reactbench`` executable, as a user meets it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
CLI = str(Path(sys.executable).with_name("reactbench"))


def _run(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run([CLI, *args], capture_output=True, text=True, env=env, timeout=120, cwd=cwd)


def _lines(proc: subprocess.CompletedProcess) -> list[str]:
    """What the command printed, without rich's progress lines."""
    return [ln for ln in (proc.stdout + proc.stderr).splitlines() if ln.strip() and "━" not in ln]


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_a_misspelt_stage_names_the_stages_that_exist(tmp_path: Path) -> None:
    """Was a Python list repr inside quotes, exit 1: ``"unknown stage(s) ['instrct']; ..."``."""
    proc = _run("build", "--stages", "mine,instrct", "--run-dir", str(tmp_path / "run"))
    lines = _lines(proc)
    assert proc.returncode == 2 and len(lines) == 1, lines
    assert (
        lines[0]
        == "--stages mine,instrct: unknown stage 'instrct' (did you mean 'instruct'?); the stages are mine, instruct, edit, qa, review"
    )
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    "args",
    [["eval", "--model", "vllm:qwen2-vl", "--unverified"], ["build", "--mllm", "vllm", "--mllm-model", "qwen2-vl"]],
    ids=["eval", "build"],
)
def test_a_serving_engine_as_backend_says_to_use_openai_with_its_url(tmp_path: Path, args: list[str]) -> None:
    """Was a pydantic validation dump that did not say how vLLM is used."""
    run = tmp_path / "run"
    run.mkdir()
    proc = _run(*args, "--run-dir", str(run))
    lines = _lines(proc)
    assert proc.returncode == 2 and len(lines) == 1, lines
    assert "unknown backend 'vllm'" in lines[0] and "the backends are rules, openai, transformers" in lines[0]
    assert "OpenAI-compatible API" in lines[0] and (
        "--model openai:qwen2-vl --base-url" in lines[0] or "backend openai with the server's URL" in lines[0]
    ), lines[0]
    assert "validation error" not in proc.stderr and list(run.iterdir()) == []


@pytest.mark.parametrize(
    "args",
    [
        ["eval", "--model", "rules:rules-v1"],
        ["export", "--out", "{tmp}/release"],
        ["report", "eval"],
        ["instruct"],
        ["qa"],
        ["review"],
        ["review", "export"],
        ["review", "add-user", "ann"],
        ["audit"],
    ],
    ids=lambda a: " ".join(a[:2]),
)
def test_a_mistyped_run_dir_says_it_does_not_exist_and_creates_nothing(tmp_path: Path, args: list[str]) -> None:
    """eval said "run `reactbench qa` first"; review export / add-user made an empty queue in the
    mistyped folder (and exited 0)."""
    (tmp_path / "runs" / "demo").mkdir(parents=True)
    typo = tmp_path / "runs" / "dmeo"
    proc = _run(*[a.replace("{tmp}", str(tmp_path)) for a in args], "--run-dir", str(typo))
    lines = _lines(proc)
    assert proc.returncode == 2 and len(lines) == 1, lines
    assert lines[0].startswith(f"{typo}: no such run directory; check --run-dir"), lines[0]
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["demo", "runs"], "a mistyped --run-dir created files"


def test_a_value_given_to_a_flag_says_flags_take_none(tmp_path: Path) -> None:
    proc = _run("build", "--force", "true", "--run-dir", str(tmp_path / "run"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert (
        "--force is a flag and takes no value: give --force alone to turn it on, leave it out to keep it off."
        in proc.stderr.splitlines()
    )
    assert not (tmp_path / "run").exists()


def test_version() -> None:
    from importlib.metadata import version

    proc = _run("--version")
    assert proc.returncode == 0 and proc.stdout.strip() == f"reactbench {version('reactbench-pipeline')}", (
        proc.stdout + proc.stderr
    )


def test_the_old_model_spelling_of_build_works_with_a_deprecation_line(tmp_path: Path, sample_dir: Path) -> None:
    """``--model`` means BACKEND:MODEL in eval; build's mllm.model is now ``--mllm-model``, and the
    old spelling still sets it, saying so; giving both with different values is refused."""
    cfg = yaml.safe_load((ROOT / "configs" / "demo.yaml").read_text())
    cfg["sources"] = {"visual_genome": str(sample_dir / "visual_genome"), "fsc147": str(sample_dir / "fsc147")}
    config = tmp_path / "demo.yaml"
    config.write_text(yaml.safe_dump(cfg))
    run = tmp_path / "run"
    proc = _run(
        "build",
        "--config",
        str(config),
        "--run-dir",
        str(run),
        "--stages",
        "mine",
        "--orchestrator",
        "local",
        "--model",
        "rules-v2",
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (
        "--model is deprecated here: use --mllm-model (--model is BACKEND:MODEL on `reactbench eval`; here it set mllm.model)"
        in proc.stderr
    )
    assert yaml.safe_load((run / "config.yaml").read_text())["mllm"]["model"] == "rules-v2"
    both = _run(
        "build", "--config", str(config), "--run-dir", str(tmp_path / "run2"), "--model", "a", "--mllm-model", "b"
    )
    assert both.returncode == 2 and _lines(both) == [
        "--model and --mllm-model are the same setting (--model is deprecated); give only --mllm-model"
    ]
    assert not (tmp_path / "run2").exists()


def test_the_old_model_spelling_of_report_works_with_a_deprecation_line(tmp_path: Path) -> None:
    run = tmp_path / "run"
    (run / "eval" / "rules-rules-v1").mkdir(parents=True)
    new = _run("report", "eval", "--run-dir", str(run), "--eval", "nope")
    old = _run("report", "eval", "--run-dir", str(run), "--model", "nope")
    assert new.returncode == old.returncode == 2 and "nope" in new.stderr
    assert "--model is deprecated here: use --eval" in old.stderr and "--model is deprecated" not in new.stderr
    assert [ln for ln in _lines(old) if "deprecated" not in ln] == _lines(new)


def _binary_vg(sample_dir: Path, root: Path, reader: str) -> Path:
    """The sample's Visual Genome with objects.json saved as UTF-16 (a "binary" file to a UTF-8 reader)."""
    vg = root / "vg"
    shutil.copytree(sample_dir / "visual_genome", vg, symlinks=True)
    (vg / "objects.json").write_bytes((sample_dir / "visual_genome" / "objects.json").read_text().encode("utf-16"))
    cfg = yaml.safe_load((ROOT / "configs" / "demo.yaml").read_text())
    cfg["sources"] = {"visual_genome": str(vg)}
    cfg["mine"].update(tasks=["relational_erasure"], reader=reader)
    config = root / "vg.yaml"
    config.write_text(yaml.safe_dump(cfg))
    return config


@pytest.mark.parametrize("reader", ["auto", "duckdb", "msgspec"])
def test_a_binary_objects_json_names_the_file_and_the_byte(tmp_path: Path, sample_dir: Path, reader: str) -> None:
    """DuckDB's own error message could not be decoded, so the shard failed with a bare
    ``UnicodeDecodeError: 'utf-8' codec can't decode byte 0xff in position 96``; the msgspec
    reader, which names the file and the byte offset, now takes over as for any file DuckDB refuses."""
    config = _binary_vg(sample_dir, tmp_path, reader)
    proc = _run("mine", "--config", str(config), "--run-dir", str(tmp_path / "run"), "--orchestrator", "local")
    said = [ln for ln in proc.stderr.splitlines() if "shard 0:" in ln]
    assert proc.returncode == 1 and "Traceback" not in proc.stderr and "UnicodeDecodeError" not in proc.stderr, (
        proc.stderr[-2000:]
    )
    assert (
        len(said) == 1
        and f"{tmp_path / 'vg' / 'objects.json'}: byte 0: expected a JSON array '[', found b'\\xff\\xfe[" in said[0]
    ), said


@pytest.mark.parametrize(
    "option, args",
    [
        ("--keep-days", ["reuse", "prune", "--keep-days", "inf"]),
        ("--window-h", ["preflight", "--window-h", "inf", "--items", "5"]),
        ("--gpu-memory-gb", ["preflight", "--gpus", "1", "--gpu-memory-gb", "inf"]),
    ],
    ids=["keep-days", "window-h", "gpu-memory-gb"],
)
def test_an_infinite_number_option_is_refused(tmp_path: Path, option: str, args: list[str]) -> None:
    """As config values (issue 31.5), number options are finite: ``--keep-days inf`` passed the
    ``>= 0`` bound and ended in an OverflowError traceback; ``--window-h inf`` always "fitted"
    and printed ``Infinity`` into the JSON line."""
    run = tmp_path / "run"
    (run / "reuse").mkdir(parents=True)
    (run / "reuse" / "keep.txt").write_text("x")
    before = _tree(run)
    proc = _run(*args, "--run-dir", str(run))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert f"Error: Invalid value for '{option}': inf is not a finite number" in proc.stderr.splitlines()
    assert _tree(run) == before


def test_an_error_prints_names_as_written(tmp_path: Path) -> None:
    """Errors went through rich markup and emoji codes: ``--judge vllm:x`` printed ``vllm❌`` and a
    name holding ``[/x]`` ended in a MarkupError traceback."""
    run = tmp_path / "run"
    run.mkdir()
    judge = _run("eval", "--run-dir", str(run), "--model", "rules:rules-v1", "--judge", "vllm:x", "--unverified")
    assert judge.returncode == 2 and _lines(judge)[0].startswith("error: eval.judge vllm:x: unknown backend 'vllm'"), (
        _lines(judge)
    )
    assert "eval.judge openai:x and its URL in eval.judge_base_url (--judge-base-url)" in _lines(judge)[0]
    odd = _run("eval", "--run-dir", str(run), "--model", "vllm:[/x]", "--unverified")
    assert (
        odd.returncode == 2 and "Traceback" not in odd.stderr and "--model openai:[/x] --base-url" in _lines(odd)[0]
    ), odd.stderr[-2000:]
