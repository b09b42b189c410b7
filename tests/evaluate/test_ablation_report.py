"""``reactbench report ablation`` decides between editors (issue 33.5) and licences travel with the
edits (33.4): a real three-editor build with control variants, evaluated by the offline ``rules``
model, reported and exported through the executable. The expected figures are recomputed here
from the run's own Parquet files, not taken from the code under test."""

from __future__ import annotations

import html as htmllib
import json
import os
import re
import subprocess
import sys
import textwrap
from collections import defaultdict
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
CLI = str(Path(sys.executable).with_name("reactbench"))
PLUGIN = '''
from editors.classical import ClassicalEditor
from editors.licences import Licence


class NonCommercial(ClassicalEditor):
    """The classical editor under weights that forbid commercial use (a stand-in for FLUX.1 Kontext dev)."""

    name = "acme-nc"
    @classmethod
    def licence(cls, params):
        return Licence("CC-BY-NC-4.0", False, "test weights")
'''


def _plugin(site: Path) -> Path:
    """A third-party editor package with its entry point, as ``pip install`` would leave it."""
    (site / "acme_nc").mkdir(parents=True)
    (site / "acme_nc" / "__init__.py").write_text(textwrap.dedent(PLUGIN))
    dist = site / "acme_nc-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-nc\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[reactbench.editors]\nacme-nc = acme_nc:NonCommercial\n")
    return site


def _cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    proc = subprocess.run([CLI, *args], capture_output=True, text=True, env=env, cwd=ROOT, timeout=1200)
    assert proc.returncode == 0, f"reactbench {' '.join(args)}: exit {proc.returncode}\n{proc.stderr[-3000:]}"
    return proc


def _read(folder: Path, columns: list[str] | None = None) -> list[dict]:
    return [r for p in sorted(folder.glob("part-*.parquet")) for r in pq.read_table(p, columns=columns).to_pylist()]


@pytest.fixture(scope="module")
def ablation_run(sample_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    root = tmp_path_factory.mktemp("ablation")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(_plugin(root / "site"))])
    cfg = yaml.safe_load((ROOT / "configs" / "demo.yaml").read_text())
    cfg["sources"] = {"visual_genome": str(sample_dir / "visual_genome"), "fsc147": str(sample_dir / "fsc147")}
    cfg["mine"]["control"] = True
    cfg["editors"] = [
        {"name": "classical", "params": {"dilation_px": 5}},
        {"name": "classical", "label": "classical-ns", "params": {"dilation_px": 9, "inpaint_method": "ns"}},
        {"name": "acme-nc", "params": {"dilation_px": 5}},
    ]
    (root / "ablation.yaml").write_text(yaml.safe_dump(cfg))
    run = root / "run"
    _cli("build", "--config", str(root / "ablation.yaml"), "--run-dir", str(run), env=env)
    _cli("eval", "--run-dir", str(run), "--model", "rules:rules-v1", "--unverified", env=env)
    _cli("report", "ablation", "--run-dir", str(run), env=env)
    return run, env


def _table(page: str, heading: str) -> list[list[str]]:
    """The rows (cell texts) of the first table in the section titled ``heading``."""
    section = page.split(f"<h2>{heading}</h2>", 1)[1].split("</section>", 1)[0]
    body = section.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    return [
        [htmllib.unescape(c) for c in re.findall(r"<td>(.*?)</td>", row)]
        for row in re.findall(r"<tr>(.*?)</tr>", body)
    ]


