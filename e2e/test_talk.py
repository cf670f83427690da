"""Traveller mode (`/talk`) in real Chromium on a phone viewport, against the real server.

Two phones in one conversation, each a Chromium whose fake microphone plays a real recording
(Chromium plays the file from the top each time the page opens the microphone, so every turn
on a phone says the same sentence): the English phone starts the conversation and speaks
English on its own side; the Spanish phone continues the same conversation through the
"continue on another phone" link (`/talk?code=CODE#token=TOKEN`) and speaks Spanish on the
partner's side, holding the button. Each turn must be recognised, translated into the other
language and spoken there (audio received and played on the phone, `window.interpAudio`), on
the phone that spoke it and on the other one. A second test turns on automatic detection and
checks that the server hears English on the English phone and Spanish on the Spanish one, and
puts each turn on the right side. Another keeps the options on the phone (shown alike on the
setup screen and in More) and ends a conversation from More. The face-to-face picture of the
README is the Spanish phone's after its turn:
``INTERP_README_SCREENSHOTS=1 ./scripts/test e2e/test_talk.py`` refreshes it.

Chromium runs without `--autoplay-policy=no-user-gesture-required`: sound starts from the tap
on "Start conversation", as on a phone.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Page, Playwright, expect

from e2e.conftest import CHROMIUM, PHONE, ConsoleLog, open_page, screenshots_dir
from e2e.test_present_microphone import MICROPHONE_HOOK, UNPLUG
from tests.data import ENGLISH, SPANISH, SPANISH_ID, fleurs_clip, reference
from tests.support import create_session, normalise_for_wer

pytestmark = [
    pytest.mark.browser,
    pytest.mark.model,
    pytest.mark.skipif(shutil.which("apertium") is None, reason="Debian apertium not installed"),
    pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="Debian espeak-ng not installed"),
]

# English: a LibriSpeech sentence, 6.6 s. Spanish: a FLEURS test sentence, 9.7 s.
SPEAK_MARGIN_S = 1.2  # talk this much past the end of the recording, then tap "done"
TURN_TIMEOUT_MS = 90_000  # a turn's translation and speech, on a loaded 2-core machine

PHONE_ARGS = [
    "--use-fake-ui-for-media-stream",
    "--use-fake-device-for-media-stream",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def wav_seconds(path: Path) -> float:
    import wave

    with wave.open(str(path)) as handle:
        return handle.getnframes() / handle.getframerate()


def spanish_reference() -> str:
    return str(fleurs_clip(SPANISH_ID)["source_text"])


def word_recall(reference: str, hypothesis: str) -> float:
    """The share of the reference's words that the hypothesis contains (order ignored)."""
    ref = normalise_for_wer(reference).split()
    hyp = set(normalise_for_wer(hypothesis).split())
    return sum(word in hyp for word in ref) / max(1, len(ref))


def launch_phone(playwright: Playwright, recording: Path) -> Browser:
    return playwright.chromium.launch(
        executable_path=str(CHROMIUM),
        headless=True,
        args=[*PHONE_ARGS, f"--use-file-for-fake-audio-capture={recording}%noloop"],
    )


@pytest.fixture(scope="module")
def english_phone(playwright_instance: Playwright) -> Iterator[Browser]:
    browser = launch_phone(playwright_instance, ENGLISH)
    try:
        yield browser
    finally:
        browser.close()


@pytest.fixture(scope="module")
def spanish_phone(playwright_instance: Playwright) -> Iterator[Browser]:
    browser = launch_phone(playwright_instance, SPANISH)
    try:
        yield browser
    finally:
        browser.close()


def talk_stats(page: Page) -> dict[str, Any]:
    stats: dict[str, Any] = page.evaluate("() => window.interpTalk")
    return stats


def audio_stats(page: Page) -> dict[str, Any]:
    stats: dict[str, Any] = page.evaluate("() => window.interpAudio")
    return stats


def start_conversation(page: Page) -> None:
    """Tap Start (or Continue) and wait until both listener sockets are open."""
    page.locator("#begin").click()
    page.wait_for_function(
        "() => window.interpTalk.phase === 'conversation'"
        " && window.interpTalk.sockets.a === 'open' && window.interpTalk.sockets.b === 'open'"
    )
    expect(page.locator("#talk-conversation")).to_be_visible()


def live_turns(page: Page) -> list[dict[str, Any]]:
    return [t for t in talk_stats(page)["turns"] if t["live"]]


