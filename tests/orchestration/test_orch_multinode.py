"""One edit stage across Ray nodes with a node killed mid-edit (issue 24.3), the run on S3.

Ray's multi-node test cluster on this machine (a head and two worker nodes, one declared GPU
each), the run directory on the session's S3 server (moto), the workers reporting to the
session's Prefect server: the shard of the killed node reruns on the other, and the edit
artifacts equal, byte for byte, those of a single-node (thread) run of the same upstream.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from multinode_build import edit_across_nodes, small_edit_config

pytestmark = pytest.mark.slow


def test_a_killed_node_reruns_its_shard_and_the_edits_equal_a_single_node_run(
    s3_server, prefect_server, sample_dir: Path, tmp_path: Path
) -> None:
    config = tmp_path / "multinode.yaml"
    config.write_text(yaml.safe_dump(small_edit_config(str(sample_dir), str(tmp_path / "queue.sqlite"))))
    bucket = s3_server.bucket()
    result = edit_across_nodes(str(config), f"s3://{bucket}/single", f"s3://{bucket}/multi", prefect_server.url, gpu_nodes=2)
    assert result.node_killed and result.rerun_shards >= 1, result
    assert result.shards > 2 and result.edits > 0, result
    assert result.identical_to_single_node, result
