"""Small real stages for the orchestration tests: deterministic, with switchable failures.

They follow the stage contract exactly (plan, process_shard, rejects) so the flows run them
like the pipeline's own stages; only their work is trivial, to keep the tests fast.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any, ClassVar

import pyarrow as pa

from storage.rejects import reject
from storage.schemas import ArtifactSchema
from tasks.engine.base import RunContext, ShardResult, Stage, chunk

CUBES = ArtifactSchema(
    "cubes",
    1,
    pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),
            pa.field("cube", pa.int64()),
            pa.field("device", pa.string()),
            pa.field("visible", pa.string()),
        ]
    ),
)


class CubeStage(Stage):
    """Cubes 0..n-1 (``ctx.options["n"]``); multiples of 5 are rejects (reason ``multiple_of_five``).

    Class-level switches drive failures: ``broken`` shards raise ValueError (permanent),
    ``flaky`` shards raise ConnectionError on their first attempt only (transient), and
    ``oom_items`` become ``out_of_memory`` rejects (a transient item failure).
    """

    name = "cube"
    outputs: ClassVar[dict[str, ArtifactSchema]] = {"cubes": CUBES}
    uses_gpu: ClassVar[bool] = False
    broken: ClassVar[set[int]] = set()
    flaky: ClassVar[set[int]] = set()
    oom_items: ClassVar[set[int]] = set()
    calls: ClassVar[list[int]] = []
    hold_s: ClassVar[float] = 0.0
    active: ClassVar[dict[str, int]] = {}
    overlaps: ClassVar[list[str]] = []
    lock = threading.Lock()

    @classmethod
    def reset(cls) -> None:
        cls.broken, cls.flaky, cls.oom_items, cls.calls, cls.hold_s, cls.active, cls.overlaps = (
            set(),
            set(),
            set(),
            [],
            0.0,
            {},
            [],
        )

    def config_section(self, ctx: RunContext) -> Any:
        return {"n": ctx.options["n"], "shard_size": ctx.config.run.shard_size}

    def input_fingerprints(self, ctx: RunContext) -> dict[str, str]:
        return {"range": str(ctx.options["n"])}

    def plan(self, ctx: RunContext) -> list[Any]:
        return chunk(list(range(int(ctx.options["n"]))), ctx.shard_size)

    def process_shard(self, ctx: RunContext, index: int, work: Any) -> ShardResult:
        cls = type(self)
        device = str(ctx.options.get("device", "-"))
        with cls.lock:
            cls.calls.append(index)
            if index in cls.flaky:
                cls.flaky.discard(index)
                raise ConnectionError(f"shard {index}: connection reset (simulated network hiccup)")
            if index in cls.broken:
                raise ValueError(f"shard {index}: malformed input (simulated permanent error)")
            if device != "-":
                if cls.active.get(device):
                    cls.overlaps.append(device)
                cls.active[device] = cls.active.get(device, 0) + 1
        time.sleep(cls.hold_s)
        with cls.lock:
            if device != "-":
                cls.active[device] -= 1
        res = ShardResult(rows_in=len(work))
        for v in work:
            if v in cls.oom_items:
                res.rejects.append(
                    reject(str(v), self.name, "out_of_memory", "simulated: failed even at batch size 1")
                )
            elif v % 5 == 0:
                res.rejects.append(reject(str(v), self.name, "multiple_of_five"))
            else:
                res.outputs.setdefault("cubes", []).append(
                    {
                        "id": str(v),
                        "cube": v**3,
                        "device": device,
                        "visible": os.environ.get("CUDA_VISIBLE_DEVICES", "-"),
                    }
                )
        return res


class GpuCubeStage(CubeStage):
    name = "gpucube"
    uses_gpu = True


class AskingCubeStage(CubeStage):
    """Cubes whose every item first asks the configured model server one question (the real
    ``openai`` client of ``mllm``): what the shards' model calls cost, wherever they run."""

    name = "askcube"

    def model_endpoints(self, config: Any) -> list[Any]:
        return [config.mllm]

    def process_shard(self, ctx: RunContext, index: int, work: Any) -> ShardResult:
        from prompts.clients.base import ChatMessage, MLLMRequest
        from prompts.clients.factory import make_client

        client = make_client(ctx.config.mllm, None)
        asked = [
            MLLMRequest("cube", "1", [ChatMessage(role="user", content=f"Yes or No: is {v} a cube root?")])
            for v in work
        ]
        answers = client.complete(asked)
        assert all(a.error is None for a in answers), [a.error for a in answers]
        return super().process_shard(ctx, index, work)
