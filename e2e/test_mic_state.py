"""The microphone's health (static/js/mic-state.js), unit-tested in real Chromium.

The module is pure: each test imports it into a blank page and checks the rules of its header:
when frames are digital silence, when a silent microphone earns its notice and when any sound
clears it, and what the console says while a lost microphone is away and once another took its
place. The console around it, with a microphone that goes, is e2e/test_present.py. No server
or model is needed: static/ is served as is.
"""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page

pytestmark = pytest.mark.browser


@pytest.fixture
def module(page: Page, static_server: str) -> Page:
    """A blank page with mic-state.js as ``window.M``."""
    page.goto(f"{static_server}/static/favicon.svg")
    page.evaluate("async () => { window.M = await import('/static/js/mic-state.js'); }")
    return page


def evaluate(page: Page, body: str, arg: Any = None) -> Any:
    return page.evaluate(f"(arg) => {{ {body} }}", arg)


def test_only_frames_that_round_to_nothing_at_16_bits_are_silence(module: Page) -> None:
    lsb = 1 / 32768
    silent = evaluate(
        module,
        "return arg.map((peak) => M.isDigitalSilence(peak));",
        [0, 0.4 * lsb, 0.6 * lsb, lsb, 0.001, 1],
    )
    # A quiet room's noise (a least significant bit or more) is sound; only zeros are not.
    assert silent == [True, True, False, False, False, False]


def test_a_silent_microphone_is_noticed_after_a_while_and_any_sound_clears_it(
    module: Page,
) -> None:
    seen = evaluate(
        module,
        """
        const wait = M.SILENT_NOTICE_MS;
        let health = M.newMicHealth();
        const out = { fresh: M.micNotice(health, 0) };
        health = M.heardLevel(health, 0, 1000);           // silence begins
        health = M.heardLevel(health, 0, 1000 + wait / 2); // goes on: it began at 1000 still
        out.before = M.micNotice(health, 1000 + wait - 1);
        out.after = M.micNotice(health, 1000 + wait);
        const heard = M.heardLevel(health, 0.01, 1000 + wait + 100);
        out.cleared = M.micNotice(heard, 1000 + 10 * wait);
        out.unchanged = M.heardLevel(heard, 0.2, 5) === heard; // nothing new: the same object
        return out;
        """,
    )
    assert seen["fresh"] is None and seen["before"] is None
    assert seen["after"] == "No sound from the microphone. Is it muted?"
    assert seen["cleared"] is None and seen["unchanged"] is True


def test_a_lost_microphone_says_so_until_another_takes_its_place(module: Page) -> None:
    seen = evaluate(
        module,
        """
        let health = M.heardLevel(M.newMicHealth(), 0, 0);
        health = M.lostMicrophone(health);
        const lost = M.micNotice(health, 10 * M.SILENT_NOTICE_MS);
        const named = M.micNotice(M.replacedMicrophone(health, 'USB Audio'), 0);
        const unnamed = M.micNotice(M.replacedMicrophone(health, ''), 0);
        const mutedToo = M.micNotice(
          M.heardLevel(M.replacedMicrophone(health, 'USB Audio'), 0, 0), M.SILENT_NOTICE_MS);
        return { lost, named, unnamed, mutedToo };
        """,
    )
    # Lost outranks a silence that began before it; once replaced, the new one is named, and a
    # replacement that is itself silent says so first.
    assert seen["lost"].startswith("The microphone was disconnected. Plug it in")
    assert seen["named"] == "The microphone was disconnected; now using “USB Audio”."
    assert seen["unnamed"] == "The microphone was disconnected; now using the default microphone."
    assert seen["mutedToo"] == "No sound from the microphone. Is it muted?"


def test_frames_that_stop_coming_count_as_silence_from_the_last_one(module: Page) -> None:
    seen = evaluate(
        module,
        """
        const wait = M.SILENT_NOTICE_MS;
        const stopped = M.missedFrames(M.newMicHealth(), 1000);
        const again = M.missedFrames(stopped, 1500);  // still none: silent since 1000
        const earlier = M.heardLevel(M.newMicHealth(), 0, 500);  // silent frames before
        return {
          before: M.micNotice(stopped, 1000 + wait - 1),
          after: M.micNotice(stopped, 1000 + wait),
          kept: again === stopped,
          earlierKept: M.missedFrames(earlier, 1000) === earlier,
          heard: M.micNotice(M.heardLevel(again, 0.1, 1000 + wait), 1000 + 2 * wait),
        };
        """,
    )
    assert seen["before"] is None
    assert seen["after"] == "No sound from the microphone. Is it muted?"
    assert seen["kept"] and seen["earlierKept"] and seen["heard"] is None