def _funnel_from_files(run: Path) -> dict[str, list[int]]:
    """Per editor: instructions, supported, edited, verified, with questions, from the Parquet files."""
    instructions = [
        r
        for r in _read(run / "instruct" / "instructions")
        if r["status"] == "applicable" and r["task"] != "dense_counting"
    ]
    refused: dict[str, int] = defaultdict(int)
    for r in _read(run / "edit" / "rejects"):
        if r["reason"] in ("unsupported_edit", "unsupported_edit_type"):
            refused[json.loads(r["payload_json"])["editor"]] += 1
    with_q = {r["edit_id"] for r in _read(run / "qa" / "questions", ["edit_id"])}
    out: dict[str, list[int]] = {}
    for e in _read(run / "edit" / "edits", ["id", "editor", "status"]):
        if e["editor"] == "none":
            continue
        f = out.setdefault(e["editor"], [len(instructions), len(instructions) - refused[e["editor"]], 0, 0, 0])
        f[2] += 1
        f[3] += e["status"] == "ok"
        f[4] += e["status"] == "ok" and e["id"] in with_q
    return out


def test_report_names_an_editor_from_its_yield_cost_and_induction(ablation_run):
    run, _ = ablation_run
    page = (run / "reports" / "ablation.html").read_text()
    # unedited dense counting is no editor: not a row anywhere, counted apart
    assert "<td>none</td>" not in page
    unedited = sum(1 for e in _read(run / "edit" / "edits", ["editor"]) if e["editor"] == "none")
    assert unedited and f"{unedited} item(s) of tasks that edit nothing" in page
    # the yield funnel per editor, recomputed from the files
    funnel = {r[0]: r for r in _table(page, "Yield: from instruction to kept item")}
    expected = _funnel_from_files(run)
    assert set(funnel) == set(expected) == {"classical", "classical-ns", "acme-nc"}
    for ed, (n, supported, edited, verified, with_q) in expected.items():
        row = funnel[ed]
        assert [int(row[2]), int(row[3]), int(row[4]), int(row[6]), int(row[7])] == [
            n,
            supported,
            edited,
            verified,
            with_q,
        ], ed
        assert row[8] == "not reviewed" and float(row[9]) == pytest.approx(100.0 * with_q / n, abs=0.06)
    # seconds per edit: the edit manifest's measured record, shown to 3 significant figures (was "0.0")
    manifest = json.loads((run / "edit" / "_manifest.json").read_text())
    secs: dict[str, list[float]] = defaultdict(lambda: [0.0, 0])
    for rec in manifest["extra"]["timings"].values():
        secs[rec["key"]][0] += rec["seconds"]
        secs[rec["key"]][1] += rec["items"]
    cost = {r[0]: r for r in _table(page, "Cost per kept item")}
    for ed, (s, n) in secs.items():
        assert cost[ed][1] == f"{s / n:.3g}" and cost[ed][1] != "0" and "measured" in cost[ed][2]
        kept = expected[ed][4]
        assert float(cost[ed][4].replace(",", "")) == pytest.approx(s / n * expected[ed][2] / kept, rel=6e-3)
    # induction: targeted minus control accuracy of the rules model, on the tasks with control items
    answers = _read(next((run / "eval").iterdir()) / "answers")
    induction = {r[0]: r for r in _table(page, "Hallucination induction: targeted minus control accuracy")}
    for ed in expected:
        mine = [a for a in answers if a["editor"] == ed and a["question_set"] == "main" and a["status"] != "error"]
        controlled = {a["task"] for a in mine if a["variant"] == "control"}
        picked = [a for a in mine if a["task"] in controlled]
        row = induction[ed]
        assert (
            row[1] == "rules-rules-v1-unverified [ORACLE (reads the annotations, not the image)]"
        )  # labelled an oracle
        assert int(row[2]) == len({a["edit_id"] for a in picked if a["variant"] != "control"})
        assert int(row[3]) == len({a["edit_id"] for a in picked if a["variant"] == "control"})
        if int(row[2]) and int(row[3]):
            lo, hi = (float(x) for x in row[7].split(" to "))
            assert lo <= float(row[6]) <= hi
        else:
            assert row[6] == row[7] == "n/a"
    # the verdict names the first editor of its ranking (or says why none could be ranked)
    verdict = htmllib.unescape(re.search(r'<p class="verdict"><b>Verdict:</b> (.*?)</p>', page).group(1))
    if (
        "<h2>Which editor</h2><p" in page
        and "<table" in page.split("<h2>Which editor</h2>", 1)[1].split("</section>", 1)[0]
    ):
        ranked = _table(page, "Which editor")
        if float(ranked[0][4].replace(",", "")) > 0:
            assert verdict.split(" ", 1)[0] == ranked[0][0]
            assert verdict.startswith(
                f"{ranked[0][0]} gives the most verified (not reviewed yet), hallucination-inducing items per device hour"
            )
            assert "95% interval" in verdict and (
                "a real difference" in verdict or "not distinguishable" in verdict or "No other editor" in verdict
            )
        else:  # no editor induces: the most kept items per device hour decides
            assert verdict.startswith("No editor's verified (not reviewed yet) edits induce hallucination measurably")
            fastest = max(ranked, key=lambda r: float(r[1].replace(",", "")))[0]
            assert f"items per device hour alone {fastest} leads" in verdict
    else:
        assert "could not be measured" in verdict


