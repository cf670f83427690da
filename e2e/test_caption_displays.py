"""The caption displays in real Chromium with scripted captions: the venue screen at 1920x1080,
the stream overlay on a transparent background, the listener page on a phone (390x844).

The real app runs in this event loop with a fake recogniser (tests/app/inprocess.py) and the
test publishes captions into the session itself: drafts, finals, a Spanish sentence final
that covers three source segments, a person's correction, a change of speaker. The views
must lay them out by the rules of static/js/subtitle-state.js, announce each finished caption
once to screen readers and never a draft, survive a dropped connection, and a private
session's screen must ask for the passcode. (test_event_views.py follows a real recording.)
"""

from __future__ import annotations

import asyncio
import io
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from PIL import Image
from playwright.async_api import Browser, Page, async_playwright

from e2e.conftest import CHROMIUM, STRICT_CSP
from engine.events import Caption, Speaker
from engine.session import Session
from tests.app.inprocess import InProcess, in_process_server, new_session

pytestmark = pytest.mark.browser

ADA = Speaker("s1", "Ada")
BO = Speaker("s2", "Bo")

LINES = """() => [...document.querySelectorAll('.caption-line')].map((el) => ({
  text: el.textContent.trim(), state: el.dataset.state, corrected: 'corrected' in el.dataset,
  draft: el.querySelector('.caption-draft').textContent.trim(),
  speaker: el.querySelector('.caption-speaker').textContent,
  block: el.closest('[lang]').lang,
}))"""


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=["--no-sandbox", "--disable-gpu"]
        )
        try:
            yield launched
        finally:
            await launched.close()


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[InProcess]:
    async with in_process_server(tmp_path, apertium=True) as running:
        yield running


async def open_page(browser: Browser, errors: list[str], **options: Any) -> Page:
    """A page under the strict CSP of e2e/conftest.py, its errors collected."""
    context = await browser.new_context(**options)
    # A document fulfilled by a route has no IP address space: allow its WebSocket to
    # 127.0.0.1 as a user would (e2e/conftest.py does the same).
    await context.grant_permissions(["local-network-access"])

    async def strict(route: Any, request: Any) -> None:
        if request.resource_type != "document":
            await route.continue_()
            return
        response = await route.fetch()
        await route.fulfill(
            response=response,
            headers={**response.headers, "content-security-policy": STRICT_CSP},
        )

    await context.route("**/*", strict)
    page = await context.new_page()
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    return page


async def say(session: Session, script: list[Caption], pause: float = 0.15) -> None:
    for caption in script:
        await session.publish(caption)
        await asyncio.sleep(pause)


def en(segment: int, state: str, text: str, **extra: Any) -> Caption:
    return Caption(segment, "en", True, state, text, segment, segment + 1, **extra)  # type: ignore[arg-type]


def es(segment: int, state: str, text: str, **extra: Any) -> Caption:
    return Caption(segment, "es", False, state, text, segment, segment + 1, **extra)  # type: ignore[arg-type]


SCRIPT = [
    en(0, "draft", "Good morning", speaker=ADA),
    en(0, "final", "Good morning everyone, and welcome to the results call.", speaker=ADA),
    en(1, "draft", "We moved our remote", speaker=ADA),
    en(1, "final", "We moved our remote support to team view last year.", speaker=ADA),
    es(1, "draft", "Movimos nuestro soporte", sources=(1,), speaker=ADA),
    en(2, "final", "Thank you, Ada.", speaker=BO),
    en(3, "draft", "The colour of", speaker=BO),
    es(3, "draft", "El color de", sources=(3,), speaker=BO),
    en(3, "final", "The colour of red cabbage", speaker=BO),
    es(4, "draft", "la col cambia", sources=(4,), speaker=BO),
    en(4, "final", "changes with how acidic", speaker=BO),
    es(5, "draft", "según el ácido", sources=(5,), speaker=BO),
    en(5, "final", "the substance is.", speaker=BO),
    es(
        3,
        "final",
        "El color de la col lombarda cambia según lo ácida que sea.",
        sources=(3, 4, 5),
        speaker=BO,
    ),
    en(1, "final", "We moved our remote support to TeamViewer last year.", rev=1, speaker=ADA),
    en(6, "draft", "And the next quarter", speaker=BO),
]
FINALS_EN = [c.text for c in SCRIPT if c.lang == "en" and c.is_final and not c.rev]