def speak(page: Page, button: str, seconds: float, *, hold: bool = False) -> None:
    """One turn: tap (or press and hold) `button`, let the recording play, tap again (release)."""
    before = len(live_turns(page))
    target = page.locator(button)
    if hold:
        target.hover()
        page.mouse.down()
    else:
        target.click()
    page.wait_for_function("() => window.interpTalk.state === 'recording'", timeout=30_000)
    expect(target).to_have_attribute("aria-pressed", "true")
    page.wait_for_timeout(round((seconds + SPEAK_MARGIN_S) * 1000))
    if hold:
        page.mouse.up()
    else:
        target.click()
    page.wait_for_function(
        "n => window.interpTalk.turns.filter(t => t.live).length > n"
        " && window.interpTalk.state === 'idle'",
        arg=before,
    )


UNPLUG_AFTER_S = 2.5  # into the sentence: "the squalid quarter of the brothels" comes later

TURN_DONE = """([live, lang]) => window.interpTalk.turns.some(t => t.live === live
    && t.lang === lang && (t.state === 'done' || t.state === 'remote') && t.final
    && t.translationFinal && t.translation.trim() !== '' && t.audioChunks > 0)"""


def wait_turn(page: Page, *, live: bool, lang: str) -> dict[str, Any]:
    """The newest turn in `lang` (spoken on this page, or not) once it is translated and its
    translation's speech has arrived."""
    try:
        page.wait_for_function(TURN_DONE, arg=[live, lang], timeout=TURN_TIMEOUT_MS)
    except Exception:
        raise AssertionError(f"turn in {lang} not done: {json.dumps(talk_stats(page))}") from None
    turns = [t for t in talk_stats(page)["turns"] if t["live"] == live and t["lang"] == lang]
    return turns[-1]


def wait_played(page: Page, seconds: float = 0.5) -> dict[str, Any]:
    page.wait_for_function(
        "s => window.interpAudio.playedSeconds > s", arg=seconds, timeout=TURN_TIMEOUT_MS
    )
    return audio_stats(page)


def continue_link(page: Page, base_url: str) -> str:
    """What "Copy link to continue on another phone" copies."""
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=base_url)
    page.locator("#talk-menu > summary").click()
    page.locator("#copy-continue").click()
    expect(page.locator("#copy-continue")).to_have_text("Copied")
    link: str = page.evaluate("() => navigator.clipboard.readText()")
    page.locator("#talk-menu > summary").click()
    return link


def assert_fits_the_phone(page: Page) -> None:
    """The conversation fills a 390x844 screen without scrolling; both buttons are in reach."""
    size = page.evaluate(
        "() => ({scroll: document.scrollingElement.scrollHeight, height: innerHeight,"
        " width: document.scrollingElement.scrollWidth, viewport: innerWidth})"
    )
    assert size["scroll"] <= size["height"] and size["width"] <= size["viewport"], size
    for button in ("#talk-a", "#talk-b"):
        box = page.locator(button).bounding_box()
        assert box is not None
        assert box["y"] >= 0 and box["y"] + box["height"] <= size["height"], (button, box)
        assert box["height"] >= 56 and box["width"] >= 300, (button, box)


