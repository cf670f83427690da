"""Spoken translation on the listener page, in real Chromium.

Three levels:
- the player itself (static/js/audio-player.js + player-worklet.js) rendered faster than real
  time in an OfflineAudioContext from synthetic PCM: resampling keeps pitch and level, chunks
  join without a seam, the jitter buffer waits for enough audio, an underrun goes silent
  without a click, the queue never holds more than 8 s, volume and mute work (no server needed);
- the listener page against the real server, with synthetic audio messages injected into its
  WebSocket (a header, then the PCM as one binary message, as docs/protocol.md says): the Listen
  button starts audio on a real click, asks the server for it without reconnecting, the page
  plays what arrives, announces skipped sentences, mutes, turns off, and remembers the choice
  without starting by itself;
- the whole path: a presenter streams a real English recording, the server speaks its finals,
  and the page of a listener who tapped Listen reports received and played audio, while a
  listener with audio off receives none.

Chromium runs without `--autoplay-policy=no-user-gesture-required`: audio starts from a click.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
import shutil
import struct
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Page, Playwright, WebSocketRoute, expect

from e2e.conftest import CHROMIUM, PHONE, ConsoleLog, open_page
from tests.data import SONNET, SONNET_OCTAVE_S
from tests.support import create_session, read_wav, stream_recording

pytestmark = pytest.mark.browser

LISTENER_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@pytest.fixture(scope="module")
def listener_browser(playwright_instance: Playwright) -> Iterator[Browser]:
    """Chromium without a fake microphone and without relaxing the autoplay policy."""
    browser = playwright_instance.chromium.launch(
        executable_path=str(CHROMIUM), headless=True, args=LISTENER_ARGS
    )
    try:
        yield browser
    finally:
        browser.close()


@pytest.fixture
def player_page(listener_browser: Browser, static_server: str) -> Iterator[Page]:
    context = listener_browser.new_context()
    page = context.new_page()
    page.goto(f"{static_server}/")
    try:
        yield page
    finally:
        context.close()


# ---------------------------------------------------------------- the player, offline

# Renders `seconds` at `rate` through an AudioPlayer on an OfflineAudioContext. `chunks` are
# sine tones as int16 PCM; a chunk with `at` (seconds of render time) is pushed then, the
# others before rendering starts. Each chunk continues the phase of the one before it.
RENDER = """
async ({ rate, seconds, chunks, volume = 1, muted = false }) => {
  const { AudioPlayer } = await import('/static/js/audio-player.js');
  const ctx = new OfflineAudioContext({
    numberOfChannels: 1, length: Math.round(rate * seconds), sampleRate: rate,
  });
  const player = new AudioPlayer({ context: ctx, volume, muted });
  await player.start();
  let phase = 0;
  const pcmOf = (chunk) => {
    const n = Math.round(chunk.rate * chunk.seconds);
    const pcm = new ArrayBuffer(n * 2);
    const view = new DataView(pcm);
    for (let i = 0; i < n; i += 1) {
      view.setInt16(2 * i, Math.round(chunk.amp * 32767 * Math.sin(phase)), true);
      phase += (2 * Math.PI * chunk.freq) / chunk.rate;
    }
    return pcm;
  };
  const push = (chunk) => player.push({ sample_rate: chunk.rate, last: chunk.last }, pcmOf(chunk));
  const later = new Map(); // render time -> chunks pushed then (one suspend per instant)
  for (const chunk of chunks) {
    if (chunk.at === undefined) push(chunk);
    else later.set(chunk.at, [...(later.get(chunk.at) || []), chunk]);
  }
  for (const [at, group] of later) {
    ctx.suspend(at).then(async () => {
      group.forEach(push);
      await player.sync();
      await ctx.resume();
    });
  }
  await player.sync();
  const queued = { ...player.stats };
  const buffer = await ctx.startRendering();
  await player.sync();
  const out = buffer.getChannelData(0);
  let maxStep = 0, maxStepAt = 0, first = -1, last = -1, crossings = 0, squares = 0, count = 0;
  for (let i = 0; i < out.length; i += 1) {
    const x = out[i];
    if (i > 0 && Math.abs(x - out[i - 1]) > maxStep) {
      maxStep = Math.abs(x - out[i - 1]);
      maxStepAt = i / rate;
    }
    if (Math.abs(x) > 1e-3) {
      if (first < 0) first = i;
      last = i;
    }
  }
  for (let i = Math.max(first, 1); i <= last; i += 1) {
    if ((out[i - 1] < 0) !== (out[i] < 0)) crossings += 1;
    squares += out[i] * out[i];
    count += 1;
  }
  const peakIn = (from, to) => {
    let peak = 0;
    for (let i = Math.round(from * rate); i < Math.min(out.length, Math.round(to * rate)); i += 1) {
      peak = Math.max(peak, Math.abs(out[i]));
    }
    return peak;
  };
  const windows = [];
  for (let t = 0; t < seconds; t += 0.05) windows.push(peakIn(t, t + 0.05));
  return {
    queued,
    stats: { ...player.stats },
    maxStep,
    maxStepAt,
    first: first / rate,
    last: last / rate,
    frequency: count ? crossings / 2 / (count / rate) : 0,
    rms: count ? Math.sqrt(squares / count) : 0,
    windows,
  };
}
"""

TONE_RMS = 0.5 / math.sqrt(2)


def render(
    page: Page, rate: int, seconds: float, chunks: list[dict[str, Any]], **extra: Any
) -> dict[str, Any]:
    result: dict[str, Any] = page.evaluate(
        RENDER, {"rate": rate, "seconds": seconds, "chunks": chunks, **extra}
    )
    return result


def db(value: float, reference: float = TONE_RMS) -> float:
    return 20 * math.log10(max(value, 1e-12) / reference)


def wait_sent(page: Page, sent: list[Any], message: dict[str, Any], last: bool = False) -> None:
    """Wait until the page has sent ``message`` (the last one sent when ``last``): a routed
    socket's messages reach Python only while Playwright is waiting, not when the page sends."""
    for _ in range(500):
        if (sent and sent[-1] == message) if last else message in sent:
            return
        page.wait_for_timeout(20)
    raise AssertionError(f"the page did not send {message}: {sent}")


