"""A real Label Studio server for the round-trip test, run from its own virtual environment.

Label Studio pins Django, pydantic and others against this project, so it lives in
``.venv-labelstudio`` (made by ``scripts/labelstudio-venv.sh``; ``make test`` runs that
first, and :func:`ensure_venv` runs it when the venv is missing). The server runs on
127.0.0.1 on a free port with SQLite in a temp folder, serving the run's images as local
files; the database starts from the migrated copy the script leaves in the venv, which
saves about a minute per start.
Annotators sign up through the organisation's invite link and use their own API tokens, as
people would.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from server_wait import wait_until_ready

ROOT = Path(__file__).resolve().parents[2]
VENV = Path(os.environ.get("REACTBENCH_LABELSTUDIO_VENV", ROOT / ".venv-labelstudio"))
SCRIPT = ROOT / "scripts" / "labelstudio-venv.sh"
DB_NAME = "label_studio.sqlite3"
QUIET = {"LATEST_VERSION_CHECK": "false", "COLLECT_ANALYTICS": "false", "SENTRY_DSN": "", "FRONTEND_SENTRY_DSN": ""}


class LabelStudioUnavailable(RuntimeError):
    """Label Studio could not be installed or started; the message says which step and why."""


def ensure_venv(venv: Path = VENV) -> Path:
    """The Label Studio venv, created by the project's script when missing (minutes, once)."""
    if not (venv / ".labelstudio-stamp").exists():
        env = {
            **os.environ,
            "PATH": os.pathsep.join([os.environ.get("PATH", ""), str(Path(sys.executable).parent)]),
        }  # finds this venv's uv
        proc = subprocess.run(
            ["bash", str(SCRIPT), str(venv)], cwd=ROOT, env=env, capture_output=True, text=True, check=False
        )
        if proc.returncode != 0:
            raise LabelStudioUnavailable(
                f"{SCRIPT.name} failed (exit {proc.returncode}):\n{proc.stdout}{proc.stderr[-3000:]}"
            )
    return venv


def _env(data_dir: Path, document_root: Path | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "DJANGO"))}
    env.update(QUIET, LABEL_STUDIO_BASE_DATA_DIR=str(data_dir), HOME=str(data_dir))
    if document_root is not None:
        env.update(LOCAL_FILES_SERVING_ENABLED="true", LOCAL_FILES_DOCUMENT_ROOT=str(document_root))
    return env


def migrated_db(venv: Path) -> Path:
    """The empty, migrated database the install script leaves in the venv (copied per server)."""
    template = venv / "template" / DB_NAME
    if not template.exists():
        raise LabelStudioUnavailable(
            f"{template} is missing: remove {venv} and run `make labelstudio-venv` (scripts/{SCRIPT.name})"
        )
    return template


@dataclass
class Annotator:
    email: str
    password: str  # for logging in with a browser
    id: int
    client: httpx.Client  # authenticated with the annotator's own API token


