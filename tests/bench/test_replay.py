"""The bench's replay client against a small scripted presenter endpoint defined here.

The endpoint follows docs/protocol.md closely enough to check the client's side: session
creation, start/ready, pacing, stop/ended, recording of every message, and refusal handling.
It is a fake of the server, so these tests are about the client only.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket

from bench.metrics import SendSchedule
from bench.recordings import Recording
from bench.replay import ReplayError, replay, split_chunks

TOKEN = "secret-token"
WORDS_PER_SECOND = 2


def session_endpoint(issued_token: str) -> Route:
    """``POST /api/sessions`` that hands out ``issued_token`` (the socket accepts only TOKEN)."""

    async def create_session(request: Request) -> JSONResponse:
        body = await request.json()
        assert body == {"title": body["title"], "source_language": "en", "target_languages": []}
        return JSONResponse(
            {
                "id": "s1",
                "code": "ABC234",
                "presenter_token": issued_token,
                "present_url": f"/p/ABC234#token={issued_token}",
                "listen_url": "/s/ABC234",
            },
            status_code=201,
        )

    return Route("/api/sessions", create_session, methods=["POST"])


async def present(ws: WebSocket) -> None:
    """Emit a draft of segment 0 with one more word per half second of audio received, and
    on stop its final, then ``ended``."""
    await ws.accept()
    start = await ws.receive_json()
    if start.get("type") != "start" or start.get("token") != TOKEN:
        await ws.close(1008, "bad token")
        return
    await ws.send_json({"type": "ready", "sample_rate": 16000})
    samples, seq, words = 0, 0, 0
    while True:
        message = await ws.receive()
        if message.get("bytes") is not None:
            samples += len(message["bytes"]) // 2
            if samples // (16000 // WORDS_PER_SECOND) > words:
                words += 1
                seq += 1
                text = " ".join(f"word{i}" for i in range(words))
                await ws.send_json(_caption(seq, "draft", text, samples / 16000))
        elif message.get("text") is not None:
            assert '"stop"' in message["text"]
            seq += 1
            text = " ".join(f"word{i}" for i in range(words))
            await ws.send_json(_caption(seq, "final", text.capitalize() + ".", samples / 16000))
            await ws.send_json({"type": "ended"})
            await ws.close(1000)
            return


def _caption(seq: int, state: str, text: str, end: float) -> dict[str, object]:
    return {
        "type": "caption",
        "seq": seq,
        "segment": 0,
        "lang": "en",
        "source": True,
        "state": state,
        "text": text,
        "start": 0.0,
        "end": end,
    }


@asynccontextmanager
async def fake_server(issued_token: str = TOKEN) -> AsyncIterator[str]:
    """Serve the scripted endpoints on a loopback socket that is listening before we return."""
    app = Starlette(
        routes=[session_endpoint(issued_token), WebSocketRoute("/ws/present/{code}", present)]
    )
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task
        sock.close()


def silence(seconds: float) -> Recording:
    pcm = bytes(2 * round(16000 * seconds))
    return Recording("silence", Path("silence.wav"), "", 16000, pcm)


def test_split_chunks_merges_short_tail() -> None:
    chunks = split_chunks(bytes(2 * 16000 + 2 * 100), 16000)  # 1 s + 100 samples (6 ms)
    assert [len(c) // 2 for c in chunks] == [1600] * 9 + [1700]
    chunks = split_chunks(bytes(2 * 16000 + 2 * 400), 16000)  # 1 s + 400 samples (25 ms)
    assert [len(c) // 2 for c in chunks] == [1600] * 10 + [400]


async def test_fast_replay_records_everything() -> None:
    async with fake_server() as url:
        recorded = await replay(url, silence(2.0), "fast", cpu_clock=lambda: 1.5)
    assert recorded.session_code == "ABC234"
    assert recorded.schedule.chunk_end_samples == tuple(1600 * (k + 1) for k in range(20))
    assert list(recorded.schedule.send_times) == sorted(recorded.schedule.send_times)
    types = [r.message["type"] for r in recorded.received]
    assert types[0] == "ready" and types[-1] == "ended"
    updates = recorded.caption_updates()
    assert [u.state for u in updates] == ["draft"] * 4 + ["final"]
    assert updates[-1].text == "Word0 word1 word2 word3."
    arrivals = [r.arrival for r in recorded.received]
    assert arrivals == sorted(arrivals)
    assert recorded.start_sent <= recorded.ready_at <= recorded.schedule.send_times[0]
    assert recorded.schedule.send_times[-1] <= recorded.stop_sent <= recorded.ended_at
    assert recorded.server_cpu_seconds == 0.0


async def test_realtime_replay_paces_to_a_monotonic_schedule() -> None:
    async with fake_server() as url:
        recorded = await replay(url, silence(1.0), "realtime")
    sent = recorded.schedule.send_times
    # The schedule starts when "ready" arrives: chunk k is due 0.1 * (k + 1) s later. None goes
    # early; a late one (busy machine) does not delay the ones after it.
    offsets = [t - recorded.ready_at for t in sent]
    assert len(offsets) == 10
    assert all(offset >= 0.1 * (k + 1) - 0.001 for k, offset in enumerate(offsets))
    assert offsets[-1] == pytest.approx(1.0, abs=0.05)
    assert isinstance(recorded.schedule, SendSchedule)
    assert recorded.server_cpu_seconds is None


async def test_refused_token_raises() -> None:
    async with fake_server(issued_token="wrong") as url:
        with pytest.raises(ReplayError, match="1008"):
            await replay(url, silence(0.5), "fast")