@pytest.mark.parametrize(("context_rate", "voice_rate"), [(48000, 22050), (44100, 16000)])
def test_chunks_play_gaplessly_at_the_right_pitch_and_level(
    player_page: Page, context_rate: int, voice_rate: int
) -> None:
    # 1.2 s of 440 Hz in three chunks, the last one ending a segment: a whole number of cycles,
    # so the tone starts and ends at zero and any step in the output is a seam or a click.
    chunks = [
        {"rate": voice_rate, "seconds": 0.4, "freq": 440, "amp": 0.5, "last": i == 2}
        for i in range(3)
    ]
    result = render(player_page, context_rate, 2.0, chunks)
    assert result["queued"]["receivedChunks"] == 3
    assert result["queued"]["receivedSeconds"] == pytest.approx(1.2, abs=1e-3)
    stats = result["stats"]
    assert stats["playedSeconds"] == pytest.approx(1.2, abs=0.01)
    assert stats["underruns"] == 0 and stats["dropped"] == 0
    assert stats["bufferedSeconds"] == pytest.approx(0, abs=1e-3)
    assert not stats["playing"]
    assert result["first"] < 0.01  # everything was queued: no jitter-buffer wait
    assert result["last"] == pytest.approx(1.2, abs=0.01)
    assert result["frequency"] == pytest.approx(440, rel=0.005)
    assert abs(db(result["rms"])) < 0.3
    # A 440 Hz sine at 0.5 moves at most 0.5 * 2 pi * 440 / rate per sample.
    assert result["maxStep"] < 0.5 * 2 * math.pi * 440 / context_rate * 1.2


