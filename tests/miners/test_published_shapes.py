"""Visual Genome 1.0 / 1.2 / 1.4 and FSC147 as published: alias lines of VG 1.4's real
``object_alias.txt`` shape, each version's spellings, bad bytes and bad images as rejects."""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path

import pytest
from mining_helpers import image, mine_config, obj, rel, write_vg

from miners.canonical import Canonicalizer, read_alias_file
from miners.fsc147 import MAX_IMAGE_PIXELS
from miners.mine import mine_fsc147, mine_visual_genome
from tasks.engine.mine_config import MineConfig

# Lines as VG 1.4's object_alias.txt writes them: machine-made number variants next to real synonyms.
REAL_SHAPE_ALIASES = "va,vas\nvas,vases\nglass,glasses\npant,pants\njean,jeans\nshort,shorts\nspecie,species\nscissor,scissors\nsofa,couch\nt-shirt,tshirt,tee shirts\ncouch,settee\n"


@pytest.fixture()
def alias_groups(tmp_path: Path) -> list[list[str]]:
    path = tmp_path / "object_alias.txt"
    path.write_text(REAL_SHAPE_ALIASES)
    return read_alias_file(path)


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("vase", "vase"),
        ("vases", "vase"),
        ("Vases", "vase"),
        ("a vase", "vase"),
        ("vas", "vas"),
        ("glasses", "glasses"),
        ("glass", "glass"),
        ("pants", "pants"),
        ("jeans", "jeans"),
        ("shorts", "shorts"),
        ("species", "species"),
        ("scissors", "scissors"),
        ("couches", "sofa"),
        ("settee", "sofa"),
        ("Tee Shirt", "t-shirt"),
        ("tshirt", "t-shirt"),
        ("wheels", "wheel"),
    ],
)
def test_real_alias_file_shapes_keep_names_intact(alias_groups, raw: str, expected: str) -> None:
    assert Canonicalizer("name", alias_groups).name(raw) == expected


def test_synset_mode_gets_the_same_treatment(alias_groups) -> None:
    c = Canonicalizer("synset", alias_groups)
    assert c.object_name("vase", ["vase.n.01"]) == "vase"
    assert c.object_name("glasses", ["spectacles.n.01"]) == "spectacles"  # a lemma is never singularised
    assert c.object_name("jeans", ["jean.n.01"]) == "jean"  # WordNet's own lemma, as written
    assert c.object_name("couch", ["settee.n.01"]) == "sofa"  # aliases apply to the lemma
    assert c.object_name("vases", []) == "vase"  # no synset: the name rules


def test_merge_counts_say_what_each_rule_did(alias_groups) -> None:
    c = Canonicalizer("name", alias_groups)
    for raw in ("Vases", "vases", "the vases", "vase", "couches", "Couch", "settee", "glasses", "wheels"):
        c.name(raw)
    m = c.merges()
    assert m["raw_names"] == 9
    assert m["singularised"] == {"vases -> vase": 3, "wheels -> wheel": 1}
    assert m["aliases"] == {"couch -> sofa": 1, "couches -> sofa": 1, "settee -> sofa": 1}
    assert {"vas -> va", "vases -> vas", "glasses -> glass", "species -> specie"} <= set(
        m["aliases_left_to_singulariser"]
    )


def _vg_with_vases(root: Path) -> str:
    objs = [
        {
            "image_id": i,
            "objects": [
                obj(i * 10 + 1, ["vases", "Vase", "flower"][i % 3], w=20, h=30),
                obj(i * 10 + 2, "flower", w=10, h=10),
                obj(i * 10 + 3, "glasses", x=50, w=10, h=5),
            ],
        }
        for i in range(1, 7)
    ]
    rels = [
        {
            "image_id": i,
            "relationships": [
                rel(
                    i,
                    obj(i * 10 + 2, "flower", w=10, h=10),
                    "in",
                    obj(i * 10 + 1, ["vases", "Vase", "flower"][i % 3], w=20, h=30),
                )
            ],
        }
        for i in range(1, 7)
    ]
    out = write_vg(root, [image(i) for i in range(1, 7)], objs, rels)
    (root / "object_alias.txt").write_text(REAL_SHAPE_ALIASES)
    return out


