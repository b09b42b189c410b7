"""lmms-eval task files that score a reply exactly as ``reactbench eval`` does (standard mode).

Layout under ``<release>/lmms_eval/``::

    reactbench_<task>.yaml   one task per benchmark task: accuracy and S_t
    reactbench_all.yaml      every task at once: accuracy, S_t per task and React-Score
    utils.py                 the hooks (prompt, images, per-type scoring, aggregations)
    reactbench_tasks.json    the release's tasks in benchmark order, written from their specs:
                             short name, React-Score weight, judging rule, judge note
    reactbench_parsing.py    verbatim copy of prompts/eval_parsing.py (reply parsers)
    reactbench_judge.py      verbatim copy of prompts/offline_judge.py (short-answer judge)
    reactbench_metrics.py    verbatim copy of tasks/release/metrics.py (S_t, React-Score)
    prompts/eval_answer_*.j2 the answering templates of prompts/templates/

The YAMLs read the release's Parquet files through lmms-eval's local ``parquet`` builder with
``data_files`` relative to the YAML, so a moved or uploaded release loads unedited. The copies
make the release self-contained (no reactbench install needed) and keep the verdicts identical;
tests run the tasks under lmms-eval's own evaluator (command line and ``simple_evaluate``, its
``openai`` model against a loopback server) and compare React-Score, S_t and every verdict with
``reactbench eval`` on the same replies. lmms-eval renders prompts from docs whose image
columns it removed, so the text hooks read text columns only. Generation follows the run's
``eval`` section: ``do_sample`` is true exactly when the temperature is above 0. When the release
is pushed to the Hugging Face hub and its revision is known (``export.hub_repo`` and
``export.revision``, ``reactbench export --hub-repo --revision``), the YAMLs load that repo at that
revision instead (``dataset_kwargs.revision``), so the task cannot be re-pointed to other data.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

import tasks.release.metrics
from prompts.offline_judge import RULES
from prompts.spec import TEMPLATE_DIR
from storage.fs import RunFS
from storage.task_spec import task_order, task_spec
from tasks.engine.prompt_hooks import judge_rule
from tasks.engine.taxonomy import task_text
from tasks.release.export.hf import data_file
from tasks.release.export.shipped_scoring import scoring_files

ANSWER_TEMPLATES = ("eval_answer_yn.j2", "eval_answer_mc.j2", "eval_answer_sa.j2", "eval_sa_judge.j2")


def generation_kwargs(temperature: float, max_tokens: int) -> dict[str, Any]:
    """lmms-eval generation settings that agree with each other and with ``eval``."""
    out: dict[str, Any] = {"max_new_tokens": int(max_tokens), "do_sample": temperature > 0}
    if temperature > 0:
        out["temperature"] = float(temperature)
    return out


def _task_config(
    name: str,
    dataset_name: str,
    files: str | list[str],
    metrics: list[dict[str, Any]],
    process: str,
    gen: dict[str, Any],
    hub: dict[str, str] | None = None,
) -> str:
    # the release's own Parquet files beside the YAML, or the pushed release at a pinned revision
    dataset: dict[str, Any] = (
        {"dataset_path": hub["repo"], "dataset_name": dataset_name, "dataset_kwargs": {"revision": hub["revision"]}}
        if hub
        else {
            "dataset_path": "parquet",
            "dataset_name": dataset_name,
            "dataset_kwargs": {"data_files": {"test": files}},
        }
    )
    cfg = {
        "task": name,
        **dataset,
        "test_split": "test",
        "output_type": "generate_until",
        "doc_to_visual": "!function utils.doc_to_visual",
        "doc_to_text": "!function utils.doc_to_text",
        "doc_to_target": "answer",
        "generation_kwargs": gen,
        "process_results": f"!function utils.{process}",
        "metric_list": metrics,
        "metadata": {"version": 2},
    }
    text = yaml.safe_dump(cfg, sort_keys=False, width=1000)
    # lmms-eval's ``!function`` tag must stay an unquoted YAML tag
    return text.replace("'!function ", "!function ").replace("'\n", "\n")


def hub_source(export: Any) -> dict[str, str] | None:
    """``{"repo", "revision"}`` when the export config names a pushed revision (``export.hub_repo``
    and ``export.revision``), else None (the tasks read the local Parquet files); a revision
    without a repo is refused: it would pin nothing."""
    revision, repo = getattr(export, "revision", None), getattr(export, "hub_repo", None)
    if revision and not repo:
        raise ValueError(
            f"export.revision {revision!r} needs export.hub_repo (the dataset repo that revision belongs to; --hub-repo)"
        )
    return {"repo": repo, "revision": revision} if revision and repo else None


def task_yaml(task: str, temperature: float = 0.2, max_tokens: int = 1024, hub: dict[str, str] | None = None) -> str:
    """One task's YAML: per-reply accuracy and the task score S_t (targeted items, main set)."""
    metrics = [
        {"metric": "accuracy", "aggregation": "mean", "higher_is_better": True},
        {"metric": "task_score", "aggregation": "!function utils.aggregate_task_score", "higher_is_better": True},
    ]
    return _task_config(
        f"reactbench_{task}",
        task,
        f"../{data_file(task)}",
        metrics,
        "process_results",
        generation_kwargs(temperature, max_tokens),
        hub,
    )


