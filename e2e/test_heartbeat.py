"""static/js/heartbeat.js in real Chromium, with short periods: a ping that nothing follows
gives the connection up once, a server that answers keeps it, and beats the socket skips
(not ready, or the server reading no pings) check nothing. The sockets that use it, against
a real server whose connection dies without closing: e2e/test_present.py and
e2e/test_caption_displays.py. No server or model is needed: static/ is served as is.
"""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page

pytestmark = pytest.mark.browser

RUN = """async ({ answer, skip }) => {
  const { Heartbeat } = await import('/static/js/heartbeat.js');
  const seen = { pings: 0, lost: [] };
  let beat = null;
  beat = new Heartbeat({
    periodMs: 50,
    unansweredMs: 200,
    ping: () => {
      if (skip) return false;
      seen.pings += 1;
      if (answer) window.setTimeout(() => beat.heard(), 10);
      return true;
    },
    lost: (reason) => seen.lost.push(reason),
  });
  beat.start();
  await new Promise((resolve) => { window.setTimeout(resolve, 800); });
  beat.stop();
  return seen;
}"""


@pytest.fixture
def blank(page: Page, static_server: str) -> Page:
    page.goto(f"{static_server}/static/favicon.svg")
    return page


def run(page: Page, answer: bool, skip: bool = False) -> dict[str, Any]:
    result: dict[str, Any] = page.evaluate(RUN, {"answer": answer, "skip": skip})
    return result


def test_an_unanswered_ping_gives_the_connection_up_once(blank: Page) -> None:
    seen = run(blank, answer=False)
    # One ping, then nothing more is sent while it waits; given up once, then silent.
    assert seen["pings"] == 1
    assert seen["lost"] == ["no answer from the server for 0.2 s"]


def test_a_server_that_answers_keeps_the_connection(blank: Page) -> None:
    seen = run(blank, answer=True)
    assert seen["pings"] >= 8 and seen["lost"] == []


def test_beats_the_socket_skips_check_nothing(blank: Page) -> None:
    seen = run(blank, answer=False, skip=True)
    assert seen == {"pings": 0, "lost": []}
