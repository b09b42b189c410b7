"""Login limits against real server processes: concurrent wrong secrets from one address are
counted one after the other, a rotated ``X-Forwarded-For`` earns nothing unless the proxy is
configured, and the global cap cannot lock out browsers that logged in before."""

from __future__ import annotations

import re

import httpx
import pytest
from review_helpers import concurrent_wrong_logins, free_port, serve_process

from tasks.review.accounts import add_user
from tasks.review.login import LOGIN_LIMITS, attempt_login
from tasks.review.queue import ReviewQueue

CONCURRENT = 30


def _wrong_login(base: str, headers: dict[str, str]) -> int:
    with httpx.Client(base_url=base, timeout=30) as c:
        tok = re.search(r'name="csrf_token" value="([^"]+)"', c.get("/login").text).group(1)
        return c.post("/login", data={"secret": "rbk_wrong", "csrf_token": tok}, headers=headers).status_code


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    from review_helpers import fill_queue, make_run

    root = tmp_path_factory.mktemp("login") / "run"
    fill_queue(make_run(root, 2)[0])
    return root


@pytest.fixture(scope="module")
def plain_server(run_dir, tmp_path_factory):
    """``review serve`` with default options; yields its URL and a function that forgets
    every refused login (each test starts from clean counters)."""
    db = tmp_path_factory.mktemp("plain") / "q.sqlite"
    proc, base = _server(run_dir, db)
    queue = ReviewQueue.open(f"sqlite:///{db}")

    def forget() -> None:
        with queue.engine.begin() as conn:
            conn.exec_driver_sql("DELETE FROM review_login_failures")

    yield base, forget
    proc.kill()
    proc.wait()
    queue.close()


def _server(run_dir, db, *options: str):
    port = free_port()
    return serve_process(run_dir, port, "--db", f"sqlite:///{db}", *options), f"http://127.0.0.1:{port}"


def test_30_concurrent_wrong_logins_from_one_address_are_limited(plain_server):
    base, forget = plain_server
    forget()
    codes = concurrent_wrong_logins([base], CONCURRENT)
    assert codes == {401: LOGIN_LIMITS["client"], 429: CONCURRENT - LOGIN_LIMITS["client"]}, codes


def test_rotating_x_forwarded_for_does_not_help(plain_server):
    base, forget = plain_server
    forget()
    codes = [_wrong_login(base, {"X-Forwarded-For": f"10.0.0.{i}"}) for i in range(15)]
    assert codes == [401] * LOGIN_LIMITS["client"] + [429] * (15 - LOGIN_LIMITS["client"])


def test_forwarded_for_is_honoured_from_a_configured_proxy(run_dir, tmp_path):
    """With ``--forwarded-allow-ips`` naming the proxy (here the test itself), each forwarded
    client is counted on its own: the option does what it says."""
    proc, base = _server(run_dir, tmp_path / "q.sqlite", "--forwarded-allow-ips", "127.0.0.1")
    try:
        rotated = [_wrong_login(base, {"X-Forwarded-For": f"10.0.0.{i}"}) for i in range(15)]
        same = [_wrong_login(base, {"X-Forwarded-For": "10.0.1.1"}) for i in range(LOGIN_LIMITS["client"] + 1)]
    finally:
        proc.kill()
        proc.wait()
    assert rotated == [401] * 15
    assert same == [401] * LOGIN_LIMITS["client"] + [429]


def test_global_cap_slows_new_browsers_but_spares_known_ones(tmp_path):
    """An attacker spreading wrong secrets over many addresses fills the global cap: new
    browsers must then wait, but a browser that logged in before (device cookie) still logs
    in, and its own refusals are counted on its own."""
    q = ReviewQueue.open(f"sqlite:///{tmp_path / 'q.sqlite'}")
    secret = add_user(q.engine, "ann", "annotator")
    now = 1_800_000_000.0
    first = attempt_login(q.engine, "192.0.2.1", secret, None, now=now)
    assert first.user is not None and first.device
    for i in range(LOGIN_LIMITS["all"]):  # the attack: one wrong secret from each of 200 addresses
        assert attempt_login(q.engine, f"10.{i // 250}.{i % 250}.1", "rbk_wrong", None, now=now + 1).user is None
    blocked = attempt_login(q.engine, "198.51.100.7", secret, None, now=now + 2)
    assert blocked.user is None and 590 <= blocked.retry_after <= 600  # new browser: waits until the window passes
    known = attempt_login(
        q.engine, "198.51.100.7", secret, first.device, now=now + 2
    )  # same user, known browser, new address
    assert known.user is not None and known.device == first.device
    for _ in range(LOGIN_LIMITS["client"]):
        assert attempt_login(q.engine, "198.51.100.7", "rbk_wrong", first.device, now=now + 3).retry_after is None
    assert (
        attempt_login(q.engine, "198.51.100.7", secret, first.device, now=now + 3).retry_after is not None
    )  # the device's own limit
    assert attempt_login(q.engine, "198.51.100.7", secret, None, now=now + 601).user is not None  # the window passed
    forged = attempt_login(q.engine, "198.51.100.8", "rbk_wrong", "forged-device-token", now=now + 2)
    assert forged.retry_after is not None  # an unknown device cookie is an unknown browser: global cap applies
    q.close()
