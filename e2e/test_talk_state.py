"""Traveller mode's pure state (static/js/talk-state.js, talk-audio-state.js,
talk-page-state.js, talk-languages.js), unit-tested in real Chromium.

The modules have no DOM and no clock: each test imports them into a blank page, drives a
conversation with scripted caption events, and checks the rules of talk-state.js's header:
which turn owns each segment, repeats and replays, sentence finals that cover several
segments, automatic detection; the spoken translation held while someone talks
(talk-audio-state.js); the page's counters, options kept on this device, words for a failure,
continue link and export (talk-page-state.js); and what the setup screen says of a pair. The
whole page, with the server and a microphone, is e2e/test_talk.py. No server or model is
needed: static/ is served as is.
"""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page

pytestmark = pytest.mark.browser


@pytest.fixture
def module(page: Page, static_server: str) -> Page:
    """A blank page with talk-state.js as ``window.T``, talk-audio-state.js as ``window.A``,
    talk-page-state.js as ``window.P`` and talk-languages.js as ``window.L``."""
    page.goto(f"{static_server}/static/favicon.svg")
    page.evaluate(
        """async () => {
          window.T = await import('/static/js/talk-state.js');
          window.A = await import('/static/js/talk-audio-state.js');
          window.P = await import('/static/js/talk-page-state.js');
          window.L = await import('/static/js/talk-languages.js');
          window.seqNo = 0;
          window.cap = (segment, lang, source, state, text, extra = {}) => ({
            type: 'caption', segment, lang, source, state, text,
            seq: (window.seqNo += 1), ...extra,
          });
          // A turn spoken on this page, started at time 0.
          window.liveTurn = (c, side, lang, state, extra = {}) => c.newTurn({
            side, lang, live: true, state, startedAt: 0, ...extra,
          });
        }"""
    )
    return page


def evaluate(page: Page, body: str) -> Any:
    return page.evaluate(f"() => {{ {body} }}")


def summary(turn_fields: str = "id, side, lang, live, state, segments, text, translation") -> str:
    """JavaScript that lists the conversation `c`'s turns with the named fields."""
    fields = ", ".join(f.strip() for f in turn_fields.split(","))
    return f"c.turns.map(({{ {fields} }}) => ({{ {fields} }}))"


def test_a_live_turn_owns_the_segments_after_those_seen_when_it_opened(module: Page) -> None:
    turns = evaluate(
        module,
        f"""
        const c = new T.Conversation({{ a: 'en', b: 'es' }});
        const t = {{ now: 0, wall: 0 }};
        // History backfilled on load: segments 0 and 1 in English, from another phone.
        c.caption(cap(0, 'en', true, 'final', 'Hello.'), t);
        c.caption(cap(1, 'en', true, 'final', 'Where is the station?'), t);
        const turn = liveTurn(c, 'b', 'es', 'connecting');
        c.open(turn);
        turn.state = 'recording';
        // The presenter socket replays segment 1: it belongs to no turn there.
        const again = cap(1, 'en', true, 'final', 'Where is the station?');
        const replayed = c.caption(again, {{ fromTurn: turn, ...t }});
        c.caption(cap(2, 'es', true, 'draft', 'Está'), {{ fromTurn: turn, ...t }});
        // The listener socket brings segment 3 first: the open turn claims it too.
        c.caption(cap(3, 'es', true, 'draft', 'a la derecha'), t);
        return {{ replayed, turns: {summary()} }};
        """,
    )
    assert turns["replayed"] is None
    remote, live = turns["turns"]
    assert remote == {
        "id": 1,
        "side": "a",
        "lang": "en",
        "live": False,
        "state": "remote",
        "segments": [0, 1],
        "text": "Hello. Where is the station?",
        "translation": "",
    }
    assert live["live"] and live["segments"] == [2, 3]
    assert live["text"] == "Está a la derecha"


def test_remote_segments_join_one_turn_only_while_consecutive_and_in_one_language(
    module: Page,
) -> None:
    turns = evaluate(
        module,
        f"""
        const c = new T.Conversation({{ a: 'en', b: 'es' }});
        const t = {{ now: 0, wall: 0 }};
        c.caption(cap(0, 'en', true, 'final', 'One.'), t);
        c.caption(cap(1, 'en', true, 'final', 'Two.'), t);
        c.caption(cap(2, 'es', true, 'final', 'Tres.'), t);
        c.caption(cap(4, 'es', true, 'final', 'Cinco.'), t);
        // A translation seen before its source: its turn is in the other language.
        c.caption(cap(5, 'en', false, 'final', 'Six.'), t);
        return {summary("side, lang, segments")};
        """,
    )
    assert turns == [
        {"side": "a", "lang": "en", "segments": [0, 1]},
        {"side": "b", "lang": "es", "segments": [2]},
        {"side": "b", "lang": "es", "segments": [4, 5]},
    ]


