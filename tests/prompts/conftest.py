"""Fixtures of the MLLM-layer tests: sample images, a scripted OpenAI-compatible server."""

from __future__ import annotations

import re
import threading
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import pytest
from dummy_server import DummyServer, Reply, message_text
from mllm_helpers import write_image

MARKER_RE = re.compile(r"Proposed object to delete: ([a-z]+)")


class Script:
    """Per marker (the RE target name in the prompt), the replies for the 1st, 2nd, ... request."""

    def __init__(self) -> None:
        self.plans: dict[str, list[Reply]] = {}
        self.calls: dict[str, int] = defaultdict(int)
        self.bodies: dict[str, list[dict]] = defaultdict(list)
        self.lock = threading.Lock()
        self.default: Callable[[dict], Reply] | None = None

    def __call__(self, body: dict) -> Reply:
        m = MARKER_RE.search(message_text(body))
        key = m.group(1) if m else ""
        with self.lock:
            n = self.calls[key]
            self.calls[key] += 1
            self.bodies[key].append(body)
        plan = self.plans.get(key)
        if plan is None:
            if self.default is not None:
                return self.default(body)
            return Reply(status=404, text=f"no script for {key!r}")
        return plan[min(n, len(plan) - 1)]


@pytest.fixture()
def scripted_server():
    script = Script()
    server = DummyServer(script)
    server.start()
    try:
        yield server, script
    finally:
        server.stop()


@pytest.fixture(scope="session")
def image_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("prompt-images")
    write_image(d, "scene.png", 0)
    write_image(d, "scene.jpg", 1, fmt="JPEG")
    (d / "broken.png").write_bytes(b"this is not an image")
    return d
