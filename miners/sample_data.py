"""A small, deterministic Visual Genome + FSC147 + COCO-format sample with drawn scenes whose shapes are known.

Why: the demo, the tests and the editors need real files in the published formats (so the
same readers open the real datasets) and images whose objects' pixels are known exactly
(so an edit can be checked against the true mask). Everything derives from ``seed``: the
same seed gives byte-identical files.

Layout written under ``out_dir``::

    visual_genome/image_data.json objects.json relationships.json attributes.json
    visual_genome/VG_100K/<id>.jpg  visual_genome/VG_100K_2/<id>.jpg
    fsc147/annotation_FSC147_384.json ImageClasses_FSC147.txt Train_Test_Val_FSC_147.json
    fsc147/images_384_VarV2/<n>.jpg
    coco/annotations/instances_sample2017.json  (COCO 2017's layout)  coco/annotations/lvis_v1_sample.json
    coco/sample2017/<12-digit id>.jpg
    sample_truth.json          drawn shapes per image and object (not part of either dataset)

A few deliberate defects (``defects=True``) exercise the reject paths: a box outside its
image, a duplicated object id, an object with a non-numeric coordinate, an annotation for
an unknown image id, an annotated image whose file is missing, an FSC147 image without a
class line; in the COCO file an annotation with an empty box, one with an unknown category id,
one for an unknown image id, and an image whose file is missing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import numpy as np
from PIL import Image, ImageDraw

from storage.json_types import JSONObject, JSONValue

T = TypeVar("T")

VG_DIR = "visual_genome"
FSC_DIR = "fsc147"
COCO_DIR = "coco"
COCO_ANNOTATIONS = "annotations/instances_sample2017.json"
LVIS_ANNOTATIONS = "annotations/lvis_v1_sample.json"
N_COCO_SCENES = 48
COCO_COUNTS = [6, 8, 9, 12, 14, 17, 20, 23, 27, 31, 35, 40]
N_COCO_EMPTY = 2
N_COCO_IMAGES = N_COCO_SCENES + len(COCO_COUNTS) + N_COCO_EMPTY  # the default COCO part: 62 images
TRUTH_FILE = "sample_truth.json"
N_VG_IMAGES = 180
N_FSC_IMAGES = 30
FSC_BINS = (5, 10, 25, 50, 100, 150)  # configs/demo.yaml's dense_counting bins: added FSC images cycle through them
FSC_NO_CLASS_LINE, FSC_MISSING_IMAGE = 28, 29  # the FSC147 defects: fixed images, so a longer sample keeps them
FIRST_OBJECT_ID = 1_050_000
FIRST_RELATIONSHIP_ID = 3_100_000
MIN_VISIBLE = 0.25  # an object less visible than this (drawn over by later ones) is not annotated

# (name variants as annotators wrote them, synset, attribute choices with weights, RGB per attribute colour)
COLOURS: dict[str, tuple[int, int, int]] = {
    "black": (25, 25, 28),
    "white": (236, 234, 228),
    "red": (200, 34, 30),
    "blue": (40, 70, 190),
    "green": (50, 150, 60),
    "yellow": (230, 200, 40),
    "brown": (120, 74, 40),
    "grey": (128, 128, 132),
    "orange": (235, 130, 30),
    "pink": (230, 120, 170),
}


@dataclass
class Shape:
    kind: str  # rect | ellipse | polygon
    params: list[float]  # rect/ellipse: [x0, y0, x1, y1] inclusive; polygon: [x0, y0, x1, y1, ...]

    def as_json(self) -> JSONObject:
        return {"kind": self.kind, "params": [int(round(v)) for v in self.params]}


@dataclass
class Obj:
    cls: str
    names: list[str]
    synset: str
    colour: str
    attributes: list[str]
    shapes: list[Shape]
    object_id: int = 0
    box: tuple[int, int, int, int] = (0, 0, 0, 0)
    extra: JSONObject = field(default_factory=dict)


SYNSETS = {
    "skateboard": "skateboard.n.01",
    "wheel": "wheel.n.01",
    "table": "table.n.02",
    "cup": "cup.n.01",
    "plate": "plate.n.04",
    "car": "car.n.01",
    "tree": "tree.n.01",
    "ball": "ball.n.01",
    "sign": "sign.n.02",
    "cloud": "cloud.n.02",
    "kite": "kite.n.03",
    "sky": "sky.n.01",
    "grass": "grass.n.01",
    "flower": "flower.n.01",
    "book": "book.n.01",
    "stone": "stone.n.02",
    "lamp": "lamp.n.02",
    "man": "man.n.01",
}

NAME_VARIANTS = {
    "wheel": ["wheel", "wheels", "Wheel", " wheel ", "a wheel", "the wheel"],
    "skateboard": ["skateboard", "skateboard", "Skateboard", "a skateboard", "skateboards"],
    "cup": ["cup", "cup", "cups", "Cup", "a cup", "the cup "],
    "table": ["table", "table", "Table", "the table", "tables"],
    "car": ["car", "car", "Car", "cars"],
    "plate": ["plate", "plates", "a plate"],
    "tree": ["tree", "trees", "Tree"],
    "ball": ["ball", "a ball"],
    "sign": ["sign", "Sign"],
    "cloud": ["cloud", "clouds"],
    "kite": ["kite"],
    "sky": ["sky", "the sky"],
    "grass": ["grass", "Grass"],
    "flower": ["flower", "flowers"],
    "book": ["book", "books"],
    "stone": ["stone", "stones", "rock"],
    "lamp": ["lamp"],
    "man": ["man", "men", "a man"],
}


def _pick(rng: np.random.Generator, seq: list[T]) -> T:
    return seq[int(rng.integers(len(seq)))]


def _messy(rng: np.random.Generator, attr: str) -> str:
    """Attributes as VG holds them: mostly clean, sometimes padded or mixed-case."""
    r = rng.random()
    if r < 0.12:
        return f" {attr.capitalize()}"
    if r < 0.2:
        return f"{attr.upper()} "
    return attr


def _obj(rng: np.random.Generator, cls: str, colour: str, attrs: list[str], shapes: list[Shape]) -> Obj:
    return Obj(cls, [_pick(rng, NAME_VARIANTS[cls])], SYNSETS[cls], colour, attrs, shapes)


# --------------------------------------------------------------------------- scene parts
def _skateboard(rng, W, H) -> tuple[list[Obj], list[tuple[int, str, int]]]:
    bw, bh = int(W * rng.uniform(0.3, 0.42)), max(8, int(H * 0.05))
    x0 = int(rng.uniform(0.05, 0.95 - 0.42) * W)
    y0 = int(H * rng.uniform(0.62, 0.75))
    colour = "brown" if rng.random() < 0.8 else "blue"
    attrs = ["wooden", colour] if colour == "brown" else [colour]
    board = _obj(rng, "skateboard", colour, attrs, [Shape("rect", [x0, y0, x0 + bw, y0 + bh])])
    objs, rels = [board], []
    r = max(5, int(bh * 0.9))
    for cx in (x0 + bw * 0.2, x0 + bw * 0.8):
        cy = y0 + bh + r - 2
        wheel = _obj(
            rng,
            "wheel",
            "black",
            ["black", "round"] if rng.random() < 0.7 else ["black"],
            [Shape("ellipse", [cx - r, cy - r, cx + r, cy + r])],
        )
        objs.append(wheel)
        if rng.random() < 0.75:
            rels.append((len(objs) - 1, _pick(rng, ["on", "ON", "attached to", "on"]), 0))
        else:
            rels.append((0, _pick(rng, ["has", "HAS"]), len(objs) - 1))
    if rng.random() < 0.3:
        px = x0 + bw * 0.35
        man = _obj(
            rng,
            "man",
            "blue",
            ["standing"],
            [
                Shape(
                    "polygon",
                    [px, y0 - 1, px + bw * 0.3, y0 - 1, px + bw * 0.2, y0 - H * 0.35, px + bw * 0.1, y0 - H * 0.35],
                )
            ],
        )
        objs.append(man)
        rels.append((len(objs) - 1, "riding", 0))
    return objs, rels


def _table(rng, W, H) -> tuple[list[Obj], list[tuple[int, str, int]]]:
    tw = int(W * rng.uniform(0.45, 0.6))
    x0 = int(rng.uniform(0.03, 0.97 - 0.6) * W)
    ty = int(H * rng.uniform(0.5, 0.6))
    th = max(8, int(H * 0.05))
    leg_h = int(H * 0.3)
    colour = "brown" if rng.random() < 0.85 else "white"
    shapes = [
        Shape("rect", [x0, ty, x0 + tw, ty + th]),
        Shape("rect", [x0 + 4, ty + th, x0 + 12, min(H - 1, ty + th + leg_h)]),
        Shape("rect", [x0 + tw - 12, ty + th, x0 + tw - 4, min(H - 1, ty + th + leg_h)]),
    ]
    table = _obj(rng, "table", colour, ["wooden", colour] if colour == "brown" else [colour], shapes)
    objs, rels = [table], []
    n_cups = int(rng.integers(1, 4))
    slots = np.linspace(x0 + tw * 0.12, x0 + tw * 0.88, n_cups + 2)[1:-1]
    for sx in slots:
        cw, ch = int(W * 0.05), int(H * 0.09)
        colour_c = "white" if rng.random() < 0.7 else _pick(rng, ["red", "yellow"])
        cup = _obj(
            rng,
            "cup",
            colour_c,
            [colour_c] if rng.random() < 0.8 else [colour_c, "ceramic"],
            [Shape("rect", [sx - cw / 2, ty - ch, sx + cw / 2, ty - 1])],
        )
        objs.append(cup)
        if rng.random() < 0.8:
            rels.append((len(objs) - 1, _pick(rng, ["on", "on top of", "ON", "sitting on"]), 0))
        else:
            rels.append((0, "has", len(objs) - 1))
    if rng.random() < 0.35:
        px = x0 + tw * 0.5
        plate = _obj(
            rng,
            "plate",
            "white",
            ["white", "round"],
            [Shape("ellipse", [px - W * 0.06, ty - 6, px + W * 0.06, ty - 1])],
        )
        objs.append(plate)
        rels.append((len(objs) - 1, "on", 0))
    return objs, rels


def _car(rng, W, H) -> tuple[list[Obj], list[tuple[int, str, int]]]:
    cw, ch = int(W * rng.uniform(0.35, 0.45)), int(H * rng.uniform(0.14, 0.2))
    x0 = int(rng.uniform(0.05, 0.95 - 0.45) * W)
    y0 = int(H * rng.uniform(0.45, 0.6))
    colour = _pick(rng, ["red", "blue", "grey", "white"])
    body = _obj(
        rng,
        "car",
        colour,
        [colour, "parked"] if rng.random() < 0.5 else [colour],
        [Shape("rect", [x0, y0, x0 + cw, y0 + ch]), Shape("rect", [x0 + cw * 0.2, y0 - ch * 0.5, x0 + cw * 0.75, y0])],
    )
    objs, rels = [body], []
    r = max(6, int(ch * 0.35))
    for cx in (x0 + cw * 0.22, x0 + cw * 0.78):
        cy = y0 + ch
        objs.append(_obj(rng, "wheel", "black", ["black"], [Shape("ellipse", [cx - r, cy - r, cx + r, cy + r])]))
        rels.append((len(objs) - 1, _pick(rng, ["of", "on"]), 0) if rng.random() < 0.6 else (0, "has", len(objs) - 1))
    return objs, rels


def _small(rng, W, H, cls: str) -> Obj:
    s = int(min(W, H) * rng.uniform(0.05, 0.1))
    x = rng.uniform(0.02, 0.98) * (W - s - 2)
    y = rng.uniform(0.02, 0.98) * (H - s - 2)
    if cls == "ball":
        colour = _pick(rng, ["red", "red", "blue", "yellow"])
        return _obj(rng, cls, colour, [colour, "round"], [Shape("ellipse", [x, y, x + s, y + s])])
    if cls == "flower":
        colour = _pick(rng, ["pink", "yellow", "red"])
        return _obj(
            rng,
            cls,
            colour,
            [colour],
            [Shape("polygon", [x + s / 2, y, x + s, y + s / 2, x + s / 2, y + s, x, y + s / 2])],
        )
    if cls == "book":
        colour = _pick(rng, ["blue", "green", "red"])
        return _obj(
            rng, cls, colour, [colour] if rng.random() < 0.7 else [], [Shape("rect", [x, y, x + s * 0.7, y + s])]
        )
    if cls == "stone":
        return _obj(rng, cls, "grey", ["grey"], [Shape("ellipse", [x, y, x + s, y + s * 0.6])])
    if cls == "sign":
        colour = _pick(rng, ["red", "blue"])
        return _obj(rng, cls, colour, [colour], [Shape("rect", [x, y, x + s, y + s * 0.8])])
    if cls == "lamp":
        return _obj(
            rng, cls, "yellow", ["yellow", "bright"], [Shape("polygon", [x, y + s, x + s, y + s, x + s / 2, y])]
        )
    raise ValueError(cls)


def _sky_scene(rng, W, H) -> tuple[list[Obj], list[tuple[int, str, int]]]:
    sky = _obj(rng, "sky", "blue", ["blue", "clear"], [Shape("rect", [0, 0, W - 1, int(H * 0.12)])])
    objs, rels = [sky], []
    cx = rng.uniform(0.15, 0.85) * W
    cloud = _obj(
        rng, "cloud", "white", ["white", "fluffy"], [Shape("ellipse", [cx - W * 0.08, 4, cx + W * 0.08, int(H * 0.1)])]
    )
    objs.append(cloud)
    rels.append((1, "in", 0))
    if rng.random() < 0.15:
        kx = rng.uniform(0.1, 0.9) * W
        objs.append(
            _obj(rng, "kite", "orange", ["orange"], [Shape("polygon", [kx, 2, kx + 10, 12, kx, 22, kx - 10, 12])])
        )
        rels.append((len(objs) - 1, "in", 0))
    return objs, rels


def _grass_scene(rng, W, H) -> tuple[list[Obj], list[tuple[int, str, int]]]:
    grass = _obj(rng, "grass", "green", ["green", "short"], [Shape("rect", [0, int(H * 0.9), W - 1, H - 1])])
    objs, rels = [grass], []
    if rng.random() < 0.5:
        tx = rng.uniform(0.1, 0.9) * W
        objs.append(
            _obj(
                rng,
                "tree",
                "green",
                ["green", "tall"],
                [
                    Shape("ellipse", [tx - W * 0.07, H * 0.55, tx + W * 0.07, H * 0.78]),
                    Shape("rect", [tx - 3, H * 0.78, tx + 3, H * 0.9]),
                ],
            )
        )
        rels.append((len(objs) - 1, "growing in", 0))
    return objs, rels


# --------------------------------------------------------------------------- drawing
def _background(rng: np.random.Generator, W: int, H: int) -> np.ndarray:
    """A soft gradient plus blotches and fine noise, so inpainting has texture to work with."""
    base = np.array(_pick(rng, [(196, 210, 222), (214, 204, 186), (190, 214, 196), (220, 220, 210)]), dtype=np.float32)
    yy, xx = np.mgrid[0:H, 0:W].astype(np.float32)
    grad = (yy / H)[..., None] * np.array([-30, -18, -10], np.float32) + (xx / W)[..., None] * np.array(
        [8, 4, -6], np.float32
    )
    low = rng.normal(0, 1, (H // 16 + 2, W // 16 + 2, 1)).astype(np.float32)
    low = np.asarray(
        Image.fromarray(((low[..., 0] + 3) * 40).clip(0, 255).astype(np.uint8)).resize((W, H), Image.BILINEAR),
        np.float32,
    )
    noise = rng.normal(0, 6, (H, W, 1)).astype(np.float32)
    img = base + grad + (low[..., None] - 120) * 0.12 + noise
    return img.clip(0, 255).astype(np.uint8)


def _draw(draw: ImageDraw.ImageDraw, shape: Shape, fill: int | tuple[int, ...]) -> None:
    p = [int(round(v)) for v in shape.params]
    if shape.kind == "rect":
        draw.rectangle(p, fill=fill)
    elif shape.kind == "ellipse":
        draw.ellipse(p, fill=fill)
    elif shape.kind == "polygon":
        draw.polygon(list(zip(p[0::2], p[1::2])), fill=fill)
    else:
        raise ValueError(f"unknown shape kind {shape.kind!r}")


def _shapes_mask(shapes: list[JSONObject], width: int, height: int) -> np.ndarray:
    canvas = Image.new("L", (width, height), 0)
    draw = ImageDraw.Draw(canvas)
    for s in shapes:
        _draw(draw, Shape(s["kind"], s["params"]), 1)
    return np.asarray(canvas, dtype=np.uint8).astype(bool)


def object_mask(
    truth: JSONObject, image_id: int | str, object_id: int | str, visible_only: bool = False
) -> np.ndarray:
    """The drawn pixels of one object (H x W bool), rebuilt from ``sample_truth.json``.

    ``visible_only`` removes pixels covered by objects drawn later (higher ``z``).
    """
    image = truth["images"][str(image_id)]
    try:
        obj = image["objects"][str(object_id)]
    except KeyError:
        raise KeyError(f"sample truth: image {image_id} has no drawn object {object_id}") from None
    mask = _shapes_mask(obj["shapes"], image["width"], image["height"])
    if visible_only:
        for other in image["objects"].values():
            if other["z"] > obj["z"]:
                mask &= ~_shapes_mask(other["shapes"], image["width"], image["height"])
    return mask


def load_truth(root: str | Path) -> JSONObject:
    """Read ``sample_truth.json`` from a sample root written by :func:`generate_sample`."""
    return json.loads((Path(root) / TRUTH_FILE).read_text(encoding="utf-8"))


# --------------------------------------------------------------------------- Visual Genome
def _scene(rng: np.random.Generator, index: int, W: int, H: int) -> tuple[list[Obj], list[tuple[int, str, int]]]:
    """Compose one image: a background story (sky/grass), main scenes, small extras."""
    objs: list[Obj] = []
    rels: list[tuple[int, str, int]] = []

    def add(part: tuple[list[Obj], list[tuple[int, str, int]]]) -> None:
        base = len(objs)
        objs.extend(part[0])
        rels.extend((s + base, p, o + base) for s, p, o in part[1])

    if rng.random() < 0.55:
        add(_sky_scene(rng, W, H))
    if rng.random() < 0.4:
        add(_grass_scene(rng, W, H))
    mains = [_skateboard, _table, _car]
    weights = np.array([0.42, 0.42, 0.22])
    chosen = [m for m, w in zip(mains, weights) if rng.random() < w]
    if not chosen:
        chosen = [mains[index % 3]]
    for m in chosen[:2]:
        add(m(rng, W, H))
    dense = index % 6 == 5  # one image in six is crowded (alteration tracing needs > 15 objects)
    n_extra = int(rng.integers(16, 22)) - len(objs) if dense else int(rng.integers(0, 4))
    for _ in range(max(0, n_extra)):
        objs.append(_small(rng, W, H, _pick(rng, ["ball", "flower", "book", "stone", "sign", "lamp"])))
    if rng.random() < 0.15 and any(o.cls == "ball" for o in objs) and any(o.cls == "grass" for o in objs):
        rels.append(
            (
                next(i for i, o in enumerate(objs) if o.cls == "ball"),
                "on",
                next(i for i, o in enumerate(objs) if o.cls == "grass"),
            )
        )
    return objs, rels


def _visible_fraction(drawn: list[np.ndarray], i: int) -> float:
    """The share of object ``i``'s drawn pixels that no later-drawn object covers."""
    later = np.zeros_like(drawn[i])
    for m in drawn[i + 1 :]:
        later |= m
    return float((drawn[i] & ~later).sum()) / max(1, int(drawn[i].sum()))


