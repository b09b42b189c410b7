"""The review API refuses bad input with a 4xx naming the field, never a 500: pydantic bodies,
a request size cap, bounded integers; images only as verified store files (no symlinks, hash
matches the name); sessions revoked across server processes at once; login rate limits."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest
from review_helpers import fill_queue, make_run
from starlette.testclient import TestClient

from tasks.review.accounts import add_user
from tasks.review.app import create_app
from tasks.review.bodies import MAX_BODY_BYTES, MAX_NOTE
from tasks.review.queue import ReviewQueue


def _csrf(html: str) -> str:
    return re.search(r'name="csrf_token" value="([^"]+)"', html).group(1)


def _login(c: TestClient, secret: str, expect: int = 303):
    r = c.post("/login", data={"secret": secret, "csrf_token": _csrf(c.get("/login").text)}, follow_redirects=False)
    assert r.status_code == expect, r.text
    return r


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("api") / "run"
    run, edits, _ = make_run(root, 6)
    summary = fill_queue(run)
    queue = ReviewQueue.open(summary.extra["queue_db"])
    secret = add_user(queue.engine, "ann", "annotator")
    app = create_app(str(root), queue)
    c = TestClient(app)
    _login(c, secret)
    csrf = re.search(r'data-csrf="([^"]+)"', c.get("/review/edit").text).group(1)
    item = c.get("/api/next?stage=edit").json()["items"][0]["id"]
    return {
        "app": app,
        "client": c,
        "csrf": csrf,
        "item": item,
        "queue": queue,
        "root": root,
        "edits": edits,
        "url": summary.extra["queue_db"],
        "secret": secret,
    }


# (body, status, field named in the answer). Bodies are raw bytes, as a hostile client sends them.
MALFORMED = [
    pytest.param(b'{"verdict": "reject", "reasons": 5}', 422, "reasons", id="reasons-not-a-list"),
    pytest.param(b'{"verdict": "reject", "reasons": [5]}', 422, "reasons", id="reason-not-a-string"),
    pytest.param(b'{"verdict": "reject", "reasons": ["blurry"]}', 422, "reasons", id="unknown-reason"),
    pytest.param(
        b'{"verdict": "reject", "reasons": ' + json.dumps(["artifacts"] * 7).encode() + b"}",
        422,
        "reasons",
        id="too-many-reasons",
    ),
    pytest.param(b'{"verdict": "accept", "note": {"a": 1}}', 422, "note", id="note-an-object"),
    pytest.param(b'{"verdict": "accept", "note": 5}', 422, "note", id="note-a-number"),
    pytest.param(b'{"verdict": "accept", "note": "' + b"x" * (MAX_NOTE + 1) + b'"}', 422, "note", id="note-too-long"),
    pytest.param(b'{"verdict": 1}', 422, "verdict", id="verdict-a-number"),
    pytest.param(b'{"verdict": "maybe"}', 422, "verdict", id="verdict-unknown"),
    pytest.param(b"{}", 422, "verdict", id="verdict-missing"),
    pytest.param(b'{"verdict": "accept", "admin": true}', 422, "admin", id="unknown-field"),
    pytest.param(b'["accept"]', 422, "", id="not-an-object"),
    pytest.param(b"not json", 422, "", id="not-json"),
    pytest.param(b"", 422, "", id="empty"),
    pytest.param(b"[" * 50_000 + b"]" * 50_000, 422, "", id="deeply-nested"),
    pytest.param(
        b'{"verdict": "reject", "reasons": [' + b",".join([b'"artifacts"'] * 200_000) + b"]}",
        413,
        "",
        id="200k-reasons",
    ),
    pytest.param(b'{"verdict": "accept", "note": "' + b"x" * (20 * 1024 * 1024) + b'"}', 413, "", id="20MB-note"),
]


@pytest.mark.parametrize("body,status,field", MALFORMED)
def test_malformed_decision_bodies_are_refused(site, body, status, field):
    c, q = site["client"], site["queue"]
    before = len(q.events())
    r = c.post(
        f"/api/items/{site['item']}/decision",
        content=body,
        headers={"X-CSRF-Token": site["csrf"], "Content-Type": "application/json"},
    )
    assert r.status_code == status, (r.status_code, r.text[:300])
    answer = r.json()
    assert "error" in answer
    if field:
        assert field in answer["error"] and any(f["field"].startswith(field) for f in answer["fields"]), answer
    assert len(q.events()) == before  # nothing recorded


def test_streamed_body_without_length_is_capped(site):
    c = site["client"]

    def chunks():
        for _ in range(MAX_BODY_BYTES // 65536 + 2):
            yield b" " * 65536

    r = c.post(
        f"/api/items/{site['item']}/decision",
        content=chunks(),
        headers={"X-CSRF-Token": site["csrf"], "Content-Type": "application/json"},
    )
    assert r.status_code == 413


@pytest.mark.parametrize(
    "path",
    [
        "/review/edit/previous?before=9223372036854775808",
        "/review/edit/previous?before=-1",
        "/review/edit/previous?before=1e400",
        "/review/edit/item/x?ev=99999999999999999999999",
        "/api/next?stage=edit&want=9223372036854775808",
        "/api/next?stage=edit&want=0",
    ],
)
def test_out_of_range_integers_are_422(site, path):
    r = site["client"].get(path, follow_redirects=False)
    assert r.status_code == 422, (path, r.status_code, r.text[:200])


def test_form_bodies_are_validated(site):
    c = site["client"]
    url = f"/review/edit/item/{site['item']}/decide"
    r = c.post(url, data={"csrf_token": site["csrf"], "verdict": "reject", "reason": ["blurry"]})
    assert r.status_code == 422 and "reasons" in r.text
    r = c.post(url, data={"csrf_token": site["csrf"], "verdict": "accept", "note": "x" * (MAX_NOTE + 1)})
    assert r.status_code == 422 and "note" in r.text
    r = c.post(url, data={"csrf_token": "forged", "verdict": "accept"})
    assert r.status_code == 403  # CSRF is checked before anything else


def test_valid_decision_still_works(site):
    c, q = site["client"], site["queue"]
    r = c.post(
        f"/api/items/{site['item']}/decision",
        json={"verdict": "reject", "reasons": ["artifacts", "other"], "note": "seam"},
        headers={"X-CSRF-Token": site["csrf"]},
    )
    assert r.status_code == 200, r.text
    ev = [e for e in q.events(kinds=("decision",)) if e.id == r.json()["event_id"]][0]
    assert ev.note == "seam" and json.loads(ev.reasons_json) == ["artifacts", "other"]


def test_symlinked_or_tampered_images_are_not_served(site):
    c, root, edits = site["client"], Path(site["root"]), site["edits"]
    good = edits[1]["original_image"]
    assert c.get("/images/" + good).status_code == 200
    # a symlink with a store-shaped name pointing outside the run
    outside = root.parent / "outside.png"
    outside.write_bytes(b"root:x:0:0:root:/root:/bin/bash\n")
    os.makedirs(root / "images" / "ff", exist_ok=True)
    link = root / "images" / "ff" / ("ff" + "0" * 62 + ".png")
    os.symlink(outside, link)
    r = c.get("/images/images/ff/" + link.name)
    assert r.status_code == 404 and b"root:" not in r.content
    # a symlink to a real store image (right content, but not a regular file)
    target = root / good
    digest_link = root / "images" / "ee" / ("ee" + "1" * 62 + ".png")
    os.makedirs(digest_link.parent, exist_ok=True)
    os.symlink(target, digest_link)
    assert c.get("/images/images/ee/" + digest_link.name).status_code == 404
    # a regular file whose content does not hash to its name
    victim = root / edits[2]["original_image"]
    shutil.copy(victim, victim.with_suffix(".bak"))
    victim.write_bytes(b"\x89PNG\r\n\x1a\n not the original")
    try:
        assert c.get("/images/" + edits[2]["original_image"]).status_code == 404
    finally:
        shutil.move(victim.with_suffix(".bak"), victim)
    # a symlinked store folder
    real_dir = root / "images" / good.split("/")[1]
    moved = root.parent / "moved-images"
    shutil.copytree(real_dir, moved)
    shutil.rmtree(real_dir)
    os.symlink(moved, real_dir)
    try:
        assert c.get("/images/" + good).status_code == 404
    finally:
        os.unlink(real_dir)
        shutil.copytree(moved, real_dir)
    assert c.get("/images/" + good).status_code == 200


def test_logout_revokes_the_session_in_another_server_process_at_once(site):
    """Two apps on one database with their own engines (as two server processes): a logout
    through one ends the session in the other on the very next request."""
    other_queue = ReviewQueue.open(site["url"])
    a = TestClient(site["app"])
    b = TestClient(create_app(str(site["root"]), other_queue))
    _login(a, site["secret"])
    b.cookies.update(a.cookies)
    assert b.get("/api/progress").status_code == 200  # the other process knows the session (and would cache it)
    page = a.get("/review/edit")
    assert a.post("/logout", data={"csrf_token": _csrf(page.text)}, follow_redirects=False).status_code == 303
    assert b.get("/api/progress").status_code == 401  # no cache window
    other_queue.close()


def test_login_attempts_are_rate_limited_per_client(site):
    app = site["app"]
    attacker = TestClient(app, client=("203.0.113.7", 4000))
    for _ in range(10):
        _login(attacker, "rbk_wrong", expect=401)
    r = _login(attacker, "rbk_wrong", expect=429)
    assert int(r.headers["retry-after"]) > 0
    _login(attacker, site["secret"], expect=429)  # even the right secret waits: the limit is per client
    other = TestClient(app, client=("198.51.100.9", 4000))
    _login(other, site["secret"])  # another client is not locked out
    # the counters live in the database: another server process enforces the same limit
    second = TestClient(create_app(str(site["root"]), ReviewQueue.open(site["url"])), client=("203.0.113.7", 4001))
    _login(second, site["secret"], expect=429)
