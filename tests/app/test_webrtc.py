"""WebRTC (aiortc) signaling, presenter ingest and spoken translation to listeners.

Three kinds of test:
- units: ICE settings, the outgoing :class:`SpeechTrack` fed from a hub;
- an in-process server with a fake recogniser (fast, no Whisper): bad offers get clear 4xx
  errors, a receive-only listener hears SpeechAudio published into the hub, a presenter's
  stream is finalised when its connection closes;
- the real server and models (``model``): a real recording over WebRTC meets the WebSocket
  path's WER bound; a listener's spoken translation transcribes back to the translation.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path

import av
import httpx
import jiwer
import numpy as np
import pytest
from aiortc.mediastreams import MediaStreamError, MediaStreamTrack

from app.ice import IceServer, parse_ice_servers
from app.settings import Settings
from app.webrtc_media import FRAME_SAMPLES, OUT_RATE, SpeechTrack
from bench.recordings import load_recording
from bench.webrtc_replay import PcmTrack, connect, new_peer, post_offer, present_webrtc
from engine.delivery.memory import InMemoryHub
from engine.events import SpeechAudio
from tests.app.inprocess import http, in_process_server, new_session
from tests.data import ENGLISH, SONNET, SPANISH, reference
from tests.support import (
    ServerProcess,
    create_session,
    normalise_for_wer,
    read_wav,
)


def speech(seconds: float, rate: int) -> bytes:
    """The first ``seconds`` of a real recording at ``rate`` (the VAD must hear speech: a
    tone scores under its threshold)."""
    pcm, source_rate = read_wav(ENGLISH)
    samples = np.frombuffer(pcm, dtype="<i2")[: int(seconds * source_rate)].astype(np.float64)
    times = np.arange(int(seconds * rate)) / rate
    resampled = np.interp(times, np.arange(samples.size) / source_rate, samples)
    return resampled.astype("<i2").tobytes()


def tone(seconds: float, rate: int, freq: float = 440.0, level: float = 0.3) -> bytes:
    t = np.arange(int(seconds * rate)) / rate
    return (np.sin(2 * np.pi * freq * t) * level * 32767).astype("<i2").tobytes()


def rms(frame_pcm: np.ndarray) -> float:
    return float(np.sqrt(np.mean(frame_pcm.astype(np.float64) ** 2)))


# ---------------------------------------------------------------- units


def test_ice_servers_from_urls_or_json() -> None:
    assert parse_ice_servers("") == ()
    assert parse_ice_servers("stun:a.example:3478, stun:b.example") == (
        IceServer(("stun:a.example:3478",)),
        IceServer(("stun:b.example",)),
    )
    turn = '[{"urls": ["turn:t.example:3478"], "username": "u", "credential": "p"}]'
    (server,) = parse_ice_servers(turn)
    assert server.as_json() == {"urls": ["turn:t.example:3478"], "username": "u", "credential": "p"}
    for bad in ("http://x", '[{"urls": "turn:t.example"}]', "[1]"):
        with pytest.raises(ValueError):
            parse_ice_servers(bad)
    settings = Settings.from_env({"INTERP_ICE_SERVERS": "stun:a.example"})
    assert settings.ice_servers == (IceServer(("stun:a.example",)),)
    assert Settings().ice_servers == ()  # no public servers by default


async def test_speech_track_plays_published_audio_paced_then_silence() -> None:
    hub = InMemoryHub()
    hub.open("ABCDEF")
    sub = hub.subscribe("ABCDEF", frozenset({"es"}), 0, audio=True)
    track = SpeechTrack(sub, "es")
    track.start()
    for lang in ("fr", "es"):  # another language's speech is not this listener's
        event = SpeechAudio(0, lang, 22050, tone(0.3, 22050))
        await hub.emit("ABCDEF", event)
    await asyncio.sleep(0.05)
    loop = asyncio.get_running_loop()
    began = loop.time()
    frames = [await track.recv() for _ in range(30)]
    elapsed = loop.time() - began
    track.stop()
    assert 0.5 <= elapsed <= 0.9, elapsed  # 29 frames after the first, 20 ms apart
    assert track.sentences == 1
    assert [f.pts for f in frames] == [i * FRAME_SAMPLES for i in range(30)]
    pcm = [f.to_ndarray().reshape(-1) for f in frames]
    assert all(
        f.sample_rate == OUT_RATE and p.size == FRAME_SAMPLES
        for f, p in zip(frames, pcm, strict=True)
    )
    loud = [rms(p) > 1000 for p in pcm]
    # 0.3 s of tone = 15 frames (give or take the resampler's edges), then silence.
    assert all(loud[1:14]) and not any(loud[17:]), loud
    with pytest.raises(MediaStreamError):
        await track.recv()


# ---------------------------------------------------------------- in-process server


async def offer_sdp(*, send: bool = True, channel: bool = False) -> str:
    """A real aiortc offer: sending a tone track, or receive-only audio."""
    pc = new_peer()
    if send:
        pc.addTransceiver(PcmTrack(tone(1.0, 16000), 16000), direction="sendonly")
    else:
        pc.addTransceiver("audio", direction="recvonly")
    if channel:
        pc.createDataChannel("control")
    await pc.setLocalDescription(await pc.createOffer())
    text = pc.localDescription.sdp
    await pc.close()
    return text


async def test_bad_offers_get_clear_4xx_errors(tmp_path: Path) -> None:
    async with in_process_server(tmp_path) as server:
        session = await new_session(server.url)
        code, token = session["code"], session["presenter_token"]
        sending, receiving = await offer_sdp(send=True), await offer_sdp(send=False)
        good: dict[str, object] = {
            "sdp": sending,
            "type": "offer",
            "role": "present",
            "token": token,
        }
        cases: list[tuple[str, str, dict[str, object], int]] = [
            ("malformed SDP", code, {**good, "sdp": "hello"}, 400),
            ("SDP without media", code, {**good, "sdp": "v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\n"}, 400),
            (
                "SDP that aiortc refuses",
                code,
                {**good, "sdp": "v=0\r\nm=audio 9 RTP/AVP 0\r\n"},
                400,
            ),
            ("not an offer", code, {**good, "type": "answer"}, 400),
            ("bad role", code, {**good, "role": "dance"}, 400),
            ("unknown session", "ZZZZZZ", good, 404),
            ("no token", code, {**good, "token": None}, 401),
            ("wrong token", code, {**good, "token": "x" * 43}, 403),
            ("present without audio", code, {**good, "sdp": receiving}, 400),
            ("listen: bad lang", code, {**good, "role": "listen", "lang": "xx"}, 400),
            ("listen: no lang", code, {**good, "role": "listen"}, 400),
            ("listen: sends only", code, {**good, "role": "listen", "lang": "en"}, 400),
        ]
        for name, target, body, status in cases:
            response = await post_offer(server.url, target, body)
            assert response.status_code == status, (name, response.text)
            assert response.json()["error"], name
        cross = await http(
            "POST",
            f"{server.url}/api/sessions/{code}/webrtc/offer",
            json=good,
            headers={"Origin": "https://evil.example"},
        )
        assert cross.status_code == 403
        # A second live stream in the same session is refused like the WebSocket's 1013.
        first = await post_offer(server.url, code, good)
        assert first.status_code == 200 and first.json()["type"] == "answer"
        assert "a=candidate" in first.json()["sdp"]
        second = await post_offer(server.url, code, good)
        assert second.status_code == 409, second.text
        # The same, for an offer aiortc cannot close cleanly after reading it (its data
        # channel section names no mid).
        with_channel = await offer_sdp(send=True, channel=True)
        no_mid = "\r\n".join(line for line in with_channel.split("\r\n") if line != "a=mid:0")
        assert no_mid != with_channel
        third = await post_offer(server.url, code, {**good, "sdp": no_mid})
        assert third.status_code == 409, third.text
        # An ended session refuses every offer, and its peers are closed.
        ended = await http(
            "POST",
            f"{server.url}/api/sessions/{code}/end",
            headers={"Authorization": f"Bearer {token}"},
        )
        assert ended.status_code == 200
        gone = await post_offer(server.url, code, {**good, "role": "listen", "lang": "en"})
        assert gone.status_code == 410, gone.text
        for _ in range(50):
            if len(server.state["peers"]) == 0:
                break
            await asyncio.sleep(0.1)
        assert len(server.state["peers"]) == 0
        config = (await http("GET", f"{server.url}/api/webrtc/config")).json()
        assert config == {"iceServers": []}


async def test_presenter_stream_is_finalised_when_the_connection_closes(tmp_path: Path) -> None:
    async with in_process_server(tmp_path) as server:
        session = await new_session(server.url)
        pc = new_peer()
        track = PcmTrack(speech(3.0, 48000), 48000)  # any rate: the server resamples
        pc.addTrack(track)
        await connect(
            pc, server.url, session["code"], role="present", token=session["presenter_token"]
        )
        await asyncio.wait_for(track.done.wait(), 20)
        await pc.close()  # no data channel, no stop: closing must finalise
        services = server.state["services"]
        live = await services.engine().registry.get(session["code"])
        for _ in range(100):  # the stream ends, then its translations drain, then: paused
            if not live.live and live.state == "paused":
                break
            await asyncio.sleep(0.1)
        assert live.streams and not live.live
        assert live.state == "paused"
        assert 2.5 < live.audio_time < 4.5, live.audio_time  # all 3 s (+ silence) was fed
        transcript = (
            await http("GET", f"{server.url}/api/sessions/{session['code']}/transcript")
        ).text
        assert "hello" in transcript.lower()
        for _ in range(50):
            if len(server.state["peers"]) == 0:
                break
            await asyncio.sleep(0.1)
        assert len(server.state["peers"]) == 0
        # The session takes a new stream afterwards (over the WebSocket or WebRTC).
        again = new_peer()
        again.addTrack(PcmTrack(tone(0.5, 16000), 16000))
        await connect(
            again, server.url, session["code"], role="present", token=session["presenter_token"]
        )
        await again.close()


async def test_listeners_at_their_limit_keep_no_presenter_from_starting(tmp_path: Path) -> None:
    """Listeners' peers are limited per process (a listener's offer needs no token on a
    public session); a presenter's is not counted against that limit, and a listener who
    leaves frees a place."""
    async with in_process_server(tmp_path, max_webrtc_listeners=1) as server:
        session = await new_session(server.url)
        code = session["code"]
        listener = new_peer()
        listener.addTransceiver("audio", direction="recvonly")
        await connect(listener, server.url, code, role="listen", lang="en")
        extra = new_peer()
        extra.addTransceiver("audio", direction="recvonly")
        await extra.setLocalDescription(await extra.createOffer())
        offer = {"sdp": extra.localDescription.sdp, "type": "offer", "role": "listen"}
        refused = await post_offer(server.url, code, {**offer, "lang": "en"})
        assert refused.status_code == 503, refused.text
        assert "limit of WebRTC listeners" in refused.json()["error"]
        await extra.close()

        presenter = new_peer()
        presenter.addTrack(PcmTrack(tone(0.5, 16000), 16000))
        await connect(presenter, server.url, code, role="present", token=session["presenter_token"])
        await presenter.close()

        await listener.close()
        for _ in range(50):
            if len(server.state["peers"]) == 0:
                break
            await asyncio.sleep(0.1)
        again = new_peer()
        again.addTransceiver("audio", direction="recvonly")
        await connect(again, server.url, code, role="listen", lang="en")
        await again.close()


async def test_a_panel_speaker_streams_over_webrtc_with_their_own_token(tmp_path: Path) -> None:
    """As on the presenter socket: a speaker's token opens a stream, labelled with the
    speaker; an editor's does not (403)."""
    async with in_process_server(tmp_path) as server:
        session = await new_session(server.url)
        code = session["code"]
        auth = {"Authorization": f"Bearer {session['presenter_token']}"}
        api = f"{server.url}/api/sessions/{code}"
        ana = (await http("POST", f"{api}/speakers", json={"name": "Ana"}, headers=auth)).json()
        editor = (await http("POST", f"{api}/editors", headers=auth)).json()["editor_token"]
        sdp = await offer_sdp(send=True)
        refused = await post_offer(
            server.url, code, {"sdp": sdp, "type": "offer", "role": "present", "token": editor}
        )
        assert refused.status_code == 403
        pc = new_peer()
        track = PcmTrack(speech(3.0, 16000), 16000)
        pc.addTrack(track)
        await connect(pc, server.url, code, role="present", token=ana["token"])
        await asyncio.wait_for(track.done.wait(), 20)
        await pc.close()
        live = await server.state["services"].engine().registry.get(code)
        for _ in range(100):
            if live.streams and not live.live:
                break
            await asyncio.sleep(0.1)
        transcript = (await http("GET", f"{api}/transcript")).text
        assert "Ana" in transcript and "hello" in transcript.lower(), transcript


