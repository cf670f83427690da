"""The panel in real Chromium: the moderator adds a speaker from the console and that
speaker's link opens a speaker's console (no moderator panels); a listener types a question
on the listener page, the moderator sees it held in the console's queue, accepts it, and every
listener then sees it as a caption from "Audience". A question the moderator rejects is never
shown. (The real app with a fake recogniser, tests/app/inprocess.py; the spoken question
and two live speakers are tested with real models in tests/app/test_panel.py and measured
by ``python -m bench panel``.)
"""

from __future__ import annotations

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from e2e.conftest import Background, ConsoleLog, open_page

pytestmark = pytest.mark.browser

SPEAKER_LINES = """() => [...document.querySelectorAll('.caption-line')].map((el) => ({
  text: el.textContent.trim(), speaker: el.querySelector('.caption-speaker').textContent,
}))"""


def ask(page: Page, text: str) -> None:
    if page.locator("#ask-panel").get_attribute("open") is None:
        page.locator("#ask-panel summary").click()
    page.fill("#ask-text", text)
    page.locator("#ask-form button[type=submit]").click()
    page.wait_for_function(
        "() => document.getElementById('ask-status').textContent.startsWith('Sent')",
        timeout=10_000,
    )


def held_questions(console: Page) -> list[str]:
    texts: list[str] = console.evaluate(
        "() => [...document.querySelectorAll('#questions-list .question p:first-child')]"
        ".map((el) => el.textContent)"
    )
    return texts


def test_moderator_adds_a_speaker_and_decides_questions_from_the_floor(
    browser: Browser, background: Background
) -> None:
    server = background.server
    created = background.create()
    code = created["code"]
    log = ConsoleLog()
    console = open_page(browser, log)
    listener = open_page(browser, log)
    console.goto(f"{server.url}{created['present_url']}")
    listener.goto(f"{server.url}/s/{code}")
    listener.wait_for_function("() => window.interpStats && window.interpStats.connected")
    console.wait_for_function("() => document.getElementById('console').dataset.role")
    assert console.evaluate("() => document.getElementById('console').dataset.role") == "presenter"

    # A speaker: the console gives their link; opened, it is a speaker's console.
    console.locator("#speakers-panel summary").click()
    console.fill("#speaker-form input[name=name]", "Bo")
    console.locator("#speaker-form button[type=submit]").click()
    link = console.locator("#speaker-link a")
    link.wait_for(state="visible", timeout=10_000)
    speaker_url = link.get_attribute("href")
    assert speaker_url and f"/p/{code}#token=" in speaker_url
    assert speaker_url != f"{server.url}{created['present_url']}"
    speaker = open_page(browser, log)
    speaker.goto(speaker_url)
    speaker.wait_for_function(
        "() => document.getElementById('console').dataset.role === 'speaker'", timeout=10_000
    )
    # What only the presenter's token may do is not offered to a speaker: moderating,
    # editing lines, the displays' preview and links, pushing captions out.
    for panel in ("#questions-panel", "#edit-details", "#displays", "#push"):
        assert not speaker.locator(panel).is_visible(), panel
        assert console.locator(panel).is_visible(), panel
    console.reload()  # the facts the console polls list both speakers, the presenter first
    console.wait_for_function(
        "() => document.querySelectorAll('#speakers-list li').length === 2", timeout=20_000
    )
    names = console.evaluate(
        "() => [...document.querySelectorAll('#speakers-list li')].map((li) => li.textContent)"
    )
    assert names[1].startswith("Bo (")

    # Two questions from the floor: held for the moderator, shown to nobody else.
    ask(listener, "Will the slides be shared after the talk")
    ask(listener, "Buy cheap watches here")
    console.locator("#questions-panel summary").click()
    console.wait_for_function(
        "() => document.querySelectorAll('#questions-list .question').length === 2",
        timeout=20_000,
    )
    assert held_questions(console) == [
        "Will the slides be shared after the talk",
        "Buy cheap watches here",
    ]
    assert listener.evaluate(SPEAKER_LINES) == []

    # Rejected: gone from the queue, never a caption. Accepted: a caption from "Audience".
    console.locator("#questions-list .question", has_text="watches").get_by_role(
        "button", name="Reject"
    ).click()
    console.locator("#questions-list .question", has_text="slides").get_by_role(
        "button", name="Accept"
    ).click()
    listener.wait_for_function(
        "() => document.querySelectorAll('.caption-line').length > 0", timeout=20_000
    )
    listener.wait_for_function(
        "() => document.getElementById('captions').textContent.includes('talk?')",
        timeout=10_000,
    )
    lines = listener.evaluate(SPEAKER_LINES)  # one caption, laid out as subtitle lines
    assert [line["speaker"] for line in lines if line["speaker"]] == ["Audience"], lines
    said = " ".join(line["text"] for line in lines).removeprefix("Audience")
    assert said == "Will the slides be shared after the talk?", lines
    assert "watches" not in listener.evaluate("() => document.body.textContent")
    # The listener may see the caption before the console has the answer to its decision.
    console.wait_for_function(
        "() => document.querySelectorAll('#questions-list .question').length === 0",
        timeout=10_000,
    )
    assert not log.errors, log.errors


def test_a_speaker_of_another_language_streams_in_their_own_language(
    browser: Browser, background: Background
) -> None:
    """A panel's Spanish speaker, in an English session, opens their link and presses
    Start: their console streams in Spanish. It used to ask for the session's language (the
    page knows only that), so a Spanish speaker was recognised as English."""
    server = background.server
    created = background.create(target_languages=["es"])
    code = created["code"]
    added = httpx.post(
        f"{server.url}/api/sessions/{code}/speakers",
        json={"name": "Ana", "language": "es"},
        headers={"Authorization": f"Bearer {created['presenter_token']}"},
        timeout=10,
    )
    assert added.status_code == 201, added.text
    log = ConsoleLog()
    speaker = open_page(browser, log)
    speaker.goto(f"{server.url}{added.json()['present_url']}")
    speaker.wait_for_function(
        "() => document.getElementById('console').dataset.role === 'speaker'", timeout=10_000
    )
    expect(speaker.locator(".lang-badge")).to_have_text("es")
    speaker.click("#start-button")
    speaker.wait_for_function(
        "() => document.querySelector('#captions .caption-source[data-state=final]')",
        timeout=30_000,
    )
    langs = speaker.evaluate(
        "() => [...document.querySelectorAll('#captions .caption-source')].map((el) => el.lang)"
    )
    assert langs and set(langs) == {"es"}, langs
    facts = httpx.get(f"{server.url}/api/sessions/{code}", timeout=10).json()
    assert [s["language"] for s in facts["speakers"] if s["live"]] == ["es"], facts
    speaker.click("#stop-button")
    speaker.context.close()
    assert not log.errors, log.errors
