"""The listener page's pure state (static/js/listen-state.js, listen-audio-state.js),
unit-tested in real Chromium.

The modules have no DOM and no clock: each test imports them into a blank page and checks
what the page says from plain state: the status pill (connection trouble before the session's
state, never after the end), the empty caption box, the listener count, a refusal, which
caption language is chosen from those offered and the ones asked for, the audio panel (button,
hint, status line), the notice of skipped sentences, the saved volume, and when the wait for
the last speech after the end is over. The whole page, with the server, is e2e/test_listen.py
and e2e/test_listen_audio.py. No server or model is needed: static/ is served as is.
"""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page

pytestmark = pytest.mark.browser


@pytest.fixture
def module(page: Page, static_server: str) -> Page:
    """A blank page with listen-state.js as ``window.S`` and listen-audio-state.js as
    ``window.A``."""
    page.goto(f"{static_server}/static/favicon.svg")
    page.evaluate(
        """async () => {
          window.S = await import('/static/js/listen-state.js');
          window.A = await import('/static/js/listen-audio-state.js');
          // The player's stats of a listener who turned audio on, in a running context.
          window.playing = (extra = {}) => ({
            enabled: true, supported: true, context: 'running', muted: false, playing: false,
            rate: 1, ...extra,
          });
        }"""
    )
    return page


def evaluate(page: Page, body: str) -> Any:
    return page.evaluate(f"() => {{ {body} }}")


def test_the_pill_shows_connection_trouble_until_the_session_ends(module: Page) -> None:
    pills = evaluate(
        module,
        """return {
          live: S.statusPill('live', 'open'),
          connecting: S.statusPill('waiting', 'connecting'),
          reconnecting: S.statusPill('live', 'reconnecting'),
          offline: S.statusPill('paused', 'offline'),
          failed: S.statusPill('waiting', 'failed'),
          closedAfterEnd: S.statusPill('ended', 'closed'),
          failedAfterEnd: S.statusPill('ended', 'failed'),
          private: S.statusPill('private', 'connecting'),
        };""",
    )
    assert pills == {
        "live": {"shown": "live", "text": "Live"},
        "connecting": {"shown": "waiting", "text": "Waiting"},
        "reconnecting": {"shown": "reconnecting", "text": "Reconnecting…"},
        "offline": {"shown": "offline", "text": "Offline"},
        "failed": {"shown": "failed", "text": "Disconnected"},
        "closedAfterEnd": {"shown": "ended", "text": "Ended"},
        "failedAfterEnd": {"shown": "ended", "text": "Ended"},
        # A private session before its passcode says what the template says.
        "private": {"shown": "private", "text": "Private"},
    }
    known = evaluate(
        module, "return ['waiting', 'live', 'paused', 'ended', 'private'].map(S.isSessionState);"
    )
    assert known == [True, True, True, True, False]


def test_empty_box_listener_count_and_refusals(module: Page) -> None:
    words = evaluate(
        module,
        """return {
          empty: ['waiting', 'live', 'paused', 'ended', 'private'].map(S.emptyText),
          one: S.followersText(1),
          many: S.followersText(12),
          none: S.followersText(0),
          gone: S.refusalText(1008, 'no such session'),
          refused: S.refusalText(1003, 'bad language'),
          bare: S.refusalText(1003, ''),
        };""",
    )
    assert words["empty"] == [
        "The session has not started yet. Captions appear here as soon as the presenter speaks.",
        "Listening… captions appear as soon as the presenter speaks.",
        "The presenter paused. Captions continue here when they start again.",
        "This session has ended.",
        "",
    ]
    assert words["one"] == "1 person is following"
    assert words["many"] == "12 people are following"
    assert words["none"] == "0 people are following"
    assert words["gone"] == "This session is not available any more."
    assert words["refused"] == "The server refused the connection: bad language"
    assert words["bare"] == "The server refused the connection: 1003"


