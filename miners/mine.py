"""Mining entry points: Visual Genome (RE, CA, AT) and FSC147 (DC) to rows of the mine artifacts,
and their :class:`~miners.sources.SourceSpec` registrations (the COCO format's is in ``miners/coco.py``).

Pure functions over files: no Prefect, no run directory. ``tasks/stages/mine.py`` wraps them as
the ``mine`` stage; the scale benchmark and the tests call them directly.
"""

from __future__ import annotations

import posixpath
from typing import Callable, Optional

import fsspec

from miners import alteration, attribute, fsc147, relational
from miners.candidates import VGRows
from miners.canonical import Canonicalizer, PredicateCanonicalizer, read_alias_file
from miners.config import MineConfig
from miners.result import MineResult
from miners.sources import SourceSpec
from miners.vg_format import ImageLocator, read_image_data
from miners.vg_jobs import Job, run_jobs
from miners.vg_scan import Scan, finish_scan, new_scan
from storage.rejects import reject
from storage.task_ids import VG_TASK_IDS as VG_TASKS

Progress = Callable[[str, int], None]


def _exists(path: str) -> bool:
    fs, p = fsspec.core.url_to_fs(path)
    return fs.exists(p)


def vg_files(root: str) -> dict[str, str]:
    root = root.rstrip("/")
    return {name: posixpath.join(root, f"{name}.json") for name in ("image_data", "objects", "relationships", "attributes")}


def _aliases(explicit: str | None, root: str, name: str) -> list[list[str]]:
    path = explicit or posixpath.join(root.rstrip("/"), name)
    if explicit and not _exists(path):
        raise FileNotFoundError(f"alias file {path} (config mine.{name.split('.')[0]}) does not exist")
    return read_alias_file(path) if _exists(path) else []


def scan_visual_genome(root: str, cfg: MineConfig, tasks: tuple[str, ...], progress: Optional[Progress] = None) -> Scan:
    """Read the VG files the tasks need (one streaming pass each) into a :class:`Scan`."""
    files = vg_files(root)
    for key in ("image_data", "objects"):
        if not _exists(files[key]):
            raise FileNotFoundError(f"Visual Genome file missing: {files[key]} (sources.visual_genome = {root})")
    block = cfg.block_mb << 20
    obj_aliases = _aliases(cfg.object_alias, root, "object_alias.txt")
    pred_aliases = _aliases(cfg.relationship_alias, root, "relationship_alias.txt")
    canon = Canonicalizer(cfg.canonical, obj_aliases)
    preds = PredicateCanonicalizer(pred_aliases)
    images, problems = read_image_data(files["image_data"], block)
    scan = new_scan(images, canon, preds, cfg.box_tolerance)
    for reason, detail in problems:
        scan.rejects.append(reject(f"vg:image_data:{len(scan.rejects)}", "mine", reason, detail))
    kinds = ["objects"]
    if "relational_erasure" in tasks:
        if not _exists(files["relationships"]):
            raise FileNotFoundError(f"relational_erasure needs {files['relationships']}")
        kinds.append("relationships")
    if "counterfactual_attribute" in tasks and not _exists(files["attributes"]):
        raise FileNotFoundError(f"counterfactual_attribute needs {files['attributes']}")
    if _exists(files["attributes"]):
        kinds.append("attributes")
    jobs = [Job(k, files[k], canon, preds, cfg.box_tolerance, block, cfg.reader, cfg.threads) for k in kinds]
    run_jobs(jobs, scan, progress)
    finish_scan(scan)
    scan.canonical = canon.merges()
    return scan