def test_two_phones_take_turns_in_english_and_spanish(
    english_phone: Browser, spanish_phone: Browser, live_server: str, artifacts_dir: Path
) -> None:
    en_log, es_log = ConsoleLog(), ConsoleLog()
    en = open_page(english_phone, en_log, **PHONE)
    es = open_page(spanish_phone, es_log, **PHONE)
    try:
        # ---- setup: English and Spanish by default; a pair without routes is refused clearly.
        en.goto(f"{live_server}/talk")
        expect(en.locator("#lang-a")).to_have_value("en")
        expect(en.locator("#lang-b")).to_have_value("es")
        expect(en.locator("#pair-status")).to_contain_text("both ways")
        one_way = en.eval_on_selector_all(
            "#lang-b optgroup[label^='One way'] option", "els => els.map(e => e.value)"
        )
        if one_way:
            en.locator("#lang-b").select_option(one_way[0])
            expect(en.locator("#setup-error")).to_be_visible()
            expect(en.locator("#setup-error")).to_contain_text("No translation route")
            expect(en.locator("#begin")).to_be_disabled()
        en.locator("#lang-b").select_option("es")
        expect(en.locator("#setup-error")).to_be_hidden()
        en.screenshot(path=str(artifacts_dir / "talk-setup.png"))
        start_conversation(en)
        code = talk_stats(en)["code"]
        assert re.fullmatch(r"[A-Z2-9]{6}", code), code
        assert en.url.endswith(f"/talk?code={code}"), en.url
        assert_fits_the_phone(en)
        expect(en.get_by_role("button", name=re.compile("Tap to talk"))).to_be_visible()
        expect(en.get_by_role("button", name=re.compile("Toca para hablar"))).to_be_visible()

        # ---- the English speaker's turn, tapped on and off
        speak(en, "#talk-a", wav_seconds(ENGLISH))
        turn = wait_turn(en, live=True, lang="en")
        assert turn["side"] == "a" and turn["translationLang"] == "es", turn
        recall = word_recall(reference(ENGLISH), turn["text"])
        assert recall >= 0.6, (recall, turn["text"])
        assert normalise_for_wer(turn["translation"]) != normalise_for_wer(turn["text"]), turn
        # Large on both halves: the original on the speaker's, the translation on the partner's.
        expect(en.locator("#latest-a .talk-latest-text")).to_have_text(turn["text"])
        expect(en.locator("#latest-b .talk-latest-text")).to_have_text(turn["translation"])
        expect(en.locator("#latest-b .talk-latest-text")).to_have_attribute("lang", "es")
        heard = wait_played(en)
        assert heard["context"] == "running" and heard["receivedChunks"] >= turn["audioChunks"]
        en.screenshot(path=str(artifacts_dir / "talk-english-turn.png"))

        # ---- the Spanish speaker continues the conversation on a second phone, holding the button
        link = continue_link(en, live_server)
        assert link.startswith(f"{live_server}/talk?code={code}#token="), link
        es.goto(link)
        assert "#token" not in es.url, "the token must leave the address bar"
        expect(es.locator("#begin")).to_have_text("Continue the conversation")
        es.locator("#opt-hold").check()
        es.locator("#opt-facing").check()
        start_conversation(es)
        # The English turn is there too, from the server's backfill, translated.
        es.wait_for_function(
            "() => window.interpTalk.turns.some(t => !t.live && t.translationFinal)"
        )
        history = [t for t in talk_stats(es)["turns"] if not t["live"]]
        assert [t["lang"] for t in history] == ["en"], history
        assert history[0]["side"] == "a" and history[0]["translation"], history
        expect(
            es.get_by_role("button", name=re.compile("Mantén pulsado para hablar"))
        ).to_be_visible()
        # Face to face: the partner's half is upside down.
        transform = es.eval_on_selector("#side-b", "el => getComputedStyle(el).transform")
        assert transform.startswith("matrix(-1,"), transform
        speak(es, "#talk-b", wav_seconds(SPANISH), hold=True)
        turn_es = wait_turn(es, live=True, lang="es")
        assert turn_es["side"] == "b" and turn_es["translationLang"] == "en", turn_es
        recall = word_recall(spanish_reference(), turn_es["text"])
        assert recall >= 0.6, (recall, turn_es["text"])
        expect(es.locator("#latest-a .talk-latest-text")).to_have_text(turn_es["translation"])
        expect(es.locator("#latest-b .talk-latest-text")).to_have_text(turn_es["text"])
        wait_played(es)
        es.wait_for_timeout(300)  # let the rotation's transition finish for the screenshot
        es.screenshot(path=str(artifacts_dir / "talk-spanish-turn-face-to-face.png"))
        es.screenshot(path=str(screenshots_dir(artifacts_dir) / "talk-390x844.png"))  # README

        # ---- the first phone shows (and says) the Spanish turn too
        remote = wait_turn(en, live=False, lang="es")
        assert remote["side"] == "b" and remote["translationLang"] == "en", remote
        assert remote["text"] == turn_es["text"], (remote, turn_es)
        expect(en.locator("#latest-a .talk-latest-text")).to_have_text(remote["translation"])
        items = en.locator("#talk-history .talk-turn")
        expect(items).to_have_count(2)
        expect(items.nth(1).locator(".talk-turn-original")).to_have_attribute("lang", "es")

        # ---- the conversation as text, both languages, in order
        with en.expect_download() as download_info:
            en.locator("#talk-export").click()
        download = download_info.value
        assert download.suggested_filename.startswith(f"conversation-{code}-")
        text = Path(download.path()).read_text(encoding="utf-8")
        for part in (turn["text"], turn["translation"], turn_es["text"], remote["translation"]):
            assert part in text, (part, text)
        assert text.index(turn["text"]) < text.index(turn_es["text"])
        (artifacts_dir / "talk-conversation.txt").write_text(text, encoding="utf-8")
        report = {
            "english": turn,
            "spanish": turn_es,
            "english_phone_audio": audio_stats(en),
            "spanish_phone_audio": audio_stats(es),
        }
        (artifacts_dir / "talk-report.json").write_text(json.dumps(report, indent=2) + "\n")
        assert talk_stats(en)["errors"] == [] and talk_stats(es)["errors"] == []
    finally:
        en_log.write(artifacts_dir / "talk-english-console.txt")
        es_log.write(artifacts_dir / "talk-spanish-console.txt")
        en.context.close()
        es.context.close()
    assert en_log.errors == [], en_log.errors
    assert es_log.errors == [], es_log.errors


