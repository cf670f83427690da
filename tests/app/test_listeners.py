"""An audience follows a presenter: three listeners, backfill, restart, exports.

Real server process, real tiny.en model, a real recording."""

from __future__ import annotations

import asyncio
import io
import itertools
import json
from pathlib import Path

import httpx
import pytest
import srt
import websockets
import webvtt

from tests.data import SONNET
from tests.support import (
    ServerProcess,
    create_session,
    read_wav,
    stream_recording,
)

pytestmark = pytest.mark.model


class Listener:
    """A listener client that remembers every event and its last ``seq``."""

    def __init__(self, base: str, code: str) -> None:
        self.url = base.replace("http://", "ws://") + f"/ws/listen/{code}"
        self.events: list[dict[str, object]] = []
        self.last_seq = 0
        self.connections = 0

    def finals(self) -> dict[int, str]:
        return {
            int(e["segment"]): str(e["text"])  # type: ignore[call-overload]
            for e in self.events
            if e.get("type") == "caption" and e.get("state") == "final" and e.get("source")
        }

    async def follow(self, stop: asyncio.Event, *, leave_after: int | None = None) -> None:
        """Read until ``stop``; with ``leave_after``, hang up after that many finals."""
        async with websockets.connect(f"{self.url}?since={self.last_seq}") as ws:
            self.connections += 1
            while not stop.is_set():
                try:
                    message = await asyncio.wait_for(ws.recv(), 0.5)
                except TimeoutError:
                    continue
                event = json.loads(message)
                seq = int(event["seq"])
                assert seq > self.last_seq, "seq increases, nothing is delivered twice"
                self.last_seq = seq
                self.events.append(event)
                if leave_after is not None and len(self.finals()) >= leave_after:
                    return


async def test_three_listeners_end_with_the_presenters_transcript(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path, env={"INTERP_MAX_AUDIO_SPEED": "8"}).start()
    try:
        session = create_session(server.url, title="Sonnets")
        code = session["code"]
        stop = asyncio.Event()
        early, late, flaky = (Listener(server.url, code) for _ in range(3))
        early_task = asyncio.create_task(early.follow(stop))

        async def flaky_listener() -> None:
            await flaky.follow(stop, leave_after=2)  # phone sleeps after two finals
            await asyncio.sleep(3.0)
            await flaky.follow(stop)  # wakes up and resumes with since=last_seq

        async def late_listener() -> None:
            await asyncio.sleep(6.0)
            await late.follow(stop)

        others = [asyncio.create_task(flaky_listener()), asyncio.create_task(late_listener())]
        await asyncio.sleep(0.5)
        facts = httpx.get(f"{server.url}/api/sessions/{code}").json()
        assert facts["listeners"] >= 1 and facts["state"] == "waiting"

        pcm, rate = read_wav(SONNET)
        run = await stream_recording(server.url, pcm, rate, speed=4.0, session=session)
        assert run.close_code == 1000
        presenter = {int(e["segment"]): e["text"] for e in run.finals()}  # type: ignore[call-overload]
        assert len(presenter) >= 5

        async def caught_up() -> None:
            while not all(x.finals() == presenter for x in (early, late, flaky)):
                await asyncio.sleep(0.1)

        await asyncio.wait_for(caught_up(), 30)
        stop.set()
        await asyncio.gather(early_task, *others)
        assert flaky.connections == 2
        # The late listener got the earlier finals from the backfill.
        assert min(late.finals()) == min(presenter)
        states = [e for e in early.events if e.get("type") == "state"]
        assert any(e["state"] == "live" for e in states)
        assert max(int(e["listeners"]) for e in states) >= 2  # type: ignore[call-overload]

        transcript_before = httpx.get(
            f"{server.url}/api/sessions/{code}/transcript", params={"format": "json"}
        ).json()
        assert [c["text"] for c in transcript_before] == [presenter[k] for k in sorted(presenter)]
    finally:
        server.stop()

    # A restart loses no final text.
    server = ServerProcess(tmp_path, env={"INTERP_MAX_AUDIO_SPEED": "8"}).start()
    try:
        base = f"{server.url}/api/sessions/{code}/transcript"
        after = httpx.get(base, params={"format": "json"}).json()
        assert after == transcript_before
        duration = len(pcm) / 2 / rate
        srt_text = httpx.get(base, params={"format": "srt"}).text
        cues = list(srt.parse(srt_text))
        assert cues and all(c.start < c.end for c in cues)
        assert all(a.end <= b.start for a, b in itertools.pairwise(cues))
        assert cues[-1].end.total_seconds() <= duration + 0.5
        vtt = webvtt.from_buffer(io.StringIO(httpx.get(base, params={"format": "vtt"}).text))
        assert len(vtt.captions) == len(cues)
        spans = [(_vtt_seconds(c.start), _vtt_seconds(c.end)) for c in vtt.captions]
        assert all(start < end <= duration + 0.5 for start, end in spans)
        # A listener arriving after the restart still gets the whole transcript.
        newcomer = Listener(server.url, code)
        stop = asyncio.Event()
        task = asyncio.create_task(newcomer.follow(stop))
        await asyncio.wait_for(_until(lambda: newcomer.finals() == presenter), 15)
        stop.set()
        await task
    finally:
        server.stop()


