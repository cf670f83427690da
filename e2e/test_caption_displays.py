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

import io
import re
from typing import Any

import httpx
import pytest
from PIL import Image
from playwright.sync_api import Browser, WebSocketRoute, expect

from e2e.conftest import Background, ConsoleLog, open_page
from engine.events import Caption, Speaker

pytestmark = pytest.mark.browser


ADA = Speaker("s1", "Ada")
BO = Speaker("s2", "Bo")

LINES = """() => [...document.querySelectorAll('.caption-line')].map((el) => ({
  text: el.textContent.trim(), state: el.dataset.state, corrected: 'corrected' in el.dataset,
  draft: el.querySelector('.caption-draft').textContent.trim(),
  speaker: el.querySelector('.caption-speaker').textContent,
  block: el.closest('[lang]').lang,
}))"""


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


def test_screen_overlay_and_phone_lay_out_captions_as_subtitles(
    browser: Browser, background: Background
) -> None:
    server = background.server
    created = background.create(target_languages=["es"])
    code = created["code"]
    session = background.session(code)
    console = ConsoleLog()
    screen = open_page(browser, console, viewport={"width": 1920, "height": 1080})
    overlay = open_page(browser, console, viewport={"width": 1920, "height": 1080})
    phone = open_page(
        browser, console, viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True
    )
    screen.goto(f"{server.url}/s/{code}/screen?lang=en,es")
    overlay.goto(f"{server.url}/s/{code}/overlay?lang=es&bg=transparent")
    phone.goto(f"{server.url}/s/{code}")
    for page in (screen, overlay, phone):
        page.wait_for_function("() => window.interpStats && window.interpStats.connected")

    background.say(session, SCRIPT)
    # Each line stays 1.5 s before the next pushes it out: the screen catches up in steps.
    screen.wait_for_function(
        "() => [...document.querySelectorAll('.caption-draft')].some((el) => "
        "el.textContent.includes('And the next quarter'))",
        timeout=30_000,
    )
    phone.wait_for_function(
        "() => [...document.querySelectorAll('.caption-line')].some((el) => "
        "el.textContent.includes('TeamViewer'))",
        timeout=10_000,
    )

    # The screen: two languages stacked, at most three lines each, 42 characters a line,
    # the draft only on the last line, the corrected caption marked, speakers named.
    lines = screen.evaluate(LINES)
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
    screen_stats = screen.evaluate("() => window.interpSubtitles")
    assert screen_stats["changedAfterScroll"] == 0 and screen_stats["longestLine"] <= 42

    # The phone: the whole history in English, the correction in place and marked, the
    # change of speaker labelled; every final once.
    phone_lines = phone.evaluate(LINES)
    texts = " ".join(line["text"] for line in phone_lines)
    assert "TeamViewer" in texts and "team view " not in texts
    assert any(line["corrected"] for line in phone_lines)
    assert [line["speaker"] for line in phone_lines if line["speaker"]] == ["Ada", "Bo"]
    finals = phone.evaluate("() => window.interpCaptions.finals('en').map((f) => f[1])")
    assert finals[: len(FINALS_EN)] == FINALS_EN
    assert (phone.evaluate("() => window.interpStats.duplicateFinals")) == 0

    # Screen readers: each finished caption once, in order, the correction said as one,
    # and never a draft; the lines themselves are not read on the displays.
    log = screen.locator("#announcer").aria_snapshot()
    for text in FINALS_EN:
        assert log.count(text) == 1, (text, log)
    assert "Correction: We moved our remote support to TeamViewer last year." in log
    assert "And the next quarter" not in log and "Good morning\n" not in log
    tree = screen.locator("body").aria_snapshot()
    assert "And the next quarter" not in tree
    phone_log = phone.locator("#announcer").aria_snapshot()
    assert all(phone_log.count(text) == 1 for text in FINALS_EN), phone_log
    assert "And the next quarter" not in phone_log

    # The overlay: nothing but captions, on a transparent page.
    assert overlay.evaluate("() => getComputedStyle(document.body).backgroundColor") == (
        "rgba(0, 0, 0, 0)"
    )
    visible = overlay.evaluate(
        """() => [...document.body.querySelectorAll('*')].filter((el) => {
          if (el.closest('.subtitles') || el.children.length > 0) return false;
          const box = el.getBoundingClientRect();
          return box.width > 2 && box.height > 2 && el.textContent.trim() !== '';
        }).map((el) => el.tagName)"""
    )
    assert visible == [], visible
    png = overlay.screenshot(omit_background=True)
    image = Image.open(io.BytesIO(png))
    pixel = image.getpixel((5, 5))
    assert image.mode == "RGBA" and isinstance(pixel, tuple) and pixel[3] == 0  # see-through
    overlay_lines = overlay.evaluate(LINES)
    assert overlay_lines and all(line["block"] == "es" for line in overlay_lines)

    # A dropped connection: the screen reconnects and backfills what it missed.
    screen.context.set_offline(True)
    background.call(session.publish(en(7, "final", "This came while the screen was offline.")))
    screen.context.set_offline(False)
    screen.wait_for_function(
        "() => window.interpStats.reconnects >= 1 && [...document.querySelectorAll("
        "'.caption-line')].some((el) => el.textContent.includes('while the screen was offline'))",
        timeout=20_000,
    )

    # Full screen on a key, and a cursor that hides itself when the mouse rests.
    screen.mouse.move(200, 200)
    screen.keyboard.press("f")
    screen.wait_for_function("() => document.fullscreenElement !== null", timeout=5_000)
    screen.wait_for_function(
        "() => document.body.classList.contains('cursor-hidden')", timeout=5_000
    )
    for page in (screen, overlay, phone):
        page.context.close()
    assert console.errors == [], console.errors