def task_table(tasks: list[str]) -> list[dict[str, Any]]:
    """What the shipped utils.py knows of each task, from its spec, in benchmark order: ``id``,
    ``short``, ``weight`` (React-Score, renormalised over these tasks), ``judge`` (the offline
    judge's rule, its ``sa_judge`` hook) and ``note`` (the judge prompt's task note)."""
    out = []
    for t in sorted(tasks, key=task_order):
        spec, rule = task_spec(t), judge_rule(t)
        if rule not in RULES:
            raise ValueError(
                f"task {t!r}: its sa_judge hook gives {rule!r}; a release ships only the offline judge's rules {', '.join(RULES)}"
            )
        out.append(
            {"id": t, "short": spec.short, "weight": spec.weight, "judge": rule, "note": task_text(t).get("note", "")}
        )
    return out


def all_tasks_yaml(
    tasks: list[str], temperature: float = 0.2, max_tokens: int = 1024, hub: dict[str, str] | None = None
) -> str:
    """Every task in one lmms-eval task: accuracy, S_t per task and React-Score. The files are
    listed one by one: lmms-eval anchors ``data_files`` at the YAML only for existing files."""
    metrics = [
        {"metric": "accuracy", "aggregation": "mean", "higher_is_better": True},
        {"metric": "react_score", "aggregation": "!function utils.aggregate_react_score", "higher_is_better": True},
    ] + [
        {
            "metric": f"S_{e['short']}",
            "aggregation": f"!function utils.aggregate_s_{e['short'].lower()}",
            "higher_is_better": True,
        }
        for e in task_table(tasks)
    ]
    return _task_config(
        "reactbench_all",
        "all",
        [f"../{data_file(t)}" for t in sorted(tasks)],
        metrics,
        "process_results_all",
        generation_kwargs(temperature, max_tokens),
        hub,
    )


def _source(module: ModuleType) -> str:
    return Path(module.__file__).read_text(encoding="utf-8")


def support_files(task_ids: list[str]) -> dict[str, str]:
    """The verbatim copies utils.py loads and the release's task table, by release-relative name."""
    files = {**scoring_files(), "reactbench_metrics.py": _source(tasks.release.metrics)}
    for name in ANSWER_TEMPLATES:
        files[f"prompts/{name}"] = (TEMPLATE_DIR / name).read_text(encoding="utf-8")
    files["reactbench_tasks.json"] = json.dumps(task_table(task_ids), indent=1, sort_keys=True) + "\n"
    return files