def _box(mask: np.ndarray) -> tuple[int, int, int, int]:
    ys, xs = np.nonzero(mask)
    x0, x1, y0, y1 = int(xs.min()), int(xs.max()), int(ys.min()), int(ys.max())
    return x0, y0, x1 - x0 + 1, y1 - y0 + 1


def _vg_object(o: Obj) -> JSONObject:
    x, y, w, h = o.box
    return {"synsets": [o.synset], "h": h, "object_id": o.object_id, "names": o.names, "w": w, "y": y, "x": x}


def _rel_end(rng: np.random.Generator, o: Obj) -> JSONObject:
    """Subjects and objects of relationships carry ``name`` or ``names``, as the real file mixes them."""
    d = {"object_id": o.object_id, "x": o.box[0], "y": o.box[1], "w": o.box[2], "h": o.box[3], "synsets": [o.synset]}
    if rng.random() < 0.5:
        d["name"] = o.names[0]
    else:
        d["names"] = list(o.names)
    return d


def _write_json(path: Path, value: JSONValue) -> None:
    # One line, like the published files (which is what makes streaming them non-trivial).
    path.write_text(json.dumps(value, separators=(", ", ": ")), encoding="utf-8")


def _draw_objects(
    draw: ImageDraw.ImageDraw, objs: list[Obj], first_id: int, W: int, H: int
) -> tuple[JSONObject, list[np.ndarray]]:
    """Draw ``objs`` back to front, numbering them from ``first_id``: their truth entries (shapes,
    box, depth) by object id, and each one's drawn mask."""
    truth_objs: JSONObject = {}
    drawn = []
    for z, o in enumerate(objs):
        o.object_id = first_id + z
        for s in o.shapes:
            _draw(draw, s, COLOURS[o.colour])
        shapes = [s.as_json() for s in o.shapes]
        drawn.append(_shapes_mask(shapes, W, H))
        o.box = _box(drawn[-1])
        truth_objs[str(o.object_id)] = {
            "name": o.cls,
            "colour": o.colour,
            "rgb": list(COLOURS[o.colour]),
            "z": z,
            "shapes": shapes,
            "box": list(o.box),
        }
    return truth_objs, drawn


