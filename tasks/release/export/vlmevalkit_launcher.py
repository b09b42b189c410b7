"""The launcher a release ships so that VLMEvalKit reads replies with the release's own parser.

VLMEvalKit extracts answers its own way (``YOrN_Extraction``, ``can_infer``, VQA exact match):
on the same raw replies it scored far lower than ``reactbench eval`` (issue 32: Y/N 32.98 vs
58.78), so one model got two published numbers. ``vlmevalkit/reactbench_vlmeval.py`` takes
``python -m vlmeval``'s arguments, registers three dataset classes in ``vlmeval.dataset`` and runs
VLMEvalKit's own ``run.main()``. Each class is VLMEvalKit's (prompts, images, inference, reuse of
predictions unchanged) with one method replaced: ``evaluate()`` grades every prediction with the
shipped copies of our parser and offline judge (``reactbench_parsing.py``, ``reactbench_judge.py``,
from :mod:`tasks.release.export.shipped_scoring`) through ``grade_reply``, the function the
lmms-eval hooks use, and the task table (``reactbench_tasks.json``: each task's judging rule).
Cyclic MC counts a question only when every presentation is right (our consistency accuracy).
The report is one row: ``Overall``, each task (``category``) and dimension (``l2-category``), in
percent; per-row verdicts go next to the predictions (``*_reactbench.tsv``).
"""

from __future__ import annotations

import json

from tasks.release.export.lmms_eval import task_table
from tasks.release.export.shipped_scoring import scoring_files

LAUNCHER_FILE = "reactbench_vlmeval.py"
TASKS_FILE = "reactbench_tasks.json"
# The class each question type's TSV is built with (the config's ``data`` entries name them).
CLASSES = {"MC": "ReactBenchMCQ", "YN": "ReactBenchYORN", "SA": "ReactBenchVQA"}

