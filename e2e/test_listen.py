"""An audience follows the presenter, in real Chromium against the real server and models.

One presenter run (a laptop context whose fake microphone plays a real recording) serves the
whole audience story: a listener on a phone opens the share link, sees drafts and finals, changes
theme and text size and reloads, drops off the network and comes back, switches to the Spanish
translation (Apertium) and the bilingual view without reconnecting, downloads transcripts, and
sees the presenter end the session. Its finals must equal the presenter's: none missing, none
twice. Smaller checks (the caption view's rules, reconnect policy, the unknown-code page) need
no audio.
"""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path
from typing import Any

import httpx
import pytest
import srt
import webvtt
from playwright.sync_api import Browser, Page, WebSocketRoute, expect

from e2e.conftest import PHONE, ConsoleLog, FakeAudio, open_page

FRAME_MS = 100
OFFLINE_FINALS = 1  # finals the presenter must produce while the listener is offline
TARGET = "es"  # the translation the listener switches to (Apertium eng-spa, a Debian package)

# True once every source final from the first translated segment on has its translation
# (a translation final covers its `sources`, or its own segment).
TRANSLATIONS_CAUGHT_UP = """
(lang) => {
  const captions = window.interpCaptions;
  const translated = new Set(captions.covered(lang));
  if (translated.size === 0) return false;
  const first = Math.min(...translated);
  return captions.finals('en').map(([segment]) => segment)
    .filter((segment) => segment >= first)
    .every((segment) => translated.has(segment));
}
"""


def stats(page: Page) -> dict[str, Any]:
    """The page's window.interpStats."""
    result: dict[str, Any] = page.evaluate("() => JSON.parse(JSON.stringify(window.interpStats))")
    return result


def heard(page: Page, lang: str = "en") -> list[tuple[int, str]]:
    """(segment, text) of every final in `lang` the listener page received and laid out."""
    rows: list[list[Any]] = page.evaluate("(lang) => window.interpCaptions.finals(lang)", lang)
    return [(int(segment), str(text)) for segment, text in rows]


def finals(page: Page, kind: str = "source") -> list[tuple[int, str]]:
    """(segment, text) of every final caption line of `kind` (source or translation) in the
    presenter console's caption view, in display order, shown or not."""
    rows: list[list[Any]] = page.eval_on_selector_all(
        f"#captions .caption-{kind}[data-state='final']",
        "els => els.map(el => [Number(el.dataset.segment), el.textContent.trim()])",
    )
    return [(int(segment), str(text)) for segment, text in rows]


def shown(page: Page, selector: str) -> bool:
    """Whether the first element matching `selector` is rendered (not display: none)."""
    result: bool = page.eval_on_selector(selector, "el => getComputedStyle(el).display !== 'none'")
    return result


def one_line(text: str) -> str:
    return " ".join(text.split())


def download(page: Page, fmt: str) -> tuple[str, str]:
    """Click the listener's transcript link for `fmt`; return (suggested filename, text)."""
    page.click("#transcript-menu summary")
    link = page.locator(f"#transcript-menu .transcript-link[data-format='{fmt}']")
    expect(link).to_be_visible()
    with page.expect_download() as info:
        link.click()
    item = info.value
    path = item.path()
    assert path is not None
    page.keyboard.press("Escape")
    return item.suggested_filename, Path(path).read_text(encoding="utf-8")


