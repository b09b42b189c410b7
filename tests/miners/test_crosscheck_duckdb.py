"""An independent second implementation (plain json + SQL in duckdb) agrees exactly with the miner.

The SQL side shares only the name normaliser (tested on its own in test_canonical.py); it
re-implements validity, C(A), C(A∩B), P(B|A), P(A|B), the keep rule, C(o), C(o∩a), P(a|o)
and ranks from the raw files of the sample.
"""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest
from mining_helpers import mine_config

from miners.candidates import VG
from miners.mine import mine_visual_genome, scan_visual_genome
from storage.annotation.names import basic_attribute, basic_name, basic_predicate
from tasks.builtin_tasks.relational_erasure.miner import class_image_counts
from tasks.stages.mine import task_miners

N_MIN, THETA, TOL = 20, 0.2, 0.02


def _num(v):
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _name(o):
    return o["names"][0] if o.get("names") else o.get("name")


def _tables(root: Path) -> dict[str, pa.Table]:
    images = json.loads((root / "image_data.json").read_text())
    img = pa.Table.from_pylist(
        [{"image_id": i["image_id"], "img_w": float(i["width"]), "img_h": float(i["height"])} for i in images]
    )
    objs, insts, anns, rels = [], [], [], []
    for e in json.loads((root / "objects.json").read_text()):
        for o in e["objects"]:
            if not isinstance(o.get("x"), (int, float)):
                continue  # unparseable entry: a reject on both sides, not a row
            objs.append(
                {
                    "seq": len(objs),
                    "img": e["image_id"],
                    "oid": o.get("object_id"),
                    "name": basic_name(_name(o) or ""),
                    "x": _num(o.get("x")),
                    "y": _num(o.get("y")),
                    "w": _num(o.get("w")),
                    "h": _num(o.get("h")),
                }
            )
    for e in json.loads((root / "attributes.json").read_text()):
        for o in e["attributes"]:
            seq = len(insts)
            insts.append(
                {
                    "seq": seq,
                    "img": e["image_id"],
                    "oid": o.get("object_id"),
                    "name": basic_name(_name(o) or ""),
                    "x": _num(o.get("x")),
                    "y": _num(o.get("y")),
                    "w": _num(o.get("w")),
                    "h": _num(o.get("h")),
                }
            )
            for a in o.get("attributes") or []:
                anns.append({"seq": seq, "attr": basic_attribute(a)})
    for e in json.loads((root / "relationships.json").read_text()):
        for r in e["relationships"]:
            s, o = r["subject"], r["object"]
            rels.append(
                {
                    "img": e["image_id"],
                    "pred": basic_predicate(r["predicate"]),
                    "s": basic_name(_name(s) or ""),
                    "o": basic_name(_name(o) or ""),
                    **{f"s{k}": _num(s.get(k)) for k in "xywh"},
                    **{f"o{k}": _num(o.get(k)) for k in "xywh"},
                }
            )
    return {
        "img": img,
        "obj": pa.Table.from_pylist(objs),
        "inst": pa.Table.from_pylist(insts),
        "ann": pa.Table.from_pylist(anns),
        "rel": pa.Table.from_pylist(rels),
    }


def _box_ok(p: str) -> str:
    # (duckdb identifiers ignore case: the image size columns must not be called W and H)
    return (
        f"{p}x IS NOT NULL AND {p}y IS NOT NULL AND {p}w > 0 AND {p}h > 0 AND {p}x >= -{TOL}*img_w AND {p}y >= -{TOL}*img_h "
        f"AND {p}x + {p}w <= img_w*(1+{TOL}) AND {p}y + {p}h <= img_h*(1+{TOL})"
    )


