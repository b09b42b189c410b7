"""Mining entry points: Visual Genome and FSC147 to rows of the mine artifacts, and their
:class:`~miners.sources.SourceSpec` registrations (the COCO format's is in ``miners/coco.py``).

Each source reads its files once, then calls the miner of every requested task whose spec has
one for it (``TaskSpec.miners``; the contract is in ``miners/dispatch.py``). Which optional
Visual Genome files are read follows the requested tasks' ``vg_reads`` hooks.

Pure functions over files: no Prefect, no run directory. ``tasks/stages/mine.py`` wraps them as
the ``mine`` stage; the scale benchmark and the tests call them directly.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Sequence

import fsspec

from miners import fsc147
from miners.candidates import FSC, VG, VGRows
from miners.canonical import Canonicalizer, PredicateCanonicalizer, read_alias_file
from miners.config import MineSettings
from miners.dispatch import TaskMiner, requested_miners, run_miners
from miners.result import MineResult
from miners.sources import SourceSpec
from miners.vg_format import ImageLocator, read_image_data
from miners.vg_jobs import Job, run_jobs
from miners.vg_scan import Scan, finish_scan, new_scan
from storage.rejects import reject

Progress = Callable[[str, int], None]


def _exists(path: str) -> bool:
    fs, p = fsspec.core.url_to_fs(path)
    return fs.exists(p)


VG_KINDS = ("image_data", "objects", "relationships", "attributes")
# Always read: image_data and objects; attributes.json whenever present (candidates list their
# target's attributes). relationships.json, and attributes.json as a must, only when a requested
# task's spec names them in its ``vg_reads`` hook (a tuple of these kinds).
VG_OPTIONAL = ("relationships", "attributes")


def vg_files(root: str) -> dict[str, str]:
    root = root.rstrip("/")
    return {name: posixpath.join(root, f"{name}.json") for name in VG_KINDS}


def vg_reads(miners: Sequence[TaskMiner]) -> dict[str, str]:
    """Optional VG file kind -> the first requested task that needs it (its ``vg_reads`` hook)."""
    needs: dict[str, str] = {}
    for miner in miners:
        for kind in miner.reads:
            if kind not in VG_OPTIONAL:
                raise ValueError(
                    f"task {miner.task!r}: vg_reads names {kind!r}; Visual Genome's optional files are {', '.join(VG_OPTIONAL)}"
                )
            needs.setdefault(kind, miner.task)
    return needs


def _aliases(explicit: str | None, root: str, name: str) -> list[list[str]]:
    path = explicit or posixpath.join(root.rstrip("/"), name)
    if explicit and not _exists(path):
        raise FileNotFoundError(f"alias file {path} (config mine.{name.split('.')[0]}) does not exist")
    return read_alias_file(path) if _exists(path) else []


def scan_visual_genome(
    root: str, cfg: MineSettings, miners: Sequence[TaskMiner], progress: Progress | None = None
) -> Scan:
    """Read the VG files the tasks need (one streaming pass each) into a :class:`Scan`: image_data
    and objects, the files the miners' ``reads`` name, and attributes.json when present."""
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
    needs = vg_reads(miners)
    for kind, task in needs.items():
        if not _exists(files[kind]):
            raise FileNotFoundError(f"{task} needs {files[kind]}")
    kinds = ["objects"] + [k for k in VG_OPTIONAL if k in needs or (k == "attributes" and _exists(files[k]))]
    jobs = [Job(k, files[k], canon, preds, cfg.box_tolerance, block, cfg.reader, cfg.threads) for k in kinds]
    run_jobs(jobs, scan, progress)
    finish_scan(scan)
    scan.canonical = canon.merges()
    return scan


def mine_visual_genome(
    root: str,
    cfg: MineSettings,
    seed: int,
    progress: Progress | None = None,
    miners: Sequence[TaskMiner] | None = None,
    candidates: bool = True,
) -> MineResult:
    """Candidates and statistics of every requested task with a Visual Genome miner, from one scan.

    ``candidates=False`` stops after the statistics (for RE: C(A), C(A∩B), P, kept pairs; for
    CA: C(o), C(o∩a), P(a|o), kept attributes; for AT: the crowded-image count): for inspecting
    distributions. ``miners``: the requested tasks' Visual Genome miners, as the mine stage hands
    them down (``tasks.stages.mine.task_miners``); None looks them up (``miner_specs``).
    """
    miners = requested_miners(VG, cfg, miners)
    result = MineResult()
    if not miners:
        return result
    scan = scan_visual_genome(root, cfg, miners, progress)
    result.rejects.extend(scan.rejects)
    rows = (
        VGRows(scan, ImageLocator(root, cfg.image_dir), cfg.context_max_objects) if candidates else None
    )  # per-image index: only for candidates
    run_miners(VG, miners, scan, rows, cfg, seed, result, candidates)
    result.summary["canonicalisation"] = scan.canonical
    result.summary.update(
        {
            "images": len(scan.images),
            "objects": int(len(scan.objects["img"])),
            "valid_objects": int(scan.objects["valid"].sum()),
            "classes": len(scan.names.names),
        }
    )
    return result.finish()


def mine_fsc147(root: str, cfg: MineSettings, seed: int, miners: Sequence[TaskMiner] | None = None) -> MineResult:
    """Candidates of every requested task with an FSC147 miner (dense counting), from one read
    (``miners`` as for :func:`mine_visual_genome`)."""
    miners = requested_miners(FSC, cfg, miners)
    result = MineResult()
    if not miners:
        return result
    data = fsc147.read_fsc147(root)
    result.summary["fsc_images"] = len(data.annotations)
    run_miners(FSC, miners, data, None, cfg, seed, result)
    return result.finish()


def _vg_file_list(root: str, cfg: MineSettings) -> list[str]:
    """The VG files read, the default alias files, then the configured ones."""
    root = root.rstrip("/")
    files = list(vg_files(root).values())
    files += [posixpath.join(root, "object_alias.txt"), posixpath.join(root, "relationship_alias.txt")]
    return files + [p for p in (cfg.object_alias, cfg.relationship_alias) if p]


def _vg_required(root: str, cfg: MineSettings) -> list[str]:
    files = vg_files(root)
    return [files[k] for k in ("image_data", "objects")]


def _fsc_files(root: str, cfg: MineSettings) -> list[str]:
    return [posixpath.join(root.rstrip("/"), n) for n in (fsc147.ANNOTATIONS, fsc147.CLASSES, fsc147.SPLITS)]


VISUAL_GENOME = SourceSpec(
    name=VG,
    format="Visual Genome 1.x JSON (image_data, objects, relationships, attributes)",
    yields=frozenset({"images", "objects", "relations", "attributes"}),
    setting_help="a folder with image_data.json, objects.json, ...",
    files=_vg_file_list,
    required=_vg_required,
    mine=lambda root, cfg, seed, progress, miners: mine_visual_genome(root, cfg, seed, progress, miners),
    manifest=lambda result: {"canonicalisation": {}, **result.source_summary(VG, apart=("canonicalisation",))},
)

FSC147 = SourceSpec(
    name=FSC,
    format="FSC-147 (annotation_FSC147_384.json, class list, split file)",
    yields=frozenset({"images", "points"}),
    setting_help="a folder with annotation_FSC147_384.json, ...",
    files=_fsc_files,
    required=_fsc_files,
    mine=lambda root, cfg, seed, progress, miners: mine_fsc147(root, cfg, seed, miners),
    manifest=lambda result: result.source_summary(FSC),
    images_key="fsc_images",
)
