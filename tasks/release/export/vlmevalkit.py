"""VLMEvalKit forms: one TSV per question type, plus the data config that names each file's class.

VLMEvalKit (``ms-vlmeval`` 0.0.20) guesses the class of a TSV it does not know from its columns,
and guesses wrong for us: a file without ``A``/``B`` columns becomes ``CustomVQADataset``, whose
``evaluate()`` raises ``NotImplementedError``. Its documented custom-dataset route is a ``--config``
JSON whose ``data`` entries name the class, so the release ships ``vlmevalkit/reactbench.json``:

- ``reactbench_MCQ_circular.tsv`` (``ImageMCQDataset``; ``reactbench_MCQ.tsv`` when no question is
  cyclic): ``A``..``E`` and the gold letter. VLMEvalKit scores circularly only when the dataset
  name contains "circular"; presentation ``r`` of question ``g`` has index ``g + r * 1_000_000``
  (its ``g_index = index % 1e6``), so the circular score is our consistency accuracy.
- ``reactbench_Y_N.tsv`` (``ImageYORNDataset``): answer ``Yes`` / ``No``.
- ``reactbench_VQA.tsv`` (``ImageVQADataset``): its default metric is the VQAv2 soft score over
  a list of reference answers, which gives 0 to every reply when there is a single reference; the
  gold is therefore the list VQAv2 writes when ten annotators agree, which makes the score exact
  match after VQA normalisation (case, punctuation, articles, number words). ``rubric`` and
  ``prior_terms`` ride along for our judge, which the shipped launcher's class uses.

Images are PNG in base64 (``image``, with ``image_path`` ``<content hash>.png``): VLMEvalKit
decodes each image and saves it under the name's extension, so a JPEG original would be
re-encoded lossily while the PNG edit next to it stays exact; as PNG both images of a pair reach
the model pixel-for-pixel. Each distinct image (or before/after pair, a JSON list) is stored once
per file; later rows hold the index of the row that carries it (VLMEvalKit's ``ImageBaseDataset``
reads an ``image`` of at most 64 characters as another row's index). Columns ``category`` (task)
and ``l2-category`` (dimension) give VLMEvalKit's per-task and per-dimension breakdowns.

Scoring: VLMEvalKit's own answer extraction reads our replies differently from ``reactbench
eval``; the release therefore also ships ``vlmevalkit/reactbench_vlmeval.py`` and the parser it
loads (:mod:`tasks.release.export.vlmevalkit_launcher`), and the config names the launcher's
classes, so VLMEvalKit's scores equal ours on the same raw replies.

A versioned release (``export.version``) puts the version in every TSV's name
(``reactbench_v1_1_0_Y_N.tsv``), and every release ships ``vlmevalkit/reactbench_md5.json``, each
TSV's md5: the launcher gives its classes that table as ``DATASET_MD5``, the table VLMEvalKit's
``ImageBaseDataset.load_data`` checks a local TSV against, and refuses a TSV in ``$LMUData`` whose md5
differs before VLMEvalKit starts (VLMEvalKit itself would try to download the file again).

The files are written row group by row group with the Parquet files (:class:`TsvFiles`), in
their row order; a group's images are read and converted once for all three files.
"""

from __future__ import annotations

import base64
import csv
import io
import json
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from typing import TextIO

from storage.fs import RunFS
from tasks.release.export.rows import ReleaseRow
from tasks.release.export.versions import md5_file, version_token

LETTERS = "ABCDE"
CIRCULAR_STRIDE = 1_000_000
VQA_REFERENCES = 10  # VQAv2's annotator count: the soft score is min(1, matches among the others / 3)
CONFIG = "vlmevalkit/reactbench.json"
MD5_FILE = "vlmevalkit/reactbench_md5.json"  # TSV name -> md5: the launcher sets its classes' DATASET_MD5
# VLMEvalKit's class of each question type's TSV; the config names our subclasses of them
# (``tasks.release.export.vlmevalkit_launcher``), which score with the release's parser.
CLASSES = {"MC": "ImageMCQDataset", "YN": "ImageYORNDataset", "SA": "ImageVQADataset"}
COMMON = ["category", "l2-category", "qid", "question_set", "variant", "editor", "id"]
HEADERS = {
    "MC": ["index", "image", "image_path", "question", *LETTERS, "answer", *COMMON, "rotation"],
    "YN": ["index", "image", "image_path", "question", "answer", *COMMON],
    "SA": ["index", "image", "image_path", "question", "answer", *COMMON, "rubric", "prior_terms"],
}
# Where to point VLMEvalKit's --config "model" section: any OpenAI-compatible chat endpoint.
EXAMPLE_MODEL = {
    "my-model": {
        "class": "GPT4V",
        "model": "my-model",
        "api_base": "http://127.0.0.1:8000/v1/chat/completions",
        "key": "EMPTY",
        "temperature": 0,
        "img_detail": "high",
    }
}


