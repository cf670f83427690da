"""The presenter console's pure state (static/js/present-state.js), unit-tested in real Chromium.

The module has no DOM, no clock and no storage: each test imports it into a blank page and
checks the rules of its header: which controls each stream state allows, the status line's
words, the level meter's scale, the audience by language, the microphone list, the transport
kept on this device, and the words for an error. The whole console, with the server and a
microphone, is e2e/test_present.py. No server or model is needed: static/ is served as is.
"""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page

pytestmark = pytest.mark.browser

STATES = ["idle", "starting", "live", "reconnecting", "stopping", "ended", "error", "closed"]


@pytest.fixture
def module(page: Page, static_server: str) -> Page:
    """A blank page with present-state.js as ``window.P``."""
    page.goto(f"{static_server}/static/favicon.svg")
    page.evaluate("async () => { window.P = await import('/static/js/present-state.js'); }")
    return page


def evaluate(page: Page, body: str, arg: Any = None) -> Any:
    return page.evaluate(f"(arg) => {{ {body} }}", arg)


def test_each_state_allows_its_controls(module: Page) -> None:
    controls = evaluate(
        module,
        """
        const out = {};
        for (const state of arg) {
          out[state] = { token: P.controlsFor(state, true), none: P.controlsFor(state, false) };
        }
        return out;
        """,
        STATES,
    )
    # Start only when nothing is open and the session goes on; Stop while opening or live;
    # "End session" unless the last words are being finished or it has ended.
    expected = {
        "idle": (False, True, False, True),
        "starting": (True, False, True, True),
        "live": (True, False, True, True),
        "reconnecting": (True, False, True, True),
        "stopping": (True, False, False, False),
        "ended": (False, True, False, True),
        "error": (False, True, False, True),
        "closed": (False, False, False, False),
    }
    for state, (busy, start, stop, end) in expected.items():
        assert controls[state]["token"] == {
            "busy": busy,
            "start": start,
            "stop": stop,
            "end": end,
        }, state
        # Without a token neither Start nor "End session"; Stop follows the stream alone.
        assert controls[state]["none"] == {
            "busy": busy,
            "start": False,
            "stop": stop,
            "end": False,
        }, state


def test_stop_and_leaving_the_page_follow_the_stream(module: Page) -> None:
    rules = evaluate(
        module,
        "return arg.map((s) => [s, P.canStop(s), P.warnsBeforeLeaving(s)]);",
        STATES,
    )
    assert [s for s, stop, _ in rules if stop] == ["starting", "live", "reconnecting"]
    assert [s for s, _, warn in rules if warn] == ["live", "reconnecting", "stopping"]


def test_a_lost_connection_is_tried_again_and_a_refusal_is_not(module: Page) -> None:
    plan = evaluate(
        module,
        """
        const delays = (code) => [0, 1, 2, 3, 4, 5, 9].map((n) => P.reconnectDelay(code, n, 0));
        return {
          lost: delays(1006),
          restart: [1001, 1011, 1012, 1013].map((code) => P.reconnectDelay(code, 0, 0)),
          refused: [1000, 1003, 1008, 1009, undefined].map((code) => P.reconnectDelay(code, 0, 0)),
          late: P.reconnectDelay(1006, 3, P.RECONNECT_GIVE_UP_MS + 1),
          justInTime: P.reconnectDelay(1006, 3, P.RECONNECT_GIVE_UP_MS),
        };
        """,
    )
    # Half a second, doubling up to 8 s: a restarting server is found again within seconds.
    assert plan["lost"] == [500, 1000, 2000, 4000, 8000, 8000, 8000]
    assert plan["restart"] == [500] * 4
    # A bad token, an ended session, refused audio: no new connection cures those.
    assert plan["refused"] == [None] * 5
    assert plan["late"] is None and plan["justInTime"] == 4000


