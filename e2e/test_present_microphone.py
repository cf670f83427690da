"""The presenter's microphone going wrong mid-talk, in real Chromium against the real server
and model: one that sends nothing (muted at its source) is noticed, and one that goes
(unplugged) gives way to another, the stream open all along. The rules of the notice are
static/js/mic-state.js's (e2e/test_mic_state.py).
"""

from __future__ import annotations

import wave
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jiwer
import pytest
from playwright.sync_api import Browser, Page, Playwright, expect

from e2e.conftest import LAPTOP, ConsoleLog, FakeAudio, chromium, open_page
from e2e.test_present import MAX_WER, normalise, stats, transcript
from e2e.test_webrtc import WEBRTC_FLAGS, lan_addresses
from tests.support import create_session

pytestmark = [pytest.mark.browser, pytest.mark.model]

MUTED_S = 6.0  # the muted microphone's silence before the speech comes through
SPEECH_S = 9.4  # then the octave's number and first two lines (the pause after "field")
SPEECH_LINES = 3

# Playwright's init script: every microphone the page opens is kept (so the test can end its
# track as an unplugged device would), and while `__micRefused` is set none can be opened.
MICROPHONE_HOOK = """
window.__micStreams = [];
window.__micRefused = false;
window.__micRefusals = 0;
const open = navigator.mediaDevices.getUserMedia.bind(navigator.mediaDevices);
navigator.mediaDevices.getUserMedia = async (constraints) => {
  if (window.__micRefused) {
    window.__micRefusals += 1;
    throw new DOMException('Requested device not found', 'NotFoundError');
  }
  const stream = await open(constraints);
  window.__micStreams.push(stream);
  return stream;
};
"""

# Playwright's init script: every AudioContext the page makes is kept (so the test can suspend
# it as the system does when it sleeps), and while `__resumeRefused` is set none starts again.
AUDIO_ENGINE_HOOK = """
window.__audioContexts = [];
window.__resumeRefused = false;
window.AudioContext = class extends window.AudioContext {
  constructor(...options) {
    super(...options);
    window.__audioContexts.push(this);
  }

  resume() {
    return window.__resumeRefused ? Promise.resolve() : super.resume();
  }
};
"""

SUSPEND = """async () => {
  const contexts = window.__audioContexts;
  await contexts[contexts.length - 1].suspend();
}"""

# What the browser does when the device goes: the track ends and says so. The argument: whether
# no other microphone can be opened either.
UNPLUG = """refuse => {
  window.__micRefused = refuse;
  const track = window.__micStreams[window.__micStreams.length - 1].getAudioTracks()[0];
  track.stop();
  track.dispatchEvent(new Event('ended'));
}"""

PLUG_IN = """() => {
  window.__micRefused = false;
  navigator.mediaDevices.dispatchEvent(new Event('devicechange'));
}"""


@pytest.fixture
def muted_then_speaking(tmp_path: Path, fake_audio: FakeAudio) -> FakeAudio:
    """A microphone that sends digital silence for MUTED_S, then the octave's first seconds
    (someone unmutes it and speaks)."""
    target = tmp_path / "muted_then_speaking.wav"
    with wave.open(str(fake_audio.path), "rb") as reader:
        params = reader.getparams()
        speech = reader.readframes(round(SPEECH_S * params.framerate))
    silence = bytes(round(MUTED_S * params.framerate) * params.nchannels * params.sampwidth)
    with wave.open(str(target), "wb") as writer:
        writer.setparams(params)
        writer.writeframes(silence + speech)
    said = "\n".join(fake_audio.reference.splitlines()[:SPEECH_LINES])
    return FakeAudio(path=target, duration_s=MUTED_S + SPEECH_S, reference=said)


@pytest.fixture
def muted_browser(
    playwright_instance: Playwright, muted_then_speaking: FakeAudio
) -> Iterator[Browser]:
    with chromium(playwright_instance, muted_then_speaking) as browser:
        yield browser


