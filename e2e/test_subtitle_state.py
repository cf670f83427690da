"""The subtitle layout's pure state (static/js/subtitle-state.js), unit-tested in real Chromium.

The module has no DOM and no clock: each test imports it into a blank page and drives it with
scripted caption events and times, then checks the rules of its header: lines of at most 42
characters broken at phrase boundaries, roll-up where a line that moved up never changes
(except a marked correction), drafts only on the last line, sentence finals that replace the
drafts of every segment they cover, speakers labelled on a change, and each line on screen
at least 1.5 s. No server or model is needed: static/ is served as is.
"""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page

pytestmark = pytest.mark.browser


@pytest.fixture
def module(page: Page, static_server: str) -> Page:
    """A blank page with the module loaded as ``window.S``."""
    page.goto(f"{static_server}/static/favicon.svg")
    page.evaluate("async () => { window.S = await import('/static/js/subtitle-state.js'); }")
    return page


# Helpers defined in the page for every test: `run(events, options)` feeds events (each with
# an optional `at` time in ms) and records every view; `cap(...)` builds a caption event.
HELPERS = """
window.cap = (segment, state, text, extra = {}) => ({
  type: 'caption', lang: 'en', source: true, segment, state, text,
  seq: (window.seqNo = (window.seqNo || 0) + 1), ...extra,
});
window.run = (events, options = {}) => {
  const state = new S.SubtitleState({ lang: 'en', visible: Infinity, ...options });
  const views = [];
  let now = 0;
  for (const event of events) {
    now = event.at ?? now + 100;
    state.apply(event, now);
    views.push(state.view(now));
  }
  return { state, views, last: views[views.length - 1] };
};
"""


def evaluate(page: Page, body: str, arg: Any = None) -> Any:
    page.evaluate(f"() => {{ {HELPERS} }}")
    return page.evaluate(body, arg)


LONG = (
    "Good morning everyone, and thank you for joining us today for the third quarter results. "
    "With me on the call are our chief executive officer and our chief financial officer, who "
    "will walk you through the numbers in a moment."
)


def test_lines_fit_and_break_at_phrase_boundaries(module: Page) -> None:
    lines: list[str] = evaluate(module, "(text) => S.breakLines(text)", LONG)
    assert all(len(line) <= 42 for line in lines), lines
    assert " ".join(lines) == " ".join(LONG.split())
    # Breaks fall after punctuation or before a conjunction/preposition where one is near,
    # and never right after an article.
    assert lines[0] == "Good morning everyone,"
    for line in lines:
        assert line.split()[-1].lower() not in ("the", "a", "an", "our")
    assert sum(1 for line in lines if line[-1] in ",.") >= 2, lines
    assert evaluate(module, "() => S.breakLines('x'.repeat(100), 42)") == [
        "x" * 42,
        "x" * 42,
        "x" * 16,
    ]
    assert evaluate(module, "() => S.breakLines('', 42)") == []


# A Japanese and a Chinese presenter's finals (no spaces between words), and a Korean one's
# (spaces between words, each syllable as wide as a kanji).
JAPANESE = (
    "皆さん、おはようございます。本日の会議へようこそ。今日は会社の過去一年間の業績と"
    "今後の計画についてお話しします。まず最初に、財務部長から「昨年の売上」について説明します。"
)
CHINESE = (
    "大家好，欢迎来到今天的会议。我们今天要讨论的是公司在过去一年里的财务表现以及未来的发展计划。"
)
KOREAN = (
    "여러분 안녕하세요. 오늘 회의에 오신 것을 환영합니다. 먼저 지난해 실적에 대해 말씀드리겠습니다."
)
# Characters a Japanese or Chinese line must not start with (closing marks, small kana) or
# end with (opening marks).
NO_START = set("、。，．・：；？！）」』】〕〉》”’ーぁぃぅぇぉっゃゅょァィゥェォッャュョ…")
NO_END = set("（「『【〔〈《“‘")


def width(text: str) -> int:
    """Columns a line takes: a kanji, kana or hangul syllable takes two, as on screen."""
    return sum(2 if ord(c) > 0x2E7F else 1 for c in text)