def test_non_commercial_editor_is_flagged_in_the_report_and_the_card(ablation_run, tmp_path):
    run, env = ablation_run
    page = (run / "reports" / "ablation.html").read_text()
    flagged = re.findall(r'<p class="banner" role="alert">Licence: (.*?)</p>', page)
    assert (
        len(flagged) == 1 and "acme-nc" in flagged[0] and "CC-BY-NC-4.0" in flagged[0] and "commercial" in flagged[0]
    )
    licences = {r[0]: r[1] for r in _table(page, "Yield: from instruction to kept item")}
    assert licences == {
        "acme-nc": "CC-BY-NC-4.0 (non-commercial)",
        "classical": "none (no model weights)",
        "classical-ns": "none (no model weights)",
    }
    _cli("export", "--run-dir", str(run), "--out", str(tmp_path / "release"), "--unverified", env=env)
    card = (tmp_path / "release" / "README.md").read_text()
    released = defaultdict(set)
    for p in (tmp_path / "release" / "data").rglob("*.parquet"):
        for r in pq.read_table(p, columns=["editor", "edit_id"]).to_pylist():
            released[r["editor"]].add(r["edit_id"])
    head, editors = card.split("## Tasks", 1)[0], card.split("## Editors", 1)[1].split("## Models", 1)[0]
    assert (
        "EDITOR LICENCES" in head
        and f"{len(released['acme-nc'])} item(s) edited by acme-nc under CC-BY-NC-4.0" in head
    )
    rows = {
        line.split("|")[1].strip(): [c.strip() for c in line.split("|")[1:-1]]
        for line in editors.splitlines()
        if line.startswith("| ") and "---" not in line
    }
    assert rows["acme-nc"][5] == "CC-BY-NC-4.0 (non-commercial)" and rows["classical"][5] == "none (no model weights)"
    assert all(int(rows[ed][2]) == len(ids) for ed, ids in released.items() if ed != "none")
    assert "none" not in rows and f"{len(released['none'])} item(s) of tasks that edit nothing" in editors


def test_licence_table_and_declarations():
    from editors.licences import UNKNOWN
    from editors.registry import BUILTIN, editor_licence

    for name in BUILTIN:  # every built-in editor, at its default weights, says whose terms its images carry
        assert editor_licence(name).commercial_use is not None, name
    assert (
        editor_licence("qwen-image-edit").name == "Apache-2.0"
        and editor_licence("qwen-image-edit").commercial_use is True
    )
    assert editor_licence("diffusers-edit", {"model": "black-forest-labs/FLUX.1-Kontext-dev"}).commercial_use is False
    unknown = editor_licence("no-such-editor")
    assert unknown is UNKNOWN
    assert unknown.commercial_use is None and "unknown" in unknown.label