def test_a_microphone_that_sends_nothing_is_noticed_until_it_does(
    muted_browser: Browser,
    console_log: ConsoleLog,
    live_server: str,
    muted_then_speaking: FakeAudio,
) -> None:
    """The presenter starts with the microphone muted at its source: within seconds the console
    says no sound comes; once it does, the notice goes and the words are captioned."""
    created = create_session(live_server, title="Muted at the desk")
    page = open_page(muted_browser, console_log, **LAPTOP)
    try:
        page.goto(f"{live_server}{created['present_url']}")
        notice = page.locator("#mic-notice")
        page.click("#start-button")
        page.wait_for_function("() => window.interpStats.state === 'live'", timeout=30_000)
        expect(notice).to_have_text("No sound from the microphone. Is it muted?", timeout=10_000)
        expect(notice).to_be_hidden(timeout=10_000)  # the speech came
        played = int((MUTED_S + SPEECH_S) * 10) + 5  # 100 ms frames: the whole file, then some
        page.wait_for_function(f"() => window.interpStats.framesSent >= {played}", timeout=60_000)
        page.click("#stop-button")
        page.wait_for_function("() => window.interpStats.state === 'ended'", timeout=60_000)
        said = normalise(transcript(live_server, created["code"]))
        wer = jiwer.wer(normalise(muted_then_speaking.reference), said)
        assert wer < MAX_WER, f"WER {wer:.3f} >= {MAX_WER}: {said!r}"
        expect(page.locator("#error")).to_be_hidden()
        assert console_log.errors == [], f"console errors: {console_log.errors}"
    finally:
        page.context.close()


def frames_sent(page: Page) -> int:
    return int(stats(page)["framesSent"])


@pytest.fixture(params=["websocket", "webrtc"])
def transport(request: pytest.FixtureRequest) -> str:
    """How the console sends the audio: PCM frames over the socket, or the microphone's own
    track over WebRTC (where a new microphone's track must replace the lost one's)."""
    if request.param == "webrtc" and not lan_addresses():
        pytest.skip("no network interface but loopback: WebRTC needs one (e2e/test_webrtc.py)")
    return str(request.param)


@pytest.fixture
def unplug_browser(playwright_instance: Playwright, fake_audio: FakeAudio) -> Iterator[Browser]:
    with chromium(playwright_instance, fake_audio, *WEBRTC_FLAGS) as browser:
        yield browser


def test_an_unplugged_microphone_gives_way_to_another_while_live(
    unplug_browser: Browser, console_log: ConsoleLog, live_server: str, transport: str
) -> None:
    """Five seconds into the talk the microphone goes, and none can be opened: the console says
    so and keeps the stream open. A microphone comes back: the console takes it by itself, says
    which, and what is said into it is captioned. The presenter pressed nothing."""
    created = create_session(live_server, title="Loose cable")
    page = open_page(unplug_browser, console_log, **LAPTOP)
    try:
        page.add_init_script(MICROPHONE_HOOK)
        page.goto(f"{live_server}{created['present_url']}")
        page.select_option("#transport-select", transport)
        notice = page.locator("#mic-notice")
        finals = page.locator("#captions .caption[data-state='final']")
        page.click("#start-button")
        page.wait_for_function("() => window.interpStats.framesSent >= 50", timeout=60_000)  # 5 s
        assert stats(page)["transport"] == transport
        expect(notice).to_be_hidden()

        page.evaluate(UNPLUG, True)
        expect(notice).to_contain_text("The microphone was disconnected. Plug it in", timeout=5_000)
        page.wait_for_function("() => window.__micRefusals >= 2", timeout=10_000)  # looked again
        lost: dict[str, Any] = stats(page)
        assert lost["state"] == "live" and lost["microphoneLosses"] == 1
        finals_before = finals.count()

        page.evaluate(PLUG_IN)
        expect(notice).to_contain_text("The microphone was disconnected; now using", timeout=5_000)
        assert page.evaluate("() => window.__micStreams.length") == 2
        resumed_at = frames_sent(page)
        page.wait_for_function(
            f"() => window.interpStats.framesSent >= {resumed_at + 100}", timeout=60_000
        )
        page.click("#stop-button")
        page.wait_for_function("() => window.interpStats.state === 'ended'", timeout=60_000)
        # What was said into the new microphone reached the captions: the microphone went after
        # "brow" (5.9 s into the octave), and "dig deep trenches" (6.5-7.3 s) comes after it;
        # the fake device plays its file from the top to each new capture.
        assert finals.count() > finals_before
        said = normalise(transcript(live_server, created["code"]))
        assert "dig deep trenches" in said, said
        expect(page.locator("#error")).to_be_hidden()
        assert console_log.errors == [], f"console errors: {console_log.errors}"
    finally:
        page.context.close()


