"""A real event in real Chromium: a presenter streams a real recording (the fake microphone of
e2e/conftest.py) and the room follows it on the venue screen (1920x1080), in the stream
overlay (transparent, in Spanish through Apertium) and on a phone (390x844), against the real
server and models. The pictures go to test-artifacts/screenshots/; to refresh the README's,
run ``INTERP_README_SCREENSHOTS=1 ./scripts/test e2e/test_event_views.py``, which writes them
to docs/screenshots/ (a plain test run leaves the tracked pictures alone).

What is checked: each view lays its captions out as subtitles (at most 42 characters a line,
no line changed after it moved up), the phone ends with exactly the presenter's finals and
announced each once to screen readers, the console shows the share link and the transcript
above the fold at 1366x768 with the listeners of each language, and a Stop shows "Paused" to
the room instead of "Live".
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from e2e.conftest import PHONE, ConsoleLog, FakeAudio, open_page, screenshots_dir

FRAME_MS = 100
TARGET = "es"


def subtitles(page: Page) -> dict[str, Any]:
    """The view's layout counters (static/js/subtitles.js)."""
    result: dict[str, Any] = page.evaluate(
        "() => JSON.parse(JSON.stringify(window.interpSubtitles))"
    )
    return result


def lines(page: Page) -> list[str]:
    texts: list[str] = page.eval_on_selector_all(
        ".subtitles .caption-line", "els => els.map((el) => el.textContent.trim())"
    )
    return texts


def presenter_finals(page: Page) -> list[tuple[int, str]]:
    rows: list[list[Any]] = page.eval_on_selector_all(
        "#captions .caption-source[data-state='final']",
        "els => els.map(el => [Number(el.dataset.segment), el.textContent.trim()])",
    )
    return [(int(segment), str(text)) for segment, text in rows]