@pytest.mark.parametrize("reader", ["auto", "msgspec"])
@pytest.mark.parametrize("mode", ["name", "synset"])
def test_alias_file_through_the_miner(tmp_path: Path, reader: str, mode: str) -> None:
    root = _vg_with_vases(tmp_path / "vg")
    cfg = MineConfig(
        tasks=("relational_erasure",), canonical=mode, reader=reader, relational_erasure={"n_min": 1, "theta": 0.1}
    )
    res = mine_visual_genome(root, cfg, seed=0)
    names = {p["a"] for p in res.pair_stats} | {p["b"] for p in res.pair_stats}
    assert names == {"flower", "vase"}
    assert ("flower", "vase") in {(p["a"], p["b"]) for p in res.pair_stats if p["kept"]}
    merges = res.summary["canonicalisation"]
    assert merges["singularised"]["vases -> vase"] == 1 and "vase -> va" not in json.dumps(merges)


@pytest.mark.parametrize("reader", ["auto", "msgspec"])
def test_a_plural_alias_target_is_one_class_through_the_miner(tmp_path: Path, reader: str) -> None:
    """Objects named by the alias words, by the plural target itself and by its singular mine as
    one class named as the alias file writes it: one pair (person, tennis shoes), never a
    "tennis shoe" class beside it."""
    root = tmp_path / "vg"
    names = ["sneakers", "tennis shoes", "Tennis Shoe", "trainers", "tennis shoes", "sneaker"]
    objs = [
        {
            "image_id": i,
            "objects": [obj(i * 10 + 1, "person", w=20, h=60), obj(i * 10 + 2, names[i - 1], y=70, w=10, h=8)],
        }
        for i in range(1, 7)
    ]
    rels = [
        {
            "image_id": i,
            "relationships": [
                rel(
                    i, obj(i * 10 + 1, "person", w=20, h=60), "wearing", obj(i * 10 + 2, names[i - 1], y=70, w=10, h=8)
                )
            ],
        }
        for i in range(1, 7)
    ]
    out = write_vg(root, [image(i) for i in range(1, 7)], objs, rels)
    (root / "object_alias.txt").write_text("tennis shoes,sneakers,trainers\n" + REAL_SHAPE_ALIASES)
    cfg = MineConfig(tasks=("relational_erasure",), reader=reader, relational_erasure={"n_min": 1, "theta": 0.1})
    res = mine_visual_genome(out, cfg, seed=0)
    pairs = {(p["a"], p["b"]): p for p in res.pair_stats}
    assert set(pairs) == {("person", "tennis shoes")}, sorted(pairs)
    assert pairs[("person", "tennis shoes")]["kept"]


def test_stage_manifest_records_merge_counts_and_fsc_splits(tmp_path: Path, sample_dir: Path) -> None:
    from flows.config import config_from_dict
    from storage.fs import RunFS
    from tasks.engine.base import RunContext
    from tasks.engine.runner import run_stage
    from tasks.stages.mine import MineStage

    root = _vg_with_vases(tmp_path / "vg")
    cfg = config_from_dict(
        {
            "sources": {"visual_genome": root, "fsc147": str(sample_dir / "fsc147")},
            "mine": {
                "tasks": ["relational_erasure", "dense_counting"],
                "relational_erasure": {"n_min": 1, "theta": 0.1},
                "dense_counting": {"count_range": [5, 150], "bins": [5, 150], "per_bin": 3, "splits": ["train"]},
            },
        }
    )
    ctx = RunContext(RunFS.open(str(tmp_path / "run")), cfg)
    run_stage(MineStage(), ctx)
    extra = MineStage().store(ctx).read_manifest()["extra"]
    assert extra["canonicalisation"]["singularised"]["vases -> vase"] == 1
    assert "glasses -> glass" in extra["canonicalisation"]["aliases_left_to_singulariser"]
    fsc = extra["fsc147"]
    assert fsc["fsc_outside_splits"] == sum(n for k, n in fsc["fsc_split_counts"].items() if k != "train") > 0
    assert sum(fsc["fsc_split_counts"].values()) == fsc["fsc_images"]
    vg = extra["visual_genome"]  # per-source summaries: pair_stats rows do not say which source they came from
    assert vg["images"] > 0 and vg["pairs_kept"] >= 1 and "canonicalisation" not in vg and "attributes_kept" not in vg