async def test_screen_overlay_and_phone_lay_out_captions_as_subtitles(
    browser: Browser, server: InProcess, tmp_path: Path
) -> None:
    created = await new_session(server.url, title="Results call", target_languages=["es"])
    code = created["code"]
    session = await server.state["services"].engine().registry.get(code)
    errors: list[str] = []
    screen = await open_page(browser, errors, viewport={"width": 1920, "height": 1080})
    overlay = await open_page(browser, errors, viewport={"width": 1920, "height": 1080})
    phone = await open_page(
        browser, errors, viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True
    )
    await screen.goto(f"{server.url}/s/{code}/screen?lang=en,es")
    await overlay.goto(f"{server.url}/s/{code}/overlay?lang=es&bg=transparent")
    await phone.goto(f"{server.url}/s/{code}")
    for page in (screen, overlay, phone):
        await page.wait_for_function("() => window.interpStats && window.interpStats.connected")

    await say(session, SCRIPT)
    # Each line stays 1.5 s before the next pushes it out: the screen catches up in steps.
    await screen.wait_for_function(
        "() => [...document.querySelectorAll('.caption-draft')].some((el) => "
        "el.textContent.includes('And the next quarter'))",
        timeout=30_000,
    )
    await phone.wait_for_function(
        "() => [...document.querySelectorAll('.caption-line')].some((el) => "
        "el.textContent.includes('TeamViewer'))",
        timeout=10_000,
    )

    # The screen: two languages stacked, at most three lines each, 42 characters a line,
    # the draft only on the last line, the corrected caption marked, speakers named.
    lines = await screen.evaluate(LINES)
    english = [line for line in lines if line["block"] == "en"]
    spanish = [line for line in lines if line["block"] == "es"]
    assert 1 <= len(english) <= 3 and 1 <= len(spanish) <= 3, lines
    assert all(len(line["text"]) <= 42 for line in lines), lines
    for block in (english, spanish):
        assert all(not line["draft"] for line in block[:-1]), block
    assert english[-1]["draft"] == "And the next quarter"
    # Segments 3-5 were covered by one Spanish final: none of their drafts is left.
    assert not any(
        d in line["text"] + line["draft"]
        for line in spanish
        for d in ("según el ácido", "la col cambia")
    )
    screen_stats = await screen.evaluate("() => window.interpSubtitles")
    assert screen_stats["changedAfterScroll"] == 0 and screen_stats["longestLine"] <= 42

    # The phone: the whole history in English, the correction in place and marked, the
    # change of speaker labelled; every final once.
    phone_lines = await phone.evaluate(LINES)
    texts = " ".join(line["text"] for line in phone_lines)
    assert "TeamViewer" in texts and "team view " not in texts
    assert any(line["corrected"] for line in phone_lines)
    assert [line["speaker"] for line in phone_lines if line["speaker"]] == ["Ada", "Bo"]
    finals = await phone.evaluate("() => window.interpCaptions.finals('en').map((f) => f[1])")
    assert finals[: len(FINALS_EN)] == FINALS_EN
    assert (await phone.evaluate("() => window.interpStats.duplicateFinals")) == 0

    # Screen readers: each finished caption once, in order, the correction said as one,
    # and never a draft; the lines themselves are not read on the displays.
    log = await screen.locator("#announcer").aria_snapshot()
    for text in FINALS_EN:
        assert log.count(text) == 1, (text, log)
    assert "Correction: We moved our remote support to TeamViewer last year." in log
    assert "And the next quarter" not in log and "Good morning\n" not in log
    tree = await screen.locator("body").aria_snapshot()
    assert "And the next quarter" not in tree
    phone_log = await phone.locator("#announcer").aria_snapshot()
    assert all(phone_log.count(text) == 1 for text in FINALS_EN), phone_log
    assert "And the next quarter" not in phone_log

    # The overlay: nothing but captions, on a transparent page.
    assert await overlay.evaluate("() => getComputedStyle(document.body).backgroundColor") == (
        "rgba(0, 0, 0, 0)"
    )
    visible = await overlay.evaluate(
        """() => [...document.body.querySelectorAll('*')].filter((el) => {
          if (el.closest('.subtitles') || el.children.length > 0) return false;
          const box = el.getBoundingClientRect();
          return box.width > 2 && box.height > 2 && el.textContent.trim() !== '';
        }).map((el) => el.tagName)"""
    )
    assert visible == [], visible
    png = await overlay.screenshot(omit_background=True)
    image = Image.open(io.BytesIO(png))
    assert image.mode == "RGBA" and image.getpixel((5, 5))[3] == 0  # see-through
    overlay_lines = await overlay.evaluate(LINES)
    assert overlay_lines and all(line["block"] == "es" for line in overlay_lines)

    # A dropped connection: the screen reconnects and backfills what it missed.
    await screen.context.set_offline(True)
    await session.publish(en(7, "final", "This came while the screen was offline."))
    await screen.context.set_offline(False)
    await screen.wait_for_function(
        "() => window.interpStats.reconnects >= 1 && [...document.querySelectorAll("
        "'.caption-line')].some((el) => el.textContent.includes('while the screen was offline'))",
        timeout=20_000,
    )

    # Full screen on a key, and a cursor that hides itself when the mouse rests.
    await screen.mouse.move(200, 200)
    await screen.keyboard.press("f")
    await screen.wait_for_function("() => document.fullscreenElement !== null", timeout=5_000)
    await screen.wait_for_function(
        "() => document.body.classList.contains('cursor-hidden')", timeout=5_000
    )
    for page in (screen, overlay, phone):
        await page.context.close()
    assert errors == [], errors


