"""Replay a recording to the server over WebRTC (aiortc as the presenter's browser).

The recording is played as an audio track in 20 ms frames, each handed to aiortc when its
last sample would exist on a live microphone (frame ``k`` at ``t0 + (k + 1) * 20 ms``); aiortc
encodes it with Opus and sends it over RTP. The presenter's data channel brings back the
same text messages as the presenter socket (``ready``, events, ``ended``), so the result is
a :class:`bench.replay.Replay` and every caption metric applies unchanged.
"""

from __future__ import annotations

import asyncio
import fractions
import json
import time
from collections.abc import Callable, Mapping
from typing import Any

import av
import httpx
import numpy as np
from aiortc import RTCConfiguration, RTCPeerConnection, RTCSessionDescription
from aiortc.mediastreams import MediaStreamError, MediaStreamTrack

from bench.metrics import SendSchedule
from bench.recordings import Recording
from bench.replay import Received, Replay, ReplayError

FRAME_SECONDS = 0.02
TAIL_SILENCE_S = 0.6
"""Silence sent after the recording before ``stop``, so its last packets are decoded before
the server finalises (the WebSocket path's last chunk needs no such margin)."""


class PcmTrack(MediaStreamTrack):
    """16-bit mono PCM as a live audio track, then silence until stopped.

    ``send_times[i]`` is when the frame holding samples up to ``chunk_ends[i]`` was handed to
    aiortc; ``done`` is set once the recording and ``tail_s`` of silence have gone out."""

    kind = "audio"

    def __init__(self, pcm: bytes, sample_rate: int, tail_s: float = TAIL_SILENCE_S) -> None:
        super().__init__()
        self._samples = np.frombuffer(pcm, dtype="<i2")
        self.sample_rate = sample_rate
        self._frame = round(sample_rate * FRAME_SECONDS)
        self._tail_frames = round(tail_s / FRAME_SECONDS)
        self._index = 0
        self._t0: float | None = None
        self.send_times: list[float] = []
        self.chunk_ends: list[int] = []
        self.done = asyncio.Event()

    async def recv(self) -> av.AudioFrame:
        if self.readyState != "live":
            raise MediaStreamError
        if self._t0 is None:
            self._t0 = time.monotonic()
        delay = self._t0 + (self._index + 1) * FRAME_SECONDS - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        start = self._index * self._frame
        chunk = self._samples[start : start + self._frame]
        if chunk.size:
            self.send_times.append(time.monotonic())
            self.chunk_ends.append(start + chunk.size)
        elif self._index * self._frame >= self._samples.size + self._tail_frames * self._frame:
            self.done.set()
        padded = np.zeros(self._frame, dtype="<i2")
        padded[: chunk.size] = chunk
        frame = av.AudioFrame.from_ndarray(padded.reshape(1, -1), format="s16", layout="mono")
        frame.sample_rate = self.sample_rate
        frame.pts = self._index * self._frame
        frame.time_base = fractions.Fraction(1, self.sample_rate)
        self._index += 1
        return frame


async def post_offer(base_url: str, code: str, body: Mapping[str, Any]) -> httpx.Response:
    """``POST /api/sessions/{code}/webrtc/offer`` with ``body`` as JSON."""
    async with httpx.AsyncClient(base_url=base_url, timeout=30.0) as client:
        return await client.post(f"/api/sessions/{code}/webrtc/offer", json=dict(body))


async def connect(pc: RTCPeerConnection, base_url: str, code: str, **fields: str) -> dict[str, Any]:
    """Offer ``pc`` to the server (role, token, lang in ``fields``) and apply its answer."""
    await pc.setLocalDescription(await pc.createOffer())
    offer = pc.localDescription
    response = await post_offer(base_url, code, {"sdp": offer.sdp, "type": offer.type, **fields})
    if response.status_code != 200:
        raise ReplayError(f"offer refused: {response.status_code} {response.text[:200]}")
    answer: dict[str, Any] = response.json()
    await pc.setRemoteDescription(RTCSessionDescription(sdp=answer["sdp"], type=answer["type"]))
    return answer


def new_peer() -> RTCPeerConnection:
    """A client peer with no STUN server (aiortc would use a public one by default)."""
    return RTCPeerConnection(RTCConfiguration(iceServers=[]))


async def present_webrtc(
    base_url: str,
    session: Mapping[str, Any],
    recording: Recording,
    *,
    cpu_clock: Callable[[], float] | None = None,
    end_timeout: float = 300.0,
) -> Replay:
    """Replay ``recording`` in real time into ``session`` over WebRTC; ``stop`` on the data
    channel once it (and a little silence) has gone out; return at ``ended``."""
    pc = new_peer()
    track = PcmTrack(recording.pcm, recording.sample_rate)
    pc.addTrack(track)
    channel = pc.createDataChannel("control")
    received: list[Received] = []
    ready, ended = asyncio.Event(), asyncio.Event()
    marks: dict[str, float] = {}

    @channel.on("message")
    def on_message(raw: object) -> None:
        if not isinstance(raw, str):
            return
        arrival = time.monotonic()
        message = json.loads(raw)
        received.append(Received(arrival, message))
        kind = message.get("type")
        if kind in ("ready", "ended"):
            marks.setdefault(kind, arrival)
            (ready if kind == "ready" else ended).set()

    try:
        cpu_before = cpu_clock() if cpu_clock else None
        start_sent = time.monotonic()
        await connect(
            pc, base_url, str(session["code"]), role="present", token=session["presenter_token"]
        )
        await asyncio.wait_for(ready.wait(), 30)
        await asyncio.wait_for(track.done.wait(), recording.duration + 60)
        stop_sent = time.monotonic()
        channel.send(json.dumps({"type": "stop"}))
        await asyncio.wait_for(ended.wait(), end_timeout)
        cpu_after = cpu_clock() if cpu_clock else None
    except TimeoutError:
        raise ReplayError(f"{recording.id}: timed out over WebRTC ({pc.connectionState})") from None
    finally:
        track.stop()
        await pc.close()
    return Replay(
        recording=recording.id,
        mode="realtime",
        session_code=str(session["code"]),
        schedule=SendSchedule(
            recording.sample_rate, tuple(track.chunk_ends), tuple(track.send_times)
        ),
        received=tuple(received),
        start_sent=start_sent,
        ready_at=marks["ready"],
        stop_sent=stop_sent,
        ended_at=marks["ended"],
        binary_messages=0,
        server_cpu_seconds=(
            cpu_after - cpu_before if cpu_before is not None and cpu_after is not None else None
        ),
    )