# ----------------------------------------------------------------------------- VG versions
def _objects_and_attrs(name_key: str, id_key: str) -> tuple[list, list]:
    def o(oid, name, **kw):
        d = {id_key: oid, "x": 10, "y": 10, "w": 20, "h": 20, "synsets": [], **kw}
        d[name_key] = [name] if name_key in ("names", "object_names") else name
        return d

    objects = [
        {"image_id": i, "objects": [o(i * 10 + 1, "cup"), o(i * 10 + 2, "table", w=60, h=30)]} for i in (1, 2, 3)
    ]
    attrs = [
        {
            "image_id": i,
            "attributes": [
                o(i * 10 + 1, "cup", attributes=["white"]),
                o(i * 10 + 2, "table", w=60, h=30, attributes=["wooden"]),
            ],
        }
        for i in (1, 2, 3)
    ]
    return objects, attrs


@pytest.mark.parametrize("reader", ["auto", "msgspec"])
@pytest.mark.parametrize(
    "version, obj_name, attr_name, id_key",
    [
        ("1.0", "name", "object_names", "id"),
        ("1.2", "names", "names", "object_id"),
        ("1.4", "names", "names", "object_id"),
    ],
)
def test_each_version_spelling_gives_attribute_candidates(
    tmp_path: Path, reader: str, version: str, obj_name: str, attr_name: str, id_key: str
) -> None:
    objects, _ = _objects_and_attrs(obj_name, id_key)
    _, attrs = _objects_and_attrs(attr_name, id_key)
    images = [image(i) for i in (1, 2, 3)]
    if version == "1.0":
        images = [
            {
                "id": im["image_id"],
                "width": 100,
                "height": 100,
                "url": f"https://cs.stanford.edu/VG100/Images/web_static_office/vgabox{k}.jpg",
            }
            for k, im in enumerate(images)
        ]
    root = write_vg(tmp_path / "vg", [image(i) for i in (1, 2, 3)], objects, None, attrs)
    (tmp_path / "vg" / "image_data.json").write_text(json.dumps(images))
    cfg = MineConfig(
        tasks=("counterfactual_attribute",),
        reader=reader,
        counterfactual_attribute={"n_min": 2, "theta": 0.5, "area_range": [0.01, 0.9], "images_per_attribute": 5},
    )
    res = mine_visual_genome(root, cfg, seed=0)
    assert not [r for r in res.rejects if r["reason"] in ("malformed_entry", "missing_image")], res.rejects
    assert {(a["object"], a["attribute"], a["c_oa"]) for a in res.attribute_stats if a["kept"]} == {
        ("cup", "white", 3),
        ("table", "wooden", 3),
    }
    assert len(res.candidates) == 6
    assert {Path(c["image_path"]).name for c in res.candidates} == {
        "1.jpg",
        "2.jpg",
        "3.jpg",
    }  # VG_100K/<image_id>.jpg


# ----------------------------------------------------------------------------- bad bytes
def _corrupt(path: Path, needle: bytes, after: bytes) -> int:
    """Replace the second byte of ``needle`` (first met after ``after``) by 0xff; returns its offset."""
    data = path.read_bytes()
    at = data.index(needle, data.index(after)) + 1
    path.write_bytes(data[:at] + b"\xff" + data[at + 1 :])
    return at


def _three_images(root: Path) -> str:
    objs = [
        {"image_id": i, "objects": [obj(i * 10 + 1, "cup"), obj(i * 10 + 2, "table", w=60, h=30)]} for i in (1, 2, 3)
    ]
    rels = [
        {"image_id": i, "relationships": [rel(i, obj(i * 10 + 1, "cup"), "on", obj(i * 10 + 2, "table", w=60, h=30))]}
        for i in (1, 2, 3)
    ]
    attrs = [{"image_id": i, "attributes": [obj(i * 10 + 1, "cup", attributes=["white"])]} for i in (1, 2, 3)]
    return write_vg(root, [image(i) for i in (1, 2, 3)], objs, rels, attrs)


