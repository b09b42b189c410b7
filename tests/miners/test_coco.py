"""The COCO-format source: the published shapes (COCO 2017, LVIS v1), each COCO/LVIS rule, and
the co-occurrence statistics checked against a direct count over the JSON."""

from __future__ import annotations

import json
from collections import Counter
from itertools import combinations
from pathlib import Path
from typing import Any

import pytest

from miners.coco import mine_coco
from miners.sample_data import COCO_ANNOTATIONS, COCO_DIR, LVIS_ANNOTATIONS
from tasks.engine.mine_config import MineConfig

TASKS = ["relational_erasure", "alteration_tracing", "dense_counting"]


def _cfg(**sections: Any) -> MineConfig:
    data: dict[str, Any] = {
        "tasks": TASKS,
        "relational_erasure": {"n_min": 2, "theta": 0.2, "area_range": [0.0, 1.0]},
        "alteration_tracing": {"min_objects": 2, "max_target_area": 1.0, "min_target_area": 0.0},
        "dense_counting": {"count_range": [2, 20], "bins": [2, 5, 20], "per_bin": 10},
    }
    data.update(sections)
    return MineConfig.model_validate(data)


def _image(iid: int, w: int = 100, h: int = 100, **extra: Any) -> dict[str, Any]:
    return {
        "license": 1,
        "file_name": f"{iid:012d}.jpg",
        "coco_url": f"http://images.cocodataset.org/val2017/{iid:012d}.jpg",
        "height": h,
        "width": w,
        "date_captured": "2013-11-14 11:18:45",
        "id": iid,
        **extra,
    }


def _ann(aid: int, iid: int, cat: int, box: list[float], crowd: int = 0) -> dict[str, Any]:
    seg: Any = {"counts": [0, 10], "size": [100, 100]} if crowd else [[1, 1, 9, 1, 9, 9]]
    return {
        "segmentation": seg,
        "area": 64.0,
        "iscrowd": crowd,
        "image_id": iid,
        "bbox": box,
        "category_id": cat,
        "id": aid,
    }


CATS = [
    {"supercategory": "vehicle", "id": 3, "name": "car"},
    {"supercategory": "vehicle", "id": 8, "name": "truck"},
    {"supercategory": "food", "id": 53, "name": "apple"},
]


def write_coco(
    tmp: Path,
    images: list[dict[str, Any]],
    annotations: list[dict[str, Any]],
    categories: list[dict[str, Any]] = CATS,
    name: str = "instances_val2017.json",
    files: bool = True,
    skip_files: tuple[int, ...] = (),
) -> str:
    """A COCO-layout folder: annotations/<name> and val2017/<file> (blank bytes: only existence is checked here)."""
    (tmp / "annotations").mkdir(parents=True, exist_ok=True)
    (tmp / "val2017").mkdir(exist_ok=True)
    path = tmp / "annotations" / name
    path.write_text(
        json.dumps(
            {
                "info": {"year": 2017},
                "licenses": [],
                "images": images,
                "annotations": annotations,
                "categories": categories,
            }
        )
    )
    for img in images:
        fname = img.get("file_name") or Path(img.get("coco_url", "")).name
        if files and fname and img["id"] not in skip_files:
            (tmp / "val2017" / fname).write_bytes(b"jpeg")
    return str(path)


def _reasons(res: Any) -> Counter:
    return Counter(r["reason"] for r in res.rejects)


def _count_rows(res: Any) -> dict[tuple[str, str], dict[str, Any]]:
    return {(c["image_id"], c["class_name"]): c for c in res.candidates if c["task"] == "dense_counting"}