def test_repeats_old_sequence_numbers_and_own_language_translations_change_nothing(
    module: Page,
) -> None:
    result = evaluate(
        module,
        """
        const c = new T.Conversation({ a: 'en', b: 'es' });
        const t = { now: 0, wall: 0 };
        const changes = [];
        const first = cap(0, 'en', true, 'draft', 'Good mourning');
        changes.push(c.caption(first, t) !== null);
        changes.push(c.caption(cap(0, 'en', true, 'draft', 'Good morning'), t) !== null); // newer
        changes.push(c.caption({ ...first, text: 'Good' }, t) !== null); // its seq is not above
        changes.push(c.caption(cap(0, 'en', true, 'final', 'Good morning.'), t) !== null);
        changes.push(c.caption(cap(0, 'en', true, 'draft', 'Good morning, all'), t) !== null);
        changes.push(c.caption(cap(0, 'en', false, 'final', 'Good morning.'), t) !== null);
        const unnumbered = { ...cap(9, 'en', true, 'final', 'x'), segment: 'nine' };
        changes.push(c.caption(unnumbered, t) !== null);
        return { changes, text: c.turns[0].text, final: c.turns[0].final, count: c.turns.length };
        """,
    )
    assert result["changes"] == [True, True, False, True, False, False, False]
    assert result["text"] == "Good morning."
    assert result["final"] is True
    assert result["count"] == 1


def test_a_sentence_final_replaces_the_drafts_of_every_segment_it_covers(module: Page) -> None:
    result = evaluate(
        module,
        """
        const c = new T.Conversation({ a: 'en', b: 'es' });
        const turn = liveTurn(c, 'a', 'en', 'recording');
        c.open(turn);
        const at = (now) => ({ fromTurn: turn, now, wall: 0 });
        const seen = [];
        const look = (change) => seen.push({
          translation: turn.translation, final: turn.translationFinal,
          translated: change ? change.translated : null,
        });
        c.caption(cap(0, 'en', true, 'final', 'The colour changes'), at(1));
        c.caption(cap(1, 'en', true, 'final', 'with the acidity.'), at(2));
        look(c.caption(cap(0, 'es', false, 'draft', 'El color cambia'), at(3)));
        look(c.caption(cap(1, 'es', false, 'draft', 'con la acidez.'), at(4)));
        const sentence = 'El color cambia con la acidez.';
        look(c.caption(cap(0, 'es', false, 'final', sentence, { sources: [0, 1] }), at(5)));
        // A late draft of a covered segment changes nothing.
        look(c.caption(cap(1, 'es', false, 'draft', 'acidez'), at(6)));
        return { seen, timing: turn.timing };
        """,
    )
    assert result["seen"] == [
        {"translation": "El color cambia", "final": False, "translated": False},
        {"translation": "El color cambia con la acidez.", "final": False, "translated": False},
        {"translation": "El color cambia con la acidez.", "final": True, "translated": True},
        {"translation": "El color cambia con la acidez.", "final": True, "translated": None},
    ]
    assert result["timing"]["translationShownAt"] == 3
    assert result["timing"]["translationFinalAt"] == 5


def test_an_automatic_turn_takes_the_language_it_was_heard_in(module: Page) -> None:
    turn = evaluate(
        module,
        """
        const c = new T.Conversation({ a: 'en', b: 'es' });
        const turn = liveTurn(c, null, null, 'recording', { auto: true });
        c.open(turn);
        c.caption(cap(0, 'es', true, 'draft', 'Hola'), { fromTurn: turn, now: 0, wall: 0 });
        c.caption(cap(0, 'en', false, 'draft', 'Hello'), { fromTurn: turn, now: 0, wall: 0 });
        return turn;
        """,
    )
    assert (turn["lang"], turn["side"], turn["translationLang"]) == ("es", "b", "en")
    assert (turn["text"], turn["translation"]) == ("Hola", "Hello")


def test_turns_without_words_are_cancelled_and_not_listed(module: Page) -> None:
    result = evaluate(
        module,
        """
        const c = new T.Conversation({ a: 'en', b: 'es' });
        const t = { now: 0, wall: 0 };
        const first = liveTurn(c, 'a', 'en', 'done');
        c.open(first);
        c.caption(cap(0, 'en', true, 'final', 'Yes.'), { fromTurn: first, ...t });
        const tap = liveTurn(c, 'b', 'es', 'connecting');
        const openLatest = c.latest().id;
        c.cancel(tap);
        const kept = liveTurn(c, 'b', 'es', 'recording');
        c.open(kept);
        c.caption(cap(1, 'es', true, 'draft', 'Sí'), { fromTurn: kept, ...t });
        kept.state = 'finishing';
        c.cancel(kept);
        const failed = liveTurn(c, 'a', 'en', 'failed');
        return {
          ids: c.turns.map((turn) => turn.id), shown: c.shown().map((turn) => turn.id),
          openLatest, latest: c.latest().id, keptState: kept.state, failed: failed.id,
        };
        """,
    )
    assert result["openLatest"] == 2  # the turn being spoken shows, before it has words
    assert result["ids"] == [1, 3, 4]  # the tap with no words is gone
    assert result["keptState"] == "done"
    assert result["shown"] == [1, 3, 4]  # words, or failed
    assert result["latest"] == 3  # the failed turn has no words