async def test_shutdown_finalises_a_live_webrtc_stream(tmp_path: Path) -> None:
    from engine.store.sqlite import SqliteSessionStore

    async with in_process_server(tmp_path) as server:
        session = await new_session(server.url)
        pc = new_peer()
        track = PcmTrack(speech(2.0, 16000), 16000)
        pc.addTrack(track)
        await connect(
            pc, server.url, session["code"], role="present", token=session["presenter_token"]
        )
        await asyncio.wait_for(track.done.wait(), 20)
        # Leaving the block stops the server with the peer still connected.
    await pc.close()
    store = SqliteSessionStore(tmp_path / "sessions.sqlite3")
    try:
        finals = store.finals(session["code"], "en")
    finally:
        store.close()
    assert finals and "hello" in " ".join(c.text for c in finals).lower()


class Collector:
    """Receives a remote audio track into 48 kHz mono samples."""

    def __init__(self) -> None:
        self.samples: list[np.ndarray] = []
        self.task: asyncio.Task[None] | None = None

    def take(self, track: MediaStreamTrack) -> None:
        self.task = asyncio.create_task(self._read(track))

    async def _read(self, track: MediaStreamTrack) -> None:
        with contextlib.suppress(MediaStreamError):
            while True:
                frame = await track.recv()
                assert isinstance(frame, av.AudioFrame)
                data = frame.to_ndarray().reshape(-1, len(frame.layout.channels))
                self.samples.append(data[:, 0].copy())

    def audio(self) -> np.ndarray:
        return np.concatenate(self.samples) if self.samples else np.zeros(0, dtype="<i2")


