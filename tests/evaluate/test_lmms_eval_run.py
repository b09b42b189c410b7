"""The exported lmms-eval tasks, run by lmms-eval's own evaluator as a user runs them, report the
React-Score and task scores that ``reactbench eval`` writes to ``metrics.json`` on the same replies.

One loopback OpenAI-compatible server (``tests/dummy_server.py``) answers both systems. It knows
each question by what it is sent (the prompt text and the pixels of the images) and replies from a
fixed set of shapes chosen by a hash of that: the gold answer, paraphrases, hedges, "Definitely
not.", self-corrections, wrong answers. So both systems get identical reply strings, and the test
compares the two systems' numbers, never hard-coded ones. lmms-eval's ``openai`` model asks it;
``reactbench eval`` asks it through the project's ``openai`` backend.

Two builds: ``shuffle`` (one presentation per MC question) run through the ``lmms-eval`` command
line exactly as docs/eval.md says, and ``cyclic`` (every rotation of RE Q12) through
``simple_evaluate`` from a script. Both run in child processes, as a user runs them, which also
keeps lmms-eval's process-wide patches out of the test process. Both releases are moved after
export: a moved release must still run.
"""

from __future__ import annotations

import base64
import glob
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from dummy_server import DummyServer, Reply, image_urls, message_text
from eval_helpers import write_run

from flows.config import resolve_run_config
from storage.fs import RunFS
from storage.parquet_io import ArtifactReader
from tasks.release.evaluate.run import EvalRequest, run_eval
from tasks.release.evaluate.schemas import ANSWERS
from tasks.release.export.export import ExportOptions, export_benchmark

pytest.importorskip("lmms_eval", reason="lmms-eval is in the test extra; install it to run the exported tasks")

TASKS = ("relational_erasure", "counterfactual_attribute", "alteration_tracing", "dense_counting")
SHORT = {
    "relational_erasure": "RE",
    "counterfactual_attribute": "CA",
    "alteration_tracing": "AT",
    "dense_counting": "DC",
}
NAMES = [f"reactbench_{t}" for t in TASKS] + ["reactbench_all"]
LMMS_MODEL, OURS_MODEL = "lmms-vl", "ours-vl"


def pixels(data: bytes) -> str:
    """A digest of an image's RGB pixels: the same for our PNG bytes and lmms-eval's re-encoding."""
    from PIL import Image

    with Image.open(io.BytesIO(data)) as im:
        rgb = im.convert("RGB")
        return hashlib.sha256(repr(rgb.size).encode() + rgb.tobytes()).hexdigest()


def reply_shapes(q: dict[str, Any]) -> list[str]:
    """Ways a model answers this question: right, wrong, hedged, self-corrected, paraphrased."""
    gold = str(q["gold"])
    if q["qtype"] == "YN":
        other = "No" if gold == "Yes" else "Yes"
        denial = ["Definitely not.", "I don't think so.", "Not that I can tell."]
        return [
            gold,
            f"**{gold}**, as far as I can see.",
            f"The answer is {other.lower()}.",
            "Yes and no: it depends on the angle.",
            *denial,
        ]
    if q["qtype"] == "MC":
        letters = "ABCDE"[: len(q["options"])]
        other = next(x for x in letters if x != gold)
        return [
            f"({gold})",
            gold.lower(),
            f"{gold} is correct.",
            f"({gold}) and ({other})",
            f"{other}... actually no, {gold}.",
            other,
        ]
    if gold.isdigit():
        return [gold, f"I count {gold}.", str(int(gold) + 1), f"{gold}0"]
    return [gold, f"I would say: {gold}", "A bicycle and a giraffe.", "Nothing is there."]