def test_the_status_line_tells_the_time_live_the_lag_and_the_audience(module: Page) -> None:
    lines = evaluate(
        module,
        """
        const live = (extra) => P.statusText({
          state: 'live', liveSeconds: 0, lagSeconds: 0, listeners: null, ...extra,
        });
        return {
          idle: P.statusText({ state: 'idle', liveSeconds: 99, lagSeconds: 5, listeners: 3 }),
          closed: P.statusText({ state: 'closed', liveSeconds: 0, lagSeconds: 0, listeners: 0 }),
          start: live({}),
          clock: live({ liveSeconds: 65.9 }),
          hour: live({ liveSeconds: 3600 }),
          early: live({ liveSeconds: -0.2 }),
          smallLag: live({ liveSeconds: 5, lagSeconds: 0.99 }),
          lag: live({ liveSeconds: 5, lagSeconds: 2.345, listeners: 1 }),
          none: live({ liveSeconds: 5, listeners: 0 }),
          many: live({ liveSeconds: 5, listeners: 12 }),
        };
        """,
    )
    assert lines == {
        "idle": "Ready when you are.",
        "closed": "Session ended. Listeners can still download the transcript.",
        "start": "Live · 0:00",
        "clock": "Live · 1:05",
        "hour": "Live · 60:00",
        "early": "Live · 0:00",
        "smallLag": "Live · 0:05",
        "lag": "Live · 0:05 · captions 2.3 s behind · 1 listener",
        "none": "Live · 0:05 · 0 listeners",
        "many": "Live · 0:05 · 12 listeners",
    }


def test_every_state_has_words(module: Page) -> None:
    words = evaluate(module, "return arg.map((state) => P.STATUS_TEXT[state]);", STATES)
    assert all(isinstance(text, str) and text for text in words)
    assert len(set(words)) == len(STATES)


def test_the_level_meter_spans_sixty_decibels_and_clipping_is_a_full_scale_peak(
    module: Page,
) -> None:
    levels = evaluate(
        module,
        """
        return {
          meter: [0, 0.0001, 0.001, 0.01, 0.1, 1, 2]
            .map((rms) => Number(P.meterLevel(rms).toFixed(3))),
          clipping: [0.5, 0.98, 0.99, 1].map((peak) => P.isClipping(peak)),
        };
        """,
    )
    assert levels["meter"] == [0, 0, 0, 0.333, 0.667, 1, 1]
    assert levels["clipping"] == [False, False, True, True]


def test_the_audience_is_counted_by_language_most_first(module: Page) -> None:
    texts = evaluate(
        module,
        """
        const names = { en: 'English', es: 'Spanish' };
        return [
          P.audienceText(4, { es: 1, en: 2, fr: 1, de: 0 }, names),
          P.audienceText(1, { en: 1 }, names),
          P.audienceText(0, {}, names),
        ];
        """,
    )
    assert texts == [
        # A language the console has no name for is shown by its code; nobody reading: left out.
        {"label": "listeners", "languages": "English 2 · Spanish 1 · fr 1"},
        {"label": "listener", "languages": "English 1"},
        {"label": "listeners", "languages": ""},
    ]


def test_revoking_editor_links_says_how_many_stopped_working(module: Page) -> None:
    texts = evaluate(module, "return [0, 1, 3].map((n) => P.revokedText(n));")
    assert texts == [
        "There were no editor links to revoke.",
        "The editor link given so far no longer works. Make new ones for the editors you trust.",
        "All 3 editor links given so far no longer work. Make new ones for the editors you trust.",
    ]