@pytest.mark.parametrize("text", [JAPANESE, CHINESE], ids=["ja", "zh"])
def test_text_without_spaces_breaks_between_characters_and_fits_by_width(
    module: Page, text: str
) -> None:
    """A kanji is about twice as wide as a Latin letter, so a line holds about 21 of them
    (42 columns; subtitle guides ask 13-16 a line for Japanese and Chinese, on narrower
    screens). A line breaks between any two characters, never before a closing mark or after
    an opening one, preferably after a full stop or comma, and no space is ever added."""
    lines: list[str] = evaluate(module, "(text) => S.breakLines(text)", text)
    assert len(lines) > 1, lines
    assert all(width(line) <= 42 for line in lines), lines
    assert "".join(lines) == text, lines
    assert not any(" " in line for line in lines), lines
    for line in lines:
        assert line[0] not in NO_START and line[-1] not in NO_END, lines
    # Most lines end at a full stop or a comma.
    assert sum(1 for line in lines if line[-1] in "。，、") >= len(lines) - 2, lines
    # A draft on its own line shows its newest characters, as many as fit, without spaces.
    view = evaluate(
        module,
        "([said, text]) => run([cap(0, 'final', said), cap(1, 'draft', text)]).last",
        ["皆さん、おはようございます。", text],
    )
    draft = view["lines"][-1]["draft"]
    assert draft and text.endswith(draft) and width(draft) <= 42, view


def test_korean_keeps_its_spaces_and_fits_by_width(module: Page) -> None:
    lines: list[str] = evaluate(module, "(text) => S.breakLines(text)", KOREAN)
    assert all(width(line) <= 42 for line in lines), lines
    assert " ".join(lines) == KOREAN, lines


def test_roll_up_keeps_lines_that_moved_up_and_drafts_on_the_last_line(module: Page) -> None:
    result = evaluate(
        module,
        """(text) => {
          const words = text.split(' ');
          const events = [];
          // Each segment: growing drafts (one more word each time), then its final.
          for (let seg = 0, i = 0; i < words.length; seg += 1) {
            const take = words.slice(i, i + 7);
            for (let k = 1; k <= take.length; k += 1) {
              events.push(cap(seg, 'draft', take.slice(0, k).join(' ')));
            }
            events.push(cap(seg, 'final', take.join(' ')));
            i += 7;
          }
          const { views } = run(events, { visible: 3 });
          const frozen = new Map();
          let changed = 0, draftAbove = 0, longest = 0;
          for (const view of views) {
            view.lines.forEach((line, index) => {
              const text = line.text + (line.draft ? ' ' + line.draft : '');
              longest = Math.max(longest, text.trim().length);
              const isLast = index === view.lines.length - 1;
              if (line.draft && !isLast) draftAbove += 1;
              if (isLast) return;
              if (frozen.has(line.id) && frozen.get(line.id) !== line.text) changed += 1;
              frozen.set(line.id, line.text);
            });
          }
          const last = views[views.length - 1];
          return {
            changed, draftAbove, longest,
            lines: last.lines.map((l) => l.text),
            shown: views.map((v) => v.lines.length),
          };
        }""",
        LONG,
    )
    assert result["changed"] == 0
    assert result["draftAbove"] == 0
    assert result["longest"] <= 42
    assert max(result["shown"]) == 3
    assert " ".join(result["lines"]) in " ".join(LONG.split())


def test_a_draft_fits_after_the_last_words_or_takes_its_own_line(module: Page) -> None:
    result = evaluate(
        module,
        """() => {
          const { state } = run([cap(0, 'final', 'Hello there.'), cap(1, 'draft', 'How are')]);
          const inline = state.view(1000).lines;
          // The line is less than half full: the draft's newest words follow its words.
          state.apply(cap(1, 'draft', 'How are you all doing this fine morning'), 1100);
          const newest = state.view(1100).lines;
          state.apply(cap(1, 'final', 'How are you all doing this fine morning?'), 1200);
          const after = state.view(1200).lines;
          // More than half full: a long draft takes a line of its own and closes this one.
          state.apply(cap(2, 'final', 'The quarter ended well.'), 1250);
          state.apply(cap(3, 'draft', 'I hope the weather is kind to all of you'), 1300);
          const own = state.view(1300).lines;
          state.apply(cap(3, 'final', 'I hope the weather is kind.'), 1400);
          const closed = state.view(1400).lines;
          return { inline, newest, after, own, closed };
        }""",
    )
    pairs = {
        key: [(line["text"], line["draft"]) for line in value] for key, value in result.items()
    }
    assert pairs["inline"] == [("Hello there.", "How are")]
    assert pairs["newest"] == [("Hello there.", "… all doing this fine morning")]
    assert pairs["after"] == [
        ("Hello there. How are you all doing", ""),
        ("this fine morning?", ""),
    ]
    assert pairs["own"][-1] == ("", "I hope the weather is kind to all of you")
    assert result["own"][-1]["final"] is False
    # The line above took no more words once the draft needed its own line.
    assert pairs["closed"][-2:] == [
        ("this fine morning? The quarter ended well.", ""),
        ("I hope the weather is kind.", ""),
    ]