async def test_receive_only_listener_hears_speech_published_to_the_hub(tmp_path: Path) -> None:
    async with in_process_server(tmp_path) as server:
        session = await new_session(server.url)
        code = session["code"]
        pc = new_peer()
        pc.addTransceiver("audio", direction="recvonly")
        heard = Collector()
        pc.on("track", heard.take)
        facts_before = (await http("GET", f"{server.url}/api/sessions/{code}")).json()
        await connect(pc, server.url, code, role="listen", lang="en")
        for _ in range(100):
            if pc.connectionState == "connected" and heard.samples:
                break
            await asyncio.sleep(0.05)
        assert pc.connectionState == "connected"
        services = server.state["services"]
        assert services.hub.listener_count(code) == facts_before["listeners"] + 1
        assert "en" in services.hub.wanted_speech(code)
        await asyncio.sleep(0.5)
        silent_until = len(heard.audio())
        event = SpeechAudio(0, "en", 22050, tone(1.0, 22050, 440.0))
        await services.hub.emit(code, event)
        await asyncio.sleep(2.0)
        audio = heard.audio()
        assert rms(audio[:silent_until]) < 300  # silence between sentences
        after = audio[silent_until:]
        frame = 960
        loud = [rms(after[i : i + frame]) > 2000 for i in range(0, len(after) - frame, frame)]
        # About 1 s of tone (50 frames of 20 ms, give or take Opus and jitter), then silence.
        assert 40 <= sum(loud) <= 60, sum(loud)
        segment = after[:48000].astype(np.float64)
        peak_hz = np.argmax(np.abs(np.fft.rfft(segment))) * OUT_RATE / len(segment)
        assert abs(peak_hz - 440) < 10, peak_hz  # the same pitch
        # Leaving unsubscribes: the audience shrinks back.
        await pc.close()
        for _ in range(100):
            if services.hub.listener_count(code) == facts_before["listeners"]:
                break
            await asyncio.sleep(0.05)
        assert services.hub.listener_count(code) == facts_before["listeners"]
        if heard.task is not None:
            await asyncio.wait_for(heard.task, 5)