def test_reviewed_build_counts_human_acceptance(ablation_run, tmp_path):
    """A reviewer accepts every classical edit (and its questions) and rejects every other one; after `review export`
    the funnel's accepted column is exactly what was accepted, and the verdict speaks of accepted items."""
    import shutil

    from storage.fs import RunFS
    from tasks.review.accounts import add_user, get_user
    from tasks.review.queue import ReviewQueue
    from tasks.review.stage import default_db_url

    src, env = ablation_run
    run = tmp_path / "run"
    shutil.copytree(src, run)
    q = ReviewQueue.open(default_db_url(RunFS.open(str(run))))
    editor_of = {i.id: i.editor for i in q.items()}
    add_user(q.engine, "ann", "annotator")
    ann = get_user(q.engine, "ann")
    accepted: dict[str, int] = defaultdict(int)
    while ids := q.next_items(ann, "edit", want=1):
        if editor_of[ids[0]] == "classical":
            q.decide(ann, ids[0], "accept")
            accepted["classical"] += 1
        else:
            q.decide(ann, ids[0], "reject", ["artifacts"])
    while ids := q.next_items(ann, "qa", want=1):  # an edit is verified once its questions are accepted too
        assert editor_of[ids[0]] in ("classical", "none")  # dense counting's questions need no edit review
        q.decide(ann, ids[0], "accept")
    q.close()
    assert accepted["classical"] > 0
    _cli("review", "export", "--run-dir", str(run), env=env)
    _cli("report", "ablation", "--run-dir", str(run), env=env)
    page = (run / "reports" / "ablation.html").read_text()
    funnel = {r[0]: r for r in _table(page, "Yield: from instruction to kept item")}
    assert {ed: int(r[8]) for ed, r in funnel.items()} == {
        "classical": accepted["classical"],
        "classical-ns": 0,
        "acme-nc": 0,
    }
    assert float(funnel["classical"][9]) == pytest.approx(
        100.0 * accepted["classical"] / int(funnel["classical"][2]), abs=0.06
    )
    assert "not reviewed" not in page.split("<h2>Which editor</h2>", 1)[1].split("</section>", 1)[0]
    verdict = htmllib.unescape(re.search(r'<p class="verdict"><b>Verdict:</b> (.*?)</p>', page).group(1))
    assert "classical-ns" not in verdict and "acme-nc" not in verdict  # kept nothing: never ranked
    assert re.match(
        r"(classical gives the most accepted|No editor's accepted edits induce hallucination measurably here .* alone classical leads)",
        verdict,
    )
    assert not re.findall(r'<p class="banner" role="alert">Licence:', page)  # acme-nc's images are all rejected