def test_language_choice_takes_the_first_offered_wish_else_the_original(module: Page) -> None:
    result = evaluate(
        module,
        """
        const offered = [{ code: 'en', name: 'English' }, { code: 'es', name: 'Spanish' },
                         { code: 'fr', name: 'French' }];
        const pick = (wanted) => new S.LanguageChoice(offered, 'en', wanted).lang;
        const choice = new S.LanguageChoice(offered, 'en', [null, 'es']);
        const steps = {
          start: [choice.lang, choice.nameOf(), choice.translated],
          same: choice.choose('es'),
          notOffered: choice.choose('de'),
          afterRefusals: choice.lang,
          original: choice.choose('en'),
          then: [choice.lang, choice.nameOf(), choice.translated, choice.nameOf('fr')],
          unnamed: choice.nameOf('de'),
        };
        // A private session, once unlocked, offers what the server said.
        const locked = new S.LanguageChoice([], 'und', ['fr', 'es']);
        const before = [locked.lang, locked.codes, locked.translated];
        locked.offer([{ code: 'de', name: 'German' }, { code: 'fr', name: 'French' }], 'de',
                     ['es', 'fr']);
        return {
          link: pick(['fr', 'es']),
          linkNotOffered: pick(['it', 'es']),
          nothing: pick([null, null]),
          nothingOffered: pick(['it', '']),
          steps,
          before,
          after: [locked.lang, locked.codes, locked.source, locked.nameOf(), locked.translated],
        };
        """,
    )
    assert result["link"] == "fr"
    assert result["linkNotOffered"] == "es"
    assert result["nothing"] == "en"
    assert result["nothingOffered"] == "en"
    steps = result["steps"]
    assert steps["start"] == ["es", "Spanish", True]
    assert steps["same"] is False
    assert steps["notOffered"] is False
    assert steps["afterRefusals"] == "es"
    assert steps["original"] is True
    assert steps["then"] == ["en", "English", False, "French"]
    assert steps["unnamed"] == "de"
    assert result["before"] == ["und", [], False]
    assert result["after"] == ["fr", ["de", "fr"], "de", "French", True]


def test_audio_status_line(module: Page) -> None:
    lines = evaluate(
        module,
        """
        const say = (audio, extra = {}) => A.audioStatusText({
          audio, state: 'live', spoken: true, language: 'Spanish', ...extra,
        });
        const off = playing({ enabled: false, context: 'none' });
        return {
          endedOff: say(off, { state: 'ended' }),
          endedOn: say(playing({ playing: true }), { state: 'ended' }),
          unsupported: say({ ...off, supported: false }),
          failed: say(playing({ context: 'failed' })),
          originalOff: say(off, { spoken: false }),
          originalOn: say(playing(), { spoken: false }),
          off: say(off),
          starting: say(playing({ context: 'suspended' })),
          muted: say(playing({ muted: true, playing: true })),
          speaking: say(playing({ playing: true, rate: 1.05 })),
          faster: say(playing({ playing: true, rate: 1.2 })),
          waiting: say(playing()),
        };
        """,
    )
    assert lines == {
        "endedOff": "The session has ended.",
        "endedOn": "Speaking Spanish.",
        "unsupported": "This browser cannot play spoken translation.",
        "failed": "Spoken translation could not start on this device.",
        "originalOff": "Choose a translation above to hear it spoken.",
        "originalOn": "The original language is not spoken: choose a translation above to hear it.",
        "off": "",
        "starting": "Starting audio…",
        "muted": "Muted (Spanish).",
        "speaking": "Speaking Spanish.",
        "faster": "Speaking Spanish, a little faster to keep up.",
        "waiting": "Listening in Spanish: waiting for the next sentence.",
    }