def test_microphones_are_listed_once_the_browser_names_them(module: Page) -> None:
    choices = evaluate(
        module,
        """
        const hidden = [{ deviceId: '', label: '' }, { deviceId: 'a', label: '' }];
        const devices = [
          { deviceId: 'default', label: 'Default - Headset' },
          { deviceId: 'communications', label: 'Communications - Headset' },
          { deviceId: 'a', label: 'Headset' },
          { deviceId: 'b', label: 'Built-in' },
          { deviceId: '', label: 'No id' },
        ];
        return {
          hidden: P.microphoneChoice(hidden, 'a'),
          wanted: P.microphoneChoice(devices, 'b'),
          gone: P.microphoneChoice(devices, 'x'),
          one: P.microphoneChoice([{ deviceId: 'a', label: 'Headset' }], ''),
        };
        """,
    )
    assert choices["hidden"] is None  # no permission yet: "Default microphone" stays
    assert choices["wanted"] == {
        "options": [
            {"label": "Default microphone", "value": ""},
            {"label": "Headset", "value": "a"},
            {"label": "Built-in", "value": "b"},
        ],
        "selected": "b",
        "hint": "2 microphones found.",
    }
    assert choices["gone"]["selected"] is None
    assert choices["one"]["selected"] == ""
    assert choices["one"]["hint"] == "1 microphone found."


def test_the_transport_is_webrtc_only_where_chosen_and_available(module: Page) -> None:
    transports = evaluate(
        module,
        """
        return {
          chosen: [['webrtc', true], ['webrtc', false], ['websocket', true], [null, true],
                   ['carrier pigeon', true]].map(([saved, has]) => P.chosenTransport(saved, has)),
          named: ['webrtc', 'websocket', '', 'WEBRTC'].map((value) => P.transportOf(value)),
        };
        """,
    )
    assert transports["chosen"] == ["webrtc", "websocket", "websocket", "websocket", "websocket"]
    assert transports["named"] == ["webrtc", "websocket", "websocket", "websocket"]


def test_errors_are_told_in_words_the_presenter_can_act_on(module: Page) -> None:
    words = evaluate(
        module,
        """
        const named = (name) => P.describeError(Object.assign(new Error('raw'), { name }));
        return {
          blocked: named('NotAllowedError'),
          missing: named('NotFoundError'),
          gone: named('OverconstrainedError'),
          busy: named('NotReadableError'),
          other: P.describeError(new Error('1008 Not allowed')),
          bare: P.describeError('socket closed'),
          nothing: P.describeError(null),
        };
        """,
    )
    assert "blocked" in words["blocked"] and "Start again" in words["blocked"]
    assert words["missing"] == "No microphone was found."
    assert "Pick another one" in words["gone"]
    assert "in use by another application" in words["busy"]
    assert words["other"] == "1008 Not allowed"
    assert words["bare"] == "socket closed"
    assert words["nothing"] == "null"


def test_each_console_gets_counters_of_its_own(module: Page) -> None:
    counters = evaluate(
        module,
        """
        const a = P.newStats();
        const b = P.newStats();
        a.captions.final += 1;
        a.byLanguage.en = 2;
        return { a, b };
        """,
    )
    assert counters["a"]["captions"] == {"draft": 0, "final": 1}
    assert counters["b"]["captions"] == {"draft": 0, "final": 0}
    assert counters["b"]["byLanguage"] == {}
    assert counters["b"]["state"] == "idle" and counters["b"]["transport"] == "websocket"
    assert counters["b"]["listeners"] is None


def test_the_module_needs_no_page(module: Page, static_server: str) -> None:
    """Loaded in a module worker, where there is no document and no window, it still works."""
    probe = f"{static_server}/probe/present-state-worker.js"  # served by the route below
    module.route(
        probe,
        lambda route: route.fulfill(
            content_type="text/javascript",
            body="""
              import * as P from '/static/js/present-state.js';
              postMessage({
                noDocument: typeof document === 'undefined' && typeof window === 'undefined',
                line: P.statusText({ state: 'live', liveSeconds: 61, lagSeconds: 0, listeners: 2 }),
              });
            """,
        ),
    )
    result = module.evaluate(
        """(url) => new Promise((resolve, reject) => {
          const worker = new Worker(url, { type: 'module' });
          worker.onmessage = (event) => resolve(event.data);
          worker.onerror = (event) => reject(new Error(event.message || 'worker failed'));
        })""",
        probe,
    )
    assert result == {"noDocument": True, "line": "Live · 1:01 · 2 listeners"}