@pytest.mark.browser
@pytest.mark.model
def test_audience_follows_the_presenter(
    browser: Browser,
    live_server: str,
    fake_audio: FakeAudio,
    artifacts_dir: Path,
) -> None:
    presenter_log, listener_log = ConsoleLog(), ConsoleLog()
    created = httpx.post(
        f"{live_server}/api/sessions",
        json={
            "title": "Sonnets for the audience",
            "source_language": "en",
            "target_languages": [TARGET],
        },
        timeout=10,
    )
    assert created.status_code == 201, created.text
    session = created.json()
    code = session["code"]

    presenter = open_page(browser, presenter_log, viewport={"width": 1280, "height": 900})
    listener = open_page(browser, listener_log, **PHONE)
    try:
        # 1. The console's share panel: join code, absolute link, QR code, nobody listening yet.
        presenter.goto(f"{live_server}{session['present_url']}")
        expect(presenter.locator("#start-button")).to_be_enabled()
        expect(presenter.locator("#share-code")).to_have_text(code)
        share_link = presenter.locator("#listen-link")
        expect(share_link).to_have_text(f"{live_server}/s/{code}")
        qr_size = presenter.eval_on_selector("#share-qr", "img => img.complete && img.naturalWidth")
        assert qr_size and qr_size > 100, "the QR code image did not load"
        expect(presenter.locator("#share-listener-count")).to_have_text("0")

        # 2. A listener on a phone opens the share link before the talk starts.
        listener.goto(share_link.inner_text())
        expect(listener.locator("h1")).to_have_text("Sonnets for the audience")
        listener.wait_for_function("() => window.interpStats.connected")
        expect(listener.locator("#state")).to_have_attribute("data-state", "waiting")
        expect(listener.locator("#listener-number")).to_have_text("1")
        expect(listener.locator("#language")).to_be_enabled()
        languages = listener.eval_on_selector_all("#language option", "os => os.map(o => o.value)")
        assert languages == ["en", TARGET]
        assert listener.evaluate("() => document.documentElement.scrollWidth") <= 390

        # 3. The presenter starts; the listener sees the session go live, drafts, then finals.
        presenter.click("#start-button")
        presenter.wait_for_function("() => window.interpStats.state === 'live'", timeout=30_000)
        expect(presenter.locator("#share-listener-count")).to_have_text("1")
        expect(listener.locator("#state")).to_have_attribute("data-state", "live", timeout=15_000)
        listener.wait_for_function("() => window.interpStats.captions.draft > 0", timeout=60_000)
        listener.wait_for_function("() => window.interpStats.captions.final > 0", timeout=60_000)

        # 4. Dark theme and extra-large text survive a reload (which also rejoins from scratch).
        default_size = listener.eval_on_selector(
            "#captions .caption-line", "el => parseFloat(getComputedStyle(el).fontSize)"
        )
        listener.click("#display-menu summary")
        listener.get_by_role("radio", name="Dark", exact=True).check()
        listener.get_by_role("radio", name="XL", exact=True).check()
        listener.keyboard.press("Escape")
        expect(listener.locator("#display-menu")).not_to_have_attribute("open", "")
        listener.reload()
        listener.wait_for_function("() => window.interpStats.connected")
        root = listener.locator("html")
        expect(root).to_have_attribute("data-theme", "dark")
        expect(root).to_have_attribute("data-font", "xl")
        # (The menu is closed, so its radios are out of the accessibility tree: find by value.)
        expect(listener.locator("input[name='theme'][value='dark']")).to_be_checked()
        expect(listener.locator("input[name='font'][value='xl']")).to_be_checked()
        listener.wait_for_function("() => window.interpStats.captions.final > 0", timeout=30_000)
        large_size = listener.eval_on_selector(
            "#captions .caption-line", "el => parseFloat(getComputedStyle(el).fontSize)"
        )
        assert large_size > default_size * 1.3, (default_size, large_size)
        background = listener.evaluate("() => getComputedStyle(document.body).backgroundColor")
        assert background == "rgb(13, 17, 23)", background

        # 5. The listener drops off the network while the presenter keeps talking, then returns
        #    and backfills what it missed.
        listener.context.set_offline(True)
        expect(listener.locator("#state")).to_have_attribute("data-state", "offline")
        expect(listener.locator("#state-text")).to_have_text("Offline")
        finals_before = int(stats(presenter)["captions"]["final"])
        presenter.wait_for_function(
            f"() => window.interpStats.captions.final >= {finals_before + OFFLINE_FINALS}",
            timeout=60_000,
        )
        missed = len(finals(presenter)) - len(heard(listener))
        listener.context.set_offline(False)
        listener.wait_for_function(
            "() => window.interpStats.connected && window.interpStats.reconnects >= 1",
            timeout=30_000,
        )
        assert missed >= OFFLINE_FINALS
        expect(listener.locator("#state")).to_have_attribute("data-state", "live")

        # 6. The listener switches to Spanish without reconnecting: the captions are the
        #    translation; the bilingual view shows the original's newest lines above them,
        #    and turning it on keeps the reader at the live end.
        reconnects = stats(listener)["reconnects"]
        listener.select_option("#language", TARGET)
        listener.wait_for_function(
            "(lang) => window.interpCaptions.finals(lang).length > 0", arg=TARGET, timeout=60_000
        )
        expect(listener.locator("#captions")).to_have_attribute("lang", TARGET)
        assert not shown(listener, "#captions-original")
        listener.click("#display-menu summary")
        listener.get_by_role("checkbox", name="Show the original above the translation").check()
        listener.keyboard.press("Escape")
        assert shown(listener, "#captions-original")
        expect(listener.locator("#captions-original .caption-line").first).to_be_visible()
        assert listener.eval_on_selector(
            "#captions", "el => el.scrollHeight - el.scrollTop - el.clientHeight < 2"
        ), "the bilingual view must not scroll the reader away from live"
        switched = stats(listener)
        assert switched["lang"] == TARGET and switched["reconnects"] == reconnects
        assert switched["connected"]
        href = listener.locator("#transcript-menu .transcript-link[data-format='txt']")
        expect(href).to_have_attribute("href", re.compile(rf"lang={TARGET}&format=txt"))

        # Mid-talk pictures for a person to look at.
        listener.screenshot(path=str(artifacts_dir / "listener.png"))
        presenter.screenshot(path=str(artifacts_dir / "presenter-share.png"), full_page=True)

        # 7. The presenter lets the whole clip out, then stops.
        clip_frames = int(fake_audio.duration_s * 1000 / FRAME_MS)
        presenter.wait_for_function(
            f"() => window.interpStats.framesSent >= {clip_frames + 10}",
            timeout=int((fake_audio.duration_s + 30) * 1000),
        )
        presenter.click("#stop-button")
        presenter.wait_for_function(
            "() => ['ended', 'error'].includes(window.interpStats.state)", timeout=60_000
        )
        assert stats(presenter)["state"] == "ended", stats(presenter).get("lastError")

        # 8. The listener ends with exactly the presenter's finals: none missing, none twice.
        expected = finals(presenter)
        assert len(expected) >= 4, expected
        listener.wait_for_function(
            "n => window.interpCaptions.finals('en').length >= n", arg=len(expected), timeout=30_000
        )
        got = heard(listener)
        listener_stats = stats(listener)
        assert got == expected
        assert listener_stats["duplicateFinals"] == 0
        assert listener_stats["lastSeq"] > 0

        # 9. Follow-live: scrolling back pauses it and offers "Jump to live".
        jump = listener.locator("#jump-live")
        listener.eval_on_selector("#captions", "el => { el.scrollTop = 0; }")
        expect(jump).to_be_visible()
        jump.click()
        expect(jump).to_be_hidden()
        assert listener.eval_on_selector(
            "#captions", "el => el.scrollHeight - el.scrollTop - el.clientHeight < 2"
        )

        # 10. Transcript downloads in the listener's language: Spanish, then English again.
        listener.wait_for_function(TRANSLATIONS_CAUGHT_UP, arg=TARGET, timeout=60_000)
        translated = heard(listener, TARGET)
        assert listener.locator("#captions .caption-draft:not(:empty)").count() == 0
        name, txt = download(listener, "txt")
        assert name == f"{code}-{TARGET}.txt"
        assert txt.splitlines() == [one_line(text) for _, text in translated]

        listener.select_option("#language", "en")
        expect(listener.locator("#captions")).to_have_attribute("lang", "en")
        assert heard(listener) == expected
        texts = [one_line(text) for _, text in expected]
        name, txt = download(listener, "txt")
        assert name == f"{code}-en.txt"
        assert txt.splitlines() == texts
        _, srt_text = download(listener, "srt")
        cues = list(srt.parse(srt_text))
        assert one_line(" ".join(cue.content for cue in cues)) == one_line(" ".join(texts))
        assert all(a.end <= b.start for a, b in itertools.pairwise(cues))
        _, vtt_text = download(listener, "vtt")
        assert vtt_text.startswith("WEBVTT")
        vtt_cues = webvtt.from_string(vtt_text).captions
        assert [c.text for c in vtt_cues] == [cue.content for cue in cues]

        # 11. The presenter ends the session (after confirming); the listener sees it end.
        presenter.once("dialog", lambda dialog: dialog.accept())
        presenter.click("#end-session")
        expect(presenter.locator("#status-text")).to_contain_text("Session ended")
        expect(presenter.locator("#start-button")).to_be_disabled()
        expect(listener.locator("#state")).to_have_attribute("data-state", "ended")
        expect(listener.locator("#ended-note")).to_be_visible()
        # The note took room from the captions; the view still shows the newest line.
        listener.wait_for_function(
            "() => { const el = document.getElementById('captions');"
            " return el.scrollHeight - el.scrollTop - el.clientHeight < 2; }"
        )
        listener.wait_for_function("() => window.interpStats.connection === 'closed'")
        facts = httpx.get(f"{live_server}/api/sessions/{code}", timeout=10).json()
        assert facts["state"] == "ended"
        listener.screenshot(path=str(artifacts_dir / "listener-ended.png"))

        report = {
            "presenter": stats(presenter),
            "listener": stats(listener),
            "finals": expected,
            "translated": translated,
        }
        (artifacts_dir / "listen-report.json").write_text(json.dumps(report, indent=2) + "\n")
    finally:
        presenter_log.write(artifacts_dir / "presenter-share-console.txt")
        listener_log.write(artifacts_dir / "listener-console.txt")
        presenter.context.close()
        listener.context.close()
    assert presenter_log.errors == [], f"presenter console errors: {presenter_log.errors}"
    assert listener_log.errors == [], f"listener console errors: {listener_log.errors}"


