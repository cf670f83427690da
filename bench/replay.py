"""Replay a recording to the presenter WebSocket and record everything with wall-clock times.

Protocol (docs/protocol.md): create a session, open ``/ws/present/{code}``, send ``start``,
wait for ``ready``, send PCM in 100 ms binary messages, send ``stop``, read until ``ended``.
Sending and receiving run as two tasks; every received text message is kept with its
``time.monotonic()`` arrival time and every chunk with the time it was handed to the socket.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import httpx
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from bench.metrics import CaptionUpdate, SendSchedule
from bench.recordings import Recording

Mode = Literal["realtime", "fast"]

CHUNK_SECONDS = 0.1
MIN_CHUNK_SECONDS = 0.02
"""A final piece shorter than this is merged into the chunk before it (protocol: 20-200 ms)."""


class ReplayError(RuntimeError):
    """The server refused the session or the stream, or closed it before ``ended``."""


@dataclass(frozen=True, slots=True)
class Received:
    """One text message from the server and when it arrived."""

    arrival: float
    message: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Replay:
    """Everything one replay of one recording recorded."""

    recording: str
    mode: Mode
    session_code: str
    schedule: SendSchedule
    received: tuple[Received, ...]
    start_sent: float
    ready_at: float
    stop_sent: float
    ended_at: float
    binary_messages: int
    server_cpu_seconds: float | None

    def caption_updates(self) -> list[CaptionUpdate]:
        """Source-language caption events in arrival order."""
        return [
            CaptionUpdate(r.arrival, int(m["segment"]), m["state"], str(m["text"]))
            for r in self.received
            if (m := r.message).get("type") == "caption" and m.get("source", True)
        ]


def split_chunks(pcm: bytes, sample_rate: int) -> list[bytes]:
    """Cut 16-bit PCM into ``CHUNK_SECONDS`` pieces; a tail under ``MIN_CHUNK_SECONDS`` joins
    the piece before it."""
    size = 2 * round(sample_rate * CHUNK_SECONDS)
    chunks = [pcm[i : i + size] for i in range(0, len(pcm), size)]
    if len(chunks) > 1 and len(chunks[-1]) < 2 * round(sample_rate * MIN_CHUNK_SECONDS):
        tail = chunks.pop()
        chunks[-1] += tail
    return chunks


def trimmed(recording: Recording, seconds: float | None) -> Recording:
    """The first ``seconds`` of ``recording`` (all of it when ``None`` or longer)."""
    if seconds is None or seconds >= recording.duration:
        return recording
    samples = round(seconds * recording.sample_rate)
    return dataclasses.replace(recording, pcm=recording.pcm[: 2 * samples])


async def create_session(base_url: str, title: str) -> dict[str, Any]:
    """``POST /api/sessions`` for English captions only; returns the 201 body."""
    async with httpx.AsyncClient(base_url=base_url, timeout=30.0) as client:
        response = await client.post(
            "/api/sessions",
            json={"title": title, "source_language": "en", "target_languages": []},
        )
    if response.status_code != 201:
        raise ReplayError(f"POST /api/sessions: {response.status_code} {response.text[:200]}")
    body: dict[str, Any] = response.json()
    return body


async def add_speaker(
    base_url: str, session: Mapping[str, Any], name: str, language: str
) -> dict[str, Any]:
    """``POST /api/sessions/{code}/speakers`` with the presenter token (a panel's speaker);
    returns the 201 body (``id``, ``token``, ``present_url``)."""
    async with httpx.AsyncClient(base_url=base_url, timeout=30.0) as client:
        response = await client.post(
            f"/api/sessions/{session['code']}/speakers",
            json={"name": name, "language": language},
            headers={"Authorization": f"Bearer {session['presenter_token']}"},
        )
    if response.status_code != 201:
        raise ReplayError(f"POST .../speakers: {response.status_code} {response.text[:200]}")
    body: dict[str, Any] = response.json()
    return body


def _ws_url(base_url: str, code: str) -> str:
    scheme, rest = base_url.split("://", 1)
    return f"{'wss' if scheme == 'https' else 'ws'}://{rest.rstrip('/')}/ws/present/{code}"


async def _send_audio(
    ws: ClientConnection,
    chunks: list[bytes],
    mode: Mode,
    send_times: list[float],
    speed: float = 1.0,
) -> float:
    """Send every chunk (realtime: chunk ``k`` at ``t0 + (k + 1) * 0.1 s / speed``, at
    ``speed`` 1 when its last sample would exist on a live microphone; fast: at once), then
    ``stop``."""
    t0 = time.monotonic()
    for index, chunk in enumerate(chunks):
        if mode == "realtime":
            delay = t0 + (index + 1) * CHUNK_SECONDS / speed - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
        send_times.append(time.monotonic())
        await ws.send(chunk)
    stop_sent = time.monotonic()
    await ws.send(json.dumps({"type": "stop"}))
    return stop_sent


async def _receive_until_ended(
    ws: ClientConnection, received: list[Received], counts: dict[str, int]
) -> float:
    async for raw in ws:
        arrival = time.monotonic()
        if isinstance(raw, bytes):
            counts["binary"] += 1
            continue
        message = json.loads(raw)
        received.append(Received(arrival, message))
        if message.get("type") == "ended":
            return arrival
    raise ReplayError(
        f"server closed the stream before 'ended' (code {ws.close_code}: {ws.close_reason})"
    )


async def replay(
    base_url: str,
    recording: Recording,
    mode: Mode,
    cpu_clock: Callable[[], float] | None = None,
    end_timeout: float = 300.0,
) -> Replay:
    """Replay ``recording`` to a new session at ``base_url``.

    ``cpu_clock`` (optional) reads the server's CPU seconds; it is read just before ``start``
    and right after ``ended``.
    """
    session = await create_session(base_url, f"bench {recording.id}")
    return await present(
        base_url, session, recording, mode=mode, cpu_clock=cpu_clock, end_timeout=end_timeout
    )


async def present(
    base_url: str,
    session: Mapping[str, Any],
    recording: Recording,
    *,
    language: str = "en",
    mode: Mode = "realtime",
    cpu_clock: Callable[[], float] | None = None,
    end_timeout: float = 300.0,
    speed: float = 1.0,
) -> Replay:
    """Replay ``recording`` (spoken ``language``) into an existing ``session``, created by
    the caller so that listeners can join before the audio starts. In ``realtime`` mode the
    schedule runs ``speed`` times faster than real time (the server refuses audio faster
    than its ``INTERP_MAX_AUDIO_SPEED``)."""
    chunks = split_chunks(recording.pcm, recording.sample_rate)
    ends = list(itertools.accumulate(len(c) // 2 for c in chunks))
    received: list[Received] = []
    send_times: list[float] = []
    counts = {"binary": 0}
    async with connect(_ws_url(base_url, session["code"]), open_timeout=30) as ws:
        cpu_before = cpu_clock() if cpu_clock else None
        start_sent = time.monotonic()
        start = {
            "type": "start",
            "token": session["presenter_token"],
            "sample_rate": recording.sample_rate,
            "encoding": "pcm_s16le",
            "language": language,
        }
        await ws.send(json.dumps(start))
        ready_at = await _wait_ready(ws, received)
        deadline = end_timeout + (recording.duration / speed if mode == "realtime" else 0.0)
        try:
            async with asyncio.timeout(deadline), asyncio.TaskGroup() as group:
                receiver = group.create_task(_receive_until_ended(ws, received, counts))
                sender = group.create_task(_send_audio(ws, chunks, mode, send_times, speed))
        except* ConnectionClosed as closed:
            raise ReplayError(
                f"{recording.id}: server closed the stream "
                f"(code {ws.close_code}: {ws.close_reason})"
            ) from closed
        except* ReplayError as failed:
            raise failed.exceptions[0] from None
        stop_sent = sender.result()
        ended_at = receiver.result()
        cpu_after = cpu_clock() if cpu_clock else None
    return Replay(
        recording=recording.id,
        mode=mode,
        session_code=str(session["code"]),
        schedule=SendSchedule(recording.sample_rate, tuple(ends), tuple(send_times)),
        received=tuple(received),
        start_sent=start_sent,
        ready_at=ready_at,
        stop_sent=stop_sent,
        ended_at=ended_at,
        binary_messages=counts["binary"],
        server_cpu_seconds=(
            cpu_after - cpu_before if cpu_before is not None and cpu_after is not None else None
        ),
    )


async def _wait_ready(ws: ClientConnection, received: list[Received]) -> float:
    """Read until ``{"type": "ready"}``; anything before it is kept too."""
    try:
        async for raw in ws:
            if isinstance(raw, bytes):
                continue
            arrival = time.monotonic()
            message = json.loads(raw)
            received.append(Received(arrival, message))
            if message.get("type") == "ready":
                return arrival
    except ConnectionClosed:
        pass  # reported below with the close code, like a clean close
    raise ReplayError(
        f"server closed the stream before 'ready' (code {ws.close_code}: {ws.close_reason})"
    )