LAUNCHER_PY = '''"""Run VLMEvalKit on the reactbench TSVs, scoring replies as `reactbench eval` does.

Written by `reactbench export --vlmevalkit`. Use it in place of `python -m vlmeval`, with the same
arguments:

    python vlmevalkit/reactbench_vlmeval.py --config vlmevalkit/reactbench.json --judge exact_matching --work-dir vlmeval_outputs

It registers ReactBenchYORN, ReactBenchMCQ and ReactBenchVQA in `vlmeval.dataset` (the names
reactbench.json gives the files) and runs VLMEvalKit. They are VLMEvalKit's ImageYORNDataset,
ImageMCQDataset and ImageVQADataset - same prompts, images and inference - except evaluate(),
which reads every reply with the release's parser (reactbench_parsing.py) and grades short
answers with its offline judge (reactbench_judge.py): verbatim copies of reactbench-pipeline's
modules, so the scores equal `reactbench eval` (standard mode, offline judge) on the same replies.
A cyclic MC question counts only when every presentation is right. The report (`*_acc.csv`) is
one row: Overall, per task (category) and per dimension (l2-category), in percent; each reply's
verdict is written to `*_reactbench.tsv` beside the predictions.
"""

import ast
import importlib.util
import json
import math
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
CIRCULAR_STRIDE = 1000000


def _load(name):
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, os.path.join(_HERE, name + ".py"))
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


parsing = _load("reactbench_parsing")
judge = _load("reactbench_judge")
with open(os.path.join(_HERE, "reactbench_tasks.json"), encoding="utf-8") as _f:
    TASKS = {e["id"]: e for e in json.load(_f) if "id" in e}  # the one entry without an id is the canary
_MD5_FILE = os.path.join(_HERE, "reactbench_md5.json")
MD5 = {}  # TSV name -> md5, as exported: the classes' DATASET_MD5
if os.path.exists(_MD5_FILE):
    with open(_MD5_FILE, encoding="utf-8") as _f:
        MD5 = {k: v for k, v in json.load(_f).items() if k != "canary"}  # the canary stamp is no dataset


def _text(value):
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return str(value)


def row_verdict(qtype, row):
    """True when `reactbench eval` scores this row's prediction as right."""
    reply = _text(row.get("prediction"))
    answer = _text(row.get("answer")).strip()
    if qtype == "YN":
        return judge.grade_reply("YN", reply, answer)
    if qtype == "MC":
        options = []
        for letter in "ABCDE":
            if not _text(row.get(letter)):
                break
            options.append(_text(row.get(letter)))
        return judge.grade_reply("MC", reply, answer, options)
    gold = ast.literal_eval(answer)[0] if answer.startswith("[") else answer
    rubric = {k: str(v) for k, v in json.loads(_text(row.get("rubric")) or "{}").items()}
    prior = json.loads(_text(row.get("prior_terms")) or "[]") if _text(row.get("question_set")) == "main" else []
    rule = TASKS.get(_text(row.get("category")), {}).get("judge", judge.OVERLAP)
    return judge.grade_reply("SA", reply, gold, None, rubric, prior, rule)


def score(data, qtype):
    """(per-row verdicts, the one-row report) for a prediction table."""
    import pandas as pd

    data = data.copy()
    data["hit"] = [row_verdict(qtype, r) for r in data.to_dict(orient="records")]
    units = data
    if qtype == "MC":  # a cyclic question: right only when every presentation is
        data["g_index"] = [int(i) % CIRCULAR_STRIDE for i in data["index"]]
        units = data.sort_values("index").groupby("g_index", sort=True).agg(
            {"hit": "all", "category": "first", "l2-category": "first"}).reset_index()
    out = {"Overall": 100.0 * units["hit"].mean()}
    for col in ("category", "l2-category"):
        if col not in units:
            continue
        for key, group in units.groupby(units[col].map(_text)):
            if key:
                out[key] = 100.0 * group["hit"].mean()
    return data, pd.DataFrame([out])


def evaluate(eval_file, qtype):
    from vlmeval.smp import load

    data, report = score(load(eval_file), qtype)
    stem = os.path.splitext(eval_file)[0]
    data.drop(columns=[c for c in ("image",) if c in data]).to_csv(stem + "_reactbench.tsv", sep="\\t", index=False)
    report.to_csv(stem + "_acc.csv", index=False)
    return report


def register():
    """Put the three classes into `vlmeval.dataset`, where `--config` looks classes up."""
    import vlmeval.dataset as datasets

    def make(base, name, qtype):
        def _evaluate(self, eval_file, **judge_kwargs):
            return evaluate(eval_file, qtype)

        attrs = {"evaluate": _evaluate, "__doc__": base.__name__ + " scored with the reactbench parser."}
        attrs["DATASET_MD5"] = {**getattr(base, "DATASET_MD5", {}), **MD5}
        cls = type(name, (base,), attrs)
        setattr(datasets, name, cls)
        return cls

    return {
        "YN": make(datasets.ImageYORNDataset, "ReactBenchYORN", "YN"),
        "MC": make(datasets.ImageMCQDataset, "ReactBenchMCQ", "MC"),
        "SA": make(datasets.ImageVQADataset, "ReactBenchVQA", "SA"),
    }


def check_tsvs():
    """Stop, naming the file, when a TSV in $LMUData is not the one this release exported."""
    import hashlib

    root = os.environ.get("LMUData") or os.path.join(os.path.expanduser("~"), "LMUData")
    for name, want in sorted(MD5.items()):
        path = os.path.join(root, name + ".tsv")
        if not os.path.exists(path):
            continue
        digest = hashlib.md5()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 23), b""):
                digest.update(block)
        if digest.hexdigest() != want:
            sys.exit(f"{path}: md5 {digest.hexdigest()} is not this release's {want}; copy the release's vlmevalkit/{name}.tsv there again")


if __name__ == "__main__":
    check_tsvs()
    register()
    from vlmeval import run

    run.main()
'''


def launcher_files(task_ids: list[str]) -> dict[str, str]:
    """``{file name: text}`` the ``vlmevalkit/`` folder needs beside the TSVs: the launcher, the
    shipped parser and judge, and the task table of the release's tasks."""
    return {
        LAUNCHER_FILE: LAUNCHER_PY,
        **scoring_files(),
        TASKS_FILE: json.dumps(task_table(task_ids), indent=1, sort_keys=True) + "\n",
    }
