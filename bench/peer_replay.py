"""Replay a recording to WhisperLiveKit's ``/asr`` socket, paced exactly like ``bench.replay``.

WhisperLiveKit's protocol (with ``--pcm-input``): open ``/asr``; it sends
``{"type": "config", ...}``; the client sends 16 kHz ``s16le`` PCM as binary messages and an
empty binary message at the end; it sends transcript snapshots (``bench.peer_mapping``) and
finally ``{"type": "ready_to_stop"}``. The chunks are the same 100 ms pieces, sent on the same
fixed real-time schedule (chunk ``k`` at ``t0 + (k + 1) × 0.1 s``). The result is a
:class:`bench.replay.Replay` whose received messages are the mapped caption events plus an
``ended`` at ``ready_to_stop``, so ``bench.captions.measure_file`` measures it unchanged; the
raw messages are kept beside it.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from bench.metrics import SendSchedule
from bench.peer_mapping import (
    MappedCaptions,
    PeerProtocolError,
    caption_messages,
    caption_updates,
    parse_snapshot,
)
from bench.recordings import Recording
from bench.replay import CHUNK_SECONDS, Received, Replay, ReplayError, split_chunks

END_OF_AUDIO = b""
"""WhisperLiveKit's stop signal: an empty binary message."""


@dataclass(frozen=True, slots=True)
class PeerReplay:
    """One replay to WhisperLiveKit: the mapped replay, the raw messages, the mapping's notes."""

    replay: Replay
    raw: tuple[Received, ...]
    mapped: MappedCaptions


def ws_url(base_url: str) -> str:
    """``ws://host:port/asr`` for ``http://host:port``."""
    scheme, rest = base_url.split("://", 1)
    return f"{'wss' if scheme == 'https' else 'ws'}://{rest.rstrip('/')}/asr"


def to_replay(
    recording: Recording,
    schedule: SendSchedule,
    raw: list[Received],
    times: dict[str, float],
    cpu_seconds: float | None,
) -> PeerReplay:
    """Build the :class:`PeerReplay` from what one session recorded (pure).

    ``times`` holds ``connected``, ``ready``, ``stop_sent`` and ``ended`` (monotonic seconds).
    """
    snapshots = [s for r in raw if (s := parse_snapshot(r.arrival, r.message)) is not None]
    mapped = caption_updates(snapshots)
    received = [
        Received(update.arrival, message)
        for update, message in zip(mapped.updates, caption_messages(mapped.updates), strict=True)
    ]
    received.append(Received(times["ended"], {"type": "ended"}))
    replay = Replay(
        recording=recording.id,
        mode="realtime",
        session_code="whisperlivekit",
        schedule=schedule,
        received=tuple(received),
        start_sent=times["connected"],
        ready_at=times["ready"],
        stop_sent=times["stop_sent"],
        ended_at=times["ended"],
        binary_messages=0,
        server_cpu_seconds=cpu_seconds,
    )
    return PeerReplay(replay=replay, raw=tuple(raw), mapped=mapped)


async def _send_audio(ws: ClientConnection, chunks: list[bytes], send_times: list[float]) -> float:
    """Send every chunk on the real-time schedule of ``bench.replay``, then the empty message."""
    t0 = time.monotonic()
    for index, chunk in enumerate(chunks):
        delay = t0 + (index + 1) * CHUNK_SECONDS - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        send_times.append(time.monotonic())
        await ws.send(chunk)
    stop_sent = time.monotonic()
    await ws.send(END_OF_AUDIO)
    return stop_sent


async def _receive(ws: ClientConnection, raw: list[Received], until: str) -> float:
    """Keep every text message with its arrival time until one has ``type`` ``until``; check
    each for errors as it arrives."""
    async for message in ws:
        arrival = time.monotonic()
        if isinstance(message, bytes):
            continue
        data: dict[str, Any] = json.loads(message)
        raw.append(Received(arrival, data))
        parse_snapshot(arrival, data)  # raises on an error message
        if data.get("type") == until:
            return arrival
    raise ReplayError(
        f"WhisperLiveKit closed the stream before '{until}' (code {ws.close_code}: "
        f"{ws.close_reason})"
    )


async def replay_peer(
    base_url: str,
    recording: Recording,
    cpu_clock: Callable[[], float] | None = None,
    end_timeout: float = 300.0,
) -> PeerReplay:
    """Replay ``recording`` in real time to a new WhisperLiveKit session at ``base_url``.

    ``cpu_clock`` (optional) reads the server's CPU seconds just before connecting and right
    after ``ready_to_stop``.
    """
    if recording.sample_rate != 16000:
        raise ReplayError(f"{recording.id}: WhisperLiveKit's PCM input is 16 kHz only")
    chunks = split_chunks(recording.pcm, recording.sample_rate)
    ends: list[int] = []
    total = 0
    for chunk in chunks:
        total += len(chunk) // 2
        ends.append(total)
    raw: list[Received] = []
    send_times: list[float] = []
    cpu_before = cpu_clock() if cpu_clock else None
    try:
        async with connect(ws_url(base_url), open_timeout=30) as ws:
            connected = time.monotonic()
            async with asyncio.timeout(30):
                ready = await _receive(ws, raw, until="config")
            async with asyncio.timeout(end_timeout + recording.duration), asyncio.TaskGroup() as tg:
                receiver = tg.create_task(_receive(ws, raw, until="ready_to_stop"))
                sender = tg.create_task(_send_audio(ws, chunks, send_times))
            cpu_after = cpu_clock() if cpu_clock else None
    except* ConnectionClosed as closed:
        raise ReplayError(f"{recording.id}: WhisperLiveKit closed the stream") from closed
    except* (ReplayError, PeerProtocolError) as failed:
        raise failed.exceptions[0] from None
    times = {
        "connected": connected,
        "ready": ready,
        "stop_sent": sender.result(),
        "ended": receiver.result(),
    }
    return to_replay(
        recording,
        SendSchedule(recording.sample_rate, tuple(ends), tuple(send_times)),
        raw,
        times,
        cpu_after - cpu_before if cpu_before is not None and cpu_after is not None else None,
    )