def _vg_attributes(rng: np.random.Generator, objs: list[Obj], vg_objs: list[JSONObject]) -> list[JSONObject]:
    """The attributes.json entries of an image's objects, spelled messily; some objects carry no
    "attributes" key at all, as in the real file."""
    vg_attrs = []
    for o, v in zip(objs, vg_objs):
        a = dict(v)
        if o.attributes or rng.random() < 0.5:
            a["attributes"] = [_messy(rng, t) for t in o.attributes]
        vg_attrs.append(a)
    return vg_attrs


def _vg_defects(vg_objs: list[JSONObject], image_id: int, next_obj: int, W: int) -> int:
    """The defects a real objects.json has, planted in three images (an object outside the image,
    a duplicated object id, a non-numeric coordinate); returns the next free object id."""
    if image_id == 7:
        vg_objs.append(
            {"synsets": [], "h": 30, "object_id": next_obj, "names": ["ghost"], "w": 40, "y": 10, "x": W + 25}
        )
        next_obj += 1
    if image_id == 11:
        vg_objs.append(dict(vg_objs[0]))  # duplicated object id
    if image_id == 17:
        vg_objs.append({"synsets": [], "h": 20, "object_id": next_obj, "names": ["box"], "w": 20, "y": 5, "x": "left"})
        next_obj += 1
    return next_obj