# --------------------------------------------------------------------------- the bundled sample
def test_sample_files_have_the_published_shapes(sample_dir: Path) -> None:
    coco = json.loads((sample_dir / COCO_DIR / COCO_ANNOTATIONS).read_text())
    assert set(coco) == {"info", "licenses", "images", "annotations", "categories"}
    assert {"id", "file_name", "width", "height", "coco_url", "license", "date_captured"} <= set(coco["images"][0])
    assert {"id", "image_id", "category_id", "bbox", "area", "iscrowd", "segmentation"} == set(coco["annotations"][0])
    ids = sorted(c["id"] for c in coco["categories"])
    assert ids != list(range(1, len(ids) + 1)), "category ids must be non-contiguous, as COCO's"
    assert all({"id", "name", "supercategory"} == set(c) for c in coco["categories"])
    crowd = [a for a in coco["annotations"] if a["iscrowd"]]
    assert crowd and all(set(a["segmentation"]) == {"counts", "size"} for a in crowd)
    a = crowd[0]  # the RLE covers exactly the crowd box (column-major runs starting with 0s)
    h, w = a["segmentation"]["size"]
    assert (
        sum(a["segmentation"]["counts"]) == h * w
        and sum(a["segmentation"]["counts"][1::2]) == a["bbox"][2] * a["bbox"][3]
    )
    annotated = {a["image_id"] for a in coco["annotations"]}
    assert any(img["id"] not in annotated for img in coco["images"]), "COCO lists images without annotations"
    lvis = json.loads((sample_dir / COCO_DIR / LVIS_ANNOTATIONS).read_text())
    assert {"synonyms", "frequency", "def", "synset"} <= set(lvis["categories"][0])
    assert all(
        {"not_exhaustive_category_ids", "neg_category_ids", "coco_url"} <= set(i) and "file_name" not in i
        for i in lvis["images"]
    )
    assert any(i["not_exhaustive_category_ids"] for i in lvis["images"])


def test_sample_mines_candidates_of_each_task(sample_dir: Path) -> None:
    from flows.config import load_config

    cfg = load_config(Path(__file__).resolve().parents[2] / "configs" / "coco-sample.yaml").mine
    res = mine_coco(str(sample_dir / COCO_DIR / COCO_ANNOTATIONS), cfg, seed=0)
    by = Counter(c["task"] for c in res.candidates)
    assert by["relational_erasure"] >= 4 and by["alteration_tracing"] >= 4 and by["dense_counting"] >= 4
    assert {c["source"] for c in res.candidates} == {"coco"}
    assert all(Path(c["image_path"]).is_file() for c in res.candidates)
    assert {"box_empty", "unknown_category_id", "unknown_image_id", "ambiguous_count"} <= set(_reasons(res))
    dc = next(c for c in res.candidates if c["task"] == "dense_counting")
    assert len(dc["points"]) == dc["count"] and json.loads(dc["extra_json"])["point_rule"] == "box_centre"
    again = mine_coco(str(sample_dir / COCO_DIR / COCO_ANNOTATIONS), cfg, seed=0)
    assert again.candidates == res.candidates
    everything = mine_coco(
        str(sample_dir / COCO_DIR / COCO_ANNOTATIONS),
        _cfg(relational_erasure={"n_min": 1, "theta": 0.0, "images_per_pair": 1000}),
        seed=0,
    )
    assert "missing_image" in _reasons(everything)  # the sample's image without a file


def test_cooccurrence_statistics_match_a_direct_count(sample_dir: Path) -> None:
    """C(A), C(A∩B) and the keep rule recounted from the JSON: images holding each class / both."""
    path = sample_dir / COCO_DIR / COCO_ANNOTATIONS
    coco = json.loads(path.read_text())
    names = {c["id"]: c["name"] for c in coco["categories"]}
    images = {i["id"]: i for i in coco["images"]}
    per_image: dict[int, set[str]] = {}
    for a in coco["annotations"]:
        _, _, w, h = a["bbox"]
        img = images.get(a["image_id"])
        if a["iscrowd"] or a["category_id"] not in names or img is None or w <= 0 or h <= 0:
            continue
        per_image.setdefault(a["image_id"], set()).add(names[a["category_id"]])
    c_a = Counter(n for s in per_image.values() for n in s)
    c_ab = Counter(p for s in per_image.values() for p in combinations(sorted(s), 2))
    res = mine_coco(
        str(path), _cfg(tasks=["relational_erasure"], relational_erasure={"n_min": 10, "theta": 0.5}), seed=0
    )
    got = {(r["a"], r["b"]): r for r in res.pair_stats}
    assert set(got) == set(c_ab)
    for (a, b), n in c_ab.items():
        r = got[(a, b)]
        assert (r["c_ab"], r["c_a"], r["c_b"]) == (n, c_a[a], c_a[b])
        assert r["kept"] == (n >= 10 and max(n / c_a[a], n / c_a[b]) >= 0.5)