async def test_a_private_sessions_screen_asks_for_the_passcode(
    browser: Browser, server: InProcess
) -> None:
    created = await new_session(server.url, title="Board", listener_passcode="tulip 42")
    code = created["code"]
    session = await server.state["services"].engine().registry.get(code)
    errors: list[str] = []
    screen = await open_page(browser, errors, viewport={"width": 1920, "height": 1080})
    await screen.goto(f"{server.url}/s/{code}/screen")
    form = screen.locator("#passcode-form")
    await form.wait_for(state="visible")
    assert "Board" not in await screen.content()  # the title stays private
    await screen.fill("#passcode", "tulip")
    await screen.click("#passcode-form button")
    await screen.locator("#passcode-error").wait_for(state="visible")
    await screen.fill("#passcode", "tulip 42")
    await screen.click("#passcode-form button")
    await screen.wait_for_function("() => window.interpStats.connected")
    await session.publish(en(0, "final", "Only the board reads this."))
    await screen.wait_for_function(
        "() => document.querySelector('.caption-line')?.textContent.includes('Only the board')"
    )
    # The share link's token opens the overlay directly (the console hands it out).
    overlay = await open_page(browser, errors, viewport={"width": 1280, "height": 720})
    await overlay.goto(f"{server.url}/s/{code}/overlay#token={created['listener_token']}")
    await overlay.wait_for_function("() => window.interpStats.connected")
    assert "#token" not in overlay.url  # it left the address bar
    await screen.context.close()
    await overlay.context.close()
    unexpected = [e for e in errors if "401" not in e]
    assert unexpected == [], unexpected


async def test_display_parameters_are_checked(server: InProcess) -> None:
    import httpx

    created = await new_session(server.url)
    base = f"{server.url}/s/{created['code']}"
    async with httpx.AsyncClient(timeout=10) as client:
        ok = await client.get(f"{base}/screen?lines=2&size=64&position=top&theme=light")
        assert ok.status_code == 200 and 'data-size="64px"' in ok.text
        assert "frame-ancestors 'self'" in ok.headers["content-security-policy"]
        for query, problem in [
            ("lines=9", "lines"),
            ("size=huge", "size"),
            ("lang=xx", "lang"),
            ("lang=en,en,en", "lang"),
            ("bg=pink", "bg"),
            ("position=left", "position"),
        ]:
            bad = await client.get(f"{base}/overlay?{query}")
            assert bad.status_code == 400 and problem in bad.text, (query, bad.text)
        assert (await client.get(f"{server.url}/s/ZZZZ22/screen")).status_code == 404
