"""Each server limit, hit on purpose, gives the documented refusal (docs/protocol.md,
docs/security.md). One real server with every limit set low, English only."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import websockets
from websockets.exceptions import ConnectionClosed

from tests.support import ServerProcess

pytestmark = pytest.mark.model

LIMITS = {
    "INTERP_SESSION_RATE": "3",
    "INTERP_MAX_LISTENERS": "2",
    "INTERP_MAX_LIVE_STREAMS": "1",
    "INTERP_MAX_AUDIO_SPEED": "1",
    "INTERP_MULTILINGUAL": "0",
}


@pytest.fixture(scope="module")
def limited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    proc = ServerProcess(Path(tmp_path_factory.mktemp("limited")), env=LIMITS).start()
    yield proc
    proc.stop()


def client_from(address: str) -> httpx.Client:
    """An HTTP client whose connections come from ``address`` (any 127.x.y.z is loopback),
    so each test has its own session-creation allowance."""
    return httpx.Client(transport=httpx.HTTPTransport(local_address=address), timeout=10)


def new_session(server: ServerProcess, address: str) -> dict[str, str]:
    with client_from(address) as client:
        response = client.post(f"{server.url}/api/sessions", json={"title": "limits"})
    assert response.status_code == 201, response.text
    data: dict[str, str] = response.json()
    return data


def ws_url(server: ServerProcess, path: str) -> str:
    return server.url.replace("http://", "ws://") + path


def start_message(token: str) -> str:
    return json.dumps(
        {"type": "start", "token": token, "sample_rate": 16000, "encoding": "pcm_s16le"}
    )


async def closed_with(ws: websockets.ClientConnection) -> tuple[int | None, str]:
    """Read until the server closes; the close code and reason."""
    with pytest.raises(ConnectionClosed):
        while True:
            await asyncio.wait_for(ws.recv(), 30)
    return ws.close_code, ws.close_reason or ""


def test_session_creation_rate_is_limited_per_address(limited: ServerProcess) -> None:
    with client_from("127.0.0.21") as client:
        statuses = [
            client.post(f"{limited.url}/api/sessions", json={"title": f"t{i}"}).status_code
            for i in range(3)
        ]
        assert statuses == [201, 201, 201]
        refused = client.post(f"{limited.url}/api/sessions", json={"title": "one too many"})
        assert refused.status_code == 429
        assert refused.headers["content-type"].startswith("application/json")
        assert "too many" in refused.json()["error"]
        assert 1 <= int(refused.headers["retry-after"]) <= 60
        # Malformed requests are answered as before, not counted and not refused.
        assert client.post(f"{limited.url}/api/sessions", json={"title": 5}).status_code == 422
    # Another address has its own allowance.
    with client_from("127.0.0.22") as other:
        assert other.post(f"{limited.url}/api/sessions", json={}).status_code == 201


async def test_third_listener_is_refused_with_1013(limited: ServerProcess) -> None:
    session = new_session(limited, "127.0.0.31")
    url = ws_url(limited, f"/ws/listen/{session['code']}")
    async with websockets.connect(url) as first, websockets.connect(url) as second:
        # Both are counted once the session announces an audience of two.
        while True:
            event = json.loads(await asyncio.wait_for(second.recv(), 30))
            if event.get("type") == "state" and event.get("listeners") == 2:
                break
        async with websockets.connect(url) as third:
            code, reason = await closed_with(third)
        assert code == 1013 and "listeners" in reason, (code, reason)
        await first.send(json.dumps({"type": "ping"}))  # the first two are still served
        await second.send(json.dumps({"type": "ping"}))
        assert first.close_code is None and second.close_code is None


async def test_second_live_stream_on_the_server_is_refused_with_1013(
    limited: ServerProcess,
) -> None:
    one = new_session(limited, "127.0.0.41")
    two = new_session(limited, "127.0.0.41")
    async with websockets.connect(ws_url(limited, f"/ws/present/{one['code']}")) as first:
        await first.send(start_message(one["presenter_token"]))
        assert json.loads(await first.recv())["type"] == "ready"
        async with websockets.connect(ws_url(limited, f"/ws/present/{two['code']}")) as second:
            await second.send(start_message(two["presenter_token"]))
            code, reason = await closed_with(second)
        assert code == 1013 and "limit" in reason, (code, reason)
        await first.send(json.dumps({"type": "stop"}))
        events = []
        async for message in first:
            events.append(json.loads(message))
        assert events[-1] == {"type": "ended"} and first.close_code == 1000
    # Once the first stream ended, the other session may present.
    async with websockets.connect(ws_url(limited, f"/ws/present/{two['code']}")) as again:
        await again.send(start_message(two["presenter_token"]))
        assert json.loads(await again.recv())["type"] == "ready"
        await again.send(json.dumps({"type": "stop"}))
        async for _ in again:
            pass
        assert again.close_code == 1000


async def test_audio_faster_than_real_time_is_closed_with_1008(limited: ServerProcess) -> None:
    session = new_session(limited, "127.0.0.51")
    async with websockets.connect(ws_url(limited, f"/ws/present/{session['code']}")) as ws:
        await ws.send(start_message(session["presenter_token"]))
        assert json.loads(await ws.recv())["type"] == "ready"
        chunk = bytes(3200 * 2)  # 0.2 s of silence
        with pytest.raises(ConnectionClosed):
            for _ in range(100):  # 20 s of audio at once
                await ws.send(chunk)
            while True:
                await asyncio.wait_for(ws.recv(), 30)
        assert ws.close_code == 1008, (ws.close_code, ws.close_reason)
        assert "faster than real time" in (ws.close_reason or "")