def test_induction_and_verdict_figures_from_known_answers(tmp_path, eval_config):
    """Two editors, six targeted and six control erasures each, answered by a scripted model that
    is always right on control items, always wrong on classical's targeted ones and wrong on every
    other one of sam-lama's, always right on qwen-image-edit's (which recorded no timing: the
    preflight's estimate stands in): the report (through the executable) shows the differences,
    the per-hour figures and a verdict these numbers imply."""
    from eval_helpers import ScriptedReplies, build_rows

    from flows.config import BuildConfig
    from prompts.clients.rules import RulesClient
    from storage.fs import RunFS
    from storage.hashing import stable_id
    from storage.image_store import ImageStore
    from storage.parquet_io import table_from_rows, write_table
    from storage.schemas import EDITS, QUESTIONS
    from tasks.engine.prompt_hooks import rules_table
    from tasks.release.evaluate.run import EvalRequest, run_eval
    from tasks.release.evaluate.stage import EvalClients

    run = RunFS.open(str(tmp_path / "run"))
    store = ImageStore(run)
    edits, questions = [], []
    for ed, seconds in (("classical", 0.5), ("sam-lama", 1.5), ("qwen-image-edit", None)):  # qwen: no timing recorded
        base, qs = build_rows(store, ed, seconds=seconds)
        erase = base[0]
        q1 = next(q for q in qs if q["edit_id"] == erase["id"] and q["qid"] == "Q1" and q["question_set"] == "main")
        for variant in ("targeted", "control"):
            for k in range(6):
                e = dict(
                    erase, id=f"{erase['id']}-{variant}-{k}", instruction_id=f"i-{ed}-{variant}-{k}", variant=variant
                )
                edits.append(e)
                questions.append(
                    dict(
                        q1,
                        id=stable_id(e["id"], "Q1"),
                        edit_id=e["id"],
                        variant=variant,
                        text=f"{q1['text']} ({e['id']})",
                    )
                )
    write_table(run, "edit/edits/part-00000.parquet", table_from_rows(EDITS, edits))
    write_table(run, "qa/questions/part-00000.parquet", table_from_rows(QUESTIONS, questions))
    run.write_text_atomic("config.yaml", "version: 1\n")

    def reply(q: dict) -> str:
        k = int(q["edit_id"].rsplit("-", 1)[1])
        wrong = q["variant"] == "targeted" and (
            q["editor"] == "classical" or (q["editor"] == "sam-lama" and k % 2 == 0)
        )
        return ("Yes" if q["gold"] == "No" else "No") if wrong else q["gold"]

    image_bytes = {p: run.read_bytes(p) for q in questions for p in q["images"]}
    config = BuildConfig.model_validate(
        {"run": {"shard_size": 64, "workers": 1}, "eval": {"modes": ["standard"], "subcauses": False, "spans": False}}
    )
    run_eval(
        run,
        config,
        EvalRequest("scripted:known", unverified=True),
        clients=EvalClients(ScriptedReplies("known", questions, image_bytes, reply), RulesClient(rules=rules_table())),
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    env["PYTHONPATH"] = str(ROOT)
    _cli("report", "ablation", "--run-dir", run.root, env=env)
    page = (Path(run.root) / "reports" / "ablation.html").read_text()
    induction = {r[0]: r for r in _table(page, "Hallucination induction: targeted minus control accuracy")}
    assert induction["classical"][2:] == ["6", "6", "0.0", "100.0", "-100.0", "-100.0 to -100.0"]
    assert induction["sam-lama"][2:6] == ["6", "6", "50.0", "100.0"] and induction["sam-lama"][6] == "-50.0"
    lo, hi = (float(x) for x in induction["sam-lama"][7].split(" to "))
    assert -100.0 <= lo < -50.0 < hi <= 0.0
    # 12 kept items each; classical spent 12 x 0.5 s (7,200 items per hour, all inducing), sam-lama 12 x 1.5 s (2,400, half)
    cost = {r[0]: r for r in _table(page, "Cost per kept item")}
    assert [cost["classical"][1], cost["classical"][5], cost["sam-lama"][1], cost["sam-lama"][5]] == [
        "0.5",
        "7,200",
        "1.5",
        "2,400",
    ]
    # nothing measured for qwen-image-edit: the preflight's estimate, labelled, fills its seconds
    assert (
        cost["qwen-image-edit"][2].startswith("estimate (formula on RTX A6000")
        and "nothing measured" in cost["qwen-image-edit"][2]
    )
    assert float(cost["qwen-image-edit"][5].replace(",", "")) == pytest.approx(
        3600.0 / float(cost["qwen-image-edit"][1]), rel=1e-2
    )
    assert induction["qwen-image-edit"][6] == "+0.0"
    ranked = _table(page, "Which editor")
    assert [(r[0], r[4]) for r in ranked] == [("classical", "7,200"), ("sam-lama", "1,200"), ("qwen-image-edit", "0")]
    verdict = htmllib.unescape(re.search(r'<p class="verdict"><b>Verdict:</b> (.*?)</p>', page).group(1))
    assert verdict.startswith(
        "classical gives the most verified (not reviewed yet), hallucination-inducing items per device hour: 7,200"
    )
    assert "Its lead over sam-lama (1,200) is 6,000" in verdict and verdict.endswith("a real difference.")