SQL = f"""
CREATE VIEW ov AS SELECT * FROM (
  SELECT t.*, i.img_w, i.img_h, row_number() OVER (PARTITION BY t.img, t.oid ORDER BY t.seq) AS n
  FROM obj t JOIN img i ON t.img = i.image_id) WHERE n = 1 AND name <> '' AND {_box_ok("")};
CREATE VIEW iv AS SELECT * FROM (
  SELECT t.*, i.img_w, i.img_h, row_number() OVER (PARTITION BY t.img, t.oid ORDER BY t.seq) AS n
  FROM inst t JOIN img i ON t.img = i.image_id) WHERE n = 1 AND name <> '' AND {_box_ok("")};
CREATE VIEW rv AS SELECT r.*, i.img_w, i.img_h FROM rel r JOIN img i ON r.img = i.image_id
  WHERE s <> '' AND o <> '' AND pred <> '' AND {_box_ok("s")} AND {_box_ok("o")};
CREATE VIEW ca AS SELECT name, count(DISTINCT img) AS c FROM (
  SELECT img, name FROM ov UNION ALL SELECT img, s FROM rv UNION ALL SELECT img, o FROM rv) GROUP BY name;
CREATE VIEW cab AS SELECT least(s, o) AS a, greatest(s, o) AS b, count(DISTINCT img) AS c_ab FROM rv WHERE s <> o GROUP BY 1, 2;
CREATE VIEW pairs AS SELECT p.a, p.b, ca1.c AS c_a, ca2.c AS c_b, p.c_ab, p.c_ab / ca1.c AS p_b_given_a, p.c_ab / ca2.c AS p_a_given_b,
  (p.c_ab >= {N_MIN} AND greatest(p.c_ab / ca1.c, p.c_ab / ca2.c) >= {THETA}) AS kept
  FROM cab p JOIN ca ca1 ON ca1.name = p.a JOIN ca ca2 ON ca2.name = p.b;
CREATE VIEW co AS SELECT name, count(*) AS c_o FROM iv GROUP BY name;
CREATE VIEW coa AS SELECT iv.name, a.attr, count(DISTINCT iv.seq) AS c_oa FROM iv JOIN ann a ON a.seq = iv.seq WHERE a.attr <> '' GROUP BY 1, 2;
CREATE VIEW attrs AS SELECT coa.name AS object, coa.attr AS attribute, co.c_o, coa.c_oa, coa.c_oa / co.c_o AS p_a_given_o,
  row_number() OVER (PARTITION BY coa.name ORDER BY coa.c_oa / co.c_o DESC, coa.attr) AS rank
  FROM coa JOIN co ON co.name = coa.name;
"""


@pytest.fixture(scope="module")
def sql(sample_dir: Path) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    for name, table in _tables(sample_dir / "visual_genome").items():
        con.register(name, table)
    con.execute(SQL)
    return con


def test_pairs_agree_exactly(sql, vg_root: str) -> None:
    res = mine_visual_genome(
        vg_root, mine_config(relational_erasure__n_min=N_MIN, relational_erasure__theta=THETA), seed=0
    )
    ours = {
        (p["a"], p["b"]): (p["c_a"], p["c_b"], p["c_ab"], p["p_b_given_a"], p["p_a_given_b"], p["kept"])
        for p in res.pair_stats
    }
    theirs = {
        (a, b): (ca, cb, cab, pba, pab, kept)
        for a, b, ca, cb, cab, pba, pab, kept in sql.execute("SELECT * FROM pairs").fetchall()
    }
    assert len(ours) >= 8
    assert ours == theirs
    assert {k for k, v in ours.items() if v[-1]} == {k for k, v in theirs.items() if v[-1]}


def test_class_counts_agree_exactly(sql, vg_root: str) -> None:
    cfg = mine_config()
    scan = scan_visual_genome(vg_root, cfg, task_miners(VG, ("relational_erasure",)))
    counts = class_image_counts(scan)
    ours = {
        n: int(counts[i]) for i, n in enumerate(scan.names.names) if counts[i] > 0
    }  # names seen only on rejected objects count 0
    theirs = dict(sql.execute("SELECT name, c FROM ca").fetchall())
    assert ours == theirs


def test_attribute_table_agrees_exactly(sql, vg_root: str) -> None:
    res = mine_visual_genome(vg_root, mine_config(), seed=0)
    ours = {
        (a["object"], a["attribute"]): (a["c_o"], a["c_oa"], a["p_a_given_o"], a["rank"]) for a in res.attribute_stats
    }
    theirs = {(o, a): (co, coa, p, r) for o, a, co, coa, p, r in sql.execute("SELECT * FROM attrs").fetchall()}
    assert len(ours) >= 30
    assert ours == theirs