# ---------------------------------------------------------------- real server and models


@pytest.mark.model
async def test_real_recording_over_webrtc_meets_the_websocket_wer_bound(
    server: ServerProcess,
) -> None:
    recording = load_recording(SONNET)
    session = create_session(server.url)
    replay = await present_webrtc(server.url, session, recording)
    finals = [
        r.message
        for r in replay.received
        if r.message.get("type") == "caption"
        and r.message.get("state") == "final"
        and r.message.get("source")
    ]
    kinds = {r.message.get("state") for r in replay.received if r.message.get("type") == "caption"}
    assert kinds == {"draft", "final"}
    text = " ".join(str(m["text"]) for m in finals)
    # The bound of tests/app/test_present_ws.py (tiny.en offline scores 0.146 on this file).
    wer = jiwer.wer(normalise_for_wer(reference(SONNET)), normalise_for_wer(text))
    assert wer < 0.25, (wer, text)
    assert replay.received[-1].message == {"type": "ended"}
    stored = httpx.get(f"{server.url}/api/sessions/{session['code']}/transcript").text
    assert normalise_for_wer(stored) == normalise_for_wer(text)


@pytest.mark.model
async def test_listener_hears_a_final_translation_that_transcribes_back(
    server: ServerProcess,
) -> None:
    """A Spanish talk translated into English: a receive-only aiortc listener of English gets
    the spoken translation (the bundled Piper voice) over WebRTC, and that audio, recognised by
    the same server, gives back the words of the English finals."""
    session = create_session(server.url, source_language="es", target_languages=["en"])
    code = session["code"]
    pc = new_peer()
    pc.addTransceiver("audio", direction="recvonly")
    heard = Collector()
    pc.on("track", heard.take)
    await connect(pc, server.url, code, role="listen", lang="en")
    captions: list[dict[str, object]] = []
    follower = asyncio.create_task(_follow(server.url, code, "en", captions))
    pcm, rate = read_wav(SPANISH)
    await _present(server.url, session, pcm, rate, "es", speed=2.0)
    await asyncio.sleep(2.0)  # the last translation follows the source's final
    spoken = [c for c in captions if c.get("lang") == "en" and c.get("state") == "final"]
    assert spoken, captions
    translation = " ".join(str(c["text"]) for c in spoken)
    words = len(translation.split())
    # The voice speaks in real time, after the text; on a loaded machine it may start late.
    audio = await _heard_until_quiet(heard, at_least_s=4.0 + words / 2.5)
    follower.cancel()
    await pc.close()
    loud = audio[np.abs(audio) > 500]
    assert loud.size > 48000 * 0.5, "no speech reached the listener"
    # Recognised in real time: faster, the recogniser falls behind and sheds its context
    # (docs/metrics.md, "Degradation"), and the words it gets back vary from run to run.
    finals = await _present(
        server.url,
        create_session(server.url),
        audio.astype("<i2").tobytes(),
        48000,
        "en",
        speed=1.0,
    )
    text = " ".join(finals)
    expected = normalise_for_wer(translation).split()
    got = set(normalise_for_wer(text).split())
    overlap = sum(w in got for w in expected) / max(1, len(expected))
    assert overlap >= 0.7, (text, translation)