# Runs the page's own caption module on synthetic events (no model, no audio): the rules a
# listener relies on when translations arrive (a later issue) and when events repeat.
CAPTION_VIEW_SCRIPT = """
async () => {
  const { CaptionView } = await import('/static/js/captions.js');
  const box = document.createElement('div');
  box.className = 'captions';
  box.dataset.view = 'single';
  document.body.append(box);
  const view = new CaptionView(box, { translation: 'es' });
  const ev = (seq, segment, lang, source, state, text, stable = 0) =>
    ({ type: 'caption', seq, segment, lang, source, state, text, start: 0, end: 1, stable });
  const snapshot = () => [...box.querySelectorAll('.caption-row')].map((row) => ({
    segment: Number(row.dataset.segment),
    translated: row.hasAttribute('data-translated'),
    lines: [...row.querySelectorAll('.caption')].map((p) => ({
      lang: p.dataset.lang, state: p.dataset.state, text: p.textContent,
      tail: p.querySelector('.caption-tail').textContent,
      shown: getComputedStyle(p).display !== 'none',
    })),
  }));
  const steps = {};
  const applied = [];
  applied.push(view.apply(ev(1, 0, 'en', true, 'draft', 'Hello wor', 6)));
  const draftElement = box.querySelector('.caption');
  applied.push(view.apply(ev(2, 0, 'en', true, 'final', 'Hello world.')));
  steps.sameElement = box.querySelector('.caption') === draftElement;
  applied.push(view.apply(ev(2, 0, 'en', true, 'final', 'Hello world.')));   // repeat
  applied.push(view.apply(ev(1, 0, 'en', true, 'draft', 'Hello wor', 6)));   // stale draft
  applied.push(view.apply(ev(5, 2, 'en', true, 'draft', 'Third', 0)));
  applied.push(view.apply(ev(4, 1, 'en', true, 'final', 'Second.')));       // arrives late
  applied.push(view.apply(ev(6, 0, 'fr', false, 'final', 'Bonjour.')));    // not chosen
  applied.push(view.apply(ev(7, 0, 'es', false, 'final', 'Hola mundo.')));
  steps.single = snapshot();
  box.dataset.view = 'bilingual';
  steps.bilingual = snapshot();
  view.setTranslation(null);
  steps.untranslated = snapshot();
  steps.applied = applied;
  const draft = getComputedStyle(box.querySelector('.caption[data-state="draft"]')).color;
  const final = getComputedStyle(box.querySelector('.caption[data-state="final"]')).color;
  steps.draftStyledApart = draft !== final;
  box.remove();
  return steps;
}
"""


