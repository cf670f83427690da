"""A question spoken from the listener page ("Ask a question", static/js/ask.js) in real
Chromium against the real server and model: the fake microphone plays the sonnet's octave,
the page records it and sends it whole, and the moderator finds it held, transcribed. The
headset goes while the question is said: the default microphone takes over (the fake device
plays its file from the top to each new capture), and where none can be had, what was said
before is sent.
"""

from __future__ import annotations

import re

import httpx
import pytest
from playwright.sync_api import Page, expect

from e2e.test_present import normalise
from e2e.test_present_microphone import MICROPHONE_HOOK, UNPLUG
from tests.support import create_session

pytestmark = [pytest.mark.browser, pytest.mark.model]

UNPLUG_AFTER_S = 4.0  # into the octave: "dig deep trenches" (6.5-7.3 s) is not said yet
SPEAK_AFTER_UNPLUG_S = 8.5  # the new capture's first 8.5 s: up to "dig deep trenches"
CUT_SHORT_S = 5.5  # the second question: "When forty winters shall besiege", then none
ANSWER_TIMEOUT_MS = 60_000  # a question's transcription on a loaded 2-core machine


def held(server: str, created: dict[str, str]) -> list[dict[str, str]]:
    """The questions held for the moderator."""
    response = httpx.get(
        f"{server}/api/sessions/{created['code']}/questions",
        headers={"Authorization": f"Bearer {created['presenter_token']}"},
        timeout=10,
    )
    response.raise_for_status()
    questions: list[dict[str, str]] = response.json()["questions"]
    return questions


def test_a_spoken_question_goes_on_when_the_headset_goes(page: Page, live_server: str) -> None:
    created = create_session(live_server, title="Questions from the floor")
    page.add_init_script(MICROPHONE_HOOK)
    page.goto(f"{live_server}/s/{created['code']}")
    page.wait_for_function("() => window.interpStats && window.interpStats.connected")
    page.locator("#ask-panel summary").click()
    speak, status = page.locator("#ask-speak"), page.locator("#ask-status")

    # The headset goes; the default microphone takes over, and the question goes on into it.
    speak.click()
    expect(status).to_contain_text("Recording")
    expect(speak).to_have_attribute("aria-pressed", "true")
    page.wait_for_timeout(UNPLUG_AFTER_S * 1000)
    page.evaluate(UNPLUG, False)
    page.wait_for_timeout(SPEAK_AFTER_UNPLUG_S * 1000)
    assert page.evaluate("() => window.__micStreams.length") == 2
    speak.click()  # "Send what I said"
    expect(status).to_have_text(re.compile("^Sent"), timeout=ANSWER_TIMEOUT_MS)
    (first,) = held(live_server, created)
    assert "dig deep trenches" in normalise(first["text"]), first

    # No microphone can be had: what was said before is sent, and the page says why.
    speak.click()
    expect(status).to_contain_text("Recording")
    page.wait_for_timeout(CUT_SHORT_S * 1000)
    page.evaluate(UNPLUG, True)
    expect(speak).to_have_attribute("aria-pressed", "false", timeout=5_000)
    expect(status).to_have_text(
        re.compile("^The microphone was disconnected. Sent"), timeout=ANSWER_TIMEOUT_MS
    )
    questions = held(live_server, created)
    assert len(questions) == 2, questions
    assert "40 winters" in normalise(questions[1]["text"]), questions  # the normaliser's digits