def test_a_long_draft_shows_its_newest_words_on_one_line(module: Page) -> None:
    line = evaluate(
        module,
        """(text) => run([cap(0, 'draft', text)]).last.lines""",
        LONG,
    )
    assert len(line) == 1
    assert len(line[0]["draft"]) <= 42 and LONG.endswith(line[0]["draft"])


def test_a_sentence_final_replaces_the_drafts_of_every_segment_it_covers(module: Page) -> None:
    result = evaluate(
        module,
        """() => {
          const es = (segment, state, text, extra = {}) => (
            { ...cap(segment, state, text, extra), lang: 'es', source: false });
          const state = new S.SubtitleState({ lang: 'es', visible: 3 });
          const steps = [];
          for (const event of [
            cap(3, 'draft', 'The colour of'),  // English: not this view's language
            es(3, 'draft', 'El color de', { sources: [3] }),
            es(4, 'draft', 'la col cambia', { sources: [4] }),
            es(5, 'draft', 'según el ácido', { sources: [5] }),
            es(3, 'final', 'El color de la col cambia según lo ácida que sea.',
               { sources: [3, 4, 5] }),
            es(4, 'draft', 'la col', { sources: [4] }),  // late: its segment is covered
            es(6, 'draft', 'Básico', { sources: [6] }),
          ]) {
            steps.push(state.apply(event, 0));
          }
          return { steps, lines: state.view(0).lines };
        }""",
    )
    assert result["steps"] == [None, "draft", "draft", "draft", "final", None, "draft"]
    # The sentence's last line would have been an orphan ("que sea."): the two share it.
    assert [(line["text"], line["draft"]) for line in result["lines"]] == [
        ("El color de la col cambia", ""),
        ("según lo ácida que sea.", "Básico"),
    ]


def test_a_correction_replaces_its_lines_in_place_marked(module: Page) -> None:
    result = evaluate(
        module,
        """() => {
          const { state } = run([
            cap(0, 'final', 'We moved our remote support to team view last year,'),
            cap(1, 'final', 'and the customers noticed.'),
            cap(2, 'final', 'Churn went down.'),
          ]);
          const before = state.view(5000).lines;
          const said = 'We moved our remote support to team view last year,';
          const repeat = state.apply(cap(0, 'final', said), 5000);
          const right = said.replace('team view', 'TeamViewer');
          const fixed = state.apply(cap(0, 'final', right, { rev: 1 }), 5100);
          const stale = state.apply(cap(0, 'final', 'old', { rev: 1 }), 5200);
          const after = state.view(5200).lines;
          return { before, after, repeat, fixed, stale, finals: state.finalTexts() };
        }""",
    )
    assert result["repeat"] is None and result["stale"] is None
    assert result["fixed"] == "correction"
    before = [(line["text"], line["corrected"]) for line in result["before"]]
    after = [(line["text"], line["corrected"]) for line in result["after"]]
    assert not any(corrected for _, corrected in before)
    assert "TeamViewer" in " ".join(text for text, _ in after)
    assert "team view " not in " ".join(text for text, _ in after)
    # Lines not holding the corrected caption are the same lines, unmarked.
    untouched = [line for line in result["after"] if not line["corrected"]]
    assert untouched and all(
        any(old["id"] == line["id"] and old["text"] == line["text"] for old in result["before"])
        for line in untouched
    )
    assert result["finals"][0] == {
        "segment": 0,
        "text": "We moved our remote support to TeamViewer last year,",
        "rev": 1,
    }


def test_a_change_of_speaker_starts_a_labelled_line(module: Page) -> None:
    lines = evaluate(
        module,
        """() => {
          const ada = { id: 's1', name: 'Ada' }, bo = { id: 's2', name: 'Bo' };
          return run([
            cap(0, 'final', 'Welcome to the panel.', { speaker: ada }),
            cap(1, 'final', 'Our first question is about', { speaker: ada }),
            cap(2, 'final', 'Thanks, Ada.', { speaker: bo }),
            cap(3, 'draft', 'So', { speaker: bo }),
            cap(4, 'draft', 'I disagree', { speaker: ada }),
          ]).last.lines;
        }""",
    )
    assert [(line["label"], line["text"], line["speakerIndex"]) for line in lines[:3]] == [
        ("Ada", "Welcome to the panel.", 0),
        (None, "Our first question is about", 0),
        ("Bo", "Thanks, Ada.", 1),
    ]
    # The draft of the other speaker cannot sit after Bo's words: it has its own line.
    assert lines[-1]["draft"].endswith("I disagree") and lines[-1]["label"] == "Ada"
    assert all(len((line["label"] or "") + ": " + line["text"]) <= 44 for line in lines)