def test_a_private_sessions_screen_asks_for_the_passcode(
    browser: Browser, background: Background
) -> None:
    server = background.server
    created = background.create(title="Board", listener_passcode="tulip 42")
    code = created["code"]
    session = background.session(code)
    log = ConsoleLog()
    screen = open_page(browser, log, viewport={"width": 1920, "height": 1080})
    screen.goto(f"{server.url}/s/{code}/screen")
    form = screen.locator("#passcode-form")
    form.wait_for(state="visible")
    assert "Board" not in screen.content()  # the title stays private
    screen.fill("#passcode", "tulip")
    screen.click("#passcode-form button")
    screen.locator("#passcode-error").wait_for(state="visible")
    screen.fill("#passcode", "tulip 42")
    screen.click("#passcode-form button")
    screen.wait_for_function("() => window.interpStats.connected")
    background.call(session.publish(en(0, "final", "Only the board reads this.")))
    screen.wait_for_function(
        "() => document.querySelector('.caption-line')?.textContent.includes('Only the board')"
    )
    # The share link's token opens the overlay directly (the console hands it out).
    overlay = open_page(browser, log, viewport={"width": 1280, "height": 720})
    overlay.goto(f"{server.url}/s/{code}/overlay#token={created['listener_token']}")
    overlay.wait_for_function("() => window.interpStats.connected")
    assert "#token" not in overlay.url  # it left the address bar
    # The listener page asks for the passcode too, and shows the title only after it.
    phone = open_page(browser, log, viewport={"width": 390, "height": 844}, is_mobile=True)
    phone.goto(f"{server.url}/s/{code}")
    phone.locator("#passcode-form").wait_for(state="visible")
    assert phone.locator("#listen-title").inner_text() == "Private session"
    phone.fill("#passcode", "tulip 42")
    phone.click("#passcode-form button")
    phone.wait_for_function("() => window.interpStats.connected")
    assert phone.locator("#listen-title").inner_text() == "Board"
    phone.wait_for_function(
        "() => window.interpCaptions.finals('en').some(([, t]) => t.includes('Only the board'))"
    )
    screen.context.close()
    overlay.context.close()
    phone.context.close()
    unexpected = [e for e in log.errors if "401" not in e]
    assert unexpected == [], unexpected


def test_display_parameters_are_checked(background: Background) -> None:
    server = background.server
    created = background.create()
    base = f"{server.url}/s/{created['code']}"
    with httpx.Client(timeout=10) as client:
        ok = client.get(f"{base}/screen?lines=2&size=64&position=top&theme=light")
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
            bad = client.get(f"{base}/overlay?{query}")
            assert bad.status_code == 400 and problem in bad.text, (query, bad.text)
        assert (client.get(f"{server.url}/s/ZZZZ22/screen")).status_code == 404


