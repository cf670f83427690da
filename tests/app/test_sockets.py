"""Connections that end badly: close reasons fit a close frame (123 bytes of UTF-8) whatever
the client sent; a presenter who leaves right after ``stop`` is finalised without an error;
a client gone before its request body ended is no server error; a presenter whose connection
died without closing starts again at once."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path

import pytest
import websockets

from app.sockets import close_reason
from engine.stream import StreamLimits
from tests.app.inprocess import (
    SlowTranscriber,
    http,
    in_process_server,
    new_session,
    uvicorn_log,
)
from tests.data import ENGLISH
from tests.support import read_wav


def test_close_reason_is_cut_to_123_bytes_never_inside_a_character() -> None:
    assert close_reason("short") == "short"
    cut = close_reason("unknown message type " + "é" * 100)
    assert len(cut.encode("utf-8")) <= 123
    assert cut.startswith("unknown message type é")
    assert close_reason("\U0001f600" * 40).encode("utf-8") == ("\U0001f600" * 30).encode("utf-8")


async def test_a_presenter_who_stops_and_leaves_at_once_is_finalised_without_an_error(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Stop, then close the tab before ``ended`` arrives: the stream is finalised, its
    finals are kept, and the server logs no exception (sending ``ended`` to a socket that
    is gone raised starlette's WebSocketDisconnected, which the endpoint did not expect)."""
    pcm, _ = read_wav(ENGLISH)
    # Decodes that take a while, so "ended" is still to come when the client has gone.
    async with in_process_server(tmp_path, transcriber=SlowTranscriber(0.3)) as server:
        with uvicorn_log(caplog):
            session = await new_session(server.url)
            url = server.url.replace("http://", "ws://") + f"/ws/present/{session['code']}"
            start = {"type": "start", "token": session["presenter_token"], "sample_rate": 16000}
            live = await server.state["services"].engine().registry.get(session["code"])
            for _ in range(3):
                async with websockets.connect(url) as ws:
                    await ws.send(json.dumps(start))
                    await ws.recv()
                    for at in range(0, 16000 * 2 * 2, 3200):  # two seconds of speech
                        await ws.send(pcm[at : at + 3200])
                    await ws.send(json.dumps({"type": "stop"}))
                # the client closed right after "stop", without waiting for "ended"
                for _ in range(100):
                    if not live.live:
                        break
                    await asyncio.sleep(0.05)
            transcript = await http(
                "GET", f"{server.url}/api/sessions/{session['code']}/transcript"
            )
    assert not live.live
    assert transcript.text.lower().count("hello") >= 3, transcript.text
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == [], [r.getMessage() for r in errors]


@pytest.mark.parametrize(
    "path", ["/api/sessions", "/api/sessions/{code}/questions?lang=en"], ids=["json", "audio"]
)
async def test_a_client_gone_before_its_body_ended_is_no_server_error(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, path: str
) -> None:
    """A request whose client closes the connection halfway through the body it declared
    (a JSON body, and a spoken question's audio) logs no unhandled exception."""
    async with in_process_server(tmp_path) as server:
        with uvicorn_log(caplog):
            session = await new_session(server.url)
            host, port = server.url.removeprefix("http://").split(":")
            kind = "audio/L16" if "questions" in path else "application/json"
            head = (
                f"POST {path.format(code=session['code'])} HTTP/1.1\r\nHost: {host}\r\n"
                f"Content-Type: {kind}\r\nContent-Length: 64000\r\n\r\n"
            )
            _, writer = await asyncio.open_connection(host, int(port))
            writer.write(head.encode() + b"\x00" * 1000)
            await writer.drain()
            await asyncio.sleep(0.3)
            writer.close()
            await writer.wait_closed()
            await asyncio.sleep(0.5)
            facts = await http("GET", f"{server.url}/api/sessions/{session['code']}")
    assert facts.status_code == 200
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == [], errors


async def test_a_presenter_whose_connection_died_can_start_again_at_once(
    tmp_path: Path,
) -> None:
    """The presenter's first connection stops carrying audio without closing (Wi-Fi gone:
    the server would hear of it at the next ping timeout). A second device is refused while
    the first sends audio; once the first has sent none for ``idle_takeover_s``, the
    presenter's new connection takes over: what the first heard is finalised and kept, and
    the new stream goes on."""
    limits = StreamLimits(max_speed=8.0, idle_takeover_s=1.0)
    async with in_process_server(tmp_path, limits=limits) as server:
        session = await new_session(server.url)
        code, token = session["code"], session["presenter_token"]
        url = server.url.replace("http://", "ws://") + f"/ws/present/{code}"
        start = json.dumps({"type": "start", "token": token, "sample_rate": 16000})
        pcm, _ = read_wav(ENGLISH)
        speech, step = pcm[: 16000 * 2 * 3], 16000 * 2 // 10
        async with websockets.connect(url) as first:
            await first.send(start)
            assert json.loads(await first.recv())["type"] == "ready"
            for offset in range(0, len(speech), step):  # 3 s of speech, in real time
                await first.send(speech[offset : offset + step])
                await asyncio.sleep(0.1)
            async with websockets.connect(url) as second:  # while the first sends: refused
                await second.send(start)
                with pytest.raises(websockets.ConnectionClosed) as refused:
                    await second.recv()
            assert refused.value.rcvd is not None and refused.value.rcvd.code == 1013
            await asyncio.sleep(1.5)  # the first carries nothing more, and stays open
            who = await http(
                "GET",
                f"{server.url}/api/sessions/{code}/whoami",
                headers={"Authorization": f"Bearer {token}"},
            )
            assert who.json()["speaker"]["live"] is False  # the console may say Start
            async with websockets.connect(url) as third:
                await third.send(start)
                assert json.loads(await third.recv())["type"] == "ready"
                silence = bytes(step)
                for _ in range(10):
                    await third.send(silence)
                    await asyncio.sleep(0.1)
                await third.send(json.dumps({"type": "stop"}))
                async for message in third:
                    if json.loads(message).get("type") == "ended":
                        break
        transcript = await http("GET", f"{server.url}/api/sessions/{code}/transcript")
        assert transcript.status_code == 200 and "hello" in transcript.text  # the first's words