UTILS_PY = '''"""Hooks of the reactbench lmms-eval tasks (written by `reactbench export --lmms-eval`).

A reply is scored exactly as `reactbench eval` scores it in standard mode: the same answering
templates (prompts/), the same reply parsers (reactbench_parsing.py) and the same offline
short-answer judge (reactbench_judge.py) - verbatim copies of the project's modules. The
aggregations compute S_t and React-Score with the project's own metrics (reactbench_metrics.py)
over the targeted items of the main question set. lmms-eval asks each question once, so the
React-Score here is the standard-mode one; `reactbench eval` also averages in CoT.

An LLM judge for short answers, as `eval.judge` configures it for `reactbench eval`: set
REACTBENCH_JUDGE_BASE_URL (an OpenAI-compatible endpoint) and REACTBENCH_JUDGE_MODEL (and the
key in the variable REACTBENCH_JUDGE_API_KEY_ENV names, OPENAI_API_KEY by default). It is asked
the project's judge prompt (prompts/eval_sa_judge.j2); when it fails or answers out of format,
the offline judge grades, as in `reactbench eval`.
"""

import importlib.util
import json
import os
import re
import sys
import urllib.request

import jinja2

_HERE = os.path.dirname(os.path.abspath(__file__))


def _load(name):
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, os.path.join(_HERE, name + ".py"))
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


parsing = _load("reactbench_parsing")
judge = _load("reactbench_judge")
metrics = _load("reactbench_metrics")

_ENV = jinja2.Environment(
    loader=jinja2.FileSystemLoader(os.path.join(_HERE, "prompts")),
    undefined=jinja2.StrictUndefined,
    autoescape=False,
    keep_trailing_newline=False,
    trim_blocks=True,
    lstrip_blocks=True,
)


def doc_to_visual(doc):
    return [img.convert("RGB") for img in doc["images"]]


def doc_to_text(doc):
    options = list(doc["options"] or [])
    context = {
        "question": doc["question"],
        "options": [[chr(65 + i), o] for i, o in enumerate(options)],
        "options_list": options,
        "cot": False,
        "pair": doc["image_role"] == "pair",  # lmms-eval strips the image column before it asks
        "task": doc["task"],
        "qtype": doc["qtype"],
        "question_set": doc["question_set"],
        "annotations": {},
    }
    return _ENV.get_template("eval_answer_" + doc["qtype"].lower() + ".j2").render(**context).strip() + "\\n"


# The release's tasks in benchmark order (written from each task's spec by the export).
TASKS = {e["id"]: e for e in json.load(open(os.path.join(_HERE, "reactbench_tasks.json"), encoding="utf-8")) if "id" in e}  # the entry without an id is the canary
WEIGHTS = {t: e["weight"] for t, e in TASKS.items()}


def llm_verdict(doc, answer, rubric, prior):
    """"correct" / "hallucination" from the configured LLM judge, or None (not configured, failed)."""
    url, model = os.environ.get("REACTBENCH_JUDGE_BASE_URL"), os.environ.get("REACTBENCH_JUDGE_MODEL")
    if not url or not model:
        return None
    text = _ENV.get_template("eval_sa_judge.j2").render(
        task=doc["task"], task_note=TASKS.get(doc["task"], {}).get("note", ""), question=doc["question"], gold=doc["answer"],
        answer=answer, rubric=[[k, v] for k, v in sorted(rubric.items())], prior_terms=prior,
    ).strip() + "\\n"
    body = {"model": model, "messages": [{"role": "user", "content": [{"type": "text", "text": text}]}], "temperature": 0.0, "max_tokens": 256}
    key = os.environ.get(os.environ.get("REACTBENCH_JUDGE_API_KEY_ENV", "OPENAI_API_KEY"), "")
    req = urllib.request.Request(url.rstrip("/") + "/chat/completions", json.dumps(body).encode(), {"Content-Type": "application/json", "Authorization": "Bearer " + key})
    try:
        with urllib.request.urlopen(req, timeout=120) as resp:
            content = json.load(resp)["choices"][0]["message"]["content"] or ""
    except Exception:  # any transport or format failure: the offline judge grades
        return None
    m = re.search(r"verdict\\s*:\\s*\\W*([a-z_ ]+)", content, re.I)
    word = m.group(1).strip().lower().replace("no_hallucination", "correct").replace("no hallucination", "correct") if m else ""
    if word in ("wrong", "incorrect", "hallucinated"):
        word = "hallucination"
    return word if word in ("correct", "hallucination") else None


def verdict(doc, reply):
    """True when `reactbench eval` (standard mode, offline judge) scores the reply as right."""
    reply = reply or ""
    rubric, prior = {}, []
    if doc["qtype"] == "SA":
        rubric = {k: str(v) for k, v in json.loads(doc["rubric"] or "{}").items()}
        prior = list(doc["prior_terms"] or []) if doc["question_set"] == "main" else []
        graded = llm_verdict(doc, parsing.answer_segment(reply, False) or reply, rubric, prior)
        if graded is not None:
            return graded == "correct"
    rule = TASKS.get(doc["task"], {}).get("judge", judge.OVERLAP)
    options = list(doc.get("options") or []) if doc["qtype"] == "MC" else []
    return judge.grade_reply(doc["qtype"], reply, doc["answer"], options, rubric, prior, rule)


def _record(doc, ok):
    keys = ("task", "qtype", "qid", "edit_id", "rotation", "question_set", "variant", "image_role", "editor")
    return {**{k: doc[k] for k in keys}, "question_id": doc["id"], "mode": "standard", "correct": bool(ok)}


def process_results(doc, results):
    ok = verdict(doc, results[0] if results else "")
    return {"accuracy": float(ok), "task_score": _record(doc, ok)}


def process_results_all(doc, results):
    ok = verdict(doc, results[0] if results else "")
    rec = _record(doc, ok)
    out = {"accuracy": float(ok), "react_score": rec}
    for entry in TASKS.values():
        out["S_" + entry["short"]] = rec
    return out


def _headline(items):
    rows = [r for r in items if r["question_set"] == "main" and (r.get("variant") or "targeted") != "control"]
    return metrics.react_score(rows, WEIGHTS)


def _nan(value):
    return float("nan") if value is None else value


def aggregate_task_score(items):
    scores = [s for s in _headline(items).per_task.values() if s is not None]
    return scores[0] if len(scores) == 1 else float("nan")


def aggregate_react_score(items):
    return _nan(_headline(items).score)


def _task_score(task):
    return lambda items: _nan(_headline(items).per_task.get(task))


# aggregate_s_<short> per task of the release (the YAML of reactbench_all names them)
for _task, _entry in TASKS.items():
    globals()["aggregate_s_" + _entry["short"].lower()] = _task_score(_task)
'''


def write_lmms_eval(
    out: RunFS, tasks: list[str], temperature: float, max_tokens: int, hub: dict[str, str] | None = None
) -> list[str]:
    """Write every lmms-eval file into ``out`` (a RunFS of the release); returns their paths.
    ``hub`` (:func:`hub_source`) points the tasks at the pushed release, pinned to its revision."""
    files = {f"lmms_eval/reactbench_{t}.yaml": task_yaml(t, temperature, max_tokens, hub) for t in sorted(tasks)}
    files["lmms_eval/reactbench_all.yaml"] = all_tasks_yaml(tasks, temperature, max_tokens, hub)
    files["lmms_eval/utils.py"] = UTILS_PY
    files.update({f"lmms_eval/{k}": v for k, v in support_files(tasks).items()})
    for rel, text in files.items():
        out.write_text_atomic(rel, text)
    return list(files)
