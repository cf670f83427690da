"""Faults: the server killed mid-session loses no final it sent, and hundreds of clients
coming and going leak neither listeners, streams nor memory."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import psutil  # type: ignore[import-untyped]
import pytest
import uvicorn
import websockets
from websockets.exceptions import ConnectionClosed

from app.main import create_app
from app.services import RecognitionModel
from app.settings import Settings
from engine.audio import Samples
from engine.events import Word
from engine.recognition.asr import Decoded, DecodeOptions
from engine.stream import StreamLimits
from tests.data import SONNET
from tests.support import (
    ServerProcess,
    create_session,
    free_port,
    read_wav,
    stream_recording,
)

pytestmark = pytest.mark.model


def ws_url(base: str, path: str) -> str:
    return base.replace("http://", "ws://") + path


def start_message(token: str) -> str:
    return json.dumps({"type": "start", "token": token, "sample_rate": 16000})


async def test_kill_9_mid_session_keeps_every_final_sent(tmp_path: Path) -> None:
    env = {"INTERP_MAX_AUDIO_SPEED": "8", "INTERP_MULTILINGUAL": "0"}
    server = ServerProcess(tmp_path, env=env).start()
    try:
        session = create_session(server.url)
        pcm, rate = read_wav(SONNET)
        finals: list[dict[str, object]] = []
        two_finals = asyncio.Event()
        async with websockets.connect(ws_url(server.url, f"/ws/present/{session['code']}")) as ws:
            await ws.send(start_message(session["presenter_token"]))
            assert json.loads(await ws.recv())["type"] == "ready"

            async def receive() -> None:
                async for message in ws:
                    event = json.loads(message)
                    if event.get("type") == "caption" and event.get("state") == "final":
                        finals.append(event)
                        if len(finals) >= 2:
                            two_finals.set()

            receiver = asyncio.create_task(receive())
            step = rate // 10 * 2
            for offset in range(0, len(pcm), step):
                if two_finals.is_set():
                    break
                await ws.send(pcm[offset : offset + step])
                await asyncio.sleep(0.1 / 4)  # 4x real time
            await asyncio.wait_for(two_finals.wait(), 120)
            server.stop(kill=True)
            with pytest.raises(ConnectionClosed):
                await asyncio.wait_for(receiver, 30)
                raise AssertionError("the socket should drop with the server")  # pragma: no cover
        received = list(finals)
        assert len(received) >= 2
        server.start()
        stored = httpx.get(
            f"{server.url}/api/sessions/{session['code']}/transcript?format=json", timeout=10
        ).json()
        by_segment = {item["segment"]: item["text"] for item in stored}
        for final in received:
            assert by_segment.get(final["segment"]) == final["text"], (final, stored)
    finally:
        server.stop()


def gauge(metrics: str, name: str) -> float:
    match = re.search(rf"^{re.escape(name)} ([0-9.e+-]+)$", metrics, re.MULTILINE)
    assert match, name
    return float(match.group(1))


@pytest.fixture
def quiet_server(tmp_path: Path) -> Iterator[ServerProcess]:
    """A server of its own with no spoken translation: its voices warm in the background
    after it is ready (Kokoro alone adds about 110 MB), which would read as a leak here."""
    env = {"INTERP_MAX_AUDIO_SPEED": "8", "INTERP_SESSION_RATE": "0", "INTERP_SPEECH": "0"}
    server = ServerProcess(tmp_path, env=env).start()
    yield server
    server.stop()


async def test_connect_disconnect_cycles_leak_nothing(quiet_server: ServerProcess) -> None:
    server = quiet_server
    session = create_session(server.url)
    present = ws_url(server.url, f"/ws/present/{session['code']}")
    listen = ws_url(server.url, f"/ws/listen/{session['code']}")
    process = psutil.Process(server.process.pid)  # type: ignore[union-attr]
    silence = bytes(3200)  # 0.1 s
    rss_at_50 = 0
    refused = 0
    for cycle in range(1, 201):
        # A stream whose presenter vanished is finalised in the background; starting the
        # next one meanwhile is refused with 1013, and a real client backs off and retries.
        for _attempt in range(100):
            async with websockets.connect(present) as ws:
                await ws.send(start_message(session["presenter_token"]))
                try:
                    first = json.loads(await ws.recv())
                except ConnectionClosed:
                    assert ws.close_code == 1013, (ws.close_code, ws.close_reason)
                    assert "already live on another device" in (ws.close_reason or "")
                    refused += 1
                    await asyncio.sleep(0.02)
                    continue
                assert first["type"] == "ready", first
                await ws.send(silence)
                if cycle % 2 == 0:  # half stop cleanly, half vanish mid-stream
                    await ws.send(json.dumps({"type": "stop"}))
                    async for _ in ws:
                        pass
                    assert ws.close_code == 1000
                break
        else:
            raise AssertionError(f"cycle {cycle}: the previous stream never finished")
        async with websockets.connect(listen) as listener:
            await listener.send(json.dumps({"type": "ping"}))
        if cycle == 50:
            rss_at_50 = process.memory_info().rss
    # The last vanished stream finishes in the background; a clean stream start proves no
    # stream is left open in the session (else 1013: "already live on another device").
    async with websockets.connect(present) as ws:
        await ws.send(start_message(session["presenter_token"]))
        assert json.loads(await ws.recv())["type"] == "ready"
        await ws.send(json.dumps({"type": "stop"}))
        async for _ in ws:
            pass
        assert ws.close_code == 1000
    rss_at_200 = process.memory_info().rss
    metrics = httpx.get(f"{server.url}/metrics", timeout=10).text
    assert gauge(metrics, "interp_listeners") == 0
    assert gauge(metrics, "interp_lag_seconds") == 0
    growth_mb = (rss_at_200 - rss_at_50) / 2**20
    assert growth_mb < 30, (growth_mb, refused)


class FailingOnceTranscriber:
    """A fake recogniser (this test is about the session, not the model): every speech
    window reads "hello"; the first call after warming raises."""

    name = "fake"
    multilingual = False

    def __init__(self) -> None:
        self.calls = 0
        self.lock = threading.Lock()

    def transcribe(self, audio: Samples, options: DecodeOptions) -> Decoded:
        with self.lock:
            self.calls += 1
            if self.calls == 1:
                raise RuntimeError("model crashed (injected)")
        return Decoded((Word("hello", 0.0, max(0.1, len(audio) / 16000)),))


async def test_a_model_failure_is_reported_and_the_session_carries_on(tmp_path: Path) -> None:
    fake = FailingOnceTranscriber()
    settings = Settings(
        data_dir=tmp_path,
        port=free_port(),
        asr_models={"en": "fake"},
        load_multilingual=False,
        apertium=False,
        whisper_translate=False,
        warm_models=False,
        limits=StreamLimits(max_speed=8.0),
    )
    app = create_app(settings, transcriber_factory=lambda spec, s: RecognitionModel(fake))
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=settings.port, log_level="warning")
    )
    thread = threading.Thread(target=server.run, name="in-process-server")
    thread.start()
    base = f"http://127.0.0.1:{settings.port}"
    try:
        async with httpx.AsyncClient(base_url=base, timeout=5) as client:
            for _ in range(400):  # startup: the thread has no event to wait on
                with contextlib.suppress(httpx.HTTPError):
                    if (await client.get("/readyz")).status_code == 200:
                        break
                await asyncio.sleep(0.05)
        pcm, rate = read_wav(SONNET)
        piece = pcm[: rate * 20 * 2]
        runs = await asyncio.gather(
            stream_recording(base, piece, rate, speed=4.0),
            stream_recording(base, piece, rate, speed=4.0),
        )
    finally:
        server.should_exit = True
        await asyncio.to_thread(thread.join, 60)
    errors = [[e for e in run.events if e.get("type") == "error"] for run in runs]
    assert sorted(len(e) for e in errors) == [0, 1], errors  # one failure, one session
    failed = runs[0] if errors[0] else runs[1]
    (error,) = errors[0] or errors[1]
    assert "recognition failed" in str(error["message"])
    # The failing session still gets finals after its error; the other is unaffected.
    later = [e for e in failed.finals() if int(e["seq"]) > int(error["seq"])]  # type: ignore[call-overload]
    assert later and all(e["text"] for e in later), failed.events
    for run in runs:
        assert run.close_code == 1000 and run.finals()