def test_automatic_detection_puts_each_turn_on_its_speakers_side(
    english_phone: Browser, spanish_phone: Browser, live_server: str, artifacts_dir: Path
) -> None:
    en_log, es_log = ConsoleLog(), ConsoleLog()
    en = open_page(english_phone, en_log, **PHONE)
    es = open_page(spanish_phone, es_log, **PHONE)
    try:
        en.goto(f"{live_server}/talk")
        en.locator("#opt-auto").check()
        start_conversation(en)
        # One button for both languages.
        expect(en.locator("#talk-auto")).to_be_visible()
        expect(en.locator("#talk-a")).to_be_hidden()
        expect(en.locator("#talk-b")).to_be_hidden()
        speak(en, "#talk-auto", wav_seconds(ENGLISH))
        turn = wait_turn(en, live=True, lang="en")
        assert turn["auto"] and turn["side"] == "a" and turn["translationLang"] == "es", turn
        assert word_recall(reference(ENGLISH), turn["text"]) >= 0.6, turn

        es.goto(continue_link(en, live_server))
        es.locator("#opt-auto").check()
        start_conversation(es)
        speak(es, "#talk-auto", wav_seconds(SPANISH))
        turn_es = wait_turn(es, live=True, lang="es")
        assert turn_es["auto"] and turn_es["side"] == "b", turn_es
        assert turn_es["translationLang"] == "en", turn_es
        assert word_recall(spanish_reference(), turn_es["text"]) >= 0.6, turn_es
        expect(es.locator("#latest-b .talk-latest-text")).to_have_text(turn_es["text"])
        expect(es.locator("#latest-a .talk-latest-text")).to_have_text(turn_es["translation"])
        es.screenshot(path=str(artifacts_dir / "talk-auto.png"))
        assert talk_stats(en)["errors"] == [] and talk_stats(es)["errors"] == []
    finally:
        en_log.write(artifacts_dir / "talk-auto-english-console.txt")
        es_log.write(artifacts_dir / "talk-auto-spanish-console.txt")
        en.context.close()
        es.context.close()
    assert en_log.errors == [], en_log.errors
    assert es_log.errors == [], es_log.errors


def test_a_headset_lost_mid_turn_gives_way_to_the_phones_microphone(
    english_phone: Browser, live_server: str, artifacts_dir: Path
) -> None:
    """The headset goes during a turn: the phone's own microphone takes over and the turn goes
    on (the fake device plays its file from the top to each new capture, so the whole sentence
    is said after the loss). In a second turn no microphone can be had: the turn ends by itself
    with what was said, and the page says why."""
    log = ConsoleLog()
    page = open_page(english_phone, log, **PHONE)
    try:
        page.add_init_script(MICROPHONE_HOOK)
        page.goto(f"{live_server}/talk")
        start_conversation(page)
        page.locator("#talk-a").click()
        page.wait_for_function("() => window.interpTalk.state === 'recording'", timeout=30_000)
        page.wait_for_timeout(UNPLUG_AFTER_S * 1000)
        page.evaluate(UNPLUG, False)
        page.wait_for_timeout(round((wav_seconds(ENGLISH) + SPEAK_MARGIN_S) * 1000))
        page.locator("#talk-a").click()
        turn = wait_turn(page, live=True, lang="en")
        assert page.evaluate("() => window.__micStreams.length") == 2
        assert "squalid quarter of the brothels" in normalise_for_wer(turn["text"]), turn
        assert talk_stats(page)["errors"] == []

        page.locator("#talk-a").click()
        page.wait_for_function("() => window.interpTalk.state === 'recording'", timeout=30_000)
        page.wait_for_timeout(UNPLUG_AFTER_S * 1000)
        page.evaluate(UNPLUG, True)
        page.wait_for_function("() => window.interpTalk.state === 'idle'", timeout=5_000)
        expect(page.locator("#talk-a")).to_have_attribute("aria-pressed", "false")
        errors = talk_stats(page)["errors"]
        assert any(e.startswith("The microphone was disconnected.") for e in errors), errors
        page.wait_for_function(
            "() => window.interpTalk.turns.filter(t => t.live).length === 2"
            " && window.interpTalk.turns.at(-1).state === 'done'",
            timeout=TURN_TIMEOUT_MS,
        )
        cut_short = talk_stats(page)["turns"][-1]
        # What was said before the loss (the sentence's first words) is kept.
        assert "nightfall" in normalise_for_wer(cut_short["text"]), cut_short
        page.screenshot(path=str(artifacts_dir / "talk-headset-lost.png"))
    finally:
        log.write(artifacts_dir / "talk-headset-console.txt")
        page.context.close()
    assert log.errors == [], log.errors