class ScriptedModel:
    """The server's responder: looks the question up by (prompt, image pixels) and answers one of
    its shapes, picked by a hash of the prompt; records who asked what and what it answered."""

    def __init__(self, questions: list[dict[str, Any]], run: RunFS):
        from prompts.eval_prompts import answer_spec
        from prompts.spec import render
        from tasks.release.evaluate.answer import answer_context

        self.by_key: dict[tuple, dict[str, Any]] = {}
        for q in questions:
            prompt = render(answer_spec(q["qtype"], "standard", len(q["images"])), answer_context(q, "standard", {}))
            key = (prompt.strip(), tuple(pixels(run.read_bytes(p)) for p in q["images"]))
            assert key not in self.by_key, "two questions that look the same to a model"
            self.by_key[key] = q
        self.asked: dict[str, dict[str, str]] = {LMMS_MODEL: {}, OURS_MODEL: {}}  # model -> question id -> reply
        self.unknown: list[str] = []

    def __call__(self, body: dict[str, Any]) -> Reply:
        text = message_text(body).strip()
        key = (text, tuple(pixels(base64.b64decode(u.split(",", 1)[1])) for u in image_urls(body)))
        q = self.by_key.get(key)
        if q is None:  # a prompt reactbench never sends: the test fails on it
            self.unknown.append(text)
            return Reply("", status=400)
        shapes = reply_shapes(q)
        reply = shapes[int(hashlib.sha256(repr(key).encode()).hexdigest(), 16) % len(shapes)]
        self.asked.setdefault(body.get("model", ""), {})[q["id"]] = reply
        return Reply(reply)


def _hf_env(root: Path) -> dict[str, str]:
    """Offline datasets with a private cache; no LLM judge configured (the offline one grades)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("REACTBENCH_JUDGE_")}
    env.update(
        HF_DATASETS_OFFLINE="1",
        HF_HUB_OFFLINE="1",
        HF_HOME=str(root / "hf"),
        OPENAI_API_KEY="not-a-secret",
        RB_EVAL_KEY="not-a-secret",
    )
    return env


def _lmms_cli(
    release: Path, url: str, out: Path, env: dict[str, str]
) -> tuple[dict[str, Any], dict[str, list[dict[str, Any]]]]:
    """The documented command, run in a folder away from the release (docs/eval.md)."""
    lmms = Path(sys.executable).with_name("lmms-eval")
    cmd = [
        str(lmms),
        "eval",
        "--model",
        "openai",
        "--model_args",
        f"model={LMMS_MODEL},base_url={url}",
        "--tasks",
        ",".join(NAMES),
        "--include_path",
        str(release / "lmms_eval"),
        "--batch_size",
        "1",
        "--output_path",
        str(out),
        "--log_samples",
    ]
    proc = subprocess.run(cmd, env=env, cwd=out.parent, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    results = json.loads(Path(glob.glob(str(out / LMMS_MODEL / "*_results.json"))[0]).read_text())["results"]
    samples = {
        n: [
            json.loads(line)
            for line in Path(glob.glob(str(out / LMMS_MODEL / f"*_samples_{n}.jsonl"))[0]).read_text().splitlines()
        ]
        for n in NAMES
    }
    return results, samples


SIMPLE_EVALUATE = """
import json, sys
from lmms_eval.evaluator import simple_evaluate
from lmms_eval.tasks import TaskManager