def test_audio_panel_button_and_hint(module: Page) -> None:
    views = evaluate(
        module,
        """
        const view = (audio, extra = {}) => A.audioPanelView({
          audio, state: 'live', connection: 'open', spoken: true, language: 'Spanish',
          wanted: false, ...extra,
        });
        const off = playing({ enabled: false, context: 'none' });
        const pick = ({ audio, ended, on, disabled, ariaLabel, label, hint, muted }) =>
          ({ audio, ended, on, disabled, ariaLabel, label, hint, muted });
        return {
          off: pick(view(off)),
          wanted: view(off, { wanted: true }).hint,
          original: view(off, { spoken: false }).disabled,
          unsupported: view({ ...off, supported: false }).disabled,
          on: pick(view(playing({ muted: true }), { wanted: true })),
          playing: view(playing({ playing: true })).audio,
          onInOriginal: view(playing(), { spoken: false }).disabled,
          endedOpen: pick(view(off, { state: 'ended', wanted: true })),
          endedClosed: pick(view(off, { state: 'ended', connection: 'closed', wanted: true })),
          endedOn: pick(view(playing(), { state: 'ended', connection: 'closed' })),
          status: view(playing()).status,
        };
        """,
    )
    assert views["off"] == {
        "audio": "off",
        "ended": False,
        "on": False,
        "disabled": False,
        "ariaLabel": "Listen: turn on spoken translation",
        "label": "Listen",
        "hint": "Turn on spoken translation",
        "muted": False,
    }
    assert views["wanted"] == "Tap to resume spoken translation"
    assert views["original"] is True  # nothing to hear in the original
    assert views["unsupported"] is True
    assert views["on"] == {
        "audio": "on",
        "ended": False,
        "on": True,
        "disabled": False,
        "ariaLabel": "Pause: turn off spoken translation",
        "label": "Pause",
        "hint": "Spoken translation is on",
        "muted": True,
    }
    assert views["playing"] == "playing"
    assert views["onInOriginal"] is False  # on can always be turned off
    # Ended, but the socket still waits for the last speech: not finished yet.
    assert views["endedOpen"]["ended"] is False
    assert views["endedOpen"]["disabled"] is False
    assert views["endedOpen"]["hint"] == "Tap to resume spoken translation"
    assert views["endedClosed"]["ended"] is True
    assert views["endedClosed"]["disabled"] is True
    assert views["endedClosed"]["hint"] == "Spoken translation has finished"
    assert views["endedOn"]["disabled"] is True
    assert views["endedOn"]["hint"] == "Spoken translation is on"
    assert views["status"] == "Listening in Spanish: waiting for the next sentence."


def test_skipped_notice_and_saved_volume(module: Page) -> None:
    result = evaluate(
        module,
        """return {
          one: A.skippedText(1),
          three: A.skippedText(3),
          volumes: [null, '', '40', '0', '100', '150', '-5', '35.9', 'loud'].map(A.savedVolume),
        };""",
    )
    assert result["one"] == "Skipped 1 sentence to catch up with the speaker."
    assert result["three"] == "Skipped 3 sentences to catch up with the speaker."
    assert result["volumes"] == [1, 1, 0.4, 0, 1, 1, 0, 0.35, 1]


def test_the_wait_for_the_last_speech_after_the_end(module: Page) -> None:
    result = evaluate(
        module,
        """
        const over = (extra) => A.tailOver({
          enabled: true, playing: false, now: 10_000, lastAudioAt: 9_000, endedAt: 8_000, ...extra,
        });
        return {
          tail: [A.AUDIO_TAIL_MS, A.AUDIO_TAIL_MAX_MS],
          recent: over({}),
          audioOff: over({ enabled: false }),
          quiet: over({ lastAudioAt: 10_000 - A.AUDIO_TAIL_MS - 1 }),
          justQuiet: over({ lastAudioAt: 10_000 - A.AUDIO_TAIL_MS }),
          quietButPlaying: over({ lastAudioAt: 0, playing: true }),
          tooLong: over({ playing: true, lastAudioAt: 70_000, now: 70_001, endedAt: 10_000 - 1 }),
          notYet: over({ playing: true, lastAudioAt: 70_000, now: 70_000, endedAt: 10_000 }),
        };
        """,
    )
    assert result["tail"] == [4000, 60_000]
    assert result["recent"] is False
    assert result["audioOff"] is True
    assert result["quiet"] is True
    assert result["justQuiet"] is False
    assert result["quietButPlaying"] is False
    assert result["tooLong"] is True
    assert result["notYet"] is False