def test_each_line_stays_on_screen_at_least_one_and_a_half_seconds(module: Page) -> None:
    result = evaluate(
        module,
        """(text) => {
          const state = new S.SubtitleState({ lang: 'en', visible: 3, minLineMs: 1500 });
          state.apply(cap(0, 'final', text), 0);  // six lines at once
          const views = [];
          for (let t = 0; t <= 8000; t += 100) {
            const view = state.view(t);
            views.push({ t, ids: view.lines.map((l) => l.id), next: view.nextChangeAt });
          }
          return views;
        }""",
        LONG,
    )
    first_seen: dict[int, int] = {}
    left_at: dict[int, int] = {}
    previous: list[int] = []
    for view in result:
        for line_id in view["ids"]:
            first_seen.setdefault(line_id, view["t"])
        for line_id in previous:
            if line_id not in view["ids"]:
                left_at[line_id] = view["t"]
        previous = view["ids"]
    assert len(result[0]["ids"]) == 3 and result[0]["next"] == 1500
    assert result[14]["ids"] == result[0]["ids"]  # at 1.4 s nothing has left yet
    assert len(left_at) >= 3 and len(first_seen) == len(set(first_seen)) >= 6
    assert all(left_at[i] - first_seen[i] >= 1500 for i in left_at), (first_seen, left_at)
    assert all(len(view["ids"]) == 3 for view in result)
    assert result[-1]["next"] is None  # everything shown


def test_a_scrolling_history_shows_every_line_at_once(module: Page) -> None:
    count = evaluate(
        module,
        """(text) => {
          const state = new S.SubtitleState({ lang: 'en', visible: Infinity });
          state.apply(cap(0, 'final', text), 0);
          return state.view(0).lines.length;
        }""",
        LONG,
    )
    assert count == len(evaluate(module, "(text) => S.breakLines(text)", LONG))


def test_a_view_joining_late_shows_the_newest_lines_within_seconds(module: Page) -> None:
    # A screen opened an hour into a session gets every final at once: it must not replay
    # them at 1.5 s a line. At most 10 s of lines (six at 1.5 s) wait; the rest are passed
    # over, and those six are held as live lines are.
    result = evaluate(
        module,
        """(text) => {
          const state = new S.SubtitleState({ lang: 'en', visible: 3, minLineMs: 1500 });
          for (let i = 0; i < 200; i += 1) {
            state.apply(cap(i, 'final', `Line ${i} of the morning session.`), 0);
          }
          state.apply(cap(200, 'final', text), 0);  // the newest final: six lines
          const views = [];
          for (let t = 0; t <= 6000; t += 500) {
            const view = state.view(t);
            views.push({ t, texts: view.lines.map((l) => l.text), next: view.nextChangeAt });
          }
          const text_of = (line) => line.words.map((t) => t.w).join(' ');
          return { views, newest: state.lines.slice(-6).map(text_of) };
        }""",
        LONG,
    )
    views, newest = result["views"], result["newest"]
    assert newest[-1].endswith("in a moment.")
    assert views[0]["texts"] == newest[:3] and views[0]["next"] == 1500
    assert views[2]["texts"] == newest[:3]  # at 1 s nothing has left yet
    assert views[3]["texts"] == newest[3:] and views[3]["next"] is None  # live at 1.5 s
    assert not any(text.startswith("Line ") for view in views for text in view["texts"])


def test_a_live_burst_is_held_within_ten_seconds(module: Page) -> None:
    # A final of six lines shows them in turn (test_each_line_stays_on_screen_...); a final of
    # eighteen would hold the view 22 s behind the speaker: its oldest lines are passed over.
    result = evaluate(
        module,
        """(text) => {
          const state = new S.SubtitleState({ lang: 'en', visible: 3, minLineMs: 1500 });
          state.apply(cap(0, 'final', `${text} ${text} ${text}`), 0);
          const shown = new Set();
          let done = null;
          for (let t = 0; t <= 30000; t += 100) {
            const view = state.view(t);
            view.lines.forEach((l) => shown.add(l.id));
            if (done === null && view.nextChangeAt === null) done = t;
          }
          return { lines: state.lines.length, shown: shown.size, done };
        }""",
        LONG,
    )
    assert result["lines"] >= 15
    assert result["shown"] == 6 and result["done"] == 1500