def test_jitter_buffer_underrun_and_resume_without_clicks(player_page: Page) -> None:
    rate = 48000
    chunks = [
        # 0.1 s is less than the 0.2 s jitter buffer: nothing plays until more arrives.
        {"rate": 16000, "seconds": 0.1, "freq": 1000, "amp": 0.5, "last": False},
        # At 0.3 s: enough to start. It ends mid-segment, so an underrun follows, and the sound
        # it has let out so far (the resampler holds back 36 samples) ends on a crest: without a
        # ramp down, that would be a step of 0.5.
        {"rate": 16000, "seconds": 0.3515, "freq": 1000, "amp": 0.5, "last": False, "at": 0.3},
        # At 1.0 s: the rest of the segment (its last chunk) plays at once. The tone ends on a
        # zero crossing, as speech ends in silence.
        {"rate": 16000, "seconds": 0.0985, "freq": 1000, "amp": 0.5, "last": True, "at": 1.0},
    ]
    result = render(player_page, rate, 1.5, chunks)
    stats = result["stats"]
    windows = result["windows"]  # peak level per 50 ms
    assert max(windows[:6]) < 1e-4, windows  # 0-0.3 s: waiting for the buffer
    assert result["first"] == pytest.approx(0.3, abs=0.01)
    assert min(windows[7:14]) > 0.45, windows  # 0.35-0.7 s: playing
    assert max(windows[16:20]) < 1e-4, windows  # 0.8-1.0 s: silent after the underrun
    assert min(windows[20:22]) > 0.45, windows  # 1.0-1.1 s: the last chunk
    assert max(windows[23:]) < 1e-4, windows
    assert stats["underruns"] == 1
    assert stats["playedSeconds"] == pytest.approx(0.55, abs=0.01)
    # The cut at the underrun ramps down instead of stepping (a step would be up to 0.5).
    assert result["maxStep"] < 0.5 * 2 * math.pi * 1000 / rate * 1.2, result["maxStepAt"]


def test_a_short_chunk_is_not_held_back_forever(player_page: Page) -> None:
    # 0.1 s of a segment whose next chunk never comes: played after waiting 0.5 s for more.
    chunks = [{"rate": 22050, "seconds": 0.1, "freq": 440, "amp": 0.5, "last": False}]
    result = render(player_page, 48000, 1.0, chunks)
    assert result["first"] == pytest.approx(0.5, abs=0.01)
    assert result["stats"]["playedSeconds"] == pytest.approx(0.1, abs=0.005)
    assert result["stats"]["underruns"] == 1  # it ran dry mid-segment


def test_queue_is_bounded_keeping_the_newest(player_page: Page) -> None:
    # 12 one-second chunks at once (a phone that stalled): at most 8 s stay queued.
    chunks = [
        {"rate": 16000, "seconds": 1.0, "freq": 300, "amp": 0.3, "last": i == 11} for i in range(12)
    ]
    result = render(player_page, 48000, 0.5, chunks)
    queued = result["queued"]
    # Whole chunks go (sentence boundaries), oldest first, until no more than 8 s is left.
    assert 7.0 <= queued["bufferedSeconds"] <= 8.0
    assert queued["dropped"] in (4, 5)
    assert queued["droppedSeconds"] + queued["bufferedSeconds"] == pytest.approx(12.0, abs=0.01)
    assert result["stats"]["playedSeconds"] == pytest.approx(0.5, abs=0.01)
    assert result["stats"]["underruns"] == 0


def test_dropping_while_playing_jumps_ahead_without_a_click(player_page: Page) -> None:
    rate = 48000
    # 2 s playing; at 0.5 s, 7 s more arrive: 8.5 s queued, so the rest of the first chunk
    # (1.5 s) goes and playback jumps to the newest audio, at another phase of the tone.
    chunks = [{"rate": 16000, "seconds": 2.0, "freq": 1000, "amp": 0.5, "last": False}]
    chunks += [
        {"rate": 16000, "seconds": 1.0, "freq": 1000, "amp": 0.5, "last": i == 6, "at": 0.5}
        for i in range(7)
    ]
    result = render(player_page, rate, 1.0, chunks)
    stats = result["stats"]
    assert stats["dropped"] == 1
    assert stats["droppedSeconds"] == pytest.approx(1.5, abs=0.01)
    assert stats["underruns"] == 0
    assert min(result["windows"]) > 0.45  # no gap at the jump
    assert result["maxStep"] < 0.5 * 2 * math.pi * 1000 / rate * 1.2, result["maxStepAt"]


