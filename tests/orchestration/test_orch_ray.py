"""The edit stage on a local Ray cluster through prefect-ray: same artifacts as the thread runner."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest


def _digest_tree(root: Path, *folders: str) -> dict[str, str]:
    out = {}
    for folder in folders:
        for p in sorted((root / folder).rglob("*")):
            if p.is_file() and not p.name.startswith(".tmp-"):
                out[str(p.relative_to(root))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def test_edit_stage_on_ray_matches_thread_runner(
    tmp_path: Path, prefect_api: Any, ray_cluster: None, sample_config: Path, upstream_run: Path
) -> None:
    from flows.prefect_flows import stage_flow

    threads_dir, ray_dir = tmp_path / "threads", tmp_path / "ray"
    shutil.copytree(upstream_run, threads_dir)
    shutil.copytree(upstream_run, ray_dir)

    by_threads = stage_flow(stage_name="edit", config=str(sample_config), run_dir=str(threads_dir))
    by_ray = stage_flow(
        stage_name="edit",
        config=str(sample_config),
        run_dir=str(ray_dir),
        overrides={"orchestration.task_runner": "ray", "orchestration.gpus_per_edit_task": 1},
    )
    assert by_threads.shards_run == by_ray.shards_run > 1
    assert (by_threads.rows_out, by_threads.reject_reasons) == (by_ray.rows_out, by_ray.reject_reasons)
    assert by_ray.rows_out["edits"] > 0
    edits_threads = _digest_tree(threads_dir, "edit/edits", "edit/rejects")
    assert edits_threads and edits_threads == _digest_tree(ray_dir, "edit/edits", "edit/rejects")
    assert _digest_tree(threads_dir, "images") == _digest_tree(ray_dir, "images")
    fp = [
        json.loads((d / "edit" / "_manifest.json").read_text())["output_fingerprint"] for d in (threads_dir, ray_dir)
    ]
    assert fp[0] == fp[1]


def test_ray_assigns_one_gpu_per_gpu_shard(
    tmp_path: Path, prefect_api: Any, ray_cluster: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``gpus_per_edit_task: 1``: Ray reserves a (logical) GPU per shard and the shard sees it as cuda:0."""
    import flows.stages
    from flows.config import BuildConfig
    from flows.prefect_flows import stage_flow

    monkeypatch.setitem(flows.stages._STAGE_CLASSES, "gpucube", "orch_stages:GpuCubeStage")
    cfg = BuildConfig.model_validate(
        {
            "run": {"shard_size": 4},
            "orchestration": {"task_runner": "ray", "gpus_per_edit_task": 1, "retry_delay_s": 0},
        }
    ).model_dump(mode="json")
    summary = stage_flow(stage_name="gpucube", config=cfg, run_dir=str(tmp_path / "g"), options={"n": 16})
    assert summary.shards_run == 4
    rows = [
        r
        for p in sorted((tmp_path / "g" / "gpucube" / "cubes").glob("*.parquet"))
        for r in pq.read_table(p).to_pylist()
    ]
    assert {r["device"] for r in rows} == {"cuda:0"}
    assert {r["visible"] for r in rows} <= {"0", "1"} and len({r["visible"] for r in rows}) >= 1


def test_model_calls_made_on_ray_workers_reach_the_manifest_and_the_exit_status(
    tmp_path: Path, prefect_api: Any, ray_cluster: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Shards on Ray ask a fake model server that fails every third request: the calls happen in
    the workers, yet the stage manifest's ``model_calls`` and this process's retry report (the
    exit status's source) count exactly the requests the server saw (they used to count none)."""
    from dummy_server import DummyServer, Reply

    import flows.stages
    from flows.config import BuildConfig
    from flows.prefect_flows import stage_flow
    from prompts.clients import call_stats

    monkeypatch.setitem(flows.stages._STAGE_CLASSES, "askcube", "orch_stages:AskingCubeStage")
    call_stats.reset()
    server = DummyServer(lambda body: Reply("Yes"), models=["m"], fail_every=3)
    with server as url:
        cfg = BuildConfig.model_validate(
            {
                "run": {"shard_size": 6},
                "orchestration": {"task_runner": "ray", "retry_delay_s": 0},
                "mllm": {
                    "backend": "openai",
                    "model": "m",
                    "base_url": url,
                    "max_retries": 3,
                    "retry_base_s": 0.01,
                    "retry_max_s": 0.05,
                    "breaker_failure_rate": 0.5,
                    "max_error_rate": 0.2,
                },
            }
        ).model_dump(mode="json")
        summary = stage_flow(stage_name="askcube", config=cfg, run_dir=str(tmp_path / "a"), options={"n": 18})
    assert summary.shards_run == 3
    calls = json.loads((tmp_path / "a" / "askcube" / "_manifest.json").read_text())["model_calls"]
    assert [(c["url"], c["model"], c["calls"]) for c in calls] == [(url, "m", 18)]
    seen = calls[0]
    assert seen["requests"] == server.chat_requests > 18  # every 3rd request fails and is asked again
    assert seen["failed_requests"] == seen["retried"] == server.chat_requests // 3
    assert seen["requests"] - seen["failed_requests"] == 18
    assert not any((tmp_path / "a" / "askcube" / "_calls").glob("*/*"))  # collected, then dropped
    lines, over = call_stats.retry_report()
    assert (
        over and len(lines) == 1 and f"{url} (model 'm'): {seen['failed_requests']} of {seen['requests']}" in lines[0]
    )
    call_stats.reset()