def test_a_link_to_a_missing_or_ended_conversation_says_so(
    english_phone: Browser, live_server: str, artifacts_dir: Path
) -> None:
    log = ConsoleLog()
    page = open_page(english_phone, log, **PHONE)
    try:
        page.goto(f"{live_server}/talk?code=ZZZZZZ")
        expect(page.locator("#setup-error")).to_contain_text("no conversation with the code ZZZZZZ")
        expect(page.locator("#begin")).to_have_text("Start conversation")
        assert page.url == f"{live_server}/talk"

        session = create_session(live_server, source_language="en", target_languages=["es"])
        code = session["code"]
        # Without the token: the conversation can be followed, not spoken in.
        page.goto(f"{live_server}/talk?code={code}")
        expect(page.locator("#begin")).to_have_text("Follow the conversation")
        start_conversation(page)
        expect(page.locator("#talk-a")).to_be_disabled()
        expect(page.locator("#talk-error")).to_contain_text("following this conversation")

        ended = httpx.post(
            f"{live_server}/api/sessions/{code}/end",
            headers={"Authorization": f"Bearer {session['presenter_token']}"},
            timeout=10,
        )
        assert ended.status_code == 200, ended.text
        expect(page.locator("#talk-error")).to_contain_text("has ended")
        page.goto(f"{live_server}/talk?code={code}#token={session['presenter_token']}")
        expect(page.locator("#setup-error")).to_contain_text(f"The conversation {code} has ended")
    finally:
        log.write(artifacts_dir / "talk-missing-console.txt")
        page.context.close()
    # Chromium logs the 404 of the session lookup itself; nothing else may fail.
    assert [e for e in log.errors if "404" not in e] == [], log.errors


def test_the_options_stay_on_the_phone_and_a_new_conversation_ends_this_one(
    english_phone: Browser, live_server: str, artifacts_dir: Path
) -> None:
    log = ConsoleLog()
    page = open_page(english_phone, log, **PHONE)
    try:
        # ---- the options: each kept on this device, and shown alike on setup and in More
        page.goto(f"{live_server}/talk")
        expect(page.locator("#opt-speak")).to_be_checked()  # spoken aloud unless turned off
        expect(page.locator("#opt-hold")).not_to_be_checked()
        page.locator("#opt-hold").check()
        page.reload()
        expect(page.locator("#opt-hold")).to_be_checked()
        assert talk_stats(page)["hold"] is True
        start_conversation(page)
        code = talk_stats(page)["code"]
        expect(page.get_by_role("button", name=re.compile("Hold to talk"))).to_be_visible()
        page.locator("#talk-menu > summary").click()
        expect(page.locator("#menu-hold")).to_be_checked()
        expect(page.locator("#menu-speak")).to_be_checked()
        page.locator("#menu-speak").uncheck()
        expect(page.locator("#opt-speak")).not_to_be_checked()
        assert talk_stats(page)["speak"] is False
        assert page.evaluate("() => localStorage.getItem('interp.talk.speak')") == "0"
        page.locator("#talk-menu > summary").click()
        page.locator("#talk-facing").click()
        expect(page.locator("#talk-facing")).to_have_attribute("aria-pressed", "true")
        expect(page.locator("#talk")).to_have_attribute("data-facing", "1")

        # ---- More -> "End and start a new conversation" ends it for everyone
        page.once("dialog", lambda dialog: dialog.accept())
        page.locator("#talk-menu > summary").click()
        page.locator("#new-conversation").click()
        page.wait_for_url(f"{live_server}/talk")
        expect(page.locator("#begin")).to_have_text("Start conversation")
        facts = httpx.get(f"{live_server}/api/sessions/{code}", timeout=10).json()
        assert facts["state"] == "ended", facts
        assert talk_stats(page)["speak"] is False and talk_stats(page)["facing"] is True
        assert talk_stats(page)["errors"] == []
    finally:
        log.write(artifacts_dir / "talk-options-console.txt")
        page.context.close()
    assert log.errors == [], log.errors
