"""A local S3 API server (moto in server mode) for the object-store tests.

Real HTTP on 127.0.0.1 (an ephemeral port), so s3fs, botocore and child processes talk to it as
they would to S3: ``env()`` gives the ``AWS_ENDPOINT_URL`` and dummy credentials a subprocess
needs. Two things differ from moto's own ``ThreadedMotoServer``:

* writes are serialised: moto checks ``If-None-Match`` / ``If-Match`` and then stores the object
  as two steps, so two threads of its server could both pass the check, which S3 itself never
  allows; the lease tests must measure our protocol, not that gap;
* ``latency_ms`` adds a round trip's delay to every request (threads wait side by side, as
  requests in flight to a remote store do), for benchmarks of request patterns;
* ``conditional="ignore"`` starts a store that ignores conditional headers and
  ``conditional="refuse"`` one that answers them 501 NotImplemented, as some S3-compatible
  stores do, to test that the lease refuses both.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterable
from typing import Any, Literal

from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
from werkzeug.serving import BaseWSGIServer, make_server

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]
CONDITIONAL_HEADERS = ("HTTP_IF_MATCH", "HTTP_IF_NONE_MATCH")
Conditional = Literal["honour", "ignore", "refuse"]
NOT_IMPLEMENTED = b"<?xml version='1.0' encoding='UTF-8'?><Error><Code>NotImplemented</Code><Message>A header you provided implies functionality that is not implemented</Message></Error>"
CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
}


def serialised_writes(app: WSGIApp, conditional: Conditional = "honour") -> WSGIApp:
    """``app`` with PUT / POST / DELETE run one at a time (reads stay concurrent). ``conditional``:
    what a write with ``If-Match`` / ``If-None-Match`` meets (moto's answer, the headers dropped,
    or 501)."""
    lock = threading.Lock()

    def wrapped(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        asks = environ.get("REQUEST_METHOD") in ("PUT", "DELETE") and any(h in environ for h in CONDITIONAL_HEADERS)
        if asks and conditional == "refuse":
            start_response(
                "501 Not Implemented",
                [("Content-Type", "application/xml"), ("Content-Length", str(len(NOT_IMPLEMENTED)))],
            )
            return [NOT_IMPLEMENTED]
        if conditional == "ignore":
            for header in CONDITIONAL_HEADERS:
                environ.pop(header, None)
        if environ.get("REQUEST_METHOD") not in ("PUT", "POST", "DELETE"):
            return app(environ, start_response)
        with lock:  # the whole response, body included, inside the lock
            return list(app(environ, start_response))

    return wrapped


def delayed(app: WSGIApp, seconds: float) -> WSGIApp:
    """``app`` answering every request ``seconds`` late (a network round trip)."""

    def wrapped(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        time.sleep(seconds)
        return app(environ, start_response)

    return wrapped


class QuietHandler(MotoRequestHandler):
    """No access log line per request (thousands per build)."""

    def log(self, type: str, message: str, *args: Any) -> None:
        return None


class S3Server:
    """A moto S3 server on 127.0.0.1; ``start()`` / ``stop()``, or use it as a context manager."""

    def __init__(self, conditional: Conditional = "honour", latency_ms: float = 0.0):
        self.conditional = conditional
        self.latency_ms = latency_ms
        self._server: BaseWSGIServer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> S3Server:
        app = serialised_writes(DomainDispatcherApplication(create_backend_app), self.conditional)
        if self.latency_ms:
            app = delayed(app, self.latency_ms / 1000)
        self._server = make_server("127.0.0.1", 0, app, threaded=True, request_handler=QuietHandler)
        self._thread = threading.Thread(target=self._server.serve_forever, name="moto-s3", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._server = self._thread = None

    def __enter__(self) -> S3Server:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    @property
    def endpoint(self) -> str:
        assert self._server is not None, "start() the server first"
        return f"http://127.0.0.1:{self._server.server_port}"

    def env(self) -> dict[str, str]:
        """What a process needs to reach this server through botocore / s3fs."""
        return {"AWS_ENDPOINT_URL": self.endpoint, **CREDENTIALS}

    def client(self) -> Any:
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            **{k.lower(): v for k, v in CREDENTIALS.items() if k != "AWS_DEFAULT_REGION"},
            region_name="us-east-1",
        )

    def filesystem(self) -> Any:
        """An s3fs filesystem on this server (its own instance: endpoints never mix in fsspec's cache)."""
        import s3fs

        return s3fs.S3FileSystem(
            key=CREDENTIALS["AWS_ACCESS_KEY_ID"],
            secret=CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
            token=CREDENTIALS["AWS_SESSION_TOKEN"],
            endpoint_url=self.endpoint,
            use_listings_cache=False,
            skip_instance_cache=True,
        )

    def bucket(self, prefix: str = "rb") -> str:
        """A new empty bucket's name (each test gets its own, so tests never see each other's objects)."""
        name = f"{prefix}-{uuid.uuid4().hex[:16]}"
        self.client().create_bucket(Bucket=name)
        return name