def test_a_microphone_that_will_not_open_leaves_the_stream_on_the_one_it_had(
    page: Page, console_log: ConsoleLog, live_server: str
) -> None:
    """Mid-talk the presenter picks a microphone that cannot be opened: the console says so and
    goes on with the microphone it had; the words said after it are captioned."""
    created = create_session(live_server, title="Wrong microphone")
    page.add_init_script(MICROPHONE_HOOK)
    page.goto(f"{live_server}{created['present_url']}")
    page.click("#start-button")
    page.wait_for_function("() => window.interpStats.framesSent >= 50", timeout=60_000)  # 5 s
    options = page.locator("#mic-select option")
    assert options.count() >= 2, "Chromium's fake devices list more than one microphone"
    page.evaluate("() => { window.__micRefused = true; }")
    page.select_option("#mic-select", index=options.count() - 1)
    expect(page.locator("#error")).to_contain_text(
        "No microphone was found. The stream goes on with the microphone it had."
    )
    resumed_at = frames_sent(page)
    page.wait_for_function(
        f"() => window.interpStats.framesSent >= {resumed_at + 50}", timeout=60_000
    )
    assert stats(page)["state"] == "live"
    assert page.evaluate("() => window.__micStreams.length") == 1  # the one it had, still open
    page.click("#stop-button")
    page.wait_for_function("() => window.interpStats.state === 'ended'", timeout=60_000)
    said = normalise(transcript(live_server, created["code"]))
    assert "dig deep trenches" in said, said
    assert console_log.errors == [], f"console errors: {console_log.errors}"


def test_a_suspended_audio_engine_is_started_again(
    page: Page, console_log: ConsoleLog, live_server: str
) -> None:
    """The browser suspends the console's audio engine mid-talk (the laptop slept, a phone call
    took the audio): the console starts it again. While the browser will not let it, the
    console says no sound comes; once it lets it, the talk goes on without anyone pressing
    anything."""
    created = create_session(live_server, title="Lid closed")
    page.add_init_script(AUDIO_ENGINE_HOOK)
    page.goto(f"{live_server}{created['present_url']}")
    notice = page.locator("#mic-notice")
    page.click("#start-button")
    page.wait_for_function("() => window.interpStats.framesSent >= 30", timeout=60_000)

    page.evaluate(SUSPEND)  # started again at once
    suspended_at = frames_sent(page)
    page.wait_for_function(
        f"() => window.interpStats.framesSent >= {suspended_at + 10}", timeout=5_000
    )
    expect(notice).to_be_hidden()

    page.evaluate("() => { window.__resumeRefused = true; }")
    page.evaluate(SUSPEND)  # stays suspended
    expect(notice).to_have_text("No sound from the microphone. Is it muted?", timeout=10_000)
    stalled = frames_sent(page)
    page.wait_for_timeout(1_500)
    assert frames_sent(page) <= stalled + 1 and stats(page)["state"] == "live"

    page.evaluate("() => { window.__resumeRefused = false; }")
    expect(notice).to_be_hidden(timeout=5_000)
    resumed_at = frames_sent(page)
    page.wait_for_function(
        f"() => window.interpStats.framesSent >= {resumed_at + 100}", timeout=60_000
    )
    page.click("#stop-button")
    page.wait_for_function("() => window.interpStats.state === 'ended'", timeout=60_000)
    # Whether the fake device's file went on while the engine stood or waited for it, the
    # third line (9.7-13.3 s into the octave) was said after the engine started again.
    said = normalise(transcript(live_server, created["code"]))
    assert "proud livery" in said, said
    expect(page.locator("#error")).to_be_hidden()
    assert console_log.errors == [], f"console errors: {console_log.errors}"