def dataset_name(rows: list[ReleaseRow], qtype: str, version: str | None = None) -> str:
    """The VLMEvalKit dataset name (and TSV stem) of one question type's rows; a versioned release
    names its version (``reactbench_v1_1_0_Y_N``), so two versions never share a file in LMUData."""
    prefix = "_".join(p for p in ("reactbench", version_token(version)) if p)
    if qtype == "MC":
        cyclic = any(int(r.get("rotation") or 0) for r in rows if r["qtype"] == "MC")
        return f"{prefix}_MCQ_circular" if cyclic else f"{prefix}_MCQ"
    return prefix + {"YN": "_Y_N", "SA": "_VQA"}[qtype]


def png_bytes(data: bytes) -> bytes:
    """The image as PNG: unchanged when it already is one, else decoded once and stored losslessly."""
    if data[:8] == b"\x89PNG\r\n\x1a\n":
        return data
    from PIL import Image

    with Image.open(io.BytesIO(data)) as im:
        buf = io.BytesIO()
        im.save(buf, format="PNG")
    return buf.getvalue()


def png_name(name: str) -> str:
    """``<content hash>.<ext>`` -> ``<content hash>.png`` (VLMEvalKit saves by the extension)."""
    stem = name.rsplit(".", 1)[0] if "." in name else name
    return f"{stem}.png"


class TsvWriter:
    """One question type's TSV, written a few rows at a time (rows of other types are skipped).

    Remembers only text: which images (by name) a row already carried, and the group index of
    each cyclic MC question."""

    def __init__(self, stream: TextIO, qtype: str, canary: str | None = None):
        self.qtype = qtype
        self.writer = csv.writer(stream, delimiter="\t", lineterminator="\n", quoting=csv.QUOTE_MINIMAL)
        # the benchmark's canary GUID (tasks.release.export.canary) as a last column of every row
        self.tail = [canary] if canary else []
        self.writer.writerow(HEADERS[qtype] + (["canary"] if canary else []))
        self.first: dict[tuple[str, ...], int] = {}  # image names -> index of the row that carries them
        self.groups: dict[tuple, int] = {}  # circular MC: question -> its group index
        self.rows = 0

    def _index(self, r: ReleaseRow) -> int:
        """Sequential, except circular MC presentations, which share a group index."""
        if self.qtype != "MC":
            return self.rows
        key = (r["edit_id"], r["question_set"], r["qid"], r.get("image_role"))
        g = self.groups.setdefault(key, len(self.groups))
        return g + int(r.get("rotation") or 0) * CIRCULAR_STRIDE

    def add(self, rows: list[ReleaseRow], b64: Callable[[str], str]) -> None:
        """Append the rows of this type (``tasks.release.export.rows.release_row``); ``b64`` gives an
        image's PNG in base64 from its image-store path, asked only for images not carried yet."""
        for r in rows:
            if r["qtype"] != self.qtype:
                continue
            index = self._index(r)
            self.rows += 1
            names = tuple(png_name(im["path"]) for im in r["images"])
            if names in self.first:
                image = str(self.first[names])
            else:
                self.first[names] = index
                encoded = [b64(im["rel"]) for im in r["images"]]
                image = encoded[0] if len(encoded) == 1 else json.dumps(encoded)
            path = names[0] if len(names) == 1 else json.dumps(list(names))
            common = [r["task"], r["dimension"] or "", r["qid"], r["question_set"], r["variant"], r["editor"], r["id"]]
            if self.qtype == "MC":
                opts = list(r["options"] or []) + [""] * len(LETTERS)
                self.writer.writerow(
                    [
                        index,
                        image,
                        path,
                        r["question"],
                        *opts[: len(LETTERS)],
                        r["answer"],
                        *common,
                        r.get("rotation") or 0,
                        *self.tail,
                    ]
                )
            elif self.qtype == "YN":
                self.writer.writerow([index, image, path, r["question"], r["answer"], *common, *self.tail])
            else:
                answers = repr([str(r["answer"])] * VQA_REFERENCES)  # VLMEvalKit reads a list with eval()
                self.writer.writerow(
                    [
                        index,
                        image,
                        path,
                        r["question"],
                        answers,
                        *common,
                        r["rubric"] or "",
                        json.dumps(list(r.get("prior_terms") or [])),
                        *self.tail,
                    ]
                )


def png_b64(blobs: Mapping[str, bytes]) -> Callable[[str], str]:
    """An image's PNG in base64 by image-store path, from ``blobs``, each converted at most once."""
    done: dict[str, str] = {}

    def get(rel: str) -> str:
        if rel not in done:
            done[rel] = base64.b64encode(png_bytes(blobs[rel])).decode("ascii")
        return done[rel]

    return get