def test_a_private_sessions_listener_gets_its_languages_once_unlocked(
    browser: Browser, background: Background
) -> None:
    created = background.create(
        title="Board", listener_passcode="tulip 42", target_languages=["es"]
    )
    log = ConsoleLog()
    phone = open_page(browser, log, viewport={"width": 390, "height": 844}, is_mobile=True)
    phone.goto(f"{background.server.url}/s/{created['code']}?lang=es")
    # Before the passcode the pill says what the page knows, in the page's words.
    phone.wait_for_selector("#passcode-form:not([hidden])")
    expect(phone.locator("#state-text")).to_have_text("Private")
    phone.fill("#passcode", "tulip 42")
    phone.click("#passcode-form button")
    phone.wait_for_function("() => window.interpStats.connected")
    # What the page could not offer before the passcode, and the link's language chosen.
    options = phone.eval_on_selector_all(
        "#language option", "els => els.map((el) => [el.value, el.lang])"
    )
    assert options == [["en", "en"], ["es", "es"]]
    assert phone.locator("#language").is_enabled()
    assert phone.input_value("#language") == "es"
    assert phone.evaluate("() => window.interpStats.lang") == "es"
    phone.context.close()
    unexpected = [e for e in log.errors if "401" not in e]
    assert unexpected == [], unexpected


HOUR_OF_FINALS = 1100  # about an hour of a talk's finals: more than a listener queue holds


def test_a_listener_and_a_screen_joining_an_hour_in_get_every_line(
    browser: Browser, background: Background
) -> None:
    """A listener's backfill is the whole session so far; more finals than the listener queue's
    bound (1000) once closed every late joiner before its first line, and its reconnect with
    the same `since` met the same, for ever."""
    created = background.create(title="All-day plenary", target_languages=[])
    code = created["code"]
    session = background.session(code)

    async def an_hour_of_finals() -> None:
        for i in range(HOUR_OF_FINALS):
            await session.publish(en(i, "final", f"Line {i + 1} of the morning."))

    background.call(an_hour_of_finals(), timeout=120)
    log = ConsoleLog()
    sockets: dict[str, list[str]] = {"phone": [], "screen": []}
    phone = open_page(browser, log, viewport={"width": 390, "height": 844}, is_mobile=True)
    screen = open_page(browser, log, viewport={"width": 1920, "height": 1080})
    for name, page in (("phone", phone), ("screen", screen)):
        page.on("websocket", lambda ws, name=name: sockets[name].append(ws.url))
    phone.goto(f"{background.server.url}/s/{code}")
    screen.goto(f"{background.server.url}/s/{code}/screen")
    every_final = f"() => window.interpStats.captions.final >= {HOUR_OF_FINALS}"
    phone.wait_for_function(every_final, timeout=60_000)
    screen.wait_for_function(
        "() => [...document.querySelectorAll('.caption-line')].some((el) => "
        f"el.textContent.includes('Line {HOUR_OF_FINALS} of'))",
        timeout=60_000,
    )
    assert phone.evaluate("() => window.interpCaptions.finals('en').length") == HOUR_OF_FINALS
    background.say(session, [en(HOUR_OF_FINALS, "final", "And now, live.")], pause=0)
    for page in (phone, screen):
        expect(page.locator(".caption-line").last).to_contain_text("And now, live.")
    # One socket each: nobody was sent away and asked back.
    assert {name: len(urls) for name, urls in sockets.items()} == {"phone": 1, "screen": 1}
    assert phone.evaluate("() => window.interpStats.reconnects") == 0
    phone.context.close()
    screen.context.close()
    assert log.errors == [], log.errors


