"""The presenter hears how far behind its audio recognition is (the ``lag`` event,
docs/protocol.md; engine/lag.py): a recogniser slower than real time is reported, at most
once a second, then 0 once it has caught up; one that keeps up is never reported.

The real app and presenter socket in this event loop, with fake recognisers
(tests/app/inprocess.py), a real recording streamed in real time."""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from pathlib import Path
from typing import Any

import websockets

from engine.lag import LagReports, LagRule
from tests.app.inprocess import FakeTranscriber, SlowTranscriber, in_process_server, new_session
from tests.data import ENGLISH
from tests.support import read_wav


async def _present(url: str, seconds: float, then_wait_s: float) -> list[tuple[float, Any]]:
    """Stream ``seconds`` of a real recording in real time, wait ``then_wait_s`` sending
    nothing, stop; every event received, with when it came."""
    session = await new_session(url)
    pcm, rate = read_wav(ENGLISH)
    chunk = int(rate * 0.1) * 2
    audio = pcm[: int(rate * seconds) * 2]
    events: list[tuple[float, Any]] = []
    ws_url = url.replace("http://", "ws://") + f"/ws/present/{session['code']}"
    async with websockets.connect(ws_url) as ws:
        start = {"type": "start", "token": session["presenter_token"], "sample_rate": rate}
        await ws.send(json.dumps(start))

        async def receive() -> None:
            async for message in ws:
                events.append((time.monotonic(), json.loads(message)))

        receiving = asyncio.create_task(receive())
        began = time.monotonic()
        for n, offset in enumerate(range(0, len(audio), chunk)):
            await ws.send(audio[offset : offset + chunk])
            await asyncio.sleep(max(0.0, began + (n + 1) * 0.1 - time.monotonic()))
        await asyncio.sleep(then_wait_s)
        await ws.send(json.dumps({"type": "stop"}))
        await asyncio.wait_for(receiving, 60)
    return events


async def test_a_stream_slower_than_real_time_is_reported_then_its_catching_up(
    tmp_path: Path,
) -> None:
    async with in_process_server(tmp_path, transcriber=SlowTranscriber(1.2)) as server:
        events = await _present(server.url, seconds=6.0, then_wait_s=6.0)
    lags = [(at, e["seconds"]) for at, e in events if e["type"] == "lag"]
    assert any(seconds >= 1.0 for _, seconds in lags), lags
    # At most one report a second while behind (a little slack for the loop's timer).
    behind = [at for at, seconds in lags if seconds > 0]
    assert all(b - a >= 0.9 for a, b in itertools.pairwise(behind)), lags
    # Caught up while the presenter paused: said as 0, once for each time it had been
    # behind (never twice in a row, never first).
    values = [seconds for _, seconds in lags]
    assert values[0] > 0 and values[-1] == 0.0, lags
    assert all(a > 0 or b > 0 for a, b in itertools.pairwise(values)), lags
    assert events[-1][1] == {"type": "ended"}
    assert all("ts" in e for _, e in events if e["type"] == "lag")


async def test_a_stream_that_keeps_up_is_never_reported(tmp_path: Path) -> None:
    async with in_process_server(tmp_path, transcriber=FakeTranscriber()) as server:
        events = await _present(server.url, seconds=4.0, then_wait_s=1.0)
    assert [e for _, e in events if e["type"] == "lag"] == []
    assert any(e["type"] == "caption" for _, e in events)


def test_reports_come_at_most_every_every_s_and_once_as_0_on_catching_up() -> None:
    reports = LagReports(LagRule(from_s=1.0, every_s=1.0))
    said = [
        (now, r.seconds)
        for now, behind in [
            (0.0, 0.5),
            (1.0, 1.24),
            (1.5, 2.0),
            (2.1, 2.56),
            (3.0, 0.2),
            (4.0, 0.1),
        ]
        if (r := reports.report(behind, now)) is not None
    ]
    assert said == [(1.0, 1.2), (2.1, 2.6), (3.0, 0.0)]