def test_volume_and_mute(player_page: Page) -> None:
    chunks = [{"rate": 24000, "seconds": 0.6, "freq": 500, "amp": 0.5, "last": True}]
    half = render(player_page, 48000, 0.8, chunks, volume=0.5)
    assert db(half["rms"]) == pytest.approx(-6.02, abs=0.3)
    muted = render(player_page, 48000, 0.8, chunks, muted=True)
    assert max(muted["windows"][2:]) < 1e-3  # the gain glides to zero within a few ms
    assert muted["stats"]["playedSeconds"] == pytest.approx(0.6, abs=0.01)  # muted, not paused


# ---------------------------------------------------------------- the listener page


# Where the notice of skipped sentences lies once it has moved into place: the visible
# controls it covers (it must cover none, the Ask button included) and whether it lies within
# the captions panel.
NOTICE_PLACE = """
async () => {
  const notice = document.getElementById('audio-notice');
  await Promise.all(notice.getAnimations().map((animation) => animation.finished));
  const box = notice.getBoundingClientRect();
  const panel = document.querySelector('.listen-captions').getBoundingClientRect();
  const overlaps = (r) =>
    r.left < box.right && box.left < r.right && r.top < box.bottom && box.top < r.bottom;
  const controls = document.querySelectorAll('button, select, input, summary, a[href], textarea');
  const covered = [...controls]
    .filter((control) => control.checkVisibility() && overlaps(control.getBoundingClientRect()))
    .map((control) => control.id || control.textContent.trim() || control.tagName);
  return {
    covered,
    inCaptions: box.top >= panel.top && box.bottom <= panel.bottom,
    shown: box.height > 0 && getComputedStyle(notice).opacity === '1',
  };
}
"""

# The notice lies just below the captions panel's top edge (within a pixel of half a rem).
NOTICE_FOLLOWS = """
() => {
  const notice = document.getElementById('audio-notice').getBoundingClientRect();
  const panel = document.querySelector('.listen-captions').getBoundingClientRect();
  const gap = notice.top - panel.top;
  return gap > 0 && gap < 12;
}
"""


def audio_stats(page: Page) -> dict[str, Any]:
    """The page's window.interpAudio."""
    result: dict[str, Any] = page.evaluate("() => JSON.parse(JSON.stringify(window.interpAudio))")
    return result


def sine_pcm(seconds: float, rate: int, freq: float = 440.0, amp: float = 0.4) -> bytes:
    n = round(seconds * rate)
    return struct.pack(
        f"<{n}h", *(round(amp * 32767 * math.sin(2 * math.pi * freq * i / rate)) for i in range(n))
    )


def audio_header(segment: int, lang: str, rate: int, **extra: Any) -> str:
    header = {
        "type": "audio",
        "seq": 0,
        "segment": segment,
        "lang": lang,
        "encoding": "pcm_s16le",
        "sample_rate": rate,
        "text": "A test sentence.",
        "last": True,
        "skipped": 0,
        "rate": 1.0,
        "ts": 0.0,
        **extra,
    }
    return json.dumps(header)


