"""VLMEvalKit forms, scored by VLMEvalKit itself (``ms-vlmeval`` 0.0.20, in its overlay venv).

``reactbench eval`` answers the hand-made run with scripted replies (``tests/evaluate/eval_helpers``);
the very same replies go into VLMEvalKit's prediction files, and the classes the release's
``vlmevalkit/reactbench.json`` names (registered by the shipped ``reactbench_vlmeval.py``, built as
``python -m vlmeval --config`` builds them) score them with ``evaluate()`` under the
``exact_matching`` judge. Both sides must agree on every figure: overall, per task
(``category``) and per dimension (``l2-category``); for MC and short answers (all in the main
set) also with ``metrics.json``; on plain replies (the gold verbatim, or a plainly wrong answer)
and on messy ones (reasons after a comma, JSON, ``\\boxed{}``, other languages, bounds,
self-contradictions), where VLMEvalKit's own extraction scores differently. The images
VLMEvalKit writes out must hold the source pixels, a JPEG original included.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from eval_helpers import ScriptedReplies, write_run
from PIL import Image

from flows.config import resolve_run_config
from prompts.clients.rules import RulesClient
from storage.fs import RunFS
from storage.parquet_io import ArtifactReader
from tasks.engine.prompt_hooks import rules_table
from tasks.release.evaluate.run import EvalRequest, run_eval
from tasks.release.evaluate.stage import EvalClients
from tasks.release.export.export import ExportOptions, export_benchmark
from tasks.release.export.vlmevalkit import CIRCULAR_STRIDE, VQA_REFERENCES, png_bytes, tsv_text
from tasks.release.metrics import accuracy, collapse_cyclic

csv.field_size_limit(1 << 30)
REPO = Path(__file__).resolve().parents[2]
NAMES = {"MC": "reactbench_MCQ_circular", "YN": "reactbench_Y_N", "SA": "reactbench_VQA"}
CLASSES = {"MC": "ReactBenchMCQ", "YN": "ReactBenchYORN", "SA": "ReactBenchVQA"}  # the shipped launcher's
NATIVE = {
    "MC": "ImageMCQDataset",
    "YN": "ImageYORNDataset",
    "SA": "ImageVQADataset",
}  # VLMEvalKit's classes they extend
JPEG_SET = "reactbench_jpeg_Y_N"  # one pair with a JPEG original: is it carried losslessly?


def _right(q: dict[str, Any]) -> bool:
    """About half the questions (and of a cyclic question's presentations) are answered right."""
    return int(hashlib.sha256(q["id"].encode()).hexdigest(), 16) % 3 != 0


def mixed_reply(q: dict[str, Any]) -> str:
    """The gold verbatim, or a plainly wrong answer: replies no parser can read two ways."""
    gold = str(q["gold"])
    if _right(q):
        return gold
    return {"YN": "No" if gold == "Yes" else "Yes", "MC": "B" if gold == "A" else "A"}.get(
        q["qtype"], "A bicycle and a giraffe."
    )


def vlmeval_python() -> Path:
    """The VLMEvalKit overlay venv's python, built by the project's script when missing or stale."""
    target = Path(os.environ.get("REACTBENCH_VLMEVAL_VENV") or REPO / ".venv-vlmeval")
    subprocess.run(["bash", str(REPO / "scripts" / "vlmevalkit-venv.sh"), sys.prefix, str(target)], check=True)
    return target / "bin" / "python"


def _read_tsv(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8")), delimiter="\t"))


def _write_predictions(tsv: Path, replies: dict[str, str], dest: Path) -> Path:
    """VLMEvalKit's prediction file: the dataset's rows less ``image``, plus ``prediction``."""
    rows = _read_tsv(tsv)
    cols = [c for c in rows[0] if c != "image"] + ["prediction"]
    dest.parent.mkdir(parents=True, exist_ok=True)
    with dest.open("w", encoding="utf-8", newline="") as f:
        w = csv.writer(f, delimiter="\t", lineterminator="\n")
        w.writerow(cols)
        for r in rows:
            w.writerow([r[c] for c in cols[:-1]] + [replies[r["id"]]])
    return dest


def _pixels(data: bytes) -> str:
    with Image.open(io.BytesIO(data)) as im:
        return hashlib.sha256(np.asarray(im.convert("RGB")).tobytes()).hexdigest()


def _jpeg_pair_rows() -> tuple[list[dict[str, Any]], list[bytes]]:
    """A before/after Y/N row whose original is a JPEG and whose edit is a PNG."""
    rng = np.random.default_rng(7)
    arr = rng.integers(0, 255, size=(24, 32, 3), dtype=np.uint8)
    jpg, png = io.BytesIO(), io.BytesIO()
    Image.fromarray(arr).save(jpg, format="JPEG", quality=90)
    Image.fromarray(arr[::-1]).save(png, format="PNG")
    row = {
        "qtype": "YN",
        "task": "alteration_tracing",
        "dimension": "none",
        "qid": "Q1",
        "question_set": "main",
        "variant": "targeted",
        "editor": "classical",
        "id": "jpeg-pair",
        "question": "Has anything changed?",
        "answer": "Yes",
        "images": [{"path": "aa.jpg", "rel": "images/aa/aa.jpg"}, {"path": "bb.png", "rel": "images/bb/bb.png"}],
    }
    return [row], [jpg.getvalue(), png.getvalue()]


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    from flows.config import BuildConfig

    root = tmp_path_factory.mktemp("vlmeval")
    run = write_run(root / "run")
    out = RunFS.open(str(root / "release"))
    summary = export_benchmark(run, out, resolve_run_config(run_dir=run.url), ExportOptions(vlmevalkit=True))
    questions = ArtifactReader(run, "review/verified_questions", "verified_questions").rows()
    image_bytes = {p: run.read_bytes(p) for q in questions for p in q["images"]}
    config = BuildConfig.model_validate(
        {"run": {"shard_size": 64, "workers": 1}, "eval": {"modes": ["standard"], "subcauses": False, "spans": False}}
    )
    clients = EvalClients(
        ScriptedReplies("mixed", questions, image_bytes, mixed_reply), RulesClient(rules=rules_table())
    )
    outcome = run_eval(run, config, EvalRequest("scripted:mixed"), clients=clients)
    answers = ArtifactReader(run, f"{outcome.folder}/answers", "eval_answers").rows()
    return {
        "run": run,
        "root": root,
        "release": Path(out.root),
        "summary": summary,
        "questions": questions,
        "answers": answers,
        "metrics": outcome.metrics,
    }


@pytest.fixture(scope="module")
def scored(exported, tmp_path_factory):
    """VLMEvalKit's verdict on the release: its classes, its evaluate(), its image dumps."""
    python = vlmeval_python()
    work = tmp_path_factory.mktemp("vlmeval-work")
    lmudata = work / "LMUData"  # VLMEvalKit's documented home of custom TSVs
    lmudata.mkdir()
    for tsv in (exported["release"] / "vlmevalkit").glob("*.tsv"):
        shutil.copy(tsv, lmudata / tsv.name)
    jpeg_rows, (jpg, png) = _jpeg_pair_rows()
    blobs = {"images/aa/aa.jpg": jpg, "images/bb/bb.png": png}
    (lmudata / f"{JPEG_SET}.tsv").write_text(tsv_text(jpeg_rows, "YN", blobs), encoding="utf-8")
    config = json.loads((exported["release"] / "vlmevalkit" / "reactbench.json").read_text())
    config["data"][JPEG_SET] = {"class": "ImageYORNDataset", "dataset": JPEG_SET}
    replies = {a["question_id"]: a["raw_response"] for a in exported["answers"]}
    preds = {
        name: [str(_write_predictions(lmudata / f"{name}.tsv", replies, work / "outputs" / f"scripted_{name}.tsv"))]
        for name in NAMES.values()
    }
    preds[JPEG_SET] = []
    return _run_driver(python, exported["release"], work, lmudata, config, preds), config


def _run_driver(
    python: Path, release: Path, work: Path, lmudata: Path, config: dict[str, Any], preds: dict[str, list[str]]
) -> dict[str, Any]:
    """VLMEvalKit's verdicts (``vlmevalkit_driver.py``) on prediction files, the release's launcher registered."""
    (work / "config.json").write_text(json.dumps(config))
    job = json.dumps(
        {
            "config": str(work / "config.json"),
            "predictions": preds,
            "launcher": str(release / "vlmevalkit" / "reactbench_vlmeval.py"),
        }
    )
    env = dict(os.environ, LMUData=str(lmudata), PYTHONPATH="")
    proc = subprocess.run(
        [str(python), str(Path(__file__).with_name("vlmevalkit_driver.py"))],
        input=job,
        capture_output=True,
        text=True,
        env=env,
        cwd=work,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT "))
    return json.loads(line[len("RESULT ") :])


def _vlmeval_scores(result: list[dict[str, Any]], qtype: str, native: bool = False) -> dict[str, float]:
    """Overall / per-category figures in percent (VLMEvalKit's own MCQ report is a fraction)."""
    (row,) = result
    scale = 100.0 if native and qtype == "MC" else 1.0
    return {k: float(v) * scale for k, v in row.items() if k != "split"}


def _ours(answers: list[dict[str, Any]], qtype: str) -> dict[str, float]:
    """The same figures from ``reactbench eval``'s answers, through the project's metrics (cyclic
    MC merged: right only when every presentation is)."""
    rows = collapse_cyclic(a for a in answers if a["qtype"] == qtype and a["mode"] == "standard")
    out = {"Overall": accuracy(rows, [])[0]["accuracy"]}
    for by in ("task", "dimension"):
        out.update({g[by]: g["accuracy"] for g in accuracy(rows, [by]) if g[by]})
    return out


def test_release_names_vlmevalkit_classes_in_its_config(exported, scored):
    result, config = scored
    assert {k: v["class"] for k, v in config["data"].items() if k != JPEG_SET} == {NAMES[q]: CLASSES[q] for q in NAMES}
    assert {name: result[name]["class"] for name in NAMES.values()} == {NAMES[q]: CLASSES[q] for q in NAMES}
    assert {name: result[name]["bases"] for name in NAMES.values()} == {
        NAMES[q]: NATIVE[q] for q in NAMES
    }  # VLMEvalKit's own, extended
    assert "reactbench_MCQ_circular" in result  # the name that turns on VLMEvalKit's circular scoring


@pytest.mark.parametrize("qtype", ["MC", "YN", "SA"])
def test_vlmevalkit_scores_equal_reactbench_eval(exported, scored, qtype):
    result, _ = scored
    theirs = _vlmeval_scores(result[NAMES[qtype]]["results"][0], qtype)
    ours = _ours(exported["answers"], qtype)
    assert set(theirs) == set(ours)
    assert theirs == pytest.approx(ours, abs=1e-3)
    assert 0 < ours["Overall"] < 100, "the scripted replies are right on some questions only"
    if qtype in ("MC", "SA"):  # every MC and short-answer question is in the main set: metrics.json's figures
        from_metrics = {
            r["task"]: r["accuracy"]
            for r in exported["metrics"]["accuracy"]["type"]
            if r["qtype"] == qtype and r["mode"] == "standard"
        }
        assert {t: theirs[t] for t in from_metrics} == pytest.approx(from_metrics, abs=1e-3)


def test_circular_score_is_consistency_accuracy_not_per_presentation(exported, scored):
    result, _ = scored
    theirs = _vlmeval_scores(result[NAMES["MC"]]["results"][0], "MC")
    cyclic = {r["task"]: r for r in exported["metrics"]["mc_cyclic"]["task"] if r["mode"] == "standard"}
    re_ = cyclic["relational_erasure"]
    assert re_["presentations"] > re_["n"] and re_["averaged_accuracy"] != re_["consistency_accuracy"], (
        "a partly right cyclic question"
    )
    assert theirs["relational_erasure"] == pytest.approx(re_["consistency_accuracy"], abs=1e-3)


def test_vlmevalkit_writes_the_source_pixels_of_every_image(exported, scored):
    result, _ = scored
    questions = {q["id"]: q for q in exported["questions"]}
    run = exported["run"]
    for name in NAMES.values():
        rows = _read_tsv(exported["release"] / "vlmevalkit" / f"{name}.tsv")
        dumped = result[name]["images"]
        for r in rows:
            want = [_pixels(run.read_bytes(p)) for p in questions[r["id"]]["images"]]
            assert dumped[r["index"]] == want, (name, r["id"])
    # a JPEG original and its PNG edit: both arrive with the pixels the JPEG decodes to
    _, (jpg, png) = _jpeg_pair_rows()
    assert result[JPEG_SET]["images"]["0"] == [_pixels(jpg), _pixels(png)]


def _read(out: Path, name: str) -> list[dict[str, str]]:
    return _read_tsv(out / "vlmevalkit" / f"{name}.tsv")


def _resolve(rows: list[dict[str, str]]) -> dict[str, list[str]]:
    """VLMEvalKit's image resolution: short strings are indices of rows that carry the image."""
    image_map = {r["index"]: r["image"] for r in rows}
    out = {}
    for k, v in image_map.items():
        if len(v) <= 64:
            assert v in image_map and len(image_map[v]) > 64, f"row {k} references {v}, which holds no image"
            v = image_map[v]
        out[k] = json.loads(v) if v.startswith("[") else [v]
    return out


@pytest.mark.parametrize("qtype", ["MC", "YN", "SA"])
def test_one_tsv_per_type_with_every_image_stored_once_as_png(exported, qtype):
    run, questions = exported["run"], exported["questions"]
    rows = _read(exported["release"], NAMES[qtype])
    mine = {q["id"]: q for q in questions if q["qtype"] == qtype}
    assert {r["id"] for r in rows} == set(mine)
    images = _resolve(rows)
    for r in rows:
        q = mine[r["id"]]
        got = [base64.b64decode(b) for b in images[r["index"]]]
        assert all(g.startswith(b"\x89PNG") for g in got)
        assert [_pixels(g) for g in got] == [_pixels(run.read_bytes(p)) for p in q["images"]]
        assert all(
            n.endswith(".png")
            for n in (json.loads(r["image_path"]) if r["image_path"].startswith("[") else [r["image_path"]])
        )
        want = repr([q["gold"]] * VQA_REFERENCES) if qtype == "SA" else q["gold"]
        assert r["answer"] == want
    if qtype == "YN":
        assert {r["answer"] for r in rows} <= {"Yes", "No"}
    if qtype == "MC":
        assert all(r["answer"] in "ABCDE" and r[r["answer"]] for r in rows)
    carried = [r["image"] for r in rows if len(r["image"]) > 64]
    assert len(carried) == len(set(carried)) == len({tuple(q["images"]) for q in mine.values()})


def test_circular_mc_is_grouped_by_index(exported):
    rows = _read(exported["release"], NAMES["MC"])
    groups = defaultdict(list)
    for r in rows:
        groups[int(r["index"]) % CIRCULAR_STRIDE].append(r)
    rotated = [g for g in groups.values() if len(g) > 1]
    assert rotated, "the hand run has a cyclic MC question"
    for g in rotated:
        assert len({r["qid"] for r in g}) == 1
        assert sorted(int(r["rotation"]) for r in g) == list(range(len(g)))
        assert all(int(r["index"]) // CIRCULAR_STRIDE == int(r["rotation"]) for r in g)
        assert len({r[r["answer"]] for r in g}) == 1  # the gold follows the right option
    assert len(groups) == len({(q["edit_id"], q["qid"]) for q in exported["questions"] if q["qtype"] == "MC"})


def test_mc_file_without_cyclic_questions_is_not_called_circular():
    from tasks.release.export.vlmevalkit import dataset_name

    rows = [{"qtype": "MC", "rotation": 0}, {"qtype": "YN", "rotation": 0}]
    assert dataset_name(rows, "MC") == "reactbench_MCQ"
    assert dataset_name(rows + [{"qtype": "MC", "rotation": 2}], "MC") == "reactbench_MCQ_circular"


def test_png_bytes_is_lossless_and_leaves_png_alone():
    (row,), (jpg, png) = _jpeg_pair_rows()
    assert png_bytes(png) == png
    assert png_bytes(jpg).startswith(b"\x89PNG") and _pixels(png_bytes(jpg)) == _pixels(jpg)


def test_tsv_bytes_within_one_and_a_half_times_distinct_images_plus_text(exported):
    for name in NAMES.values():
        text = (exported["release"] / "vlmevalkit" / f"{name}.tsv").read_text(encoding="utf-8")
        rows = _read(exported["release"], name)
        image_bytes = sum(len(r["image"]) for r in rows if len(r["image"]) > 64)
        inline = sum(len(json.dumps(_resolve(rows)[r["index"]])) for r in rows)  # what inlining every row would cost
        other = len(text.encode()) - sum(len(r["image"]) for r in rows)
        assert len(text.encode()) <= 1.5 * (image_bytes + other), name
        assert len(text.encode()) < other + inline, name


@pytest.mark.slow
def test_card_command_runs_vlmevalkit_end_to_end(exported, tmp_path):
    """The release card's commands, as a user runs them: VLMEvalKit asks the model (a loopback
    OpenAI-compatible server here) every question of the three files and scores its replies."""
    from dummy_server import DummyServer, Reply, message_text

    release = tmp_path / "release"
    shutil.copytree(exported["release"], release)
    card = (release / "README.md").read_text()
    block = card.split("## Scoring with VLMEvalKit", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0].splitlines()
    assert block[0] == "pip install ms-vlmeval==0.0.20"
    run_cmd = block[-1].split()
    assert (
        run_cmd[:2] == ["python", "vlmevalkit/reactbench_vlmeval.py"] and "exact_matching" in run_cmd
    )  # the shipped launcher

    def responder(body):
        text = message_text(body)
        return Reply("B" if "Options:" in text else "21" if "single word or phrase" in text else "Yes")

    home = tmp_path / "home"
    home.mkdir()
    with DummyServer(responder) as url:
        cfg = json.loads((release / "vlmevalkit" / "reactbench.json").read_text())
        (entry,) = cfg["model"].values()
        entry["api_base"] = f"{url}/chat/completions"
        (release / "vlmevalkit" / "reactbench.json").write_text(
            json.dumps(cfg)
        )  # "point its model entry at your model"
        python = vlmeval_python()
        script = "\n".join(block[1:-1] + [" ".join([str(python)] + run_cmd[1:])])
        env = dict(os.environ, HOME=str(home), PYTHONPATH="")
        proc = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", script],
            cwd=release,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
    assert proc.returncode == 0, proc.stderr[-4000:]
    outputs = release / "vlmeval_outputs"
    for name in NAMES.values():
        (report,) = outputs.rglob(f"*_{name}_acc.csv")
        assert list(outputs.rglob(f"*_{name}_reactbench.tsv")), (
            name
        )  # every reply's verdict, from the launcher's classes
        assert "Overall" in report.read_text().splitlines()[0], name
    summary = [ln for ln in (proc.stdout + proc.stderr).splitlines() if ln.startswith("reactbench_")]
    assert len(summary) == len(NAMES) and all(ln.count("0.00% (0/") == 2 for ln in summary), (
        summary
    )  # no inference or judge failures


def messy_reply(q: dict[str, Any]) -> str:
    """A reply in one of the shapes real models give, right or wrong, picked by a hash of the
    question: reasons after a comma or dash, JSON, ``\\boxed{}``, other languages, reasoning
    traces, hedges, bounds, a Yes that denies."""
    gold = str(q["gold"])
    pick = int(hashlib.sha256(("messy" + q["id"]).encode()).hexdigest(), 16)
    if q["qtype"] == "YN":
        other = "No" if gold == "Yes" else "Yes"
        shapes = [
            f"{gold}, because that is what the picture shows.",
            f'```json\n{{"answer": "{gold.lower()}"}}\n```',
            {"Yes": "Oui, c'est bien le cas.", "No": "Nein, das sehe ich nicht."}[gold],
            {"Yes": "はい", "No": "いいえ"}[other],
            "Yes, there is no such object in the picture.",
            other[0],
            "Vielleicht.",
            f"<think>Look at both images carefully.</think>\n\n{other}.",
            f"{other}... actually no, {gold.lower()}.",
        ]
    elif q["qtype"] == "MC":
        other = "B" if gold == "A" else "A"
        shapes = [
            f"{gold}, because it matches the image.",
            rf"The final answer is $\boxed{{{gold}}}$.",
            f"答案是{gold}",
            f"La réponse est {other}.",
            f"({gold}) and ({other})",
            f'{{"answer": "{gold}"}}',
            f"{other} - that option fits.",
            f"Letter: {gold}",
        ]
    else:
        shapes = [
            gold,
            f"Answer: {gold}",
            f'{{"answer": "{gold}"}}',
            f"**Final answer:** {gold}",
            "I am not sure what is there.",
            f"At least {gold}." if gold.isdigit() else "A bicycle and a giraffe.",
            f"{gold}.0" if gold.isdigit() else f"<think>hmm</think>\n{gold}",
        ]
    return shapes[pick % len(shapes)]


@pytest.mark.slow
def test_vlmevalkit_scores_messy_replies_as_reactbench_eval(exported, tmp_path):
    """Raw replies as models write them, through VLMEvalKit with the release's launcher: per-task
    (and per-dimension, overall) scores equal ``reactbench eval``'s on the same replies, where
    VLMEvalKit's own classes read them differently."""
    from flows.config import BuildConfig

    run, questions = exported["run"], exported["questions"]
    image_bytes = {p: run.read_bytes(p) for q in questions for p in q["images"]}
    config = BuildConfig.model_validate(
        {"run": {"shard_size": 64, "workers": 1}, "eval": {"modes": ["standard"], "subcauses": False, "spans": False}}
    )
    clients = EvalClients(
        ScriptedReplies("messy", questions, image_bytes, messy_reply), RulesClient(rules=rules_table())
    )
    outcome = run_eval(run, config, EvalRequest("scripted:messy"), clients=clients)
    answers = ArtifactReader(run, f"{outcome.folder}/answers", "eval_answers").rows()
    replies = {a["question_id"]: a["raw_response"] for a in answers if a["mode"] == "standard"}
    assert len(set(replies.values())) > 20 and any(a["status"] == "unparseable" for a in answers)

    lmudata = tmp_path / "LMUData"
    lmudata.mkdir()
    for tsv in (exported["release"] / "vlmevalkit").glob("*.tsv"):
        shutil.copy(tsv, lmudata / tsv.name)
    vlm_config = json.loads((exported["release"] / "vlmevalkit" / "reactbench.json").read_text())
    for qtype, name in NAMES.items():  # VLMEvalKit's own class on the same file, for contrast
        vlm_config["data"][f"native_{name}"] = {"class": NATIVE[qtype], "dataset": name}
    preds = {}
    for name in NAMES.values():
        path = str(_write_predictions(lmudata / f"{name}.tsv", replies, tmp_path / "outputs" / f"messy_{name}.tsv"))
        native = str(_write_predictions(lmudata / f"{name}.tsv", replies, tmp_path / "native" / f"messy_{name}.tsv"))
        preds[name], preds[f"native_{name}"] = [path], [native]
    result = _run_driver(vlmeval_python(), exported["release"], tmp_path, lmudata, vlm_config, preds)

    differs = 0
    for qtype, name in NAMES.items():
        theirs, ours = _vlmeval_scores(result[name]["results"][0], qtype), _ours(answers, qtype)
        assert set(theirs) == set(ours) and theirs == pytest.approx(ours, abs=1e-3), (qtype, theirs, ours)
        assert 0 < ours["Overall"] < 100, qtype
        native = _vlmeval_scores(result[f"native_{name}"]["results"][0], qtype, native=True)
        differs += abs(native["Overall"] - ours["Overall"]) > 1e-3
        if qtype in ("MC", "SA"):
            from_metrics = {
                r["task"]: r["accuracy"]
                for r in outcome.metrics["accuracy"]["type"]
                if r["qtype"] == qtype and r["mode"] == "standard"
            }
            assert {t: theirs[t] for t in from_metrics} == pytest.approx(from_metrics, abs=1e-3)
    assert differs >= 2, (
        "VLMEvalKit's own extraction reads these replies differently: the launcher is what makes them agree"
    )


def test_md5_table_refuses_a_tsv_that_is_not_the_exported_one(exported, tmp_path):
    """``reactbench_md5.json`` holds each TSV's md5: the launcher stops naming a changed TSV in
    ``$LMUData`` before VLMEvalKit starts. (VLMEvalKit's own ``load_data`` checks the registered
    classes' ``DATASET_MD5`` too; a second VLMEvalKit process to show it costs ~40 s of CPU.)"""
    folder = exported["release"] / "vlmevalkit"
    md5s = json.loads((folder / "reactbench_md5.json").read_text())
    assert "canary GUID" in md5s.pop("canary")  # the release's canary, which the launcher skips
    assert set(md5s) == set(NAMES.values())
    lmudata = tmp_path / "LMUData"
    lmudata.mkdir()
    for name, digest in md5s.items():
        shutil.copy(folder / f"{name}.tsv", lmudata / f"{name}.tsv")
        assert hashlib.md5((lmudata / f"{name}.tsv").read_bytes()).hexdigest() == digest
    changed = lmudata / f"{NAMES['YN']}.tsv"
    changed.write_text(changed.read_text(encoding="utf-8").replace("\tYes\t", "\tNo\t", 1), encoding="utf-8")
    env = dict(os.environ, LMUData=str(lmudata), PYTHONPATH="")
    proc = subprocess.run(
        [sys.executable, str(folder / "reactbench_vlmeval.py")], env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 1 and f"{changed}: md5 " in proc.stderr and md5s[NAMES["YN"]] in proc.stderr