def mine_visual_genome(root: str, cfg: MineConfig, seed: int, progress: Optional[Progress] = None, candidates: bool = True) -> MineResult:
    """RE, CA and AT candidates plus the pair and attribute statistics, from one scan.

    ``candidates=False`` stops after the statistics (C(A), C(A∩B), P, kept pairs; C(o),
    C(o∩a), P(a|o), kept attributes; crowded-image count): for inspecting distributions.
    """
    tasks = tuple(t for t in cfg.tasks if t in VG_TASKS)
    result = MineResult()
    if not tasks:
        return result
    scan = scan_visual_genome(root, cfg, tasks, progress)
    result.rejects.extend(scan.rejects)
    rows = VGRows(scan, ImageLocator(root, cfg.image_dir), cfg.context_max_objects) if candidates else None  # per-image index: only for candidates
    if "relational_erasure" in tasks:
        table = relational.pair_table(scan, cfg.relational_erasure)
        result.pair_table = relational.pair_stats_table(scan, table, cfg.stats_min_count)
        if candidates:
            result.add(relational.select(scan, table, cfg.relational_erasure, rows, seed, cfg.control_for("relational_erasure")))
        result.summary["pairs_kept"] = int(table.kept.sum())
    if "counterfactual_attribute" in tasks:
        atable = attribute.attribute_table(scan, cfg.counterfactual_attribute)
        result.attribute_table = attribute.attribute_stats_table(scan, atable, cfg.stats_min_count)
        if candidates:
            result.add(attribute.select(scan, atable, cfg.counterfactual_attribute, rows, seed, cfg.control_for("counterfactual_attribute")))
        result.summary["attributes_kept"] = int(atable.kept.sum())
    if "alteration_tracing" in tasks:
        result.summary["crowded_images"] = alteration.crowded_images(scan, cfg.alteration_tracing).size
        if candidates:
            result.add(alteration.select(scan, cfg.alteration_tracing, rows, seed))
    result.summary["canonicalisation"] = scan.canonical
    result.summary.update({"images": len(scan.images), "objects": int(len(scan.objects["img"])), "valid_objects": int(scan.objects["valid"].sum()), "classes": len(scan.names.names)})
    return result.finish()


def mine_fsc147(root: str, cfg: MineConfig, seed: int) -> MineResult:
    """Dense-counting candidates from an FSC147 folder."""
    result = MineResult()
    if "dense_counting" not in cfg.tasks:
        return result
    data = fsc147.read_fsc147(root)
    result.add(fsc147.select(data, cfg.dense_counting, seed))
    result.summary["fsc_images"] = len(data.annotations)
    result.summary.update(fsc147.split_counts(data, cfg.dense_counting.splits))
    return result.finish()


def _vg_file_list(root: str, cfg: MineConfig) -> list[str]:
    """The VG files read, the default alias files, then the configured ones."""
    root = root.rstrip("/")
    files = list(vg_files(root).values())
    files += [posixpath.join(root, "object_alias.txt"), posixpath.join(root, "relationship_alias.txt")]
    return files + [p for p in (cfg.object_alias, cfg.relationship_alias) if p]


def _vg_required(root: str, cfg: MineConfig) -> list[str]:
    files = vg_files(root)
    return [files[k] for k in ("image_data", "objects")]


def _fsc_files(root: str, cfg: MineConfig) -> list[str]:
    return [posixpath.join(root.rstrip("/"), n) for n in (fsc147.ANNOTATIONS, fsc147.CLASSES, fsc147.SPLITS)]


VISUAL_GENOME = SourceSpec(
    name="visual_genome",
    format="Visual Genome 1.x JSON (image_data, objects, relationships, attributes)",
    yields=frozenset({"images", "objects", "relations", "attributes"}),
    tasks=VG_TASKS,
    setting_help="a folder with image_data.json, objects.json, ...",
    files=_vg_file_list,
    required=_vg_required,
    mine=lambda root, cfg, seed, progress: mine_visual_genome(root, cfg, seed, progress),
    manifest=lambda result: {"canonicalisation": result.summary.get("canonicalisation", {})},
)

FSC147 = SourceSpec(
    name="fsc147",
    format="FSC-147 (annotation_FSC147_384.json, class list, split file)",
    yields=frozenset({"images", "points"}),
    tasks=(fsc147.TASK,),
    setting_help="a folder with annotation_FSC147_384.json, ...",
    files=_fsc_files,
    required=_fsc_files,
    mine=lambda root, cfg, seed, progress: mine_fsc147(root, cfg, seed),
    manifest=lambda result: {"fsc147": {k: result.summary[k] for k in ("fsc_images", "fsc_outside_splits", "fsc_split_counts") if k in result.summary}},
    images_key="fsc_images",
)