@pytest.mark.model
def test_listener_turns_on_audio_and_plays_what_arrives(
    listener_browser: Browser, live_server: str, artifacts_dir: Path
) -> None:
    log = ConsoleLog()
    session = create_session(live_server, title="Spoken test", target_languages=["es"])
    code = session["code"]
    routes: list[WebSocketRoute] = []
    urls: list[str] = []
    sent: list[Any] = []

    def handle(ws: WebSocketRoute) -> None:
        urls.append(ws.url)
        routes.append(ws)
        server = ws.connect_to_server()

        def from_page(message: str | bytes) -> None:
            sent.append(json.loads(message) if isinstance(message, str) else message)
            server.send(message)

        ws.on_message(from_page)

    page = open_page(listener_browser, log, **PHONE)
    try:
        page.route_web_socket(re.compile(r"/ws/listen/"), handle)
        page.goto(f"{live_server}/s/{code}")
        page.wait_for_function("() => window.interpStats.connected")
        assert "audio=0" in urls[0]
        toggle = page.get_by_role("button", name=re.compile("^Listen"))
        expect(toggle).to_be_visible()
        # Only translations are spoken (the original is heard from the speaker).
        expect(toggle).to_be_disabled()
        expect(page.locator("#audio-status")).to_have_text(
            "Choose a translation above to hear it spoken."
        )
        page.select_option("#language", "es")
        expect(toggle).to_be_enabled()
        expect(page.locator("#audio-status")).to_have_text("")
        # No AudioContext before the tap (it could not make sound on a phone anyway).
        assert audio_stats(page)["context"] == "none"
        assert page.evaluate("() => document.documentElement.scrollWidth") <= 390
        page.screenshot(path=str(artifacts_dir / "listener-audio-off.png"))

        toggle.click()
        page.wait_for_function("() => window.interpAudio.context === 'running'")
        expect(page.locator("#audio-toggle")).to_have_attribute("data-on", "1")
        expect(page.get_by_role("button", name=re.compile("^Pause"))).to_be_visible()
        page.wait_for_function("() => window.interpAudio.enabled")
        expect(page.locator("#audio-status")).to_contain_text(
            "Listening in Spanish: waiting for the next sentence"
        )
        wait_sent(page, sent, {"type": "audio", "enabled": True})  # asked without reconnecting
        assert len(urls) == 1

        # Three chunks of one segment (24 kHz, 1.2 s), the first after two skipped sentences.
        ws = routes[0]
        expect(page.locator("#audio-voice")).to_be_hidden()
        for i in range(3):
            skipped = 2 if i == 0 else 0
            ws.send(audio_header(7, "es", 24000, last=i == 2, skipped=skipped, voice="natural"))
            ws.send(sine_pcm(0.4, 24000))
        # A binary message without a header before it is not audio: ignored.
        ws.send(sine_pcm(0.1, 24000))
        # Audio in a language this listener did not choose: not played.
        ws.send(audio_header(8, "fr", 24000))
        ws.send(sine_pcm(0.2, 24000))
        notice = page.locator("#audio-notice")
        expect(notice).to_have_text("Skipped 2 sentences to catch up with the speaker.")
        expect(notice).to_have_attribute("role", "status")
        expect(page.locator("#ask-panel summary")).to_be_visible()
        place = page.evaluate(NOTICE_PLACE)
        assert place == {"covered": [], "inCaptions": True, "shown": True}, place
        # The phone turned while the notice shows: it follows the captions' new top.
        portrait = page.viewport_size
        assert portrait is not None
        page.set_viewport_size({"width": portrait["height"], "height": portrait["width"]})
        page.wait_for_function(NOTICE_FOLLOWS, timeout=2_000)
        place = page.evaluate(NOTICE_PLACE)  # (a landscape phone's captions may be shorter)
        assert place["covered"] == [] and place["shown"], place
        page.set_viewport_size(portrait)
        page.wait_for_function("() => window.interpAudio.playing")
        expect(page.locator("#audio-status")).to_contain_text("Speaking")
        expect(page.locator("#audio-voice")).to_have_text("Natural voice")
        page.screenshot(path=str(artifacts_dir / "listener-audio.png"))
        page.wait_for_function("() => window.interpAudio.playedSeconds > 1.15", timeout=10_000)
        stats = audio_stats(page)
        assert stats["receivedChunks"] == 3
        assert stats["receivedSeconds"] == pytest.approx(1.2, abs=1e-3)
        assert stats["ignoredChunks"] == 1
        assert stats["underruns"] == 0 and stats["dropped"] == 0
        assert stats["skippedAnnounced"] == 2
        page.wait_for_function("() => !window.interpAudio.playing")
        assert audio_stats(page)["playedSeconds"] == pytest.approx(1.2, abs=0.01)

        # Volume and mute.
        mute = page.get_by_role("button", name="Mute")
        mute.click()
        expect(mute).to_have_attribute("aria-pressed", "true")
        assert audio_stats(page)["muted"] is True
        volume = page.get_by_label("Volume")
        volume.focus()
        for _ in range(12):  # 100 -> 40 in steps of 5, from the keyboard
            volume.press("ArrowLeft")
        assert audio_stats(page)["volume"] == pytest.approx(0.4)
        assert audio_stats(page)["muted"] is False  # moving the volume up unmutes

        # Audio-only mode: the play/pause button fills the screen; captions shrink.
        audio_only = page.get_by_role("button", name="Audio only")
        audio_only.click()
        expect(audio_only).to_have_attribute("aria-pressed", "true")
        expect(page.locator("#listener")).to_have_attribute("data-audio-only", "")
        box = page.locator("#audio-toggle").bounding_box()
        assert box is not None and box["width"] > 200 and box["height"] > 200
        assert page.evaluate("() => document.documentElement.scrollWidth") <= 390
        page.screenshot(path=str(artifacts_dir / "listener-audio-only.png"))

        # Off again: the server is told, the device may sleep.
        page.get_by_role("button", name=re.compile("^Pause")).click()
        page.wait_for_function("() => !window.interpAudio.enabled")
        wait_sent(page, sent, {"type": "audio", "enabled": False}, last=True)
        page.wait_for_function("() => window.interpAudio.context === 'suspended'")

        # Turn it on again before leaving: the choice is remembered, but a new visit waits for
        # a tap (autoplay rules) and connects without audio.
        page.get_by_role("button", name=re.compile("^Listen")).click()
        page.wait_for_function("() => window.interpAudio.context === 'running'")
        page.reload()
        page.wait_for_function("() => window.interpStats.connected")
        assert "audio=0" in urls[-1] and "lang=es" in urls[-1]
        assert audio_stats(page)["context"] == "none"
        expect(page.locator("#audio-toggle-hint")).to_have_text("Tap to resume spoken translation")
        expect(page.locator("#listener")).to_have_attribute("data-audio-only", "")
        expect(page.get_by_label("Volume")).to_have_value("40")
        page.get_by_role("button", name="Audio only").click()
        expect(page.locator("#listener")).not_to_have_attribute("data-audio-only", "")
    finally:
        log.write(artifacts_dir / "listener-audio-console.txt")
        page.context.close()
    assert log.errors == [], f"console errors: {log.errors}"