class LabelStudio:
    """One Label Studio server process and an admin client; :meth:`stop` ends it."""

    def __init__(self, venv: Path, data_dir: Path, document_root: Path, port: int):
        self.url = f"http://127.0.0.1:{port}"
        self.data_dir = data_dir
        data_dir.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(migrated_db(venv), data_dir / DB_NAME)
        token = secrets.token_hex(20)
        self.log_path = data_dir / "server.log"
        self._log = open(self.log_path, "wb")  # noqa: SIM115 (open while the server runs; closed by stop)
        cmd = [
            str(venv / "bin" / "label-studio"), "start", "--no-browser", "--internal-host", "127.0.0.1", "--port", str(port),
            "--username", "admin@reactbench.test", "--password", "pw-" + secrets.token_hex(8), "--user-token", token, "--enable-legacy-api-token",
        ]  # fmt: skip
        started = time.monotonic()
        self.proc = subprocess.Popen(
            cmd, cwd=data_dir, env=_env(data_dir, document_root), stdout=self._log, stderr=subprocess.STDOUT
        )
        self.admin = httpx.Client(base_url=self.url, headers={"Authorization": f"Token {token}"}, timeout=120)
        self._wait_healthy(started, timeout=300)
        self.start_seconds = time.monotonic() - started

    def _wait_healthy(self, started: float, timeout: float) -> None:
        wait_until_ready(
            self.proc,
            lambda: self.admin.get("/api/current-user/whoami", timeout=5).status_code == 200,
            "Label Studio",
            self.log_tail,
            timeout - (time.monotonic() - started),
            error=LabelStudioUnavailable,
            stop=self.stop,
        )

    def log_tail(self, n: int = 4000) -> str:
        self._log.flush()
        return self.log_path.read_bytes()[-n:].decode("utf-8", "replace")

    def stop(self) -> None:
        self.admin.close()
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()

    # -- the API, as a team uses it ---------------------------------------------------------
    def check(self, response: httpx.Response, what: str) -> Any:
        """The JSON answer, or an assertion error with Label Studio's own message."""
        assert response.status_code < 300, f"{what}: HTTP {response.status_code}: {response.text[:2000]}"
        return response.json() if response.content else None

    def sign_up(self, email: str) -> Annotator:
        """A new annotator through the organisation's invite link; returns their token client."""
        invite = self.check(self.admin.get("/api/invite"), "invite link")
        with httpx.Client(base_url=self.url, timeout=60) as browser:
            browser.get("/user/signup/", params={"token": invite["token"]})
            csrf = browser.cookies.get("csrftoken")
            password = "pw-" + secrets.token_hex(8)
            form = {"email": email, "password": password, "csrfmiddlewaretoken": csrf}
            r = browser.post(
                "/user/signup/",
                params={"token": invite["token"]},
                data=form,
                headers={"Referer": f"{self.url}/user/signup/"},
            )
            assert r.status_code == 302, f"sign-up of {email}: HTTP {r.status_code}: {r.text[:1000]}"
            token = self.check(browser.get("/api/current-user/token"), f"token of {email}")["token"]
        client = httpx.Client(base_url=self.url, headers={"Authorization": f"Token {token}"}, timeout=120)
        me = self.check(client.get("/api/current-user/whoami"), f"whoami {email}")
        return Annotator(email, password, int(me["id"]), client)

    def create_project(self, title: str, label_config: str, images_dir: Path) -> int:
        """A project with our labeling config, its images served from ``images_dir`` (a Local
        Files storage: Label Studio serves a local file only under a project's storage path)."""
        project = self.check(
            self.admin.post("/api/projects", json={"title": title, "label_config": label_config}),
            f"create project {title}",
        )
        body = {"project": project["id"], "title": "run images", "path": str(images_dir), "use_blob_urls": False}
        self.check(self.admin.post("/api/storages/localfiles", json=body), f"local files storage {images_dir}")
        return int(project["id"])

    def import_tasks(self, project: int, tasks_json: bytes) -> dict[str, Any]:
        r = self.admin.post(
            f"/api/projects/{project}/import", content=tasks_json, headers={"Content-Type": "application/json"}
        )
        return self.check(r, f"import into project {project}")

    def tasks(self, project: int) -> list[dict[str, Any]]:
        """The project's tasks in id order (with their data)."""
        out: list[dict[str, Any]] = []
        page = 1
        while True:
            r = self.admin.get("/api/tasks", params={"project": project, "page": page, "page_size": 100})
            if r.status_code == 404:  # past the last page
                break
            batch = self.check(r, f"tasks of project {project}")["tasks"]
            out += batch
            if len(batch) < 100:
                break
            page += 1
        return sorted(out, key=lambda t: t["id"])

    def annotate(
        self, who: Annotator, task_id: int, result: list[dict[str, Any]], cancelled: bool = False
    ) -> dict[str, Any]:
        body = {"result": result, "was_cancelled": cancelled, "lead_time": 12.5}
        return self.check(
            who.client.post(f"/api/tasks/{task_id}/annotations/", json=body),
            f"annotation by {who.email} on task {task_id}",
        )

    def update_annotation(self, who: Annotator, annotation_id: int, result: list[dict[str, Any]]) -> dict[str, Any]:
        return self.check(
            who.client.patch(f"/api/annotations/{annotation_id}/", json={"result": result}),
            f"update annotation {annotation_id}",
        )

    def export_json(self, project: int) -> bytes:
        """The project's quick JSON export (every task with its annotations; annotators as ids)."""
        r = self.admin.get(
            f"/api/projects/{project}/export", params={"exportType": "JSON", "download_all_tasks": "true"}
        )
        assert r.status_code == 200, f"export of project {project}: HTTP {r.status_code}: {r.text[:2000]}"
        return r.content

    def export_snapshot(self, project: int, timeout: float = 120) -> bytes:
        """A JSON export snapshot with the annotators' details (``completed_by`` as an object
        with the email), as the Export dialog makes it."""
        body = {"title": "reactbench", "serialization_options": {"annotations__completed_by": {"only_id": False}}}
        snap = self.check(
            self.admin.post(f"/api/projects/{project}/exports/", json=body), f"export snapshot of project {project}"
        )
        deadline = time.monotonic() + timeout
        while snap["status"] != "completed":
            assert snap["status"] != "failed" and time.monotonic() < deadline, (
                f"export snapshot of project {project}: {snap}"
            )
            time.sleep(0.5)
            snap = self.check(
                self.admin.get(f"/api/projects/{project}/exports/{snap['id']}"), "export snapshot status"
            )
        r = self.admin.get(f"/api/projects/{project}/exports/{snap['id']}/download", params={"exportType": "JSON"})
        assert r.status_code == 200, f"download of export {snap['id']}: HTTP {r.status_code}: {r.text[:2000]}"
        return r.content