@pytest.mark.parametrize("reader", ["auto", "msgspec"])
@pytest.mark.parametrize(
    "file, needle",
    [
        ("objects.json", b'"cup"'),
        ("relationships.json", b'"on"'),
        ("attributes.json", b'"white"'),
        ("image_data.json", b'"https'),
    ],
)
def test_invalid_utf8_is_a_reject_naming_file_and_byte(tmp_path: Path, reader: str, file: str, needle: bytes) -> None:
    root = _three_images(tmp_path / "vg")
    after = b'"image_id": 2'
    at = _corrupt(tmp_path / "vg" / file, needle, after)
    cfg = MineConfig(
        tasks=("relational_erasure", "counterfactual_attribute"),
        reader=reader,
        relational_erasure={"n_min": 1, "theta": 0.1},
        counterfactual_attribute={"n_min": 1, "theta": 0.1},
    )
    res = mine_visual_genome(root, cfg, seed=0)
    bad = [r for r in res.rejects if "UTF-8" in r["detail"]]
    assert len(bad) == 1 and file in bad[0]["detail"] and f"byte offset {at}" in bad[0]["detail"], res.rejects
    # the rest of the file is mined: images 1 and 3 still give their pair and attribute
    assert ("cup", "table") in {(p["a"], p["b"]) for p in res.pair_stats}
    assert {"1", "3"} <= {c["image_id"] for c in res.candidates if c["task"] == "relational_erasure"}
    assert ("cup", "white") in {(a["object"], a["attribute"]) for a in res.attribute_stats}


# ----------------------------------------------------------------------------- FSC147 images
def _png_header(width: int, height: int) -> bytes:
    """A PNG that declares ``width`` x ``height`` (no pixel data needed to trip a size check)."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)

    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(b"\0" * 64))
        + chunk(b"IEND", b"")
    )


def test_bad_fsc147_images_are_rejects_and_the_rest_is_mined(tmp_path: Path, fsc_root: str) -> None:
    import shutil

    root = tmp_path / "fsc"
    shutil.copytree(fsc_root, root)
    cfg = mine_config(tasks=["dense_counting"], dense_counting__per_bin=100)
    before = mine_fsc147(str(root), cfg, seed=0)
    chosen = sorted(c["image_id"] for c in before.candidates)
    assert len(chosen) >= 6
    images = root / "images_384_VarV2"
    zero, truncated, text, bomb = chosen[:4]
    (images / zero).write_bytes(b"")
    data = (images / truncated).read_bytes()
    (images / truncated).write_bytes(data[: len(data) // 3])
    (images / text).write_bytes(b"<html>not an image</html>")
    (images / bomb).write_bytes(_png_header(20000, 20000))
    res = mine_fsc147(str(root), cfg, seed=0)
    got = {r["id"]: r for r in res.rejects}
    for name, reason, words in (
        (zero, "unreadable_image", "0 bytes"),
        (truncated, "unreadable_image", "truncated"),
        (text, "unreadable_image", "not a readable image"),
        (bomb, "image_too_large", f"{MAX_IMAGE_PIXELS:,}"),
    ):
        r = got[f"fsc147:{name}"]
        assert r["reason"] == reason and name in r["detail"] and words in r["detail"], r
    assert sorted(c["image_id"] for c in res.candidates) == chosen[4:]


@pytest.mark.parametrize("reader", ["auto", "msgspec"])
def test_synset_lemmas_are_classes_as_written_in_both_readers(tmp_path: Path, reader: str) -> None:
    """A lemma is a dictionary form: ``spectacles.n.01`` names the class "spectacles", not "spectacle"."""

    def o(oid, name, synset, **kw):
        return obj(oid, name, synsets=[synset], **kw)

    objs = [
        {
            "image_id": i,
            "objects": [
                o(i * 10 + 1, "glasses", "spectacles.n.01"),
                o(i * 10 + 2, "man", "man.n.01", x=40, w=50, h=60),
            ],
        }
        for i in (1, 2)
    ]
    rels = [
        {
            "image_id": i,
            "relationships": [
                rel(
                    i,
                    o(i * 10 + 2, "man", "man.n.01", x=40, w=50, h=60),
                    "wearing",
                    o(i * 10 + 1, "glasses", "spectacles.n.01"),
                )
            ],
        }
        for i in (1, 2)
    ]
    root = write_vg(tmp_path / "vg", [image(1), image(2)], objs, rels)
    cfg = MineConfig(
        tasks=("relational_erasure",), canonical="synset", reader=reader, relational_erasure={"n_min": 1, "theta": 0.1}
    )
    res = mine_visual_genome(root, cfg, seed=0)
    assert [(p["a"], p["b"], p["c_ab"]) for p in res.pair_stats] == [("man", "spectacles", 2)]
    assert res.summary["canonicalisation"]["synsets"] == 2


def test_truncated_fsc147_images_are_refused_even_when_pillow_was_told_to_accept_them(
    tmp_path: Path, fsc_root: str
) -> None:
    """Some libraries switch Pillow's process-wide LOAD_TRUNCATED_IMAGES on at import (lmms-eval does)."""
    import shutil

    from PIL import ImageFile

    root = tmp_path / "fsc"
    shutil.copytree(fsc_root, root)
    cfg = mine_config(tasks=["dense_counting"], dense_counting__per_bin=100)
    name = sorted(c["image_id"] for c in mine_fsc147(str(root), cfg, seed=0).candidates)[0]
    path = root / "images_384_VarV2" / name
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 3])
    saved, ImageFile.LOAD_TRUNCATED_IMAGES = ImageFile.LOAD_TRUNCATED_IMAGES, True
    try:
        res = mine_fsc147(str(root), cfg, seed=0)
        assert ImageFile.LOAD_TRUNCATED_IMAGES is True  # the process's own setting is left as it was
    finally:
        ImageFile.LOAD_TRUNCATED_IMAGES = saved
    assert {r["id"]: r["reason"] for r in res.rejects}.get(f"fsc147:{name}") == "unreadable_image"