def test_the_transcript_lists_each_turn_and_its_translation(module: Page) -> None:
    text = evaluate(
        module,
        """
        const c = new T.Conversation({ a: 'en', b: 'es' });
        const t = { now: 0, wall: 60000 };
        c.caption(cap(0, 'en', true, 'final', 'Good morning.'), t);
        c.caption(cap(0, 'es', false, 'final', 'Buenos días.'), t);
        c.caption(cap(1, 'es', true, 'final', 'Hola.'), t);
        const names = { en: 'English', es: 'Spanish' };
        return c.transcript({
          code: 'ABC123', nameOf: (code) => names[code], timeOf: (ms) => `t${ms}`,
          date: '2026-12-06 09:00',
        });
        """,
    )
    assert text == (
        "Conversation ABC123: English ↔ Spanish\n2026-12-06 09:00\n\n"
        "[t60000] English: Good morning.\n    Spanish: Buenos días.\n\n"
        "[t60000] Spanish: Hola.\n    English: (no translation)\n\n"
    )


def test_audio_held_while_someone_talks_keeps_the_newest_and_plays_only_that_turns(
    module: Page,
) -> None:
    result = evaluate(
        module,
        """
        const held = new A.HeldAudio(A.HELD_MAX_SECONDS);
        const mine = { id: 2 };
        const earlier = { id: 1 };
        const dropped = [
          held.push({ turn: earlier, seconds: 12, name: 'e1' }),
          held.push({ turn: mine, seconds: 12, name: 'm1' }),
          held.push({ turn: mine, seconds: 12, name: 'm2' }), // 36 s: the oldest goes
          held.push({ turn: mine, seconds: 40, name: 'm3' }), // alone over the bound: kept
        ];
        const first = held.release(mine);
        held.push({ turn: earlier, seconds: 1, name: 'e2' });
        held.push({ turn: mine, seconds: 1, name: 'm4' });
        const second = held.release(mine);
        return {
          dropped, first: first.play.map((item) => item.name), firstDropped: first.dropped,
          second: second.play.map((item) => item.name), secondDropped: second.dropped,
          empty: held.release(mine).play.length,
        };
        """,
    )
    assert result["dropped"] == [0, 0, 1, 2]
    assert (result["first"], result["firstDropped"]) == (["m3"], 0)
    assert (result["second"], result["secondDropped"]) == (["m4"], 1)
    assert result["empty"] == 0


def test_the_setup_screen_says_why_a_pair_cannot_talk(module: Page) -> None:
    said = evaluate(
        module,
        """
        const languages = new L.Languages({
          names: {
            en: { name: 'English', native: 'English' },
            es: { name: 'Spanish', native: 'Español' },
            de: { name: 'German', native: 'Deutsch' },
          },
          routes: ['en>es', 'es>en', 'de>en'],
          pairs: { en: ['es'], es: ['en'], de: [] },
          spoken: ['en'],
        });
        return {
          label: [languages.label('en'), languages.label('es'), languages.label('xx')],
          same: languages.pairProblem('en', 'en'),
          none: languages.pairProblem('en', null),
          works: languages.pairProblem('es', 'en'),
          missing: languages.pairProblem('en', 'de'),
          summary: languages.pairSummary('en', 'es'),
        };
        """,
    )
    assert said["label"] == ["English", "Español (Spanish)", "xx"]
    assert said["same"] == "Choose two different languages."
    assert said["none"] == "This server offers no two languages to translate between."
    assert said["works"] is None
    assert said["missing"] == (
        "No translation route from English into German on this server, so these two cannot "
        "talk here. English works both ways with Spanish. German has no two-way partner on "
        "this server."
    )
    assert said["summary"] == (
        "English ↔ Spanish: translated both ways; no voice here for Spanish, so it is shown only."
    )


def test_a_chunk_plays_for_its_samples_at_its_rate(module: Page) -> None:
    seconds = evaluate(
        module,
        """
        const pcm = new ArrayBuffer(48000); // 24000 samples of 16 bits
        return [
          A.chunkSeconds({ sample_rate: 24000 }, pcm),
          A.chunkSeconds({ sample_rate: '48000' }, pcm),
          A.chunkSeconds({}, pcm), // no rate: 16 kHz
        ];
        """,
    )
    assert seconds == [1, 0.5, 1.5]