@pytest.mark.browser
@pytest.mark.model
def test_caption_view_rows_translations_and_repeats(page: Page, live_server: str) -> None:
    page.goto(f"{live_server}/")
    steps = page.evaluate(CAPTION_VIEW_SCRIPT)
    assert steps["applied"] == [True, True, False, False, True, True, False, True]
    assert steps["sameElement"], "the final must replace its draft in place"
    assert steps["draftStyledApart"]
    single = steps["single"]
    assert [row["segment"] for row in single] == [0, 1, 2]
    first = single[0]
    assert first["translated"]
    # The chosen translation replaces the source line; the source stays in the DOM, hidden.
    shown = [(line["lang"], line["shown"]) for line in first["lines"]]
    assert shown == [("en", False), ("es", True)]
    assert first["lines"][1]["text"] == "Hola mundo."
    third = single[2]["lines"][0]
    assert (third["state"], third["text"], third["tail"]) == ("draft", "Third", "Third")
    # Bilingual: the source line above the translation, both shown.
    assert [(line["lang"], line["shown"]) for line in steps["bilingual"][0]["lines"]] == [
        ("en", True),
        ("es", True),
    ]
    # Back to the source language: translations gone, every source line shown.
    untranslated = steps["untranslated"]
    assert [row["translated"] for row in untranslated] == [False, False, False]
    assert [[line["lang"] for line in row["lines"]] for row in untranslated] == [["en"]] * 3


