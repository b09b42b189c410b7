"""``reactbench eval --blind``: the language-only run. The same questions with the images (and the
offline backends' annotations) withheld, through the same backends and response cache, into
their own ``-blind`` folder, shown beside the run with images in the eval report; the ``rules``
backend labelled an ORACLE wherever it is shown."""

from __future__ import annotations

import json

import typer
from dummy_server import DummyServer, Reply, image_urls, message_text
from eval_helpers import write_run
from typer.testing import CliRunner

from flows.cli_eval import register
from storage.parquet_io import ArtifactReader
from tasks.release.evaluate.run import EvalRequest, run_eval
from tasks.release.evaluate.schemas import ANSWERS

GRADER = "You grade answers"


def looks_or_guesses(body):
    """Yes/No by whether the request carries an image: a blind answer can never pass for a sighted one."""
    text = message_text(body)
    if GRADER in text:
        return Reply("**Verdict:** no_hallucination\nfallback: false\nreason: ok")
    if "Yes or No" in text or "Final answer: Yes" in text:
        return Reply("Yes." if image_urls(body) else "No.")
    if "letter" in text:
        return Reply("(A)" if image_urls(body) else "(D)")
    return Reply("Nothing is there.")


def _cache_entries(run) -> list[str]:
    return [p for p in run.walk_files("cache/mllm") if p.endswith(".json")]


def _answering(server: DummyServer, since: int = 0) -> list[dict]:
    return [b for b in server.requests[since:] if GRADER not in message_text(b)]


def test_blind_run_sends_no_image_and_is_cached_apart(tmp_path, eval_config):
    run = write_run(tmp_path / "r", verified=False)
    cfg = eval_config.model_copy(
        update={
            "eval": eval_config.eval.model_copy(update={"modes": ("standard",), "subcauses": False, "spans": False})
        }
    )
    server = DummyServer(looks_or_guesses)
    with server as url:
        sighted = run_eval(run, cfg, EvalRequest("openai:dummy-vl", unverified=True, base_url=url))
        n_sighted = len(_answering(server))
        stored = _cache_entries(run)
        blind = run_eval(run, cfg, EvalRequest("openai:dummy-vl", unverified=True, base_url=url, blind=True))
        blind_reqs = _answering(server, n_sighted)
    cached = _cache_entries(run)
    assert n_sighted > 0 and all(image_urls(b) for b in _answering(server)[:n_sighted])
    # every blind question was asked (none served from a sighted entry: the keys differ, so no
    # sighted request can be served a blind answer either), none with an image, each stored apart
    assert len(blind_reqs) == n_sighted and not any(image_urls(b) for b in blind_reqs)
    assert stored and set(stored) < set(cached)
    assert len(cached) - len(stored) == len({message_text(b) for b in blind_reqs})  # one entry per blind prompt
    assert sighted.folder == "eval/openai-dummy-vl-unverified"
    assert blind.folder == "eval/openai-dummy-vl-unverified-blind"
    for out, want in ((sighted, "Yes"), (blind, "No")):
        yn = [r for r in ArtifactReader(run, f"{out.folder}/answers", ANSWERS).rows() if r["qtype"] == "YN"]
        assert yn and {r["parsed"] for r in yn} == {want}, out.folder
    m = json.loads(run.read_text(blind.folder, "metrics.json"))
    assert m["blind"] is True and m["oracle"] is False and m["label"].startswith("BLIND")
    assert json.loads(run.read_text(sighted.folder, "metrics.json"))["label"] is None


def _app() -> typer.Typer:
    app = typer.Typer()

    @app.callback()
    def main() -> None:
        pass

    register(app)
    return app


def test_cli_blind_rules_beside_oracle_in_report(tmp_path):
    write_run(tmp_path / "run", verified=False)
    (tmp_path / "run" / "config.yaml").write_text("run:\n  shard_size: 16\n  workers: 1\n")
    app, cli = _app(), CliRunner()
    base = ["eval", "--run-dir", str(tmp_path / "run"), "--model", "rules:rules-v1", "--unverified"]
    base += ["--modes", "standard"]
    res = cli.invoke(app, base)
    assert res.exit_code == 0 and "ORACLE" in res.output, res.output
    res = cli.invoke(app, [*base, "--blind"])
    assert res.exit_code == 0 and "BLIND" in res.output, res.output
    oracle = json.loads((tmp_path / "run/eval/rules-rules-v1-unverified/metrics.json").read_text())
    blind = json.loads((tmp_path / "run/eval/rules-rules-v1-unverified-blind/metrics.json").read_text())
    assert oracle["oracle"] is True and "ORACLE" in oracle["label"] and not oracle["blind"]
    # without the annotations the rules backend cannot read the dense-counting truth
    dc = "dense_counting"
    assert oracle["react"]["per_task"][dc] > blind["react"]["per_task"][dc]
    res = cli.invoke(app, ["report", "eval", "--run-dir", str(tmp_path / "run")])
    assert res.exit_code == 0, res.output
    html = (tmp_path / "run/reports/eval.html").read_text()
    assert "Blind (language-only) runs" in html and "ORACLE (reads the annotations, not the image)" in html
    assert "with images - blind" in html
    helptext = " ".join(cli.invoke(app, ["eval", "--help"], terminal_width=200).output.split())
    assert "--blind" in helptext and "ORACLE" in helptext