# --------------------------------------------------------------------------- one rule each
def test_crowd_regions_are_not_counted_and_make_the_count_ambiguous(tmp_path: Path) -> None:
    anns = [_ann(i, 1, 53, [10.0 * i, 10, 8, 8]) for i in range(1, 5)] + [_ann(9, 1, 53, [60, 60, 30, 30], crowd=1)]
    anns += [_ann(20 + i, 2, 53, [10.0 * i, 10, 8, 8]) for i in range(1, 4)]
    res = mine_coco(write_coco(tmp_path, [_image(1), _image(2)], anns), _cfg(tasks=["dense_counting"]), seed=0)
    rows = _count_rows(res)
    assert set(rows) == {("2", "apple")} and rows[("2", "apple")]["count"] == 3
    amb = [r for r in res.rejects if r["reason"] == "ambiguous_count"]
    assert len(amb) == 1 and amb[0]["id"] == "coco:image:1" and "instances_val2017.json" in amb[0]["detail"]
    assert res.summary["crowd_regions"] == 1 and res.summary["objects"] == 7


def test_crowd_of_a_class_keeps_it_from_being_the_erased_or_altered_object(tmp_path: Path) -> None:
    anns = [_ann(1, 1, 3, [5, 5, 10, 10]), _ann(2, 1, 8, [40, 40, 50, 50]), _ann(3, 1, 3, [70, 5, 20, 20], crowd=1)]
    res = mine_coco(
        write_coco(tmp_path, [_image(1)], anns),
        _cfg(tasks=["relational_erasure"], relational_erasure={"n_min": 1, "theta": 0.1}),
        seed=0,
    )
    assert res.candidates == []
    assert [r["reason"] for r in res.rejects] == ["crowd_of_class"]


def test_non_contiguous_ids_and_lvis_names(tmp_path: Path) -> None:
    cats = [
        {
            "id": 1,
            "name": "baseball_bat",
            "synonyms": ["baseball_bat", "bat"],
            "frequency": "c",
            "synset": "baseball_bat.n.01",
            "def": "a bat",
        },
        {
            "id": 90,
            "name": "toothbrush",
            "synonyms": ["toothbrush", "tooth_brush"],
            "frequency": "f",
            "synset": "toothbrush.n.01",
            "def": "a brush",
        },
    ]
    anns = [_ann(i, 1, 90, [10.0 * i, 10, 8, 8]) for i in range(1, 4)] + [_ann(7, 1, 1, [50, 50, 20, 20])]
    for a in anns:
        del a["iscrowd"]  # LVIS omits it
    res = mine_coco(write_coco(tmp_path, [_image(1)], anns, cats, name="lvis_v1_val.json"), _cfg(), seed=0)
    rows = _count_rows(res)
    assert set(rows) == {("1", "toothbrush")}
    extra = json.loads(rows[("1", "toothbrush")]["extra_json"])
    assert extra["class_synonyms"] == ["tooth brush"] and extra["class_frequency"] == "f"
    assert {(r["a"], r["b"]) for r in res.pair_stats} == {("baseball bat", "toothbrush")}


def test_annotations_of_missing_images_and_unknown_categories_are_rejects(tmp_path: Path) -> None:
    anns = [_ann(1, 1, 3, [5, 5, 10, 10]), _ann(2, 77, 3, [5, 5, 10, 10]), _ann(3, 1, 4, [5, 5, 10, 10])]
    path = write_coco(tmp_path, [_image(1)], anns)
    res = mine_coco(path, _cfg(), seed=0)
    rej = {r["id"]: r for r in res.rejects}
    assert (
        rej["coco:annotation:2"]["reason"] == "unknown_image_id"
        and "image_id 77" in rej["coco:annotation:2"]["detail"]
    )
    assert (
        rej["coco:annotation:3"]["reason"] == "unknown_category_id"
        and "category_id 4" in rej["coco:annotation:3"]["detail"]
    )
    assert all(path in r["detail"] for r in rej.values())
    assert res.summary["objects"] == 1


def test_not_exhaustive_classes_are_neither_counted_nor_erased(tmp_path: Path) -> None:
    img1 = _image(1, not_exhaustive_category_ids=[53], neg_category_ids=[8])
    anns = [_ann(i, 1, 53, [10.0 * i, 10, 5, 5]) for i in range(1, 5)] + [
        _ann(10, 1, 3, [50, 50, 3, 3])
    ]  # the car is erased here
    anns += [_ann(20 + i, 2, 53, [10.0 * i, 10, 5, 5]) for i in range(1, 4)] + [_ann(30, 2, 3, [50, 50, 40, 40])]
    cfg = _cfg(relational_erasure={"n_min": 1, "theta": 0.1, "area_range": [0.0, 1.0]})
    res = mine_coco(write_coco(tmp_path, [img1, _image(2)], anns), cfg, seed=0)
    assert set(_count_rows(res)) == {("2", "apple")} and res.summary["dc_not_exhaustive"] == 1
    erased = [(c["image_id"], c["target_name"]) for c in res.candidates if c["task"] != "dense_counting"]
    assert ("1", "apple") not in erased and ("2", "apple") in erased
    assert any(r["reason"] == "not_exhaustive_class" and r["id"] == "coco:image:1" for r in res.rejects)
    extra = [json.loads(c["extra_json"]) for c in res.candidates if c["image_id"] == "1"]
    assert extra and all(e["verified_absent"] == ["truck"] and e["not_exhaustive"] == ["apple"] for e in extra)


