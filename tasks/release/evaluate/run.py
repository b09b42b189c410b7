"""Running an evaluation end to end: clients from config, the eval stage, then ``metrics.json``.

Plain Python (the CLI in ``flows/cli_eval.py`` is a thin wrapper). Outputs go to
``<run>/eval/<backend>-<model>[-unverified]/``: ``answers/``, ``subcauses/``, ``spans/``
(sharded Parquet), ``_manifest.json`` and ``metrics.json`` (no timestamps: byte-identical
for the same inputs, config and model answers).
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

from pydantic import ValidationError

from prompts.config import BACKENDS, SERVER_HINT, MLLMConfig
from storage import addresses
from storage.config_base import describe_errors
from storage.fs import RunFS
from storage.parquet_io import ArtifactReader
from tasks.engine.base import RunContext
from tasks.engine.build_config import BuildConfig
from tasks.engine.prompt_hooks import client_for
from tasks.engine.runner import StageSummary, run_stage
from tasks.release.evaluate.labels import model_labels
from tasks.release.evaluate.schemas import ANSWERS, SPANS, SUBCAUSES
from tasks.release.evaluate.stage import EvalClients, EvalStage, model_slug
from tasks.release.evaluate.summary import Metrics, summarize
from tasks.release.items import source_for

METRICS_FILE = "metrics.json"


def parse_model(spec: str, flag: str = "--model") -> tuple[str, str]:
    """``"openai:Qwen/Qwen2.5-VL-7B"`` -> ("openai", "Qwen/Qwen2.5-VL-7B")."""
    backend, sep, model = (spec or "").partition(":")
    backend, model = backend.strip(), model.strip()
    if not sep or not backend or not model:
        raise ValueError(
            f"{flag} must be BACKEND:MODEL (e.g. rules:rules-v1, openai:Qwen/Qwen2.5-VL-7B-Instruct), got {spec!r}"
        )
    return backend, model


def client_config(base: MLLMConfig, backend: str, model: str, flag: str = "--model", **overrides: Any) -> MLLMConfig:
    """The run's MLLM settings with another backend/model (validated, so a typo fails here); a
    backend that does not exist (``vllm:...``) is named with the backends and the form that serves it."""
    if backend not in BACKENDS:
        url = (
            "--base-url http://HOST:8000/v1"
            if flag == "--model"
            else "and its URL in eval.judge_base_url (--judge-base-url)"
        )
        raise ValueError(
            f"{flag} {backend}:{model}: unknown backend {backend!r}; the backends are {', '.join(BACKENDS)}. "
            f"{SERVER_HINT}: {flag} openai:{model} {url}"
        )
    data = base.model_dump()
    data.update({"backend": backend, "model": model})
    data.update({k: v for k, v in overrides.items() if v is not None})
    try:
        return MLLMConfig.model_validate(data)
    except ValidationError as exc:
        raise ValueError(
            f"cannot evaluate with backend {backend!r}, model {model!r}: {describe_errors(exc, 'mllm.')}"
        ) from None


@dataclass
class EvalOutcome:
    slug: str
    folder: str
    stage: StageSummary
    metrics: Metrics
    backend: str = ""
    model: str = ""
    unverified: bool = False
    blind: bool = False


def make_clients(
    config: BuildConfig,
    run: RunFS,
    backend: str,
    model: str,
    base_url: str | None,
    no_cache: bool,
    source: RunFS | None = None,
) -> EvalClients:
    """The model under test and its judge; their response cache lives in ``run``, and a backend
    that answers from statistics reads them from ``source`` (the run evaluated, default ``run``)."""
    cache = run.sub("cache", "mllm")
    ev = config.eval
    model_cfg = client_config(
        config.mllm, backend, model, base_url=base_url, temperature=ev.temperature, max_tokens=ev.max_tokens
    )
    if ev.judge:
        jb, jm = parse_model(ev.judge, "eval.judge")
        judge_cfg = client_config(config.mllm, jb, jm, "eval.judge", base_url=ev.judge_base_url, temperature=0.0)
    else:
        judge_cfg = client_config(config.mllm, "rules", "rules-v1", temperature=0.0)
    model_client = client_for(model_cfg, cache, no_cache=no_cache)
    bind = getattr(model_client, "bind_run", None)
    if bind is not None:  # a backend that answers from the run's own statistics (the blind prior)
        bind(source if source is not None else run)
    return EvalClients(
        model_client,
        client_for(judge_cfg, cache, no_cache=no_cache),
        (model_cfg, judge_cfg),
    )


@dataclass(frozen=True)
class EvalRequest:
    """Which evaluation to run and how: ``model`` (BACKEND:MODEL) on the reviewed questions or,
    ``unverified``, on the QA stage's own; ``blind``: the language-only run, the images withheld,
    into ``<backend>-<model>-blind``; ``base_url``: the model's endpoint (default
    ``mllm.base_url``); ``no_cache``: bypass the response cache; ``force``: re-answer every shard."""

    model: str
    unverified: bool = False
    blind: bool = False
    base_url: str | None = None
    no_cache: bool = False
    force: bool = False


def run_eval(
    run: RunFS,
    config: BuildConfig,
    request: EvalRequest,
    *,
    progress: Callable[[int, int], None] | None = None,
    clients: EvalClients | None = None,
    source: RunFS | None = None,
) -> EvalOutcome:
    """Evaluate as ``request`` says on the run's questions and write ``metrics.json``
    (:func:`answer_questions`, then :func:`write_metrics`; the CLI runs them as two steps)."""
    answered = answer_questions(run, config, request, progress=progress, clients=clients, source=source)
    return write_metrics(run, answered)


def answer_questions(
    run: RunFS,
    config: BuildConfig,
    request: EvalRequest,
    *,
    progress: Callable[[int, int], None] | None = None,
    clients: EvalClients | None = None,
    source: RunFS | None = None,
) -> EvalOutcome:
    """The eval stage: every question answered, judged and scored into ``<folder>/answers`` (its
    ``metrics`` still empty); ``progress`` sees (shards done, total). ``source``: the run whose
    questions and images are asked when it is not ``run`` (a read-only run evaluated into
    another folder); ``run`` receives the answers, the cache and the manifests."""
    backend, model_id = parse_model(request.model)
    unverified, blind, no_cache = request.unverified, request.blind, request.no_cache
    clients = clients or make_clients(config, run, backend, model_id, request.base_url, no_cache, source)
    stage = EvalStage(backend, model_id, unverified, clients, blind=blind)
    ctx = RunContext(run, config, {"no_cache": no_cache}, inputs=source)
    summary = run_stage(
        stage, ctx, force=request.force, progress=progress, requeue_reasons=config.orchestration.rerun_reject_reasons
    )
    return EvalOutcome(
        model_slug(backend, model_id, unverified, blind), stage.name, summary, {}, backend, model_id, unverified, blind
    )


def write_metrics(
    run: RunFS, answered: EvalOutcome, progress: Callable[[int, int], None] | None = None
) -> EvalOutcome:
    """``metrics.json`` of an answered evaluation; ``progress`` sees (answer shards read, total)."""
    metrics = compute_metrics(run, answered.folder, answered.backend, answered.model, answered.unverified, progress)
    metrics.update(model_labels(answered.backend, answered.blind))
    run.write_text_atomic(f"{answered.folder}/{METRICS_FILE}", json.dumps(metrics, indent=1, sort_keys=True) + "\n")
    return replace(answered, metrics=metrics)


# What the metrics read of an answer row (tasks/release/metrics.py's list, plus ``status``, ``parsed_by`` and
# ``judge``): the replies, judge texts and prompt names stay on disk.
METRIC_COLUMNS = [
    "task",
    "mode",
    "qtype",
    "qid",
    "dimension",
    "question_set",
    "correct",
    "edit_id",
    "editor",
    "variant",
    "rotation",
    "image_role",
    "text",
    "parsed",
    "gold",
    "beaf_related",
    "prior_fallback",
    "status",
    "judge",
    "parsed_by",
]


def compute_metrics(
    run: RunFS,
    folder: str,
    backend: str,
    model: str,
    unverified: bool,
    progress: Callable[[int, int], None] | None = None,
) -> Metrics:
    """Every metric of one evaluated model from its stored answers (what ``metrics.json`` holds).

    The answers are read one shard at a time, only the columns the metrics use, repeated values
    shared (``ArtifactReader.iter_shared_rows``): memory grows by a small row per answer, not by
    the replies (measured in docs/eval.md); spans are counted as they stream by."""
    answers = list(
        ArtifactReader(run, f"{folder}/answers", ANSWERS).iter_shared_rows(METRIC_COLUMNS, progress=progress)
    )
    subcauses = list(
        ArtifactReader(run, f"{folder}/subcauses", SUBCAUSES).iter_shared_rows(
            ["task", "editor", "variant", "status", "label"]
        )
    )
    spans = ArtifactReader(run, f"{folder}/spans", SPANS).iter_rows(["status", "spans_json"])
    out = summarize(answers)
    out.update(
        {
            "model": {"backend": backend, "model": model},
            "questions_source": source_for(unverified).label,
            "unverified": unverified,
            "judges": dict(sorted(Counter(a["judge"] for a in answers if a["qtype"] == "SA").items())),
            "subcauses": subcause_distribution(
                [r for r in subcauses if (r.get("variant") or "targeted") != "control"]
            ),
            "subcauses_by_editor": [
                {
                    "editor": ed,
                    "variant": var,
                    "subcauses": subcause_distribution(
                        [r for r in subcauses if r["editor"] == ed and (r.get("variant") or "targeted") == var]
                    ),
                }
                for ed, var in sorted({(r["editor"], r.get("variant") or "targeted") for r in subcauses})
            ],
            "spans": span_summary(spans),
        }
    )
    return out


def subcause_distribution(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per task: count and percent of each sub-cause label over classified CoT hallucinations
    (one per item and question: cyclic presentations are attributed once)."""
    by_task: dict[str, Counter[str]] = defaultdict(Counter)
    for r in rows:
        by_task[r["task"]][r["label"] if r["status"] == "ok" and r["label"] else "unclassified"] += 1
    out = {}
    for task in sorted(by_task):
        total = sum(by_task[task].values())
        out[task] = {
            "n": total,
            "labels": {k: {"n": v, "percent": round(100.0 * v / total, 4)} for k, v in sorted(by_task[task].items())},
        }
    return out


def span_summary(rows: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Detector outcome counts, instruction-following rate and spans per MHALO type."""
    types: Counter[str] = Counter()
    status: Counter[str] = Counter()
    for r in rows:
        status[r["status"]] += 1
        for _, _, t in json.loads(r["spans_json"] or "[]"):
            types[t or "untyped"] += 1
    n = sum(status.values())
    return {
        "responses": n,
        "IF": round(100.0 * status.get("ok", 0) / n, 4) if n else None,
        "status": dict(sorted(status.items())),
        "types": dict(sorted(types.items())),
    }


def list_evaluations(run: RunFS) -> list[str]:
    """Folders under ``<run>/eval/`` that hold a ``metrics.json``."""
    return [
        addresses.evaluation(name)
        for name in run.listdir(addresses.EVAL_DIR)
        if run.exists(addresses.EVAL_DIR, name, METRICS_FILE)
    ]
