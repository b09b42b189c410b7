"""The exported lmms-eval tasks, loaded through lmms-eval's own TaskManager, score replies with
the same per-question verdicts (and the same S_t / React-Score) as ``reactbench eval``.

The model is scripted: for each question it gives a reply from a set (gold answers,
paraphrases, the article trap "A wheel is ...", near-numbers); ``reactbench eval`` and the
exported ``utils.py`` then score the same replies.
"""

from __future__ import annotations

import hashlib
import shutil
from typing import Any

import pytest
from eval_helpers import write_run

from flows.config import resolve_run_config
from prompts.clients.base import MLLMResponse
from prompts.clients.rules import RulesClient
from storage.fs import RunFS
from storage.parquet_io import ArtifactReader
from tasks.engine.prompt_hooks import rules_table
from tasks.release.evaluate.run import EvalRequest, run_eval
from tasks.release.evaluate.stage import EvalClients
from tasks.release.export.export import ExportOptions, export_benchmark

lmms_eval = pytest.importorskip(
    "lmms_eval", reason="lmms-eval is in the test extra; install it to check the exported tasks"
)

TASKS = ("relational_erasure", "counterfactual_attribute", "alteration_tracing", "dense_counting")
REPLY_SETS = ("gold", "paraphrase", "article", "near", "wrong", "hedge", "corrected")


def reply_for(kind: str, qtype: str, gold: str, options: list[str]) -> str:
    if kind == "gold":
        return gold
    other = {"YN": "No" if gold == "Yes" else "Yes", "MC": "B" if gold == "A" else "A"}.get(qtype, "a bicycle")
    if kind == "hedge":  # names two answers: never credited
        return {"YN": "Yes and no, it depends.", "MC": f"({gold}) and ({other})"}.get(
            qtype, f"{gold} or {int(gold) + 1}" if gold.isdigit() else "Hard to say."
        )
    if kind == "corrected":  # a self-correction settles on the gold answer
        return f"{other}... actually no, {gold}."
    if kind == "paraphrase":
        return {"YN": f"The answer is {gold.lower()}.", "MC": f"The answer is {gold}."}.get(
            qtype, f"I would say: {gold}"
        )
    if kind == "article":  # "A" is an article here, not option A
        return "A wheel is what I can see there."
    if kind == "near":
        return gold + "1" if gold.isdigit() else ("141" if qtype != "SA" else f"{gold}s maybe")
    return {"YN": "No" if gold == "Yes" else "Yes", "MC": "B" if gold == "A" else "A"}.get(
        qtype, "A bicycle and a giraffe."
    )


class ScriptedModel:
    """The model under evaluation: answers each question from one reply set, keyed by the
    question text, its options and the images it is asked about."""

    backend = "scripted"
    uses_images = True

    def __init__(self, kind: str, questions: list[dict[str, Any]], image_bytes: dict[str, bytes]):
        self.model_id = kind
        self.kind = kind
        self.by_key = {
            self.key(q["text"], q.get("options") or [], [image_bytes[p] for p in q["images"]]): q for q in questions
        }

    @staticmethod
    def key(text: str, options: list[str], images: list[bytes]) -> tuple:
        return (text, tuple(options), tuple(hashlib.sha256(b).hexdigest() for b in images))

    def complete(self, requests):
        out = []
        for req in requests:
            parts = req.messages[0]["content"]
            images = [p["data"] for p in parts if p["type"] == "image"]
            q = self.by_key[self.key(req.context["question"], req.context["options_list"], images)]
            out.append(
                MLLMResponse(
                    reply_for(self.kind, q["qtype"], q["gold"], list(q.get("options") or [])),
                    self.model_id,
                    self.backend,
                )
            )
        return out


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    from flows.config import BuildConfig

    root = tmp_path_factory.mktemp("lmms")
    run = write_run(root / "run")
    built = root / "built"
    export_benchmark(run, RunFS.open(str(built)), resolve_run_config(run_dir=run.url), ExportOptions(lmms_eval=True))
    moved = root / "elsewhere" / "release"  # a moved release must load without editing its YAML
    moved.parent.mkdir()
    shutil.move(str(built), str(moved))
    config = BuildConfig.model_validate(
        {"run": {"shard_size": 64, "workers": 1}, "eval": {"modes": ["standard"], "subcauses": False, "spans": False}}
    )
    questions = ArtifactReader(run, "review/verified_questions", "verified_questions").rows()
    image_bytes = {p: run.read_bytes(p) for q in questions for p in q["images"]}
    verdicts: dict[str, dict[str, bool]] = {}
    metrics: dict[str, dict[str, Any]] = {}
    for kind in REPLY_SETS:
        clients = EvalClients(ScriptedModel(kind, questions, image_bytes), RulesClient(rules=rules_table()))
        out = run_eval(run, config, EvalRequest(f"scripted:{kind}"), clients=clients)
        rows = ArtifactReader(run, f"{out.folder}/answers", "eval_answers").rows()
        verdicts[kind] = {r["question_id"]: r["correct"] for r in rows}
        metrics[kind] = out.metrics
    return moved, questions, verdicts, metrics