@pytest.mark.browser
@pytest.mark.model
def test_unknown_code_page_helps_find_the_session(
    browser: Browser, live_server: str, artifacts_dir: Path
) -> None:
    log = ConsoleLog()
    created = httpx.post(
        f"{live_server}/api/sessions",
        json={"title": "Found it", "source_language": "en", "target_languages": []},
        timeout=10,
    )
    code = created.json()["code"]
    phone = open_page(browser, log, **PHONE)
    try:
        response = phone.goto(f"{live_server}/s/ZZZZ22")
        assert response is not None and response.status == 404
        expect(phone.locator("h1")).to_have_text("No session with that code")
        expect(phone.get_by_role("link", name=re.compile("Home"))).to_have_attribute("href", "/")
        phone.fill("#join-code", "nope")
        phone.click("#join-form button[type=submit]")
        expect(phone.locator("#join-error")).to_be_visible()
        phone.screenshot(path=str(artifacts_dir / "listener-missing.png"))
        # Typed the way people type codes: lower case, a space in the middle.
        phone.fill("#join-code", f"{code[:3].lower()} {code[3:].lower()}")
        phone.press("#join-code", "Enter")
        phone.wait_for_url(f"{live_server}/s/{code}")
        expect(phone.locator("h1")).to_have_text("Found it")
        phone.wait_for_function("() => window.interpStats.connected")
    finally:
        phone.context.close()
    # The 404 of the page itself is the only thing the browser may report.
    unexpected = [e for e in log.errors if "status of 404" not in e]
    assert unexpected == [], f"console errors: {unexpected}"


@pytest.mark.browser
@pytest.mark.model
def test_listener_retries_a_dropped_socket_and_gives_up_on_a_refusal(
    page: Page, console_log: ConsoleLog, live_server: str
) -> None:
    created = httpx.post(
        f"{live_server}/api/sessions",
        json={"title": "Flaky network", "source_language": "en", "target_languages": []},
        timeout=10,
    )
    code = created.json()["code"]
    urls: list[str] = []

    def drop_or_refuse(ws: WebSocketRoute) -> None:
        urls.append(ws.url)
        server = ws.connect_to_server()
        if len(urls) == 1:
            # The first connection is dropped the way a slow listener is (1013): retry.
            def forward_then_drop(message: str | bytes) -> None:
                ws.send(message)
                ws.close(code=1013, reason="too far behind; reconnect")

            server.on_message(forward_then_drop)
        else:
            # The second one is refused for good (1008): no retry can fix that.
            ws.close(code=1008, reason="no session with that code")

    page.route_web_socket(re.compile(r"/ws/listen/"), drop_or_refuse)
    page.goto(f"{live_server}/s/{code}")
    page.wait_for_function("() => window.interpStats.connection === 'failed'", timeout=20_000)
    listener = stats(page)
    assert len(urls) == 2, urls
    # The retry asked for what came after the last event it had seen.
    assert "since=0" in urls[0]
    assert listener["lastSeq"] > 0 and f"since={listener['lastSeq']}" in urls[1]
    assert listener["lastClose"] == {"code": 1008, "reason": "no session with that code"}
    expect(page.locator("#notice")).to_contain_text("not available")
    expect(page.locator("#state")).to_have_attribute("data-state", "failed")
    expect(page.locator("#state-text")).to_have_text("Disconnected")
    assert console_log.errors == [], f"console errors: {console_log.errors}"
