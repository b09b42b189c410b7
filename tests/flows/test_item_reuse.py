"""Per-item reuse (issue 18): rebuilds after a config or data change call the editor and the
model only for new or changed items, and still equal a fresh build byte for byte.

Real stages on the generated sample (rules backend, classical editors); editor and model calls
are counted by wrapping ``editors.runtime.run_batch`` and ``RulesClient.complete`` (the real
functions still run).
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from flows.config import config_from_dict
from flows.runtime import run_pipeline

STAGES = ["mine", "instruct", "edit", "qa"]
BOX = {"name": "classical", "label": "box", "params": {"mask_method": "box"}}
ELLIPSE = {"name": "classical", "label": "ellipse", "params": {"mask_method": "ellipse"}}


class Calls:
    def __init__(self) -> None:
        self.editor = 0
        self.model = 0

    def take(self) -> tuple[int, int]:
        out = (self.editor, self.model)
        self.editor = self.model = 0
        return out


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Calls:
    import editors.runtime as runtime
    from prompts.clients.rules import RulesClient

    counter = Calls()
    run_batch, complete = runtime.run_batch, RulesClient.complete

    def counted_run_batch(editor: Any, requests: Any) -> Any:
        counter.editor += len(requests)
        return run_batch(editor, requests)

    def counted_complete(client: Any, requests: Any) -> Any:
        counter.model += len(requests)
        return complete(client, requests)

    monkeypatch.setattr(runtime, "run_batch", counted_run_batch)
    monkeypatch.setattr(RulesClient, "complete", counted_complete)
    return counter


def make_config(data: Path, editors: list[dict[str, Any]], images_per_pair: int = 2, **run: Any) -> Any:
    return config_from_dict(
        {
            "run": {"seed": 0, "shard_size": 8, "workers": 2, **run},
            "sources": {"visual_genome": str(data / "visual_genome"), "fsc147": str(data / "fsc147")},
            "mine": {
                "tasks": ["relational_erasure", "dense_counting"],
                "relational_erasure": {
                    "n_min": 20,
                    "theta": 0.2,
                    "area_range": [0.003, 0.5],
                    "images_per_pair": images_per_pair,
                },
                "dense_counting": {"count_range": [5, 150], "bins": [5, 10, 25, 50, 100, 150], "per_bin": 1},
            },
            "mllm": {"backend": "rules", "model": "rules-v1"},
            "editors": editors,
        }
    )


def build(cfg: Any, run_dir: Path, **kw: Any) -> dict[str, Any]:
    return {s.stage: s for s in run_pipeline(cfg, str(run_dir), STAGES, orchestrator="local", **kw).summaries}


def snapshot(run_dir: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(run_dir)): p.read_bytes() for s in STAGES for p in sorted((run_dir / s).rglob("*.parquet"))
    }


def to_edit(run_dir: Path) -> int:
    from storage import schemas
    from storage.fs import RunFS
    from storage.stage_store import read_artifact
    from tasks.stages.edit import needs_edit

    rows = read_artifact(RunFS.open(str(run_dir)), "instruct", "instructions", schemas.INSTRUCTIONS).to_pylist()
    return sum(1 for r in rows if needs_edit(r))


def edit_rows(run_dir: Path, editor: str) -> list[dict[str, Any]]:
    from storage import schemas
    from storage.fs import RunFS
    from storage.stage_store import read_artifact

    rows = read_artifact(RunFS.open(str(run_dir)), "edit", "edits", schemas.EDITS).to_pylist()
    return sorted((r for r in rows if r["editor"] == editor), key=lambda r: r["id"])


@pytest.fixture
def data(tmp_path: Path) -> Path:
    from miners.sample_data import generate_sample

    out = tmp_path / "data"
    generate_sample(out, seed=0)
    return out


def test_adding_an_editor_edits_only_its_items_and_equals_a_fresh_build(
    data: Path, tmp_path: Path, calls: Calls
) -> None:
    run = tmp_path / "run"
    build(make_config(data, [BOX]), run)
    first, _ = calls.take()
    n = to_edit(run)
    assert n > 0 and first == n

    summaries = build(make_config(data, [BOX, ELLIPSE]), run)
    editor_calls, model_requests = calls.take()
    assert editor_calls == n  # exactly the new editor's items
    qa = summaries["qa"]
    assert qa.items_reused > 0 and 0 < model_requests <= qa.items_computed  # only the new editor's edits are analysed
    edit = summaries["edit"]
    assert edit.items_computed == n and edit.items_reused == edit.rows_in - n

    fresh = tmp_path / "fresh"
    build(make_config(data, [BOX, ELLIPSE]), fresh)
    assert snapshot(run) == snapshot(fresh)


def test_changed_parameters_recompute_only_that_editor(data: Path, tmp_path: Path, calls: Calls) -> None:
    run = tmp_path / "run"
    build(make_config(data, [BOX, ELLIPSE]), run)
    calls.take()
    before = edit_rows(run, "box")
    changed = {**ELLIPSE, "params": {"mask_method": "ellipse", "inpaint_radius": 3}}
    build(make_config(data, [BOX, changed]), run)
    editor_calls, _ = calls.take()
    assert editor_calls == to_edit(run)
    assert edit_rows(run, "box") == before


def test_extended_sources_compute_only_new_items_and_equal_a_fresh_build(
    data: Path, tmp_path: Path, calls: Calls
) -> None:
    from miners.sample_data import N_VG_IMAGES, generate_sample

    run = tmp_path / "run"
    build(make_config(data, [BOX], images_per_pair=6), run)
    calls.take()
    before = snapshot(run)
    generate_sample(data, seed=0, vg_images=N_VG_IMAGES + N_VG_IMAGES // 10)  # same folder, 10% more images
    summaries = build(make_config(data, [BOX], images_per_pair=6), run)
    extend_calls, _ = calls.take()
    after = snapshot(run)
    # the mined candidates changed (new images, and statistics every row carries) ...
    assert [k for k in after if k.startswith("mine/candidates")] and any(
        after[k] != before.get(k) for k in after if k.startswith("mine/")
    )
    # ... yet most edits came from the store
    assert summaries["edit"].items_reused > summaries["edit"].items_computed
    assert extend_calls <= summaries["edit"].items_computed  # computed also counts unedited counting rows

    fresh = tmp_path / "fresh"
    build(make_config(data, [BOX], images_per_pair=6), fresh)
    fresh_calls, _ = calls.take()
    assert snapshot(run) == snapshot(fresh)
    assert extend_calls < fresh_calls / 2, (extend_calls, fresh_calls)


def age_entries(store: Path, component: str, used_at: str) -> int:
    """Mark the component's entries (in every pack) as last used at ``used_at``, sealed again."""
    from storage.reuse_store import Pack, encode_pack, entry_checksum

    n = 0
    for path in store.rglob("*.pack"):
        pack = Pack.parse(str(path), path.read_bytes())
        docs = {key: json.loads(raw) for key, raw in pack.lines.items()}
        for doc in docs.values():
            if doc["component"] == component:
                doc["used_at"] = used_at
                doc["sha256"] = entry_checksum(doc)
                n += 1
        path.write_bytes(
            encode_pack(
                next(iter(docs.values()))["component"], {k: json.dumps(d, sort_keys=True) for k, d in docs.items()}
            )
        )
    return n


