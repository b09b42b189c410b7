"""k = 2 over HTTP: disagreements reach the adjudication view, the admin settles them, and the
dashboard shows agreement."""

from __future__ import annotations

import re

from review_helpers import fill_queue, make_run
from starlette.testclient import TestClient

from tasks.review.accounts import add_user, get_user
from tasks.review.app import create_app
from tasks.review.queue import ReviewQueue


def test_dispute_adjudication_and_kappa(tmp_path):
    run, _, _ = make_run(tmp_path / "run", 4)
    q = ReviewQueue.open(fill_queue(run, k=2).extra["queue_db"], k=2)
    add_user(q.engine, "ann", "annotator")
    add_user(q.engine, "bob", "annotator")
    secret = add_user(q.engine, "boss", "admin")
    ann, bob = get_user(q.engine, "ann"), get_user(q.engine, "bob")
    verdicts = {0: ("accept", "accept"), 1: ("reject", "reject"), 2: ("accept", "reject"), 3: ("accept", "accept")}
    disputed = None
    for i in range(4):
        item = q.next_items(ann, "edit", 1)[0]
        assert q.next_items(bob, "edit", 1)[0] == item
        a, b = verdicts[i]
        q.decide(ann, item, a, [] if a == "accept" else ["artifacts"])
        q.decide(bob, item, b, [] if b == "accept" else ["ghost_remnants"])
        if a != b:
            disputed = item

    c = TestClient(create_app(str(run.root), q))
    page = c.get("/login")
    c.post(
        "/login",
        data={"secret": secret, "csrf_token": re.search(r'name="csrf_token" value="([^"]+)"', page.text).group(1)},
    )
    listing = c.get("/admin/adjudicate")
    assert disputed in listing.text and "ann: accept" in listing.text and "bob: reject" in listing.text
    detail = c.get(f"/admin/adjudicate/{disputed}")
    assert "ghost_remnants" in detail.text
    token = re.search(r'name="csrf_token" value="([^"]+)"', detail.text).group(1)
    r = c.post(
        f"/admin/adjudicate/{disputed}",
        data={"verdict": "reject", "note": "remnant visible", "csrf_token": token},
        follow_redirects=False,
    )
    assert r.status_code == 303
    assert "No disputed items" in c.get("/admin/adjudicate").text
    assert q.resolutions()[disputed] == ("reject", 2)
    dash = c.get("/admin").text
    # 4 items x 2 raters: (a,a) (r,r) (a,r) (a,a)
    # Fleiss: P_bar = 0.75, p_a = 5/8, P_e = 34/64 -> 0.467; Cohen: p_o = 0.75, p_e = (3*2 + 1*2)/16 = 0.5 -> 0.500
    assert "<td>0.467</td>" in dash
    assert "ann – bob: 0.500 (n=4)" in dash