# ---------------------------------------------------------------- the whole path

SPEECH_SECONDS = SONNET_OCTAVE_S  # the sonnet's octave


def settle(page: Page, quiet_s: float = 6.0, limit_s: float = 90.0) -> dict[str, Any]:
    """window.interpAudio once no chunk has arrived for `quiet_s` and nothing is playing."""
    stats = audio_stats(page)
    quiet = 0.0
    waited = 0.0
    while waited < limit_s:
        page.wait_for_timeout(500)
        waited += 0.5
        now = audio_stats(page)
        same = now["receivedChunks"] == stats["receivedChunks"]
        quiet = quiet + 0.5 if same else 0.0
        stats = now
        if quiet >= quiet_s and not now["playing"]:
            break
    return stats


@pytest.mark.model
@pytest.mark.skipif(shutil.which("apertium") is None, reason="Debian apertium not installed")
@pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="Debian espeak-ng not installed")
def test_real_speech_reaches_the_listener_who_asked(
    listener_browser: Browser, live_server: str, artifacts_dir: Path
) -> None:
    # Spanish (Apertium) spoken by Kokoro (or espeak-ng standing in for a sentence when
    # Kokoro falls behind): only translations are spoken.
    session = create_session(live_server, title="Sonnet, spoken", target_languages=["es"])
    code = session["code"]
    hearing_log, reading_log = ConsoleLog(), ConsoleLog()
    hearing = open_page(listener_browser, hearing_log, **PHONE)
    reading = open_page(listener_browser, reading_log, **PHONE)
    run: dict[str, Any] = {}
    try:
        for page in (hearing, reading):
            page.goto(f"{live_server}/s/{code}?lang=es")
            page.wait_for_function("() => window.interpStats.connected")
        hearing.get_by_role("button", name=re.compile("^Listen")).click()
        hearing.wait_for_function(
            "() => window.interpAudio.enabled && window.interpAudio.context === 'running'"
        )

        pcm, rate = read_wav(SONNET)
        pcm = pcm[: round(SPEECH_SECONDS * rate) * 2]

        def present() -> None:
            try:
                run["result"] = asyncio.run(
                    stream_recording(live_server, pcm, rate, speed=1.0, session=session)
                )
            except BaseException as exc:  # reported below, in the test's thread
                run["error"] = exc

        presenter = threading.Thread(target=present, daemon=True)
        presenter.start()
        hearing.wait_for_function(
            "() => window.interpAudio.receivedChunks > 0",
            timeout=int(SPEECH_SECONDS * 1000) + 30_000,
        )
        hearing.wait_for_function("() => window.interpAudio.playedSeconds > 0.5", timeout=30_000)
        presenter.join(timeout=SPEECH_SECONDS + 120)
        assert not presenter.is_alive(), "the presenter stream did not finish"
        if "error" in run:
            raise run["error"]
        finals = [e for e in run["result"].finals("en") if str(e.get("text", "")).strip()]
        spanish = hearing.evaluate(
            "() => window.interpCaptions.finals('es').map(([segment]) => Number(segment))"
        )
        assert finals, "the recording produced no finals"
        # Speech of the last finals comes after them: wait until it has arrived and played out.
        heard = settle(hearing)
        assert heard["receivedSeconds"] > 2.0, heard
        assert heard["playedSeconds"] > 0.5 and heard["context"] == "running", heard
        # Everything received was played, but what the player dropped to keep up.
        assert heard["playedSeconds"] == pytest.approx(
            heard["receivedSeconds"] - heard["droppedSeconds"], abs=0.25
        ), heard
        expect(hearing.locator("#audio-voice")).to_have_text(re.compile("^(Natural|Fast) voice$"))
        read = audio_stats(reading)
        assert read["receivedChunks"] == 0 and read["playedSeconds"] == 0, read
        assert read["context"] == "none"
        # Every Spanish final shown was spoken (none had to be skipped at real time).
        assert spanish, "no Spanish finals on the page"
        if heard["skippedAnnounced"] == 0:
            assert set(spanish) <= set(heard["spokenSegments"]), (spanish, heard)
        assert hearing.evaluate("() => window.interpStats.captions.final") >= len(finals)
        assert reading.evaluate("() => window.interpStats.captions.final") >= len(finals)
        report = {"hearing": heard, "reading": read, "finals": len(finals), "spanish": spanish}
        (artifacts_dir / "listen-audio-report.json").write_text(json.dumps(report, indent=2) + "\n")

        # The presenter ends the session: both pages close their sockets (the one with audio
        # once its speech has gone quiet), with no error shown.
        ended = httpx.post(
            f"{live_server}/api/sessions/{code}/end",
            headers={"Authorization": f"Bearer {session['presenter_token']}"},
            timeout=10,
        )
        assert ended.status_code < 300, ended.text
        for page in (reading, hearing):
            expect(page.locator("#state")).to_have_attribute("data-state", "ended")
            page.wait_for_function(
                "() => window.interpStats.connection === 'closed'", timeout=20_000
            )
            expect(page.locator("#notice")).to_be_hidden()
        # Nothing is spoken any more, and the audio panel says so (it used to stay "on").
        expect(hearing.locator("#audio-toggle-hint")).to_have_text(
            "Spoken translation has finished"
        )
        expect(hearing.locator("#audio-toggle")).to_be_disabled()
        assert hearing.evaluate("() => window.interpAudio.enabled") is False
    finally:
        hearing_log.write(artifacts_dir / "listener-audio-real-console.txt")
        reading_log.write(artifacts_dir / "listener-audio-off-console.txt")
        hearing.context.close()
        reading.context.close()
    assert hearing_log.errors == [], hearing_log.errors
    assert reading_log.errors == [], reading_log.errors