def _vg_relationships(
    rng: np.random.Generator, objs: list[Obj], rels: list[tuple[int, str, int]], first_id: int
) -> list[JSONObject]:
    """The relationships.json entries of an image, numbered from ``first_id``."""
    vg_rels = []
    for s, p, o in rels:
        vg_rels.append(
            {
                "predicate": p,
                "object": _rel_end(rng, objs[o]),
                "relationship_id": first_id + len(vg_rels),
                "synsets": [],
                "subject": _rel_end(rng, objs[s]),
            }
        )
    return vg_rels


def _generate_vg(
    root: Path, rng: np.random.Generator, defects: bool, n_images: int = N_VG_IMAGES
) -> tuple[dict[str, int], JSONObject]:
    (root / "VG_100K").mkdir(parents=True, exist_ok=True)
    (root / "VG_100K_2").mkdir(parents=True, exist_ok=True)
    image_data, objects_json, rels_json, attrs_json = [], [], [], []
    truth_images: JSONObject = {}
    next_obj, next_rel = FIRST_OBJECT_ID, FIRST_RELATIONSHIP_ID
    sizes = [(320, 240), (400, 300), (360, 270), (300, 300)]
    missing_file_image = 13 if defects else None
    n_attr = 0
    for index in range(n_images):  # one stream, image by image: a longer run keeps the first images as they were
        image_id = index + 1
        W, H = sizes[int(rng.integers(len(sizes)))]
        folder = "VG_100K" if image_id <= 120 else "VG_100K_2"
        canvas = Image.fromarray(_background(rng, W, H))
        draw = ImageDraw.Draw(canvas)
        objs, rels = _scene(rng, index, W, H)
        truth_objs, drawn = _draw_objects(draw, objs, next_obj, W, H)
        next_obj += len(objs)
        # Annotators label what they can see: an object drawn over by later ones until less than
        # MIN_VISIBLE of it shows stays in the picture (and the truth) but gets no annotation.
        seen = [i for i, o in enumerate(objs) if _visible_fraction(drawn, i) >= MIN_VISIBLE]
        pos = {old: new for new, old in enumerate(seen)}
        rels = [(pos[s], p, pos[o]) for s, p, o in rels if s in pos and o in pos]
        objs = [objs[i] for i in seen]
        if image_id != missing_file_image:
            canvas.save(root / folder / f"{image_id}.jpg", format="JPEG", quality=92)
        truth_images[str(image_id)] = {
            "width": W,
            "height": H,
            "file": f"{VG_DIR}/{folder}/{image_id}.jpg",
            "objects": truth_objs,
        }
        image_data.append(
            {
                "width": W,
                "url": f"https://cs.stanford.edu/people/rak248/{folder}/{image_id}.jpg",
                "height": H,
                "image_id": image_id,
                "coco_id": (100000 + image_id) if image_id % 4 == 0 else None,
                "flickr_id": (9000000 + image_id) if image_id % 3 == 0 else None,
            }
        )
        vg_objs = [_vg_object(o) for o in objs]
        vg_attrs = _vg_attributes(rng, objs, vg_objs)
        n_attr += sum(len(o.attributes) for o, a in zip(objs, vg_attrs) if "attributes" in a)
        if defects:
            next_obj = _vg_defects(vg_objs, image_id, next_obj, W)
        objects_json.append({"image_id": image_id, "objects": vg_objs, "image_url": image_data[-1]["url"]})
        attrs_json.append({"image_id": image_id, "attributes": vg_attrs})
        vg_rels = _vg_relationships(rng, objs, rels, next_rel)
        next_rel += len(vg_rels)
        rels_json.append({"relationships": vg_rels, "image_id": image_id})
    if defects:
        objects_json.append(
            {
                "image_id": 999999,
                "objects": [{"synsets": [], "h": 5, "object_id": next_obj, "names": ["cup"], "w": 5, "y": 1, "x": 1}],
            }
        )
    _write_json(root / "image_data.json", image_data)
    _write_json(root / "objects.json", objects_json)
    _write_json(root / "relationships.json", rels_json)
    _write_json(root / "attributes.json", attrs_json)
    counts = {
        "vg_images": len(image_data),
        "vg_objects": sum(len(e["objects"]) for e in objects_json),
        "vg_relationships": sum(len(e["relationships"]) for e in rels_json),
        "vg_attributes": n_attr,
    }
    return counts, truth_images