@pytest.mark.parametrize("reader", ["auto", "msgspec"])
def test_candidates_carry_first_synsets_for_same_class_tests(tmp_path: Path, reader: str) -> None:
    """A candidate names its target's synset and each context object's (when the file gives one),
    so "rock" and "stone" annotating one kind of thing are one class to the AT planner and the
    verification (``storage.annotation.names.same_class``); objects without synsets carry none."""
    from storage.annotation.names import same_class

    objs = [
        {
            "image_id": i,
            "objects": [
                obj(i * 10 + 1, "cup", synsets=["Cup.n.01 "]),
                obj(i * 10 + 2, "table", x=40, w=50, h=30, synsets=["table.n.02"]),
                obj(i * 10 + 3, "rock", x=5, y=70, w=8, h=8, synsets=["stone.n.02"]),
                obj(i * 10 + 4, "stone", x=80, y=70, w=8, h=8, synsets=["stone.n.02"]),
                obj(i * 10 + 5, "ball", x=60, y=80, w=8, h=8),
            ],
        }
        for i in range(1, 5)
    ]
    rels = [
        {
            "image_id": i,
            "relationships": [rel(i, obj(i * 10 + 1, "cup"), "on", obj(i * 10 + 2, "table", x=40, w=50, h=30))],
        }
        for i in range(1, 5)
    ]
    root = write_vg(tmp_path / "vg", [image(i) for i in range(1, 5)], objs, rels)
    cfg = MineConfig(tasks=("relational_erasure",), reader=reader, relational_erasure={"n_min": 1, "theta": 0.1})
    res = mine_visual_genome(root, cfg, seed=0)
    cands = [c for c in res.candidates if c["variant"] == "targeted"]
    assert cands
    for c in cands:
        assert c["target_synset"] == {"cup": "cup.n.01", "table": "table.n.02"}[c["target_name"]]
        ctx = {o["name"]: o for o in json.loads(c["context_json"])}
        assert ctx["rock"]["synset"] == ctx["stone"]["synset"] == "stone.n.02" and "synset" not in ctx["ball"]
        assert same_class(ctx["rock"], ctx["stone"]) and not same_class(ctx["rock"], ctx["ball"])


def test_fsc147_annotation_with_invalid_utf8_is_a_reject_and_the_rest_is_mined(tmp_path: Path, fsc_root: str) -> None:
    """A bad byte inside one image's annotation: a reject naming the image and the byte (msgspec
    < 0.23 raised UnicodeDecodeError, 0.23 a DecodeError; both once crashed the source)."""
    import shutil

    root = tmp_path / "fsc"
    shutil.copytree(fsc_root, root)
    cfg = mine_config(tasks=["dense_counting"], dense_counting__per_bin=100)
    before = mine_fsc147(str(root), cfg, seed=0)
    name = sorted(c["image_id"] for c in before.candidates)[0]
    ann = root / "annotation_FSC147_384.json"
    data = json.loads(ann.read_text())
    data[name]["img_path"] = "XXBADXX"
    ann.write_bytes(json.dumps(data).encode().replace(b"XXBADXX", b"bad\xfe"))
    res = mine_fsc147(str(root), cfg, seed=0)
    bad = {r["id"]: r for r in res.rejects if r["reason"] == "malformed_entry"}
    assert set(bad) == {f"fsc147:{name}"} and "invalid UTF-8 (byte 0xfe)" in bad[f"fsc147:{name}"]["detail"]
    assert {c["image_id"] for c in res.candidates} == {c["image_id"] for c in before.candidates} - {name}