def test_shared_reuse_dir_serves_two_run_directories_and_prunes(data: Path, tmp_path: Path, calls: Calls) -> None:
    from flows.cli import app
    from storage.fs import RunFS
    from storage.reuse_store import ReuseStore

    shared = tmp_path / "shared-reuse"
    cfg = make_config(data, [BOX], reuse_dir=str(shared))
    one, two = tmp_path / "one", tmp_path / "two"
    build(cfg, one)
    first_editor, first_model = calls.take()
    assert first_editor > 0 and first_model > 0
    assert (shared / "packs").is_dir() and (shared / "images").is_dir() and not (one / "reuse").exists()

    summaries = build(cfg, two)  # a new run directory: every item comes from the shared store
    assert calls.take() == (0, 0)
    assert (
        summaries["edit"].items_computed == 0
        and summaries["instruct"].items_computed == 0
        and summaries["qa"].items_computed == 0
    )
    assert snapshot(one) == snapshot(two)
    for row in edit_rows(two, "box"):
        assert (two / row["edited_image"]).exists() and (two / row["original_image"]).exists()

    store = ReuseStore.open(RunFS.open(str(two)), str(shared))
    n = sum(1 for _ in store.entries())
    runner = CliRunner()
    kept = runner.invoke(app, ["reuse", "prune", "--keep-days", "1", "--reuse-dir", str(shared)])
    assert kept.exit_code == 0, kept.output
    assert sum(1 for _ in store.entries()) == n
    # entries last used 3 days ago go with --keep-days 2, and so do the images only they used
    old = (dt.datetime.now(dt.UTC) - dt.timedelta(days=3)).isoformat(timespec="seconds")
    assert age_entries(shared, "edit:box", old) > 0
    pruned = runner.invoke(app, ["reuse", "prune", "--keep-days", "2", "--reuse-dir", str(shared)])
    assert pruned.exit_code == 0, pruned.output
    left = [doc for _, doc in store.entries()]
    assert left and all(d["component"] != "edit:box" for d in left)
    edited = {r["edited_image"] for r in edit_rows(two, "box") if r["edited_image"] != r["original_image"]}
    assert edited and not any((shared / rel).exists() for rel in edited)
    # the run directories' own images are never pruned, and a rebuild recomputes the pruned edits
    assert all((two / rel).exists() for rel in edited)
    three = tmp_path / "three"
    build(cfg, three)
    assert calls.take()[0] == to_edit(three)
    assert snapshot(three) == snapshot(one)


