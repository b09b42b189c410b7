"""Score prediction files with VLMEvalKit's own code; run by the VLMEvalKit venv, not by pytest.

Reads a JSON job on stdin: ``config`` (the release's ``vlmevalkit/reactbench.json``),
``predictions`` (dataset name -> prediction files in VLMEvalKit's format: the dataset's rows less
``image``, plus ``prediction``; an empty list only loads the dataset and writes its images) and
``launcher`` (the release's ``vlmevalkit/reactbench_vlmeval.py``, whose ``register()`` puts the
classes the config names into ``vlmeval.dataset``, as running it does). ``LMUData`` must hold the release's TSVs. Each dataset is built
with ``vlmeval.run.build_dataset_from_config`` (what ``python -m vlmeval --config`` does) and scored
with its ``evaluate()`` under the ``exact_matching`` judge (what ``--judge exact_matching`` passes).
Every image is also written out by the dataset's own ``dump_image``. Prints one JSON object:
per dataset the class, one evaluate() result (as records) per prediction file, and the sha256 of each row's images'
pixels as VLMEvalKit stored them.
"""

import hashlib
import importlib.util
import json
import sys

import numpy as np
from PIL import Image
from vlmeval.run import build_dataset_from_config
from vlmeval.smp import load


def pixels_digest(path):
    with Image.open(path) as im:
        return hashlib.sha256(np.asarray(im.convert("RGB")).tobytes()).hexdigest()


def main():
    job = json.load(sys.stdin)
    spec = importlib.util.spec_from_file_location("reactbench_vlmeval", job["launcher"])
    launcher = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(launcher)
    launcher.register()
    cfg = load(job["config"])
    out = {}
    for name, preds in job["predictions"].items():
        dataset = build_dataset_from_config(cfg["data"], name)
        results = [dataset.evaluate(p, model="exact_matching", nproc=1).to_dict(orient="records") for p in preds]
        images = {
            str(line["index"]): [pixels_digest(p) for p in dataset.dump_image(line)]
            for _, line in dataset.data.iterrows()
        }
        out[name] = {
            "class": type(dataset).__name__,
            "bases": type(dataset).__mro__[1].__name__,
            "results": results,
            "images": images,
        }
    print("RESULT " + json.dumps(out, default=float))


if __name__ == "__main__":
    main()