# --------------------------------------------------------------------------- FSC147
FSC_CLASSES = [
    ("apples", "red", "ellipse"),
    ("coins", "yellow", "ellipse"),
    ("sea shells", "pink", "polygon"),
    ("birds", "black", "ellipse"),
]
FSC_COUNTS = [
    6,
    9,
    12,
    14,
    17,
    20,
    23,
    27,
    31,
    35,
    40,
    44,
    49,
    53,
    58,
    64,
    70,
    77,
    84,
    92,
    101,
    110,
    120,
    130,
    140,
    11,
    26,
    55,
    75,
    105,
]


def _fsc_count(rng: np.random.Generator, index: int) -> int:
    """Objects to draw in FSC147 image ``index``: the fixed list for the default images, then one
    bin of :data:`FSC_BINS` after the other (a count drawn inside it, the last edge included), so
    every bin grows alike and a scaled dense-counting task finds images in each."""
    if index < len(FSC_COUNTS):
        return FSC_COUNTS[index]
    b = (index - len(FSC_COUNTS)) % (len(FSC_BINS) - 1)
    last = b == len(FSC_BINS) - 2
    return int(rng.integers(FSC_BINS[b], FSC_BINS[b + 1] + (1 if last else 0)))


def _generate_fsc(
    root: Path, rng: np.random.Generator, defects: bool, n_images: int = N_FSC_IMAGES
) -> tuple[dict[str, int], JSONObject]:
    img_dir = root / "images_384_VarV2"
    img_dir.mkdir(parents=True, exist_ok=True)
    annotations: JSONObject = {}
    class_lines: list[str] = []
    truth: JSONObject = {}
    names = []
    for i in range(n_images):  # one stream, image by image: a longer run keeps the first images as they were
        fname = f"{2 + 3 * i}.jpg"
        names.append(fname)
        cls, colour, kind = FSC_CLASSES[i % len(FSC_CLASSES)]
        count = _fsc_count(rng, i)
        H, W = 384, int(rng.choice([480, 512, 576]))
        canvas = Image.fromarray(_background(rng, W, H))
        draw = ImageDraw.Draw(canvas)
        cols, rows, cw, ch, r = _count_grid(count, W, H)
        cells = rng.permutation(rows * cols)[:count]
        points = []
        for c in sorted(int(v) for v in cells):
            cy, cx = 10 + (c // cols + 0.5) * ch, 10 + (c % cols + 0.5) * cw
            cx += rng.uniform(-0.15, 0.15) * cw
            cy += rng.uniform(-0.15, 0.15) * ch
            if kind == "ellipse":
                _draw(draw, Shape("ellipse", [cx - r, cy - r, cx + r, cy + r]), COLOURS[colour])
            else:
                _draw(draw, Shape("polygon", [cx, cy - r, cx + r, cy + r, cx - r, cy + r]), COLOURS[colour])
            points.append([round(float(cx), 2), round(float(cy), 2)])
        if not (defects and i == FSC_MISSING_IMAGE):
            canvas.save(img_dir / fname, format="JPEG", quality=92)
        boxes = []
        for px, py in points[:3]:
            x1, y1, x2, y2 = round(px - r, 1), round(py - r, 1), round(px + r, 1), round(py + r, 1)
            boxes.append([[x1, y1], [x1, y2], [x2, y2], [x2, y1]])
        annotations[fname] = {
            "H": H,
            "W": W,
            "box_examples_coordinates": boxes,
            "box_examples_path": [f"/images_384_VarV2/{fname[:-4]}_box_{k}.jpg" for k in range(len(boxes))],
            "density_path": f"/gt_density_map_adaptive_384_VarV2/{fname[:-4]}.npy",
            "img_path": f"/images_384_VarV2/{fname}",
            "points": points,
            "r": [round(r, 2)] * len(boxes),
            "ratio_h": 1.0,
            "ratio_w": 1.0,
        }
        if not (defects and i == FSC_NO_CLASS_LINE):
            class_lines.append(f"{fname}\t{cls}")
        truth[fname] = {"count": count, "class": cls, "width": W, "height": H}
    _write_json(root / "annotation_FSC147_384.json", annotations)
    (root / "ImageClasses_FSC147.txt").write_text("\n".join(class_lines) + "\n", encoding="utf-8")
    split = {"train": names[0::3], "val": names[1::3], "test": names[2::3], "test_coco": [], "val_coco": []}
    (root / "Train_Test_Val_FSC_147.json").write_text(json.dumps(split, indent=4), encoding="utf-8")
    return {"fsc_images": len(annotations), "fsc_points": sum(len(a["points"]) for a in annotations.values())}, truth


def generate_sample(
    out_dir: str | Path,
    seed: int = 0,
    defects: bool = True,
    vg_images: int = N_VG_IMAGES,
    fsc_images: int = N_FSC_IMAGES,
    coco_images: int = N_COCO_IMAGES,
) -> JSONObject:
    """Write the sample under ``out_dir`` (see the module doc) and return summary counts.

    A count above its default extends that source: the first images (their files, names,
    annotations, ids and truth) are the same as with the default count and the same seed, so a
    benchmark built on the bigger sample is "the same data plus new images" (how users extend a
    benchmark). Each source has its own count because the tasks draw on them unequally."""
    for name, n in (("vg_images", vg_images), ("fsc_images", fsc_images), ("coco_images", coco_images)):
        if n < 1:
            raise ValueError(f"{name} must be >= 1, got {n}")
    out = Path(out_dir)
    vg_root, fsc_root = out / VG_DIR, out / FSC_DIR
    vg_root.mkdir(parents=True, exist_ok=True)
    fsc_root.mkdir(parents=True, exist_ok=True)
    ss = np.random.SeedSequence(seed)
    vg_seed, fsc_seed, coco_seed = ss.spawn(3)  # a third child: the first two (and their files) are as before
    vg_counts, vg_truth = _generate_vg(vg_root, np.random.default_rng(vg_seed), defects, vg_images)
    fsc_counts, fsc_truth = _generate_fsc(fsc_root, np.random.default_rng(fsc_seed), defects, fsc_images)
    coco_counts = _generate_coco(out / COCO_DIR, np.random.default_rng(coco_seed), defects, coco_images)
    truth = {"seed": seed, "defects": defects, "images": vg_truth, "fsc147": fsc_truth}
    (out / TRUTH_FILE).write_text(json.dumps(truth, sort_keys=True), encoding="utf-8")
    return {"root": str(out), "seed": seed, **vg_counts, **fsc_counts, **coco_counts}


# --------------------------------------------------------------------------- COCO format
def crowd_rle(box: tuple[int, int, int, int], width: int, height: int) -> JSONObject:
    """Uncompressed RLE of a box region, as COCO writes crowd segmentations: run lengths of 0s
    and 1s over the mask in column-major order, starting with a run of 0s."""
    mask = np.zeros((height, width), dtype=np.uint8)
    x, y, w, h = box
    mask[y : y + h, x : x + w] = 1
    flat = mask.flatten(order="F")
    change = np.flatnonzero(np.diff(flat)) + 1
    runs = np.diff(np.r_[0, change, flat.size]).tolist()
    if flat[0] == 1:
        runs = [0] + runs
    return {"counts": [int(r) for r in runs], "size": [height, width]}


def _coco_scene_image(
    rng: np.random.Generator, index: int
) -> tuple[Image.Image, list[tuple[str, tuple[int, int, int, int]]]]:
    """A drawn VG-style scene; (class, box) per object."""
    W, H = [(320, 240), (400, 300), (360, 270)][int(rng.integers(3))]
    canvas = Image.fromarray(_background(rng, W, H))
    draw = ImageDraw.Draw(canvas)
    objs, _ = _scene(rng, index, W, H)
    out = []
    for o in objs:
        for sh in o.shapes:
            _draw(draw, sh, COLOURS[o.colour])
        out.append((o.cls, _box(_shapes_mask([sh.as_json() for sh in o.shapes], W, H))))
    return canvas, out


def _count_grid(count: int, W: int, H: int) -> tuple[int, int, float, float, float]:
    """The grid a counting image draws its ``count`` instances on: columns, rows, cell width and
    height (10 px margins), and the instance radius."""
    cols = int(np.ceil(np.sqrt(count * W / H)))
    rows = int(np.ceil(count / cols))
    cw, ch = (W - 20) / cols, (H - 20) / rows
    return cols, rows, cw, ch, max(3.0, min(cw, ch) * 0.3)


def _coco_count_image(
    rng: np.random.Generator, count: int, cls: str, colour: str
) -> tuple[Image.Image, list[tuple[str, tuple[int, int, int, int]]]]:
    """``count`` instances of one class on a grid (a counting image)."""
    W, H = 480, 360
    canvas = Image.fromarray(_background(rng, W, H))
    draw = ImageDraw.Draw(canvas)
    cols, rows, cw, ch, r = _count_grid(count, W, H)
    out = []
    for c in sorted(int(v) for v in rng.permutation(rows * cols)[:count]):
        cx, cy = 10 + (c % cols + 0.5) * cw, 10 + (c // cols + 0.5) * ch
        shape = Shape("ellipse", [cx - r, cy - r, cx + r, cy + r])
        _draw(draw, shape, COLOURS[colour])
        out.append((cls, _box(_shapes_mask([shape.as_json()], W, H))))
    return canvas, out


COCO_CLASSES = sorted(set(SYNSETS) | {"apple", "orange", "zebra"})  # zebra: a category with no instance


def _coco_drawn(rng: np.random.Generator, n: int) -> tuple[Image.Image, list[tuple[str, tuple[int, int, int, int]]]]:
    """COCO image ``n`` of the sequence: the default part's scenes, counting images and empty
    images, then (past :data:`N_COCO_IMAGES`) four scenes for each counting image."""
    if n < N_COCO_SCENES:
        return _coco_scene_image(rng, n)
    if n < N_COCO_SCENES + len(COCO_COUNTS) or n >= N_COCO_IMAGES and (n - N_COCO_IMAGES) % 5 == 4:
        k = n - N_COCO_SCENES if n < N_COCO_IMAGES else len(COCO_COUNTS) + (n - N_COCO_IMAGES) // 5
        return _coco_count_image(
            rng, COCO_COUNTS[k % len(COCO_COUNTS)], *[("apple", "red"), ("orange", "orange")][k % 2]
        )
    if n < N_COCO_IMAGES:  # images with no annotations at all, as COCO has
        W, H = 320, 240
        return Image.fromarray(_background(rng, W, H)), []
    return _coco_scene_image(rng, n)


def _coco_image_entries(
    n: int,
    iid: int,
    fname: str,
    size: tuple[int, int],
    objs: list[tuple[str, tuple[int, int, int, int]]],
    cat_id: dict[str, int],
) -> tuple[JSONObject, JSONObject]:
    """An image's entry in the COCO file and in its LVIS twin (negative and not-exhaustive category ids)."""
    W, H = size
    url = f"http://images.cocodataset.org/sample2017/{fname}"
    image = {
        "license": 1 + n % 3,
        "file_name": fname,
        "coco_url": url,
        "height": H,
        "width": W,
        "date_captured": "2013-11-14 11:18:45",
        "flickr_url": f"http://farm4.staticflickr.com/{iid}.jpg",
        "id": iid,
    }
    lvis_image = {
        "date_captured": "2013-11-14 11:18:45",
        "neg_category_ids": [cat_id["zebra"]],
        "id": iid,
        "license": 1 + n % 3,
        "height": H,
        "width": W,
        "flickr_url": f"http://farm4.staticflickr.com/{iid}.jpg",
        "coco_url": url,
        "not_exhaustive_category_ids": [cat_id["orange"]] if objs and objs[0][0] == "orange" and n % 4 == 1 else [],
    }
    return image, lvis_image


def _coco_annotations(
    n: int,
    iid: int,
    size: tuple[int, int],
    objs: list[tuple[str, tuple[int, int, int, int]]],
    cat_id: dict[str, int],
    ann_id: int,
) -> list[JSONObject]:
    """An image's instance annotations (ids from ``ann_id``), and a crowd region in RLE on some apple images."""
    W, H = size
    annotations: list[JSONObject] = []
    for cls, (x, y, w, h) in objs:
        annotations.append(
            {
                "segmentation": [[x, y, x + w, y, x + w, y + h, x, y + h]],
                "area": float(w * h),
                "iscrowd": 0,
                "image_id": iid,
                "bbox": [float(x), float(y), float(w), float(h)],
                "category_id": cat_id[cls],
                "id": ann_id,
            }
        )
        ann_id += 1
    if objs and objs[0][0] == "apple" and n % 4 == 2:  # a crowd of apples at the border: uncountable
        box = (W - 40, H - 30, 30, 20)
        annotations.append(
            {
                "segmentation": crowd_rle(box, W, H),
                "area": float(box[2] * box[3]),
                "iscrowd": 1,
                "image_id": iid,
                "bbox": [float(v) for v in box],
                "category_id": cat_id["apple"],
                "id": ann_id,
            }
        )
        ann_id += 1
    return annotations


def _coco_defects(image_id: int, first_cat: int, ann_id: int) -> list[JSONObject]:
    """The defects a real instances file has: a zero-width box, an unknown category, an unknown image."""
    annotations: list[JSONObject] = []
    annotations.append(
        {
            "segmentation": [[1, 1, 1, 1]],
            "area": 0.0,
            "iscrowd": 0,
            "image_id": image_id,
            "bbox": [5.0, 5.0, 0.0, 12.0],
            "category_id": first_cat,
            "id": ann_id,
        }
    )
    annotations.append(
        {
            "segmentation": [[1, 1, 9, 1, 9, 9]],
            "area": 64.0,
            "iscrowd": 0,
            "image_id": image_id,
            "bbox": [1.0, 1.0, 8.0, 8.0],
            "category_id": 999,
            "id": ann_id + 1,
        }
    )
    annotations.append(
        {
            "segmentation": [[1, 1, 9, 1, 9, 9]],
            "area": 64.0,
            "iscrowd": 0,
            "image_id": 424242,
            "bbox": [1.0, 1.0, 8.0, 8.0],
            "category_id": first_cat,
            "id": ann_id + 2,
        }
    )
    return annotations


def _write_lvis(
    root: Path, coco: JSONObject, lvis_images: list[JSONObject], cat_id: dict[str, int], classes: list[str]
) -> None:
    """The LVIS v1 twin of the COCO file: LVIS categories, no crowd regions."""
    annotations = coco["annotations"]
    lvis_cats = [
        {
            "frequency": "f" if c != "zebra" else "r",
            "id": cat_id[c],
            "synset": SYNSETS.get(c, f"{c}.n.01"),
            "image_count": 0,
            "instance_count": 0,
            "synonyms": [c.replace(" ", "_")],
            "def": f"a {c} (sample)",
            "name": c.replace(" ", "_"),
        }
        for c in classes
    ]
    lvis_anns = [
        {k: v for k, v in a.items() if k != "iscrowd"} for a in annotations if not a["iscrowd"]
    ]  # LVIS has no crowd regions
    lvis = {
        "info": coco["info"],
        "licenses": coco["licenses"],
        "images": lvis_images,
        "annotations": lvis_anns,
        "categories": lvis_cats,
    }
    _write_json(root / LVIS_ANNOTATIONS, lvis)


def _generate_coco(
    root: Path, rng: np.random.Generator, defects: bool, n_images: int = N_COCO_IMAGES
) -> dict[str, int]:
    """A COCO 2017-layout instances file (and its LVIS v1 twin) over drawn scenes and counting
    images, with non-contiguous category ids, a crowd region in RLE and images without objects."""
    img_dir = root / "sample2017"
    img_dir.mkdir(parents=True, exist_ok=True)
    (root / "annotations").mkdir(parents=True, exist_ok=True)
    drawn = [_coco_drawn(rng, n) for n in range(n_images)]  # one stream: a longer run keeps the first images
    classes = COCO_CLASSES  # fixed, so category ids do not depend on how many images are drawn
    cat_id = {c: 1 + 3 * i + i // 4 for i, c in enumerate(classes)}  # non-contiguous, as COCO's 1..90
    images, annotations, lvis_images = [], [], []
    ann_id = 900_001
    missing_file = 7 if defects else None
    for n, (canvas, objs) in enumerate(drawn):
        iid = 1000 + 17 * n
        fname = f"{iid:012d}.jpg"
        W, H = canvas.size
        if n != missing_file:
            canvas.save(img_dir / fname, format="JPEG", quality=92)
        image, lvis_image = _coco_image_entries(n, iid, fname, (W, H), objs, cat_id)
        images.append(image)
        lvis_images.append(lvis_image)
        annotations += _coco_annotations(n, iid, (W, H), objs, cat_id, ann_id)
        ann_id = 900_001 + len(annotations)
    if defects:
        annotations += _coco_defects(images[0]["id"], cat_id[classes[0]], ann_id)
    categories = [{"supercategory": "sample", "id": cat_id[c], "name": c} for c in classes]
    coco = {
        "info": {
            "description": "reactbench sample in the COCO 2017 format",
            "url": "",
            "version": "1.0",
            "year": 2017,
            "contributor": "reactbench",
            "date_created": "2017/09/01",
        },
        "licenses": [
            {"url": "http://creativecommons.org/licenses/by/2.0/", "id": i, "name": "Attribution License"}
            for i in (1, 2, 3)
        ],
        "images": images,
        "annotations": annotations,
        "categories": categories,
    }
    _write_json(root / COCO_ANNOTATIONS, coco)
    _write_lvis(root, coco, lvis_images, cat_id, classes)
    return {"coco_images": len(images), "coco_annotations": len(annotations)}
