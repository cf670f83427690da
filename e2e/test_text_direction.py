"""Captions in a language written right to left (a presenter speaking Arabic, Hebrew, Persian
or Urdu; or captions a user's translation model writes in one) run right to left in real
Chromium: each line is ``dir="rtl"`` and starts at the right edge, so its words, its
punctuation and its alignment read as they should; the page around them, and captions in
any other language, stay left to right. The listener page and the venue screen are tried
with a session spoken in Arabic (scripted captions, the real app), and the editor's page
where a person fixes them; the console's caption view, the traveller's conversation and the
moderator's questions as modules (no server or
model needed: static/ is served as is).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from e2e.conftest import Background, ConsoleLog, open_page
from engine.events import Caption

pytestmark = pytest.mark.browser

# "Welcome, everyone, to the conference." and "We begin now with the first speaker?"
WELCOME = "مرحبا بكم جميعا في المؤتمر."
BEGIN = "نبدأ الآن مع المتحدث الأول؟"

# Each caption line: its direction as drawn, and where its text sits in its box (a line
# starts at its box's right edge when it runs right to left).
LINES = """() => [...document.querySelectorAll('.caption-line')].map((line) => {
  const text = line.querySelector('.caption-text');
  const range = document.createRange();
  range.selectNodeContents(line);
  const drawn = range.getBoundingClientRect();
  const box = line.getBoundingClientRect();
  return {
    text: line.textContent.trim(),
    direction: getComputedStyle(text).direction,
    fromRight: Math.round(box.right - drawn.right),
    fromLeft: Math.round(drawn.left - box.left),
  };
})"""


def ar(segment: int, state: str, text: str) -> Caption:
    return Caption(segment, "ar", True, state, text, 2 * segment, 2 * segment + 1.5)  # type: ignore[arg-type]


def test_arabic_captions_run_right_to_left_on_the_phone_and_the_venue_screen(
    browser: Browser, background: Background, artifacts_dir: Path
) -> None:
    created = background.create(title="Conference", source_language="ar", target_languages=[])
    code = created["code"]
    session = background.session(code)
    log = ConsoleLog()
    phone = open_page(browser, log, viewport={"width": 390, "height": 844}, is_mobile=True)
    screen = open_page(browser, log, viewport={"width": 1920, "height": 1080})
    editor = open_page(browser, log, viewport={"width": 1280, "height": 800})
    auth = {"Authorization": f"Bearer {created['presenter_token']}"}
    link = httpx.post(f"{background.server.url}/api/sessions/{code}/editors", headers=auth)
    phone.goto(f"{background.server.url}/s/{code}")
    screen.goto(f"{background.server.url}/s/{code}/screen")
    editor.goto(f"{background.server.url}{link.json()['edit_url']}")
    for page in (phone, screen):
        page.wait_for_function("() => window.interpStats && window.interpStats.connected")
    background.say(session, [ar(0, "final", WELCOME), ar(1, "draft", "نبدأ الآن")])
    background.say(session, [ar(1, "final", BEGIN)])
    for name, page in (("phone", phone), ("screen", screen)):
        page.wait_for_function(
            "(said) => document.body.textContent.includes(said)", arg=BEGIN, timeout=20_000
        )
        lines: list[dict[str, Any]] = page.evaluate(LINES)
        assert lines, name
        for line in lines:
            assert line["direction"] == "rtl", (name, line)
            # Short lines end well before the left edge; each starts at the right one.
            assert line["fromRight"] <= 2 < line["fromLeft"], (name, line)
        # The question mark closes the sentence at its left end, as Arabic reads.
        said = " ".join(line["text"] for line in lines)
        assert WELCOME in said and BEGIN in said, (name, said)
        # The page around the captions stays left to right.
        assert page.evaluate("() => getComputedStyle(document.body).direction") == "ltr"
        page.screenshot(path=str(artifacts_dir / f"right-to-left-{name}.png"))
    # The person in the loop fixes the line where it reads right to left, and types so.
    expect(editor.locator(".edit-text").last).to_have_text(BEGIN)
    editor.locator(".edit-line").last.click()
    field = editor.locator(".edit-input")
    assert field.evaluate("(input) => getComputedStyle(input).direction") == "rtl"
    for page in (phone, screen, editor):
        page.context.close()
    assert log.errors == [], log.errors


MODULES = """async ([welcome, hello]) => {
  const { CaptionView } = await import('/static/js/captions.js');
  const { TalkView } = await import('/static/js/talk-view.js');
  const { QuestionQueue } = await import('/static/js/console-panel.js');
  const box = document.createElement('div');
  document.body.append(box);
  const view = new CaptionView(box, { translation: 'en' });
  const caption = (segment, lang, source, text) => ({
    type: 'caption', seq: segment + 1, segment, lang, source, state: 'final', text,
    start: segment, end: segment + 1,
  });
  view.apply(caption(0, 'ar', true, welcome));
  view.apply(caption(0, 'en', false, hello));
  await new Promise((done) => requestAnimationFrame(done));
  // A traveller's turn spoken in Arabic, translated into English; a listener's question.
  const talk = new TalkView({ ui: {}, languages: { nameOf: (code) => code } });
  const turn = talk.renderHistoryItem({
    id: 1, side: 'b', state: 'done', lang: 'ar', text: welcome, final: true,
    translationLang: 'en', translation: hello, translationFinal: true, startedAt: 0,
  });
  const questions = new QuestionQueue({ code: 'X', token: 't', languageNames: {}, onError() {} });
  const question = questions.item({ id: 1, lang: 'ar', text: welcome, translation: hello });
  document.body.append(turn, question);
  const described = (p) => ({ lang: p.lang, direction: getComputedStyle(p).direction });
  return {
    console: [...box.querySelectorAll('.caption')].map(described),
    turn: [...turn.querySelectorAll('.talk-turn-original, .talk-turn-translation')].map(described),
    question: [...question.querySelectorAll('p')].map(described),
  };
}"""


def test_the_console_the_traveller_and_the_moderator_show_each_language_its_way(
    page: Page, static_server: str
) -> None:
    page.goto(f"{static_server}/static/")  # an HTML page (the folder's listing) on that origin
    drawn = page.evaluate(MODULES, [WELCOME, "Welcome, everyone, to the conference."])
    arabic_then_english = [
        {"lang": "ar", "direction": "rtl"},
        {"lang": "en", "direction": "ltr"},
    ]
    assert drawn["console"] == arabic_then_english
    assert drawn["turn"] == arabic_then_english
    # The question's translation is into the session's language, known by its words.
    assert [p["direction"] for p in drawn["question"]] == ["rtl", "ltr"]