async def _heard_until_quiet(
    heard: Collector, at_least_s: float, quiet_s: float = 3.0, timeout_s: float = 120.0
) -> np.ndarray:
    """What ``heard`` received once ``at_least_s`` have passed and, after some speech, its
    last ``quiet_s`` were silent (the voice has finished), or at ``timeout_s``."""
    loop = asyncio.get_running_loop()
    started = loop.time()
    quiet = int(OUT_RATE * quiet_s)
    while True:
        audio = heard.audio()
        tail = audio[-quiet:]
        spoke = audio.size > quiet and bool(np.any(np.abs(audio[:-quiet]) > 500))
        done = spoke and tail.size == quiet and not np.any(np.abs(tail) > 500)
        elapsed = loop.time() - started
        if (done and elapsed >= at_least_s) or elapsed >= timeout_s:
            return audio
        await asyncio.sleep(0.5)


async def _follow(url: str, code: str, lang: str, into: list[dict[str, object]]) -> None:
    import websockets

    ws_url = url.replace("http://", "ws://") + f"/ws/listen/{code}?lang={lang}"
    async with websockets.connect(ws_url) as ws:
        async for message in ws:
            if isinstance(message, str):
                into.append(json.loads(message))


async def _present(
    url: str, session: dict[str, str], pcm: bytes, rate: int, language: str, speed: float = 4.0
) -> list[str]:
    """Stream ``pcm`` spoken in ``language`` to the presenter socket; the source finals."""
    import websockets

    ws_url = url.replace("http://", "ws://") + f"/ws/present/{session['code']}"
    finals: list[str] = []
    async with websockets.connect(ws_url, max_size=2**22) as ws:
        start = {"type": "start", "token": session["presenter_token"], "sample_rate": rate}
        await ws.send(json.dumps({**start, "encoding": "pcm_s16le", "language": language}))
        assert json.loads(await ws.recv())["type"] == "ready"
        step = rate * 2 // 10
        for offset in range(0, len(pcm), step):
            await ws.send(pcm[offset : offset + step])
            await asyncio.sleep(0.1 / speed)
        await ws.send(json.dumps({"type": "stop"}))
        async for message in ws:
            event = json.loads(message)
            if event.get("type") == "caption" and event.get("state") == "final":
                if event.get("source"):
                    finals.append(str(event["text"]))
    return finals


