"""``reactbench reuse stats`` and ``prune`` on a store holding packs and files of the previous layout."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from flows.cli import app
from storage.fs import RunFS
from storage.reuse_store import Entry, ReuseStore, entry_checksum
from tasks.engine.reuse import ItemReuse


def test_stats_counts_entries_in_packs_and_old_files_and_prune_empties_both(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    run = RunFS.open(str(tmp_path / "run"))
    keys = [f"{i:02x}" * 32 for i in range(7)]
    for shard in (keys[:3], keys[3:5]):  # two shards: two packs
        ItemReuse(ReuseStore.open(run, str(shared)), run, "eval", "eval-answer").map(
            shard, lambda misses: [Entry({"n": i}) for i in misses]
        )
    store = ReuseStore.open(run, str(shared))
    for key in keys[5:]:  # as the previous layout stored them
        doc = {
            "component": "instruct",
            "key": key,
            "value": 1,
            "images": [],
            "created_at": "2026-01-01T00:00:00+00:00",
            "used_at": "2026-01-01T00:00:00+00:00",
        }
        store.root.write_text_atomic(
            store.legacy_rel("instruct", key), json.dumps({**doc, "sha256": entry_checksum(doc)})
        )

    text = invoke("stats", "--reuse-dir", str(shared))
    assert "7 entries in 2 pack(s) and 2 file(s) of the previous layout eval-answer: 5 instruct: 2" in text, text

    kept = invoke("prune", "--keep-days", "30", "--reuse-dir", str(shared))
    assert "removed 2 entries, kept 5" in kept, kept  # the old files were last used long ago
    invoke("prune", "--keep-days", "0", "--reuse-dir", str(shared))
    text = invoke("stats", "--reuse-dir", str(shared))
    assert "0 entries in 0 pack(s) eval-answer" not in text and "0 entries in 0 pack(s)" in text, text


def invoke(*argv: str) -> str:
    """``reactbench reuse ...``'s output as one line (the console wraps it)."""
    out = CliRunner().invoke(app, ["reuse", *argv])
    assert out.exit_code == 0, out.output
    return " ".join(out.output.split())