def test_force_items_recomputes_one_editor_and_force_everything(data: Path, tmp_path: Path, calls: Calls) -> None:
    run = tmp_path / "run"
    cfg = make_config(data, [BOX, ELLIPSE])
    build(cfg, run)
    calls.take()
    before = snapshot(run)
    summaries = build(cfg, run, options={"force_items": ["editor=ellipse"]})
    n = to_edit(run)
    assert calls.take()[0] == n
    assert summaries["edit"].items_computed == n and summaries["instruct"].shards_run == 0
    assert snapshot(run) == before  # deterministic editors: recomputing gives the same bytes

    build(cfg, run, force=True)
    editor_calls, model_requests = calls.take()
    assert editor_calls == 2 * n and model_requests > 0
    assert snapshot(run) == before


def test_reuse_survives_stage_reset(data: Path, tmp_path: Path, calls: Calls) -> None:
    from flows.stages import get_stage
    from storage.fs import RunFS

    run = tmp_path / "run"
    cfg = make_config(data, [BOX])
    build(cfg, run)
    calls.take()
    get_stage("edit").store(type("Ctx", (), {"run": RunFS.open(str(run))})()).reset()  # type: ignore[arg-type]
    assert not (run / "edit").exists() and list((run / "reuse" / "packs").rglob("*.pack"))
    summaries = build(cfg, run)
    assert calls.take()[0] == 0 and summaries["edit"].items_reused == summaries["edit"].rows_in


def test_bad_force_items_are_named(tmp_path: Path, data: Path) -> None:
    from flows.cli import app

    cfg = tmp_path / "c.yaml"
    cfg.write_text(json.dumps(make_config(data, [BOX]).model_dump(mode="json")))
    (tmp_path / "r").mkdir()  # a run directory that does not exist would be refused first
    runner = CliRunner()
    out = runner.invoke(
        app,
        [
            "edit",
            "--config",
            str(cfg),
            "--run-dir",
            str(tmp_path / "r"),
            "--force-items",
            "editor=nope",
            "--orchestrator",
            "local",
        ],
    )
    assert out.exit_code == 2 and "editor=nope" in out.output and "box" in out.output
    out = runner.invoke(
        app,
        [
            "edit",
            "--config",
            str(cfg),
            "--run-dir",
            str(tmp_path / "r"),
            "--force-items",
            "everything",
            "--orchestrator",
            "local",
        ],
    )
    assert out.exit_code == 2 and "editor=KEY" in out.output


def test_a_replaced_source_image_gets_a_new_digest_in_the_same_process(tmp_path: Path) -> None:
    """Source digests of local files are kept per process (the preflight estimate and the edit
    stage hash the same images), keyed by the file's size, inode and times: a file replaced
    between two reads, even by one of the same size, is hashed again, so its edit is not reused."""
    import os

    from tasks.stages.edit import source_digest

    path = tmp_path / "source.jpg"
    path.write_bytes(b"first image bytes")
    first = source_digest(str(path))
    assert first is not None and source_digest(f"file://{path}") == first
    replacement = tmp_path / "replacement.jpg"
    replacement.write_bytes(b"other image bytes")  # same size
    os.replace(replacement, path)
    assert source_digest(str(path)) not in (None, first)
    path.write_bytes(b"third image bytes")  # rewritten in place, same size
    third = source_digest(str(path))
    assert third not in (None, first) and source_digest(str(path)) == third
    path.unlink()
    assert source_digest(str(path)) is None