async def test_the_data_channel_answers_pings_and_bad_messages_and_the_stream_goes_on(
    tmp_path: Path,
) -> None:
    """A ping gets a pong (the console tells a dead path by the pongs that stop coming); text
    that is not JSON, or JSON nested past the decoder, gets an ``error`` message on the data
    channel; the stream still ends with ``ended`` when asked to stop."""
    async with in_process_server(tmp_path) as server:
        session = await new_session(server.url)
        pc = new_peer()
        track = PcmTrack(speech(2.0, 16000), 16000)
        pc.addTrack(track)
        channel = pc.createDataChannel("control")
        kinds: list[str] = []
        ready, ended = asyncio.Event(), asyncio.Event()

        @channel.on("message")
        def on_message(raw: object) -> None:
            kind = json.loads(str(raw)).get("type")
            kinds.append(kind)
            {"ready": ready, "ended": ended}.get(kind, asyncio.Event()).set()

        await connect(
            pc, server.url, session["code"], role="present", token=session["presenter_token"]
        )
        try:
            await asyncio.wait_for(ready.wait(), 20)
            for bad in ("{nope", "[" * 20000 + "]" * 20000):
                channel.send(bad)
            for _ in range(100):
                if kinds.count("error") == 2:
                    break
                await asyncio.sleep(0.1)
            assert kinds.count("error") == 2, kinds
            channel.send(json.dumps({"type": "ping"}))
            for _ in range(100):
                if "pong" in kinds:
                    break
                await asyncio.sleep(0.1)
            assert kinds.count("pong") == 1, kinds
            await asyncio.wait_for(track.done.wait(), 20)
            channel.send(json.dumps({"type": "stop"}))
            await asyncio.wait_for(ended.wait(), 30)
        finally:
            await pc.close()
