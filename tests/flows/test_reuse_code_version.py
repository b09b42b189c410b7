"""A change to the ``rules`` backend's code must invalidate the items it answered.

Item keys hold the code version of the component (a hash of its source files), so a stored
instruction answered by the old rules code is never served after the code changed. Dropping the
code version from the key failed no test before this one. The change is real: the source tree is
copied, one rules function there answers differently, and builds run on that copy in a
subprocess (a hash of the copied files, as a user's upgrade would give).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("storage", "miners", "prompts", "editors", "tasks", "flows", "configs")
RULES = "tasks/builtin_tasks/relational_erasure/prompts.py"  # its instruct rules answer
OLD, NEW = "do not alter the background of the image.", "leave the background of the image as it is."
EVAL_RULES = "prompts/eval_rules.py"
EVAL_OLD, EVAL_NEW = 'return "Yes" if prior_hit(q, ann) else "No"', 'return "No" if prior_hit(q, ann) else "Yes"'


def _tree(dest: Path) -> Path:
    for name in PACKAGES:
        shutil.copytree(ROOT / name, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def _reactbench(tree: Path, *args: str) -> None:
    """The CLI of the copied tree, in a subprocess."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    env["PYTHONPATH"] = str(tree)
    proc = subprocess.run(
        [sys.executable, "-c", "from flows.entry import main; main()", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=tree,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _build(tree: Path, config: Path, run: Path, stages: str = "mine,instruct") -> None:
    _reactbench(
        tree, "build", "--config", str(config), "--run-dir", str(run), "--stages", stages, "--orchestrator", "local"
    )


def _edit(tree: Path, path: str, old: str, new: str) -> None:
    source = tree / path
    assert old in source.read_text(), f"retarget this test: {path} no longer says {old!r}"
    source.write_text(source.read_text().replace(old, new))


def _instructions(run: Path) -> list[bytes]:
    return [p.read_bytes() for p in sorted((run / "instruct" / "instructions").glob("*.parquet"))]


@pytest.fixture
def config(sample_dir: Path, tmp_path: Path) -> Path:
    cfg = {
        "run": {"seed": 0, "shard_size": 8, "workers": 1},
        "sources": {"visual_genome": str(sample_dir / "visual_genome")},
        "mine": {
            "tasks": ["relational_erasure"],
            "relational_erasure": {"n_min": 20, "theta": 0.2, "area_range": [0.003, 0.5], "images_per_pair": 3},
        },
        "mllm": {"backend": "rules", "model": "rules-v1"},
        # the demo's tight removal margin: items survive verification, so the evaluation has questions
        "editors": [{"name": "classical", "params": {"dilation_px": 5}}],
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def test_changed_rules_code_recomputes_the_items_it_answered(config: Path, tmp_path: Path) -> None:
    tree = _tree(tmp_path / "tree")
    run = tmp_path / "run"
    _build(tree, config, run)
    before = _instructions(run)

    _edit(tree, RULES, OLD, NEW)
    shutil.rmtree(
        run / "instruct"
    )  # the stage runs again (as after any key change); its items may come from the store
    _build(tree, config, run)
    fresh = tmp_path / "fresh"
    _build(tree, config, fresh)

    assert _instructions(fresh) != before, "the changed rules code must change some instruction"
    assert _instructions(run) == _instructions(fresh), "instructions answered by the old rules code were reused"


def test_changed_rules_code_recomputes_the_evaluation_answers_it_gave(config: Path, tmp_path: Path) -> None:
    tree = _tree(tmp_path / "tree")
    run, fresh = tmp_path / "run", tmp_path / "fresh"
    _build(tree, config, run, "mine,instruct,edit,qa")
    shutil.copytree(run, fresh, ignore=shutil.ignore_patterns("reuse"))
    evaluate = ("eval", "--model", "rules:rules-v1", "--unverified", "--run-dir")
    _reactbench(tree, *evaluate, str(run))
    folder = next((run / "eval").iterdir()).relative_to(run)
    before = _answers(run / folder)

    _edit(tree, EVAL_RULES, EVAL_OLD, EVAL_NEW)
    shutil.rmtree(run / "eval")  # the stage runs again; its answers may come from the store
    _reactbench(tree, *evaluate, str(run))
    _reactbench(tree, *evaluate, str(fresh))
    assert _answers(fresh / folder) != before, "the changed rules code must change some answer"
    assert _answers(run / folder) == _answers(fresh / folder), "answers given by the old rules code were reused"


def _answers(folder: Path) -> list[bytes]:
    return [p.read_bytes() for p in sorted((folder / "answers").glob("*.parquet"))]


class _CountingRulesClient:
    """Stands in for the model side only: the reuse key is what is under test here."""

    backend, model_id = "rules", "rules-v1"

    def __init__(self) -> None:
        self.asked = 0

    def complete(self, requests: list) -> list:
        from prompts.clients.base import MLLMResponse

        self.asked += len(requests)
        return [MLLMResponse("Yes", self.model_id, self.backend) for _ in requests]


def test_a_plugins_rules_code_joins_the_evaluation_answer_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The rules backend answers a plugin's questions with the plugin's ``eval_rules``: editing any
    module of the plugin's package (here a helper its rules call) must recompute those answers."""
    from prompts.clients.base import MLLMRequest
    from storage.fs import RunFS
    from storage.reuse_store import ReuseStore
    from storage.task_spec import TaskSpec, register_task
    from tasks.engine import registry as task_registry
    from tasks.engine import reuse

    pkg = tmp_path / "toy_rules_plugin"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "helper.py").write_text("ANSWER = 'Yes'\n")
    (pkg / "rules.py").write_text(
        "from prompts.eval_rules import EvalRules\nfrom toy_rules_plugin import helper\n\n\n"
        "class ToyRules(EvalRules):\n    def answer(self, ctx):\n        return helper.ANSWER\n\n\nRULES = ToyRules()\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    register_task(
        TaskSpec(
            id="toy_rules",
            short="TR",
            label="Toy rules",
            weight=0.0,
            order=90,
            extra={"eval_rules": "toy_rules_plugin.rules:RULES"},
        )
    )
    try:
        assert [m.__name__ for m in reuse.task_code("toy_rules", "eval_rules")] == [
            "toy_rules_plugin"
        ]  # the package, not only rules.py
        run = RunFS.open(str(tmp_path / "run"))
        requests = [
            MLLMRequest(
                "answer_yn",
                "1",
                [{"role": "user", "content": "Is the cup on the table?"}],
                {"task": "toy_rules"},
                0.0,
                16,
            )
        ]

        def ask() -> int:
            client = _CountingRulesClient()
            reuse.complete_with_reuse(
                reuse.ItemReuse(ReuseStore.open(run), run, "eval", "eval-answer"), client, requests
            )
            return client.asked

        assert (ask(), ask()) == (1, 0)  # the second time the stored answer is taken
        (pkg / "helper.py").write_text("ANSWER = 'No'\n")
        reuse._file_hash.cache_clear()  # a new process would hash the edited file afresh
        assert ask() == 1, "an answer given by the plugin's old rules code was reused"
    finally:
        task_registry.REGISTRY.registered.pop("toy_rules", None)
        task_registry._all.cache_clear()
        reuse._file_hash.cache_clear()


def test_a_plugin_under_a_namespace_package_counts_its_first_regular_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``acme`` (no ``__init__.py``, no files of its own) holds the plugin ``acme.rb_plugin``: the
    hook's code is that package's files, not an error for the namespace."""
    from storage.task_spec import TaskSpec, register_task
    from tasks.engine import registry as task_registry
    from tasks.engine import reuse

    pkg = tmp_path / "acme" / "rb_plugin"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "hooks.py").write_text("def rows(c, f):\n    return []\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    register_task(
        TaskSpec(
            id="toy_ns",
            short="TN",
            label="Toy namespace",
            weight=0.0,
            order=91,
            extra={"instruct_rows": "acme.rb_plugin.hooks:rows"},
        )
    )
    try:
        (code,) = reuse.task_code("toy_ns", "instruct_rows")
        assert code.__name__ == "acme.rb_plugin"
        assert reuse.code_version(code) == reuse.code_version("acme.rb_plugin")
    finally:
        task_registry.REGISTRY.registered.pop("toy_ns", None)
        task_registry._all.cache_clear()
