"""Spoken translation end to end: real server, real tiny.en, Apertium en->es and Kokoro
Spanish (espeak-ng standing in when Kokoro falls behind); listeners with audio on and off,
and in the source language (never spoken)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
import websockets

from tests.data import ENGLISH, ENGLISH_FLEURS
from tests.support import ServerProcess, create_session, read_wav, stream_recording

pytestmark = [
    pytest.mark.model,
    pytest.mark.skipif(shutil.which("apertium") is None, reason="Debian apertium not installed"),
    pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="Debian espeak-ng not installed"),
]

VOICE_RATES = {"natural": 24000, "fast": 22050}
"""Kokoro's sample rate, and espeak-ng's."""

CLIPS = [ENGLISH_FLEURS, ENGLISH]
"""Two English sentences (FLEURS, LibriSpeech), played with half a second between them."""


@dataclass
class Heard:
    """What one listener socket received: JSON events, and audio headers each paired with
    the binary message that followed it."""

    events: list[dict[str, object]] = field(default_factory=list)
    audio: list[tuple[dict[str, object], bytes]] = field(default_factory=list)
    stray_binary: int = 0

    def finals(self, lang: str) -> dict[int, str]:
        return {
            int(e["segment"]): str(e["text"])  # type: ignore[call-overload]
            for e in self.events
            if e.get("type") == "caption" and e.get("state") == "final" and e.get("lang") == lang
        }

    def covered(self, lang: str) -> dict[int, list[int]]:
        """Translation finals in ``lang`` by segment: the source segments each covers (a
        translation final covers a whole sentence)."""
        return {
            int(e["segment"]): [int(s) for s in e.get("sources") or [e["segment"]]]  # type: ignore[call-overload, attr-defined]
            for e in self.events
            if e.get("type") == "caption"
            and e.get("state") == "final"
            and e.get("lang") == lang
            and e.get("source") is False
        }

    def spoken_segments(self) -> set[int]:
        """The source segments whose translation was spoken to its end."""
        covered: dict[str, dict[int, list[int]]] = {}
        spoken: set[int] = set()
        for header, _ in self.audio:
            if not header["last"]:
                continue
            lang = str(header["lang"])
            table = covered.setdefault(lang, self.covered(lang))
            segment = int(header["segment"])  # type: ignore[call-overload]
            spoken.update(table.get(segment, [segment]))
        return spoken


async def _listen(url: str, heard: Heard, stop: asyncio.Event) -> None:
    header: dict[str, object] | None = None
    async with websockets.connect(url, max_size=2**22) as ws:
        while not stop.is_set():
            try:
                message = await asyncio.wait_for(ws.recv(), 0.3)
            except TimeoutError:
                continue
            if isinstance(message, bytes):
                if header is None:
                    heard.stray_binary += 1
                else:
                    heard.audio.append((header, message))
                header = None
                continue
            event = json.loads(message)
            heard.events.append(event)
            header = event if event.get("type") == "audio" else None


def _recording() -> tuple[bytes, int]:
    parts = []
    rate = 16000
    for clip in CLIPS:
        pcm, rate = read_wav(clip)
        parts.append(pcm + b"\x00\x00" * (rate // 2))
    return b"".join(parts), rate


def _speech_pieces(server: ServerProcess, metric: str = "pieces") -> dict[str, float]:
    text = httpx.get(f"{server.url}/metrics").text
    pattern = rf'^interp_speech_{metric}_total\{{lang="(\w+)"\}} (\S+)$'
    return {m.group(1): float(m.group(2)) for m in re.finditer(pattern, text, re.M)}


@pytest.fixture(scope="module")
def kokoro_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """A server whose Spanish is always Kokoro: the fallback to espeak-ng only for a gap
    no load here can reach, and synthesis at normal priority (a shared test machine's other
    work would otherwise starve it)."""
    proc = ServerProcess(
        tmp_path_factory.mktemp("kokoro-server"),
        env={
            "INTERP_MAX_AUDIO_SPEED": "8",
            "INTERP_SESSION_RATE": "0",
            "INTERP_PACE": "fallback_gap_s=600",
            "INTERP_TTS_NICE": "0",
            "INTERP_TTS_IDLE": "0",
        },
    ).start()
    yield proc
    proc.stop()


def _idle_threads(server: ServerProcess) -> int:
    """Threads of the server process under the SCHED_IDLE policy."""
    assert server.process is not None
    idle = 0
    for task in Path(f"/proc/{server.process.pid}/task").iterdir():
        try:
            idle += os.sched_getscheduler(int(task.name)) == os.SCHED_IDLE
        except ProcessLookupError:  # the thread ended meanwhile
            continue
    return idle


@pytest.mark.skipif(sys.platform != "linux", reason="SCHED_IDLE is Linux's")
async def test_synthesis_threads_run_under_sched_idle_unless_turned_off(
    server: ServerProcess, kokoro_server: ServerProcess
) -> None:
    # The server warms its voices in the tts pool at start: that pool's thread, and the
    # threads Kokoro's onnxruntime session starts from it, run only on idle cores.
    deadline = time.monotonic() + 120
    while _idle_threads(server) == 0 and time.monotonic() < deadline:
        await asyncio.sleep(0.5)
    assert _idle_threads(server) >= 1
    assert server.process is not None
    assert os.sched_getscheduler(server.process.pid) != os.SCHED_IDLE  # the main thread
    assert _idle_threads(kokoro_server) == 0  # INTERP_TTS_IDLE=0


async def test_a_spanish_audio_listener_hears_kokoro(kokoro_server: ServerProcess) -> None:
    session = create_session(kokoro_server.url, target_languages=["es", "ca"])
    facts = httpx.get(f"{kokoro_server.url}/api/sessions/{session['code']}").json()
    assert facts["voices"] == {"es": "natural", "ca": "fast"}
    url = kokoro_server.url.replace("http://", "ws://")
    heard = Heard()
    stop = asyncio.Event()
    task = asyncio.create_task(
        _listen(f"{url}/ws/listen/{session['code']}?lang=es&audio=1", heard, stop)
    )
    await asyncio.sleep(0.8)
    pcm, rate = _recording()
    run = await stream_recording(kokoro_server.url, pcm, rate, speed=1.0, session=session)
    source = {int(e["segment"]) for e in run.finals() if e["source"] and e["text"]}  # type: ignore[call-overload]

    async def last_spoken() -> None:  # a slow voice may skip older sentences, never the last
        while max(source) not in heard.spoken_segments():
            await asyncio.sleep(0.1)

    await asyncio.wait_for(last_spoken(), 240)
    stop.set()
    await task
    finals = heard.finals("es")
    assert heard.audio
    for header, pcm_bytes in heard.audio:
        assert header["voice"] == "natural" and header["sample_rate"] == 24000
        assert len(pcm_bytes) > 0.2 * 24000 * 2
        assert str(header["text"]) in finals[int(header["segment"])]  # type: ignore[call-overload]
    assert _speech_pieces(kokoro_server, "fallback_pieces").get("es", 0) == 0
    assert _speech_pieces(kokoro_server, "stalls").get("es", 0) == 0


async def test_audio_listeners_hear_every_final_and_others_get_none(
    server: ServerProcess,
) -> None:
    session = create_session(server.url, target_languages=["es"])
    base = server.url.replace("http://", "ws://") + f"/ws/listen/{session['code']}"
    spanish_audio, spanish_text, english_audio = Heard(), Heard(), Heard()
    # The English listener hears the presenter: the source language is never synthesised.
    stop = asyncio.Event()
    before = _speech_pieces(server)
    fallback_before = _speech_pieces(server, "fallback_pieces").get("es", 0)
    stalls_before = _speech_pieces(server, "stalls").get("es", 0)
    tasks = [
        asyncio.create_task(_listen(f"{base}?lang=es&audio=1", spanish_audio, stop)),
        asyncio.create_task(_listen(f"{base}?lang=es&audio=0", spanish_text, stop)),
        asyncio.create_task(_listen(f"{base}?lang=en&audio=1", english_audio, stop)),
    ]
    await asyncio.sleep(0.8)
    pcm, rate = _recording()
    run = await stream_recording(server.url, pcm, rate, speed=1.0, session=session)
    source = {int(e["segment"]) for e in run.finals() if e["source"] and e["text"]}  # type: ignore[call-overload]
    assert len(source) >= 2, run.finals()

    async def complete() -> None:
        while not spanish_audio.spoken_segments() >= source:
            await asyncio.sleep(0.1)

    await asyncio.wait_for(complete(), 60)
    await asyncio.sleep(0.5)
    stop.set()
    await asyncio.gather(*tasks)

    assert english_audio.finals("en") and not english_audio.audio
    for heard, lang in ((spanish_audio, "es"),):
        assert heard.stray_binary == 0
        finals = heard.finals(lang)
        covered = heard.covered(lang)
        assert {s for sources in covered.values() for s in sources} >= source
        for header, pcm_bytes in heard.audio:
            assert header["lang"] == lang and header["encoding"] == "pcm_s16le"
            # Kokoro, or espeak-ng standing in for a sentence when Kokoro fell behind.
            assert header["sample_rate"] == VOICE_RATES[str(header["voice"])]
            assert int(header["seq"]) > 0  # type: ignore[call-overload]
            assert len(pcm_bytes) % 2 == 0 and len(pcm_bytes) > 0.2 * int(header["sample_rate"]) * 2  # type: ignore[call-overload]
            assert header["skipped"] == 0  # real time: the voice keeps up without skipping
        # Each final's spoken text is that final, in order.
        for segment in sorted(covered):
            said = " ".join(str(h["text"]) for h, _ in heard.audio if h["segment"] == segment)
            assert said.split() == finals[segment].split()
    # The listener with audio off got captions only: no header, no binary.
    assert spanish_text.finals("es") == spanish_audio.finals("es")
    assert not spanish_text.audio and spanish_text.stray_binary == 0
    assert not any(e.get("type") == "audio" for e in spanish_text.events)
    # Spoken once per language, not once per listener.
    after = _speech_pieces(server)
    assert after["es"] - before.get("es", 0) == len(spanish_audio.audio)
    fast = [h for h, _ in spanish_audio.audio if h["voice"] == "fast"]
    assert _speech_pieces(server, "fallback_pieces")["es"] - fallback_before == len(fast)
    # A natural call given up on has its piece spoken by the fallback: never more stalls.
    assert 0 <= _speech_pieces(server, "stalls")["es"] - stalls_before <= len(fast)
    assert after.get("en", 0) == before.get("en", 0)
    metrics = httpx.get(f"{server.url}/metrics").text
    assert 'interp_first_audio_seconds_count{lang="es"}' in metrics


async def test_nothing_is_spoken_when_no_listener_has_audio_on(server: ServerProcess) -> None:
    session = create_session(server.url, target_languages=["es"])
    url = server.url.replace("http://", "ws://") + f"/ws/listen/{session['code']}?lang=es"
    heard = Heard()
    stop = asyncio.Event()
    before = _speech_pieces(server)
    task = asyncio.create_task(_listen(url, heard, stop))
    await asyncio.sleep(0.5)
    pcm, rate = read_wav(CLIPS[1])
    await stream_recording(server.url, pcm, rate, speed=4.0, session=session)
    await asyncio.sleep(1.0)
    stop.set()
    await task
    assert heard.finals("es"), "the listener got no Spanish finals"
    assert not heard.audio
    assert _speech_pieces(server) == before


async def test_audio_can_be_switched_on_without_reconnecting(server: ServerProcess) -> None:
    session = create_session(server.url, target_languages=["es"])
    url = server.url.replace("http://", "ws://") + f"/ws/listen/{session['code']}?lang=es"
    async with websockets.connect(url, max_size=2**22) as ws:
        await ws.send(json.dumps({"type": "audio", "enabled": True}))
        await asyncio.sleep(0.3)
        pcm, rate = read_wav(CLIPS[1])
        streamer = asyncio.create_task(
            stream_recording(server.url, pcm, rate, speed=2.0, session=session)
        )
        got_header = got_binary = False
        async with asyncio.timeout(60):
            while not (got_header and got_binary):
                message = await ws.recv()
                if isinstance(message, bytes):
                    got_binary = got_header
                elif json.loads(message).get("type") == "audio":
                    got_header = True
        await streamer
        await ws.send(json.dumps({"type": "audio", "enabled": "yes"}))
        with pytest.raises(websockets.ConnectionClosed) as closed:
            while True:
                await ws.recv()
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1003


async def test_bad_audio_parameter_is_refused(server: ServerProcess) -> None:
    session = create_session(server.url)
    url = server.url.replace("http://", "ws://") + f"/ws/listen/{session['code']}?audio=yes"
    async with websockets.connect(url) as ws:
        with pytest.raises(websockets.ConnectionClosed) as closed:
            await ws.recv()
    assert closed.value.rcvd is not None
    assert closed.value.rcvd.code == 1003 and "audio" in closed.value.rcvd.reason