include, url, model, out, *names = sys.argv[1:]
manager = TaskManager(include_path=include, include_defaults=False)
res = simple_evaluate(model="openai", model_args=f"model={model},base_url={url}", tasks=names, task_manager=manager, batch_size=1, log_samples=True)
keep = ("accuracy", "task_score", "react_score", "filtered_resps")
samples = {n: [{k: s[k] for k in keep if k in s} for s in res["samples"][n]] for n in names}
json.dump({"results": res["results"], "samples": samples}, open(out, "w"), default=str)
"""


def _lmms_simple_evaluate(
    release: Path, url: str, env: dict[str, str], cwd: Path
) -> tuple[dict[str, Any], dict[str, list[dict[str, Any]]]]:
    """lmms-eval's Python entry point, called from a script as a user would (in a child process:
    ``simple_evaluate`` patches filelock process-wide, which must not leak into other tests)."""
    out = cwd / "simple_evaluate.json"
    cmd = [sys.executable, "-c", SIMPLE_EVALUATE, str(release / "lmms_eval"), url, LMMS_MODEL, str(out), *NAMES]
    proc = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    got = json.loads(out.read_text())
    return got["results"], got["samples"]


@pytest.fixture(scope="module", params=["shuffle", "cyclic"])
def both_systems(request, tmp_path_factory):
    """One build evaluated by ``reactbench eval`` and by lmms-eval against the same server."""
    from flows.config import BuildConfig

    build = request.param
    root = tmp_path_factory.mktemp(f"lmms-run-{build}")
    run = write_run(root / "run", cyclic=build == "cyclic")
    export_benchmark(
        run, RunFS.open(str(root / "built")), resolve_run_config(run_dir=run.url), ExportOptions(lmms_eval=True)
    )
    release = root / "moved" / "release"  # the release is copied elsewhere before anyone runs it
    release.parent.mkdir()
    shutil.copytree(root / "built", release)
    shutil.rmtree(root / "built")
    env = _hf_env(root)
    questions = ArtifactReader(run, "review/verified_questions", "verified_questions").rows()
    model = ScriptedModel(questions, run)
    config = BuildConfig.model_validate(
        {
            "run": {"shard_size": 64, "workers": 1},
            "mllm": {"api_key_env": "RB_EVAL_KEY"},
            "eval": {"modes": ["standard"], "subcauses": False, "spans": False},
        }
    )
    (root / "cwd").mkdir()
    with pytest.MonkeyPatch.context() as mp, DummyServer(model) as url:
        mp.setenv("RB_EVAL_KEY", env["RB_EVAL_KEY"])
        ours = run_eval(run, config, EvalRequest(f"openai:{OURS_MODEL}", base_url=url, no_cache=True))
        if build == "cyclic":
            results, samples = _lmms_simple_evaluate(release, url, env, root / "cwd")
        else:
            results, samples = _lmms_cli(release, url, root / "cwd" / "lmms-out", env)
    metrics = json.loads(run.read_text(f"{ours.folder}/metrics.json"))
    answers = ArtifactReader(run, f"{ours.folder}/answers", ANSWERS).rows()
    return {
        "questions": questions,
        "model": model,
        "metrics": metrics,
        "answers": answers,
        "results": results,
        "samples": samples,
    }


def test_both_systems_got_the_same_replies(both_systems):
    model, questions = both_systems["model"], both_systems["questions"]
    assert not model.unknown, model.unknown[:2]  # lmms-eval sent exactly reactbench's prompts and images
    ids = {q["id"] for q in questions}
    assert set(model.asked[LMMS_MODEL]) == ids and model.asked[LMMS_MODEL] == model.asked[OURS_MODEL]
    assert {a["question_id"]: a["raw_response"] for a in both_systems["answers"]} == model.asked[OURS_MODEL]
    if any(q["rotation"] for q in questions):
        assert sum(1 for q in questions if q["qid"] == "Q12" and q["task"] == "relational_erasure") == 4


def test_react_score_and_task_scores_equal_metrics_json(both_systems):
    react, results = both_systems["metrics"]["react"], both_systems["results"]
    assert 0 < react["react_score"] < 100  # the replies mix right and wrong answers
    got = results["reactbench_all"]
    assert got["react_score,none"] == pytest.approx(react["react_score"], abs=1e-4)
    for task in TASKS:
        assert got[f"S_{SHORT[task]},none"] == pytest.approx(react["per_task"][task], abs=1e-4), task
        assert results[f"reactbench_{task}"]["task_score,none"] == pytest.approx(react["per_task"][task], abs=1e-4), (
            task
        )


def test_every_question_gets_the_same_verdict(both_systems):
    ours = {a["question_id"]: a for a in both_systems["answers"]}
    for name in NAMES:
        samples = both_systems["samples"][name]
        key = "react_score" if name == "reactbench_all" else "task_score"
        seen = {}
        for s in samples:
            rec = s[key]
            seen[rec["question_id"]] = s
            assert bool(s["accuracy"]) == ours[rec["question_id"]]["correct"], (name, rec, s["filtered_resps"])
            assert s["filtered_resps"] in (
                ours[rec["question_id"]]["raw_response"],
                [ours[rec["question_id"]]["raw_response"]],
            )
        want = (
            set(ours)
            if name == "reactbench_all"
            else {i for i, a in ours.items() if a["task"] == name.removeprefix("reactbench_")}
        )
        assert set(seen) == want, name
    verdicts = [a["correct"] for a in ours.values()]
    assert any(verdicts) and not all(verdicts)
