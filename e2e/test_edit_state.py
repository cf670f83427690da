"""The editor's pure state (static/js/edit-state.js), unit-tested in real Chromium: which
final a line shows, where lines stand, how the selection moves, and what a fix offers as
terms. The editor page with a server and a person is e2e/test_editing.py. No server or
model is needed: static/ is served as is."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page

pytestmark = pytest.mark.browser


@pytest.fixture
def module(page: Page, static_server: str) -> Page:
    """A blank page with edit-state.js as ``window.E``."""
    page.goto(f"{static_server}/static/favicon.svg")
    page.evaluate("async () => { window.E = await import('/static/js/edit-state.js'); }")
    return page


def evaluate(page: Page, body: str, arg: Any = None) -> Any:
    return page.evaluate(f"(arg) => {{ {body} }}", arg)


def final(segment: int, seq: int, text: str, rev: int = 0) -> dict[str, Any]:
    return {
        "type": "caption",
        "source": True,
        "state": "final",
        "lang": "en",
        "segment": segment,
        "seq": seq,
        "text": text,
        "rev": rev,
    }


def test_lines_stand_where_their_first_final_came_whatever_their_numbers(module: Page) -> None:
    # Two speakers of a panel streaming into two processes: numbers from two blocks.
    events = [
        final(0, 3, "The presenter begins."),
        final(1048576, 5, "Ana answers."),
        final(1, 8, "The presenter goes on."),
        {**final(0, 12, "The presenter begins, corrected."), "rev": 1},
        {**final(1048576, 2, "An older Ana line?"), "type": "state"},  # not a caption: ignored
    ]
    state = evaluate(
        module,
        """
        const s = new E.EditState();
        const changed = arg.map((event) => s.apply(event));
        const moves = [s.selected, s.move(1), s.move(1), s.move(1), s.move(-5)];
        return {changed, order: s.order(), moves, text: s.lines.get(0).text};
        """,
        events,
    )
    assert state["changed"] == [0, 1048576, 1, 0, None]
    assert state["order"] == [0, 1048576, 1]  # the correction keeps its line's place
    assert state["moves"] == [0, 1048576, 1, 1, 0]
    assert state["text"] == "The presenter begins, corrected."


def test_an_older_revision_never_replaces_a_newer_one(module: Page) -> None:
    texts = evaluate(
        module,
        """
        const s = new E.EditState();
        s.apply(arg[0]); s.apply(arg[1]);
        const after = s.apply(arg[2]);  // rev 1 again, but older: ignored
        return [after, s.lines.get(4).text];
        """,
        [final(4, 1, "first"), final(4, 9, "fixed", rev=1), final(4, 5, "stale", rev=1)],
    )
    assert texts == [None, "fixed"]


def test_a_fix_offers_the_words_it_brought_that_are_not_terms_yet(module: Page) -> None:
    fix = evaluate(
        module,
        """
        const s = new E.EditState();
        s.apply(arg);
        s.terms = ['Zoom'];
        s.begin(0);
        const same = s.finish('We met on zoom.');
        s.begin(0);
        return [same, s.finish('We met on  Zoom with   Quilter.')];
        """,
        final(0, 1, "We met on zoom."),
    )
    assert fix[0] is None  # nothing changed: nothing to send
    assert fix[1]["text"] == "We met on Zoom with Quilter."
    # Words longer than three letters or with a capital; "Zoom" is a term already.
    assert fix[1]["offers"] == ["with", "Quilter"]
