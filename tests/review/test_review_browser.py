"""The review app in a real browser (Debian Chromium, headless, via Playwright): log in, review
edits with the keyboard, edit a question inline, watch the dashboard update. Screenshots go
to test-artifacts/review/."""

from __future__ import annotations

import pytest
from review_helpers import ServerThread, fill_queue, make_run

from tasks.review.accounts import add_user, get_user
from tasks.review.app import create_app
from tasks.review.queue import ReviewQueue

XSS = 'Remove the cup <script>alert("xss")</script><img src=x onerror=alert(1)>'


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("browser") / "run"
    run, _, _ = make_run(root, 4, instruction=XSS)
    summary = fill_queue(run)
    queue = ReviewQueue.open(summary.extra["queue_db"])
    secrets = {"ann": add_user(queue.engine, "ann", "annotator"), "boss": add_user(queue.engine, "boss", "admin")}
    srv = ServerThread(create_app(str(root), queue)).start()
    yield srv, queue, secrets
    srv.stop()


def _login(page, url: str, secret: str) -> None:
    page.goto(url + "/login")
    page.fill("#secret", secret)
    page.click("#login")
    page.wait_for_load_state("load")


def _item_id(page) -> str:
    return page.get_attribute("#item", "data-item")


def test_keyboard_review_inline_edit_and_live_dashboard(server, chromium, shots_dir):
    srv, queue, secrets = server
    dialogs: list[str] = []
    admin_ctx, ann_ctx = (
        chromium.new_context(viewport={"width": 1280, "height": 900}),
        chromium.new_context(viewport={"width": 1280, "height": 900}),
    )
    try:
        admin = admin_ctx.new_page()
        _login(admin, srv.url, secrets["boss"])
        assert admin.url.endswith("/admin")
        assert admin.inner_text("#stage-edit .resolved") == "0"
        admin.screenshot(path=str(shots_dir / "01-dashboard-before.png"), full_page=True)

        page = ann_ctx.new_page()
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        requested: list[str] = []
        page.on("request", lambda r: requested.append(r.url))
        _login(page, srv.url, secrets["ann"])
        assert page.url.endswith("/review/edit")
        assert "<script>" in page.inner_text("#instruction")  # shown as text, not run
        assert "classical" not in page.content() and "qwen_image_edit" not in page.content()
        preload = page.get_attribute("#item", "data-preload").split()
        assert len(preload) == 2
        page.wait_for_function(
            "ids => ids.every(u => performance.getEntriesByName(location.origin + u).length > 0)", arg=preload
        )
        page.screenshot(path=str(shots_dir / "02-edit-side-by-side.png"), full_page=True)

        # comparison modes and the target box, by keyboard
        page.keyboard.press("b")
        assert "show-box" not in page.get_attribute("#item", "class")
        page.keyboard.press("b")
        page.keyboard.press("f")
        assert "mode-flicker" in page.get_attribute("#compare", "class")
        page.screenshot(path=str(shots_dir / "03-edit-flicker.png"))
        page.keyboard.press("s")
        assert "mode-slider" in page.get_attribute("#compare", "class")
        page.screenshot(path=str(shots_dir / "03b-edit-slider.png"))
        page.keyboard.press("c")

        # accept with A
        first = _item_id(page)
        page.keyboard.press("a")
        page.wait_for_function(
            "id => document.querySelector('#item') && document.querySelector('#item').dataset.item !== id", arg=first
        )
        second = _item_id(page)
        assert queue.resolutions()[first][0] == "accept"
        # reject needs a reason: R alone only hints
        page.keyboard.press("r")
        assert "reason" in page.inner_text("#key-hint")
        assert _item_id(page) == second
        page.keyboard.press("2")  # artifacts
        page.keyboard.press("r")
        page.wait_for_function("id => document.querySelector('#item').dataset.item !== id", arg=second)
        assert queue.resolutions()[second][0] == "reject"
        # undo brings the rejected item back; decide it again with another reason
        page.keyboard.press("u")
        page.wait_for_url(f"**/review/edit/item/{second}")
        assert queue.resolutions()[second] == ("pending", 0)
        page.keyboard.press("3")  # ghost remnants
        page.keyboard.press("r")
        page.wait_for_url("**/review/edit")
        # previous: shows my earlier decision
        page.keyboard.press("ArrowLeft")
        page.wait_for_url(f"**/review/edit/item/{second}?ev=*")
        assert "reject" in page.inner_text("#my-decision") and "ghost_remnants" in page.inner_text("#my-decision")
        page.screenshot(path=str(shots_dir / "04-previous-decision.png"), full_page=True)
        page.keyboard.press("ArrowRight")
        page.wait_for_url("**/review/edit")

        # the dashboard refreshes by itself
        admin.wait_for_function(
            "() => document.querySelector('#stage-edit .resolved').textContent === '2'"
            " && document.querySelector('#reasons').textContent.includes('Ghost remnants')",
            timeout=10_000,
        )
        assert admin.inner_text("#stage-edit .accepted") == "1" and admin.inner_text("#stage-edit .rejected") == "1"
        assert "ann" in admin.inner_text("#throughput")
        assert "Ghost remnants" in admin.inner_text("#reasons")
        admin.screenshot(path=str(shots_dir / "05-dashboard-after.png"), full_page=True)

        # QA review of the accepted edit: inline edit with validation
        page.goto(srv.url + "/review/qa")
        assert _item_id(page) == queue.next_items(get_user(queue.engine, "ann"), "qa", want=1)[0]
        mc = page.locator("fieldset.question[data-qid=Q2]")
        mc.locator("textarea.q-text").fill("Which object is on the table now?")
        mc.locator("input.q-gold").fill("F")
        page.locator("fieldset.question[data-qid=Q3] input.q-invalid").check()
        mc.locator("input.q-gold").press("Control+Enter")
        page.wait_for_selector("fieldset.question.has-error")
        assert "letter of an option" in page.inner_text("fieldset.question.has-error .q-error")
        assert mc.locator("textarea.q-text").input_value() == "Which object is on the table now?"  # nothing lost
        page.screenshot(path=str(shots_dir / "06-qa-validation-error.png"), full_page=True)
        mc.locator("input.q-gold").fill("A")
        mc.locator("input.q-gold").press("Escape")
        page.keyboard.press("a")
        page.wait_for_selector("#empty")
        edits = [e for e in queue.events(kinds=("question_edit", "question_validity"))]
        assert any("Which object is on the table now?" in e.after_json for e in edits)
        assert any(e.kind == "question_validity" for e in edits)
        page.screenshot(path=str(shots_dir / "07-qa-done.png"), full_page=True)
        admin.wait_for_function(
            "() => document.querySelector('#stage-qa .resolved').textContent === '1'", timeout=10_000
        )
        assert not dialogs, f"user text ran as script: {dialogs}"
    finally:
        admin_ctx.close()
        ann_ctx.close()