@pytest.fixture(scope="module")
def lmms_tasks(release, tmp_path_factory):
    from lmms_eval.tasks import TaskManager, get_task_dict

    moved = release[0]
    cache = tmp_path_factory.mktemp("hf-cache")
    mp = pytest.MonkeyPatch()
    mp.setenv("HF_DATASETS_OFFLINE", "1")
    mp.setenv("HF_HOME", str(cache))
    mp.setenv("HF_DATASETS_CACHE", str(cache / "datasets"))
    mp.chdir(tmp_path_factory.mktemp("cwd"))  # relative paths must resolve against the YAML, not the cwd
    try:
        manager = TaskManager(include_path=str(moved / "lmms_eval"), include_defaults=False)
        names = [f"reactbench_{t}" for t in TASKS] + ["reactbench_all"]
        assert set(names) <= set(manager.all_tasks)
        yield get_task_dict(names, manager)
    finally:
        mp.undo()


def _docs(task) -> list[dict[str, Any]]:
    return list(task.test_docs())


def test_every_reply_gets_the_same_verdict_as_reactbench_eval(release, lmms_tasks):
    _, questions, verdicts, _ = release
    checked = 0
    for name in (f"reactbench_{t}" for t in TASKS):
        task = lmms_tasks[name]
        docs = _docs(task)
        assert docs and {d["task"] for d in docs} == {name.removeprefix("reactbench_")}
        for doc in docs:
            for kind in REPLY_SETS:
                reply = reply_for(kind, doc["qtype"], doc["answer"], list(doc["options"] or []))
                got = task.process_results(doc, [reply])
                assert got["accuracy"] == float(verdicts[kind][doc["id"]]), (
                    name,
                    doc["qid"],
                    doc["image_role"],
                    kind,
                    reply,
                )
                checked += 1
    assert checked == len(questions) * len(REPLY_SETS)
    # the cases the issue names, on both sides
    by_id = {q["id"]: q for q in questions}
    yes = [i for i, q in by_id.items() if q["qtype"] == "YN" and q["gold"] == "Yes"]
    assert yes and all(verdicts["paraphrase"][i] for i in yes)  # "The answer is yes." is a Yes
    mc_not_a = [i for i, q in by_id.items() if q["qtype"] == "MC" and q["gold"] != "A"]
    assert mc_not_a and not any(verdicts["article"][i] for i in mc_not_a)  # the article is not option A
    counts = [
        i for i, q in by_id.items() if q["task"] == "dense_counting" and q["qtype"] == "SA" and q["gold"].isdigit()
    ]
    assert counts and all(verdicts["gold"][i] and not verdicts["near"][i] for i in counts)  # "211" is not 21
    assert all(verdicts["gold"].values()) and not all(verdicts["wrong"].values())
    closed = [i for i, q in by_id.items() if q["qtype"] in ("YN", "MC")]
    assert not any(verdicts["hedge"][i] for i in closed)  # "(A) and (B)", "Yes and no" are hedges
    assert all(verdicts["corrected"][i] for i in closed)  # "B... actually no, C" is C
    assert all(
        verdicts["corrected"][i] and not verdicts["hedge"][i] for i in counts
    )  # "22... actually no, 21"; "21 or 22"


def test_prompts_are_reactbench_prompts(release, lmms_tasks):
    from prompts.eval_prompts import answer_spec
    from prompts.spec import render
    from tasks.release.evaluate.answer import answer_context

    _, questions, _, _ = release
    by_id = {q["id"]: q for q in questions}
    task = lmms_tasks["reactbench_alteration_tracing"]
    for doc in _docs(task):
        q = by_id[doc["id"]]
        want = render(answer_spec(q["qtype"], "standard", len(q["images"])), answer_context(q, "standard", {}))
        assert task.doc_to_text(doc) == want
        assert len(task.doc_to_visual(doc)) == 2