def test_a_new_page_reports_nothing_done_and_each_its_own_counters(module: Page) -> None:
    result = evaluate(
        module,
        """
        const first = P.newStats();
        const second = P.newStats();
        first.turns.push({ id: 1 });
        first.sockets.a = 'open';
        first.langs.a = 'en';
        return { first, second };
        """,
    )
    assert result["second"] == {
        "phase": "setup",
        "code": None,
        "langs": {"a": None, "b": None},
        "hold": False,
        "auto": False,
        "facing": False,
        "speak": True,
        "state": "idle",
        "canTalk": False,
        "turns": [],
        "errors": [],
        "sockets": {"a": "closed", "b": "closed"},
        "unmatchedAudio": 0,
        "audioNotPlayed": 0,
    }
    assert result["first"]["turns"] == [{"id": 1}]


def test_options_kept_on_this_device_speak_aloud_unless_turned_off(module: Page) -> None:
    result = evaluate(
        module,
        """
        const out = {};
        for (const name of P.OPTIONS) {
          out[name] = [null, '1', '0', 'junk'].map((saved) => P.optionFromPreference(name, saved));
        }
        return { out, kept: [P.preferenceOf(true), P.preferenceOf(false)] };
        """,
    )
    assert result["out"] == {
        "hold": [False, True, False, False],
        "auto": [False, True, False, False],
        "facing": [False, True, False, False],
        "speak": [True, True, False, True],
    }
    assert result["kept"] == ["1", "0"]


def test_the_page_state_follows_the_turn_being_spoken(module: Page) -> None:
    states = evaluate(
        module,
        """
        return [null, 'connecting', 'recording', 'finishing'].map(
          (state) => P.speakingState(state === null ? null : { turn: { state } }),
        );
        """,
    )
    assert states == ["idle", "connecting", "recording", "recording"]


def test_failures_and_refusals_are_said_in_words(module: Page) -> None:
    said = evaluate(
        module,
        """
        const named = (name) => Object.assign(new Error('raw'), { name });
        return {
          blocked: P.describeError(named('NotAllowedError')),
          missing: P.describeError(named('NotFoundError')),
          busy: P.describeError(named('NotReadableError')),
          other: P.describeError(new Error('The server refused: 503')),
          plain: P.describeError('boom'),
          gone: P.refusalText({ code: 1008, reason: 'unknown session' }),
          reason: P.refusalText({ code: 1011, reason: 'overloaded' }),
          code: P.refusalText({ code: 1006, reason: '' }),
          server: P.serverProblem({ type: 'error', message: 'Too many streams.' }),
          silent: P.serverProblem({ type: 'error' }),
        };
        """,
    )
    assert said == {
        "blocked": (
            "Microphone access was blocked. Allow it in the browser’s site settings and tap again."
        ),
        "missing": "No microphone was found.",
        "busy": "The microphone is in use by another application or could not be opened.",
        "other": "The server refused: 503",
        "plain": "boom",
        "gone": "This conversation is not available any more.",
        "reason": "The server refused the connection: overloaded",
        "code": "The server refused the connection: 1006",
        "server": "Too many streams.",
        "silent": "The server reported a problem.",
    }


def test_the_continue_link_carries_the_token_in_its_fragment_only(module: Page) -> None:
    result = evaluate(
        module,
        """
        const link = P.continueLink('https://interp.example', 'ABC234', 'a+b/c=');
        const url = new URL(link);
        return {
          link,
          path: P.talkPath('AB C'),
          search: url.search,
          token: P.tokenFromFragment(url.hash),
          none: [P.tokenFromFragment(''), P.tokenFromFragment('#other=1')],
          langs: P.languagesOf({ source_language: 'en', target_languages: ['es', 'fr'] }),
          alone: P.languagesOf({ source_language: 'en', target_languages: [] }),
        };
        """,
    )
    assert result["link"] == "https://interp.example/talk?code=ABC234#token=a%2Bb%2Fc%3D"
    assert result["path"] == "/talk?code=AB%20C"
    assert result["search"] == "?code=ABC234"
    assert result["token"] == "a+b/c="
    assert result["none"] == [None, None]
    assert result["langs"] == {"a": "en", "b": "es"}
    assert result["alone"] == {"a": "en", "b": None}


def test_the_exported_transcript_is_dated_and_named_after_the_conversation(module: Page) -> None:
    result = evaluate(
        module,
        """
        const iso = '2026-12-06T09:05:59.123Z';
        return [
          P.transcriptDate(iso),
          P.transcriptFileName('ABC234', iso),
          P.transcriptFileName(null, iso),
        ];
        """,
    )
    assert result == [
        "2026-12-06 09:05",
        "conversation-ABC234-2026-12-06.txt",
        "conversation-talk-2026-12-06.txt",
    ]