def tsv_text(rows: list[ReleaseRow], qtype: str, blobs: Mapping[str, bytes]) -> str:
    """The whole TSV of one question type for released rows, their images from ``blobs``."""
    buf = io.StringIO()
    TsvWriter(buf, qtype).add(rows, png_b64(blobs))
    return buf.getvalue()


class TsvFiles:
    """The TSVs of a release being written: :meth:`add` a row group at a time."""

    def __init__(self, writers: list[TsvWriter], files: list[str]):
        self.writers, self.files = writers, files

    def add(self, rows: list[ReleaseRow], blobs: Mapping[str, bytes]) -> None:
        """Append a row group to every file; each of its images converted to PNG at most once."""
        b64 = png_b64(blobs)
        for w in self.writers:
            w.add(rows, b64)


def config_text(names: list[str], qtypes: list[str]) -> str:
    """VLMEvalKit's ``--config`` JSON: the example model and one ``data`` entry per file, naming
    the class the shipped launcher registers for its question type."""
    from tasks.release.export.vlmevalkit_launcher import CLASSES as OURS

    data = {n: {"class": OURS[q], "dataset": n} for n, q in zip(names, qtypes)}
    return json.dumps({"model": EXAMPLE_MODEL, "data": data}, indent=2) + "\n"


def card_lines() -> list[str]:
    """The release card's section on scoring the TSVs with VLMEvalKit: the exact commands."""
    return [
        "## Scoring with VLMEvalKit",
        "",
        "`vlmevalkit/` holds one TSV per question type, `reactbench.json` (a VLMEvalKit `--config` whose `data`",
        "entries name each file's class) and `reactbench_vlmeval.py`, which runs VLMEvalKit with those classes",
        "registered: VLMEvalKit's own `ImageYORNDataset`, `ImageMCQDataset` and `ImageVQADataset`, except that",
        "replies are read with this release's parser and short answers graded by its offline judge (the same",
        "files the lmms-eval tasks ship), so the scores equal `reactbench eval`'s on the same replies. A cyclic",
        "question counts only when every presentation is right. Point the config's `model` entry at your model",
        "(any OpenAI-compatible endpoint, or any VLMEvalKit model class), then:",
        "",
        "```bash",
        "pip install ms-vlmeval==0.0.20",
        'export LMUData="$HOME/LMUData" && mkdir -p "$LMUData" && cp vlmevalkit/*.tsv "$LMUData/"',
        "python vlmevalkit/reactbench_vlmeval.py --config vlmevalkit/reactbench.json --judge exact_matching --work-dir vlmeval_outputs",
        "```",
        "",
        "It takes every argument of `python -m vlmeval`. Each run writes `*_acc.csv` (overall, per task, per",
        "dimension, in percent) and `*_reactbench.tsv` (every reply's verdict) beside the predictions.",
        "",
    ]


@contextmanager
def write_vlmevalkit(
    out: RunFS, rows: list[ReleaseRow], canary: str | None = None, version: str | None = None
) -> Iterator[TsvFiles]:
    """Open one TSV per question type present in ``rows`` (every released row, without image
    bytes) in ``out`` (a RunFS of the release); the caller adds the rows a group at a time, in
    release order. The files and the config appear when the block ends; ``files`` lists their
    release-relative paths. ``canary``: the GUID every row carries in a last ``canary`` column."""
    present = [q for q in CLASSES if any(r["qtype"] == q for r in rows)]
    names = [dataset_name(rows, q, version) for q in present]
    rels = [f"vlmevalkit/{n}.tsv" for n in names]
    with ExitStack() as stack:
        writers = []
        for qtype, rel in zip(present, rels):
            stream = io.TextIOWrapper(stack.enter_context(out.write_stream_atomic(rel)), encoding="utf-8", newline="")
            stack.callback(stream.detach)  # flushed and let go before the file is closed and published
            writers.append(TsvWriter(stream, qtype, canary))
        files = TsvFiles(writers, list(rels))
        yield files
    if names:
        from tasks.release.export.vlmevalkit_launcher import launcher_files

        for name, text in launcher_files(sorted({r["task"] for r in rows})).items():
            out.write_text_atomic(f"vlmevalkit/{name}", text)
            files.files.append(f"vlmevalkit/{name}")
        out.write_text_atomic(CONFIG, config_text(names, present))
        files.files.append(CONFIG)
        md5s = {n: md5_file(out, rel) for n, rel in zip(names, rels)}  # what VLMEvalKit checks (DATASET_MD5)
        out.write_text_atomic(MD5_FILE, json.dumps(md5s, indent=1, sort_keys=True) + "\n")
        files.files.append(MD5_FILE)