@pytest.mark.parametrize(
    "box, reason",
    [
        ([5, 5, 0, 10], "box_empty"),
        ([5, 5, -3, 10], "box_empty"),
        ([90, 90, 50, 50], "box_outside_image"),
        ([5, 5, 10], "malformed_entry"),
        ([5, "left", 10, 10], "malformed_entry"),
    ],
)
def test_bad_boxes_are_rejects_naming_file_and_annotation(tmp_path: Path, box: list[Any], reason: str) -> None:
    path = write_coco(tmp_path, [_image(1)], [_ann(1, 1, 3, [5, 5, 10, 10]), _ann(2, 1, 3, box)])
    res = mine_coco(path, _cfg(), seed=0)
    assert [(r["id"], r["reason"]) for r in res.rejects] == [("coco:annotation:2", reason)]
    assert path in res.rejects[0]["detail"] and res.summary["objects"] == 1


def test_images_without_files_or_annotations(tmp_path: Path) -> None:
    """A listed image whose file is absent is a ``missing_image`` reject when drawn; one naming no
    file at all is rejected on reading; images without annotations are read and yield nothing."""
    no_name = {k: v for k, v in _image(3).items() if k not in ("file_name", "coco_url")}
    lvis_style = {k: v for k, v in _image(4).items() if k != "file_name"}  # LVIS: the file is named by coco_url
    anns = [_ann(i, 1, 53, [10.0 * i, 10, 5, 5]) for i in range(1, 4)] + [
        _ann(10 + i, 4, 53, [10.0 * i, 10, 5, 5]) for i in range(1, 4)
    ]
    path = write_coco(tmp_path, [_image(1), _image(2), no_name, lvis_style], anns, skip_files=(1,))
    res = mine_coco(path, _cfg(tasks=["dense_counting"]), seed=0)
    rej = {(r["id"], r["reason"]) for r in res.rejects}
    assert ("coco:image:1", "missing_image") in rej and ("coco:image:3", "malformed_image_entry") in rej
    rows = _count_rows(res)
    assert set(rows) == {("4", "apple")} and rows[("4", "apple")]["image_path"].endswith("val2017/000000000004.jpg")
    assert res.summary["images"] == 3


def test_a_malformed_entry_is_a_reject_not_a_crash(tmp_path: Path) -> None:
    bad_image = {"id": 5, "width": "wide", "height": 10, "file_name": "x.jpg"}
    path = write_coco(
        tmp_path,
        [_image(1), bad_image],
        [_ann(1, 1, 3, [5, 5, 10, 10]), {"id": 2, "image_id": 1}],
        CATS + [{"id": 99, "name": ""}],
    )
    res = mine_coco(path, _cfg(), seed=0)
    assert {(r["id"], r["reason"]) for r in res.rejects} == {
        ("coco:image:5", "malformed_entry"),
        ("coco:annotation:2", "malformed_entry"),
        ("coco:category:99", "malformed_entry"),
    }


def test_invalid_utf8_in_an_entry_is_a_reject_naming_the_entry_and_byte(tmp_path: Path) -> None:
    """Not UTF-8 is a bad entry, not a crash of the source: msgspec < 0.23 raises UnicodeDecodeError
    here and 0.23 a DecodeError; either way the reject names the entry's id and the byte."""
    path = write_coco(tmp_path, [_image(1)], [_ann(1, 1, 3, [5, 5, 10, 10])], CATS + [{"id": 77, "name": "mugXX"}])
    raw = Path(path).read_bytes()
    Path(path).write_bytes(raw.replace(b"mugXX", b"mug\xff"))
    res = mine_coco(path, _cfg(), seed=0)
    bad = [r for r in res.rejects if r["reason"] == "malformed_entry"]
    assert [r["id"] for r in bad] == ["coco:category:77"]
    assert "invalid UTF-8 (byte 0xff)" in bad[0]["detail"] and path in bad[0]["detail"]
