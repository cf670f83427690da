"""Connections that end badly: close reasons fit a close frame (123 bytes of UTF-8) whatever
the client sent; a presenter who leaves right after ``stop`` is finalised without an error;
a client gone before its request body ended is no server error."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path

import pytest
import websockets

from app.sockets import close_reason
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