@pytest.mark.browser
@pytest.mark.model
def test_the_room_follows_a_real_talk_on_screen_overlay_and_phone(
    browser: Browser, live_server: str, fake_audio: FakeAudio, artifacts_dir: Path
) -> None:
    pictures = screenshots_dir(artifacts_dir)
    created = httpx.post(
        f"{live_server}/api/sessions",
        json={"title": "Sonnets, live", "source_language": "en", "target_languages": [TARGET]},
        timeout=10,
    )
    assert created.status_code == 201, created.text
    session = created.json()
    code = session["code"]
    logs = {name: ConsoleLog() for name in ("presenter", "screen", "overlay", "phone")}
    presenter = open_page(browser, logs["presenter"], viewport={"width": 1366, "height": 768})
    screen = open_page(browser, logs["screen"], viewport={"width": 1920, "height": 1080})
    overlay = open_page(browser, logs["overlay"], viewport={"width": 1920, "height": 1080})
    phone = open_page(browser, logs["phone"], **PHONE)
    try:
        presenter.goto(f"{live_server}{session['present_url']}")
        expect(presenter.locator("#start-button")).to_be_enabled()
        screen.goto(f"{live_server}/s/{code}/screen?lang=en")
        overlay.goto(f"{live_server}/s/{code}/overlay?lang={TARGET}&bg=transparent")
        phone.goto(f"{live_server}/s/{code}")
        for page in (screen, overlay, phone):
            page.wait_for_function("() => window.interpStats.connected")

        presenter.click("#start-button")
        presenter.wait_for_function("() => window.interpStats.state === 'live'", timeout=30_000)
        expect(phone.locator("#state")).to_have_attribute("data-state", "live", timeout=15_000)

        # Mid-talk: every view has captions; the pictures for the README.
        screen.wait_for_function(
            "() => document.querySelectorAll('.caption-line').length >= 3", timeout=60_000
        )
        overlay.wait_for_function(
            "() => document.querySelectorAll('.caption-line').length >= 2", timeout=60_000
        )
        phone.wait_for_function("() => window.interpStats.captions.final >= 3", timeout=60_000)
        presenter.wait_for_function(
            "() => Object.keys(window.interpStats.byLanguage).length >= 2", timeout=30_000
        )
        screen.screenshot(path=str(pictures / "screen-1920x1080.png"))
        overlay.screenshot(
            path=str(pictures / "overlay-1920x1080-transparent.png"), omit_background=True
        )
        phone.screenshot(path=str(pictures / "listener-390x844.png"))

        # The console at 1366x768: share link, QR and transcript above the fold, the
        # listeners of each language (the screen and the phone read English, the overlay
        # Spanish), and the displays' links.
        for selector in ("#listen-link", "#share-qr", ".transcript-link[data-format='txt']"):
            expect(presenter.locator(selector)).to_be_in_viewport()
        expect(presenter.locator("#share-languages")).to_contain_text("English 2")
        expect(presenter.locator("#share-languages")).to_contain_text("Spanish 1")
        expect(presenter.locator("#transcript-lang option")).to_have_text(["English", "Spanish"])
        presenter.screenshot(path=str(pictures / "console-1366x768.png"))
        # The preview of a translation, as the overlay draws it (not counted as a listener).
        presenter.click("#displays summary")
        presenter.select_option("#preview-lang", TARGET)
        presenter.wait_for_function(
            "() => document.querySelectorAll('#preview .caption-line').length > 0", timeout=60_000
        )
        expect(presenter.locator("#preview")).to_have_attribute("lang", TARGET)
        expect(presenter.locator("#screen-link")).to_contain_text(f"/s/{code}/screen?lang=")
        presenter.select_option("#preview-lang", "")

        # The whole clip, then Stop: the room sees "Paused", not "Live".
        clip_frames = int(fake_audio.duration_s * 1000 / FRAME_MS)
        presenter.wait_for_function(
            f"() => window.interpStats.framesSent >= {clip_frames + 10}",
            timeout=int((fake_audio.duration_s + 30) * 1000),
        )
        presenter.click("#stop-button")
        presenter.wait_for_function("() => window.interpStats.state === 'ended'", timeout=60_000)
        expect(phone.locator("#state-text")).to_have_text("Paused", timeout=15_000)
        expect(screen.locator("#display-status")).to_have_text("Paused", timeout=15_000)

        # The phone has exactly the presenter's finals, each announced once, no draft.
        expected = presenter_finals(presenter)
        assert len(expected) >= 4, expected
        phone.wait_for_function(
            "n => window.interpCaptions.finals('en').length >= n", arg=len(expected)
        )
        heard = phone.evaluate("() => window.interpCaptions.finals('en')")
        assert [(int(s), t) for s, t in heard] == expected
        announced = phone.locator("#announcer").aria_snapshot()
        for _, text in expected:
            assert announced.count(text) == 1, (text, announced)
        assert phone.locator("#captions .caption-draft:not(:empty)").count() == 0

        # Subtitle rules on every view: lines fit, none changed once it moved up.
        for name, page in (("screen", screen), ("overlay", overlay), ("phone", phone)):
            counters = subtitles(page)
            assert counters["changedAfterScroll"] == 0, (name, counters)
            assert counters["longestLine"] <= 42, (name, counters["longestText"])
            assert all(len(text) <= 42 for text in lines(page)), (name, lines(page))
        assert overlay.evaluate("() => getComputedStyle(document.body).backgroundColor") == (
            "rgba(0, 0, 0, 0)"
        )
        for page in (screen, overlay):  # a line of 42 characters fits the width: no wrapping
            wrapped = page.eval_on_selector_all(
                ".caption-line",
                """els => els.filter((el) => el.getBoundingClientRect().height
                   > 1.5 * parseFloat(getComputedStyle(el).lineHeight))
                   .map((el) => el.textContent)""",
            )
            assert wrapped == [], wrapped
        assert subtitles(screen)["finals"] >= len(expected)
    finally:
        for name, log in logs.items():
            log.write(artifacts_dir / f"event-{name}-console.txt")
        for page in (presenter, screen, overlay, phone):
            page.context.close()
    for name, log in logs.items():
        assert log.errors == [], f"{name} console errors: {log.errors}"