def _vtt_seconds(stamp: str) -> float:
    """``HH:MM:SS.mmm`` (webvtt-py's own ``*_in_seconds`` drop the milliseconds)."""
    hours, minutes, seconds = stamp.split(":")
    return int(hours) * 3600 + int(minutes) * 60 + float(seconds)


async def _until(predicate: object) -> None:
    while not predicate():  # type: ignore[operator]
        await asyncio.sleep(0.05)


async def _refusal(url: str) -> tuple[int, str]:
    async with websockets.connect(url) as ws:
        with pytest.raises(websockets.ConnectionClosed) as info:
            await asyncio.wait_for(ws.recv(), 10)
    assert info.value.rcvd is not None
    return info.value.rcvd.code, info.value.rcvd.reason


@pytest.mark.parametrize(
    ("query", "expected"),
    [("?since=abc", 1003), ("?since=-4", 1003), ("?lang=fr", 1003), ("?lang=zz-zz", 1003)],
)
async def test_listener_bad_input(server: ServerProcess, query: str, expected: int) -> None:
    code = create_session(server.url)["code"]
    url = server.url.replace("http://", "ws://") + f"/ws/listen/{code}{query}"
    got, reason = await _refusal(url)
    assert got == expected and reason


@pytest.mark.parametrize(
    "message", ["{nope", "[" * 20000 + "]" * 20000, json.dumps([1]), json.dumps({"type": "dance"})]
)
async def test_listener_bad_message_is_closed_with_a_reason(
    server: ServerProcess, message: str
) -> None:
    session = create_session(server.url)
    url = server.url.replace("http://", "ws://") + f"/ws/listen/{session['code']}"
    async with websockets.connect(url) as ws:
        await ws.send(message)
        with pytest.raises(websockets.ConnectionClosed) as info:
            while True:
                await asyncio.wait_for(ws.recv(), 10)
    assert info.value.rcvd is not None
    assert info.value.rcvd.code == 1003 and info.value.rcvd.reason
    assert httpx.get(f"{server.url}/healthz").status_code == 200


async def test_a_listeners_ping_is_answered_with_a_pong(server: ServerProcess) -> None:
    """The page tells a connection that died without closing by the pongs that stop coming
    (static/js/listener-socket.js); the socket goes on after each."""
    session = create_session(server.url)
    url = server.url.replace("http://", "ws://") + f"/ws/listen/{session['code']}"
    async with websockets.connect(url) as ws:
        for _ in range(3):
            await ws.send(json.dumps({"type": "ping"}))
            while (answer := json.loads(await asyncio.wait_for(ws.recv(), 10)))["type"] != "pong":
                assert "seq" in answer  # the session's state comes first
            assert answer == {"type": "pong"}
        await ws.send(json.dumps({"type": "language", "lang": "en"}))
        await ws.send(json.dumps({"type": "ping"}))
        assert json.loads(await asyncio.wait_for(ws.recv(), 10)) == {"type": "pong"}


async def test_listener_unknown_session(server: ServerProcess) -> None:
    url = server.url.replace("http://", "ws://") + "/ws/listen/QQQQQQ"
    code, reason = await _refusal(url)
    assert code == 1008 and "session" in reason


def test_share_qr_code_is_an_svg_of_the_link(server: ServerProcess) -> None:
    code = create_session(server.url)["code"]
    response = httpx.get(f"{server.url}/api/sessions/{code}/qr.svg")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("image/svg+xml")
    assert b"<svg" in response.content and f"/s/{code}".encode() in response.content
    assert httpx.get(f"{server.url}/api/sessions/NOPE22/qr.svg").status_code == 404
