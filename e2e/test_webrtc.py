"""The presenter over WebRTC in real Chromium: the console's transport switch set to WebRTC
(remembered across a reload), the fake microphone's track sent as Opus to the server's aiortc
peer, captions back on the data channel, Stop finalises, and the finals meet the same WER
bound as the WebSocket path (e2e/test_present.py).

Chromium normally hides its host addresses behind mDNS names (``<uuid>.local``); the server
would still learn the browser's address from its connectivity checks (a peer-reflexive
candidate), but ``--disable-features=WebRtcHideLocalIpsWithMdns`` makes the offer carry plain
host candidates, so the test can check them against the answer's. Chromium gathers no
loopback candidates, so both sides meet on the machine's LAN address (aiortc skips 127.0.0.1
too); a machine with no interface but loopback cannot run this test (it skips, saying so).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import ifaddr
import jiwer
import pytest
from playwright.sync_api import Browser, Page, Playwright, Request, expect

from e2e.conftest import LAPTOP, ConsoleLog, FakeAudio, chromium, open_page
from e2e.test_present import (
    CAPTION_RECORDER,
    FRAME_MS,
    MAX_WER,
    finish_the_octave,
    normalise,
    reconnected_after,
    stats,
)
from tests.support import create_session

WEBRTC_FLAGS = ["--disable-features=WebRtcHideLocalIpsWithMdns"]

# Playwright's init script: `__cutPath()` makes every connection opened so far a dead path, as
# when the laptop roams to another access point: nothing sent on its data channel arrives,
# nothing for it is delivered, its audio stops, and the browser says nothing. Connections
# opened later work.
DEAD_PATH_HOOK = """
window.__channels = [];
window.__peers = [];
window.__dead = new WeakSet();
const createDataChannel = RTCPeerConnection.prototype.createDataChannel;
RTCPeerConnection.prototype.createDataChannel = function (...options) {
  const channel = createDataChannel.apply(this, options);
  window.__channels.push(channel);
  window.__peers.push(this);
  const send = channel.send.bind(channel);
  channel.send = (data) => {
    if (!window.__dead.has(channel)) send(data);
  };
  const listen = channel.addEventListener.bind(channel);
  channel.addEventListener = (type, listener, ...rest) => listen(type, (event) => {
    if (type !== 'message' || !window.__dead.has(channel)) listener(event);
  }, ...rest);
  return channel;
};
window.__cutPath = () => {
  for (const channel of window.__channels) window.__dead.add(channel);
  // Nor does the microphone's audio arrive any more, as on a real dead path.
  for (const peer of window.__peers) {
    for (const sender of peer.getSenders()) sender.replaceTrack(null);
  }
};
"""
CUT_AFTER_FRAMES = 50  # 5 s into the talk


def lan_addresses() -> list[str]:
    """IPv4 addresses other than loopback: where Chromium and aiortc gather host candidates."""
    return [
        str(ip.ip)
        for adapter in ifaddr.get_adapters()
        for ip in adapter.ips
        if isinstance(ip.ip, str) and not ip.ip.startswith("127.")
    ]


def candidates(sdp: str) -> list[str]:
    """``address port type`` of each ``a=candidate`` line."""
    found = []
    for line in sdp.splitlines():
        if line.startswith("a=candidate:"):
            parts = line.split()
            found.append(f"{parts[4]} {parts[5]} {parts[7]}")
    return found


@pytest.fixture
def webrtc_browser(playwright_instance: Playwright, fake_audio: FakeAudio) -> Iterator[Browser]:
    if not lan_addresses():
        pytest.skip(
            "no network interface but loopback: Chromium gathers no loopback ICE candidates "
            "and aiortc none on 127.0.0.1, so a browser cannot reach the server over WebRTC here"
        )
    with chromium(playwright_instance, fake_audio, *WEBRTC_FLAGS) as browser:
        yield browser


@pytest.mark.browser
@pytest.mark.model
def test_presenter_streams_over_webrtc(
    webrtc_browser: Browser,
    console_log: ConsoleLog,
    live_server: str,
    fake_audio: FakeAudio,
    artifacts_dir: Path,
) -> None:
    response = httpx.post(
        f"{live_server}/api/sessions",
        json={"title": "Over WebRTC", "source_language": "en", "target_languages": []},
        timeout=10,
    )
    assert response.status_code == 201
    session = response.json()
    page: Page = open_page(webrtc_browser, console_log, **LAPTOP)
    signaling: dict[str, Any] = {}

    def on_request(request: Request) -> None:
        if request.url.endswith("/webrtc/offer"):
            signaling["offer"] = json.loads(request.post_data or "{}")

    page.on("request", on_request)
    try:
        page.goto(f"{live_server}{session['present_url']}")
        expect(page.locator("#start-button")).to_be_enabled()
        # The switch: WebSocket by default, WebRTC once chosen, remembered after a reload.
        expect(page.locator("#transport-select")).to_have_value("websocket")
        page.select_option("#transport-select", "webrtc")
        page.reload()
        expect(page.locator("#transport-select")).to_have_value("webrtc")
        expect(page.locator("#start-button")).to_be_enabled()

        page.evaluate(CAPTION_RECORDER)
        with page.expect_response(re.compile(r"/webrtc/offer$")) as answer_info:
            page.click("#start-button")
        answer = answer_info.value
        assert answer.status == 200, answer.text()
        signaling["answer"] = answer.json()
        offered = candidates(signaling["offer"]["sdp"])
        answered = candidates(signaling["answer"]["sdp"])
        try:
            page.wait_for_function(
                "() => ['live', 'error'].includes(window.interpStats.state)", timeout=30_000
            )
        finally:
            (artifacts_dir / "webrtc-signaling.json").write_text(
                json.dumps({"offer": offered, "answer": answered}, indent=2) + "\n"
            )
        current = stats(page)
        assert current["state"] == "live", (
            f"WebRTC did not connect: {current['lastError']}; browser offered {offered}, "
            f"server answered {answered}"
        )
        assert current["transport"] == "webrtc"
        # Plain host candidates (no mDNS names) on an address both sides gathered.
        assert not any(".local " in c for c in offered), offered
        shared = {c.split()[0] for c in offered} & {c.split()[0] for c in answered}
        assert shared, (offered, answered)

        page.wait_for_function("() => window.interpStats.captions.final > 0", timeout=60_000)
        clip_frames = int(fake_audio.duration_s * 1000 / FRAME_MS)
        page.wait_for_function(
            f"() => window.interpStats.framesSent >= {clip_frames + 10}",
            timeout=int((fake_audio.duration_s + 30) * 1000),
        )
        page.screenshot(path=str(artifacts_dir / "present-webrtc.png"))
        page.click("#stop-button")
        page.wait_for_function(
            "() => ['ended', 'error'].includes(window.interpStats.state)", timeout=60_000
        )
        final = stats(page)
        assert final["state"] == "ended", f"stream did not end cleanly: {final['lastError']}"
        hypothesis = page.eval_on_selector_all(
            "#captions .caption[data-state='final']",
            "els => els.map(el => el.textContent).join(' ')",
        )
        wer = jiwer.wer(normalise(fake_audio.reference), normalise(hypothesis))
        report = {"wer": round(wer, 3), "stats": final, "hypothesis": normalise(hypothesis)}
        (artifacts_dir / "present-webrtc-report.json").write_text(json.dumps(report, indent=2))
        console_log.write(artifacts_dir / "present-webrtc-console.txt")
        assert page.locator("#captions .caption[data-state='draft']").count() == 0
        assert wer < MAX_WER, f"WER {wer:.3f} >= {MAX_WER}: {normalise(hypothesis)!r}"
        stored = httpx.get(
            f"{live_server}/api/sessions/{session['code']}/transcript", timeout=10
        ).text
        assert normalise(stored) == normalise(hypothesis)
        assert console_log.errors == [], f"console errors: {console_log.errors}"
    finally:
        page.context.close()


@pytest.mark.browser
@pytest.mark.model
def test_a_webrtc_console_whose_path_dies_without_closing_goes_on_by_itself(
    webrtc_browser: Browser, console_log: ConsoleLog, live_server: str, fake_audio: FakeAudio
) -> None:
    """Five seconds into the talk the path goes dead without a close: nothing more arrives
    either way on the data channel, and the browser says nothing (its ICE consent check would
    take about 30 s). The console notices that its pings go unanswered, gives the connection up
    and connects again by itself; the end of the octave reaches the transcript."""
    created = create_session(live_server, title="Roaming laptop over WebRTC")
    page = open_page(webrtc_browser, console_log, **LAPTOP)
    try:
        page.add_init_script(DEAD_PATH_HOOK)
        page.goto(f"{live_server}{created['present_url']}")
        page.select_option("#transport-select", "webrtc")
        page.click("#start-button")
        started = time.monotonic()
        page.wait_for_function(
            f"() => window.interpStats.framesSent >= {CUT_AFTER_FRAMES}", timeout=60_000
        )
        assert stats(page)["transport"] == "webrtc"
        page.evaluate("() => window.__cutPath()")
        lost_after = reconnected_after(page, time.monotonic())
        # Given up 10 s after a ping went unanswered (pings every 2.5 s), not at ICE's 30 s.
        assert lost_after < 15, lost_after
        assert page.evaluate("() => window.__channels.length") == 2
        said = finish_the_octave(page, live_server, created["code"], fake_audio, started)
        assert stats(page)["reconnects"] == 1
        # Its new offer asked only for what it had missed: every final reached it once.
        held = stats(page)["captions"]["final"]
        assert page.locator("#captions .caption[data-state=final]").count() == held
        # "sunken" is said 25 s into the octave, after the console connected again.
        assert "sunken" in normalise(said), said
        assert console_log.errors == [], f"console errors: {console_log.errors}"
    finally:
        page.context.close()