def test_aggregations_report_task_scores_and_react_score(release, lmms_tasks):
    _, _, _, metrics = release
    task = lmms_tasks["reactbench_all"]
    docs = _docs(task)
    for kind in ("gold", "wrong", "paraphrase"):
        per_doc = [
            task.process_results(d, [reply_for(kind, d["qtype"], d["answer"], list(d["options"] or []))]) for d in docs
        ]
        agg = task.aggregation()
        want = metrics[kind]["react"]
        assert agg["react_score"]([p["react_score"] for p in per_doc]) == pytest.approx(want["react_score"], abs=1e-4)
        for short, t in zip(("RE", "CA", "AT", "DC"), TASKS):
            assert agg[f"S_{short}"]([p[f"S_{short}"] for p in per_doc]) == pytest.approx(
                want["per_task"][t], abs=1e-4
            )
    one = lmms_tasks["reactbench_dense_counting"]
    recs = [one.process_results(d, [d["answer"]])["task_score"] for d in _docs(one)]
    assert one.aggregation()["task_score"](recs) == pytest.approx(
        metrics["gold"]["react"]["per_task"]["dense_counting"], abs=1e-4
    )


def test_generation_settings_agree(release):
    import yaml

    moved = release[0]
    text = (moved / "lmms_eval" / "reactbench_relational_erasure.yaml").read_text()
    gen = yaml.safe_load(text.replace("!function ", ""))["generation_kwargs"]
    assert gen == {"max_new_tokens": 1024, "do_sample": True, "temperature": 0.2}
    assert str(moved) not in text and "../data/relational_erasure/" in text


class JudgeServer:
    """A small OpenAI-compatible judge on 127.0.0.1 with its own rule (an answer naming a bicycle
    is "correct"), so its verdicts differ from the offline judge's and show which one graded."""

    def __init__(self):
        import http.server
        import json as _json
        import threading

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                body = _json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                content = body["messages"][0]["content"]
                text = (
                    content
                    if isinstance(content, str)
                    else " ".join(p.get("text", "") for p in content if p.get("type") == "text")
                )
                graded = text.split("Answer to grade:", 1)[1].split("\n", 1)[0]
                verdict = "correct" if "bicycle" in graded.lower() else "hallucination"
                reply = {
                    "id": "x",
                    "object": "chat.completion",
                    "created": 0,
                    "model": body["model"],
                    "choices": [
                        {
                            "index": 0,
                            "finish_reason": "stop",
                            "message": {
                                "role": "assistant",
                                "content": f"verdict: {verdict}\nfallback: false\nreason: rule",
                            },
                        }
                    ],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                }
                data = _json.dumps(reply).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)  # a free port
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def test_llm_judge_when_configured_gives_the_same_verdicts(release, lmms_tasks, tmp_path, monkeypatch):
    from flows.config import BuildConfig
    from prompts.clients.factory import make_client
    from prompts.config import MLLMConfig

    moved, questions, _, _ = release
    server = JudgeServer()
    try:
        monkeypatch.setenv("REACTBENCH_TEST_JUDGE_KEY", "not-a-secret")
        run = write_run(tmp_path / "run")
        config = BuildConfig.model_validate(
            {
                "run": {"shard_size": 64, "workers": 1},
                "eval": {"modes": ["standard"], "subcauses": False, "spans": False},
            }
        )
        qs = ArtifactReader(run, "review/verified_questions", "verified_questions").rows()
        image_bytes = {p: run.read_bytes(p) for q in qs for p in q["images"]}
        judge = make_client(
            MLLMConfig(
                backend="openai", model="judge-1", base_url=server.url, api_key_env="REACTBENCH_TEST_JUDGE_KEY"
            ),
            None,
        )
        ours: dict[str, dict[str, bool]] = {}
        for kind in ("gold", "wrong"):
            out = run_eval(
                run,
                config,
                EvalRequest(f"scripted:{kind}"),
                clients=EvalClients(ScriptedModel(kind, qs, image_bytes), judge),
            )
            rows = ArtifactReader(run, f"{out.folder}/answers", "eval_answers").rows()
            assert {r["judge"] for r in rows if r["qtype"] == "SA"} == {"llm"}
            ours[kind] = {r["question_id"]: r["correct"] for r in rows if r["qtype"] == "SA"}
        monkeypatch.setenv("REACTBENCH_JUDGE_BASE_URL", server.url)
        monkeypatch.setenv("REACTBENCH_JUDGE_MODEL", "judge-1")
        monkeypatch.setenv("REACTBENCH_JUDGE_API_KEY_ENV", "REACTBENCH_TEST_JUDGE_KEY")
        compared = 0
        for name in (f"reactbench_{t}" for t in TASKS):
            task = lmms_tasks[name]
            for doc in _docs(task):
                if doc["qtype"] != "SA":
                    continue
                for kind in ("gold", "wrong"):
                    got = task.process_results(doc, [reply_for(kind, "SA", doc["answer"], [])])["accuracy"]
                    assert got == float(ours[kind][doc["id"]]), (name, doc["qid"], kind)
                    compared += 1
        assert (
            compared and all(ours["wrong"].values()) and not any(ours["gold"].values())
        )  # the server's rule, not the offline judge's
    finally:
        server.close()