def test_a_phone_whose_connection_dies_without_closing_reconnects_by_itself(
    browser: Browser, background: Background
) -> None:
    """The phone's network path goes dead without a close (it roamed to another access point):
    nothing arrives either way and the browser reports nothing. The page notices that its
    ping goes unanswered, drops the connection and reconnects with `since`, and the line said
    meanwhile appears."""
    created = background.create(title="Roaming phone", target_languages=[])
    code = created["code"]
    session = background.session(code)
    background.say(session, [en(0, "final", "Before the corridor.")], pause=0)
    sockets: list[WebSocketRoute] = []
    dead = [False]

    def black_hole_the_first(ws: WebSocketRoute) -> None:
        server = ws.connect_to_server()
        sockets.append(ws)
        if len(sockets) > 1:
            return  # later connections pass through untouched
        ws.on_message(lambda message: None if dead[0] else server.send(message))
        server.on_message(lambda message: None if dead[0] else ws.send(message))

    log = ConsoleLog()
    phone = open_page(browser, log, viewport={"width": 390, "height": 844}, is_mobile=True)
    phone.route_web_socket(re.compile(r"/ws/listen/"), black_hole_the_first)
    phone.goto(f"{background.server.url}/s/{code}")
    expect(phone.locator(".caption-line").last).to_contain_text("Before the corridor.")
    dead[0] = True
    background.say(session, [en(1, "final", "Said while the phone was in the corridor.")], pause=0)
    # A ping every 10 s, checked at each: given up at the second check after an unanswered
    # ping, so within 30 s of the death, plus the backoff.
    phone.wait_for_function(
        "() => [...document.querySelectorAll('.caption-line')].map((el) => el.textContent)"
        ".join(' ').includes('while the phone was in the corridor')",
        timeout=40_000,
    )
    assert len(sockets) == 2 and phone.evaluate("() => window.interpStats.reconnects") == 1
    assert phone.evaluate("() => window.interpStats.lastClose.code") == 1006
    assert "since=" in sockets[1].url and "since=0" not in sockets[1].url
    phone.context.close()
    assert log.errors == [], log.errors


# A Japanese presenter's finals: no spaces between words, each character two columns wide.
JAPANESE = [
    "皆さん、おはようございます。本日の会議へようこそ。",
    "今日は会社の過去一年間の業績と今後の計画についてお話しします。",
    "まず最初に、財務部長から「昨年の売上」について説明します。",
]


def test_a_japanese_presenters_captions_fit_the_screen_and_keep_their_words_together(
    browser: Browser, background: Background
) -> None:
    """Text without spaces was cut every 42 characters, twice the width a screen line has for
    kanji and kana, wherever that fell ("お話ししま" / "す。"), and a space put between the
    pieces. Lines now hold 42 columns (a kanji takes two) and break between words, after a
    full stop where one is near, and the text reads as it was said."""
    created = background.create(title="Kaigi", source_language="ja", target_languages=[])
    code = created["code"]
    session = background.session(code)
    log = ConsoleLog()
    screen = open_page(browser, log, viewport={"width": 1920, "height": 1080})
    phone = open_page(browser, log, viewport={"width": 390, "height": 844}, is_mobile=True)
    screen.goto(f"{background.server.url}/s/{code}/screen")
    phone.goto(f"{background.server.url}/s/{code}")
    for page in (screen, phone):
        page.wait_for_function("() => window.interpStats && window.interpStats.connected")
    script = [
        Caption(i, "ja", True, "final", text, 4 * i, 4 * i + 3.5)  # type: ignore[arg-type]
        for i, text in enumerate(JAPANESE)
    ]
    background.say(session, script)
    for page in (screen, phone):
        expect(page.locator(".caption-line").last).to_contain_text("説明します。", timeout=20_000)
    said = "".join(JAPANESE)
    phone_lines = phone.evaluate(
        "() => [...document.querySelectorAll('.caption-line')].map((el) => el.textContent)"
    )
    assert "".join(phone_lines) == said, phone_lines
    # The screen shows the newest three lines, none wider than 42 columns, none broken
    # inside "お話しします" or before a closing mark.
    screen_lines = screen.evaluate(LINES)
    assert said.endswith("".join(line["text"] for line in screen_lines)), screen_lines
    assert screen.evaluate("() => window.interpSubtitles.longestLine") <= 42
    for line in screen_lines + [{"text": text} for text in phone_lines]:
        assert line["text"][0] not in "、。」" and line["text"][-1] != "「", line
        assert "お話ししま" not in line["text"] or "お話しします" in line["text"], line
    for page in (screen, phone):
        page.context.close()
    assert log.errors == [], log.errors
