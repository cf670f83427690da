"""``role: present`` over WebRTC: the presenter's audio track into one :class:`Presentation`.

One task reads the first audio track (``await track.recv()`` until ``MediaStreamError``),
resamples to 16 kHz mono (app/webrtc_media.py) and feeds the same
:class:`engine.session.PresenterStream` as the presenter WebSocket; everything after ingest is
shared. If the peer also opens a data channel, the server sends on it the text messages the
presenter socket would (``ready``, every event, ``ended``, a pong for each ping) and takes
``{"type": "stop"}``. The stream is finalised as on Stop when the peer sends ``stop``, when
its track ends, or when its connection closes, fails or never connects (app/webrtc_peer.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from typing import Any

from aiortc import RTCDataChannel, RTCPeerConnection
from aiortc.mediastreams import MediaStreamTrack

from app import json_text
from app.present import CLOSE_CODE
from app.sockets import PONG
from app.webrtc_media import INGEST_RATE, drain_track, read_presenter_track
from app.webrtc_peer import Peer, PeerRegistry
from engine.delivery.hub import ListenerTooSlow, SubscriptionClosed
from engine.events import StateChange, to_json
from engine.presenting import Presentation
from engine.refusals import Refused
from engine.session import Session

log = logging.getLogger(__name__)

ENDED_GRACE = 5.0
"""After ``ended`` the client closes the connection; the server does if it has not by then."""
PENDING_EVENTS = 1000
"""Events held for a presenter's data channel until it opens."""


class PresenterPeer(Peer):
    """The presenter's audio over WebRTC into one :class:`Presentation`."""

    def __init__(
        self,
        pc: RTCPeerConnection,
        session: Session,
        registry: PeerRegistry,
        presentation: Presentation,
    ) -> None:
        super().__init__(pc, session, registry)
        self.presentation = presentation
        self.channel: RTCDataChannel | None = None
        self._pending: list[str] = []
        self._stopping: asyncio.Task[None] | None = None
        self._ingesting = True
        self._forwarder = self.spawn(self._forward(), f"webrtc-events-{session.code}")
        pc.on("datachannel", self._on_datachannel)

    def take_tracks(self, tracks: list[MediaStreamTrack]) -> None:
        """Feed the first audio track to the stream; drain every other one."""
        audio = [t for t in tracks if t.kind == "audio"]
        for track in tracks:
            if audio and track is audio[0]:
                self.spawn(self._ingest(track), f"webrtc-ingest-{self.session.code}")
            else:
                self.spawn(drain_track(track), f"webrtc-drain-{self.session.code}")

    async def _ingest(self, track: MediaStreamTrack) -> None:
        try:
            await read_presenter_track(track, self._feed)
        except Refused as exc:
            self.send({"type": "error", "code": CLOSE_CODE[exc.reason], "message": exc.message})
            log.info("webrtc stream of %s refused: %s", self.session.code, exc.message)
        except Exception:
            log.exception("reading the webrtc track of %s", self.session.code)
        self.stop_soon()  # the track ended: finalise as on Stop

    def _feed(self, pcm: bytes) -> None:
        if self._ingesting:
            self.presentation.feed(pcm)

    def _on_datachannel(self, channel: RTCDataChannel) -> None:
        if self.channel is not None:
            return  # one control channel per peer; others are ignored
        self.channel = channel
        channel.on("message", self._on_message)
        self.send({"type": "ready", "sample_rate": INGEST_RATE})
        pending, self._pending = self._pending, []
        for text in pending:
            channel.send(text)

    def _on_message(self, message: object) -> None:
        try:
            data = json_text.parse(message) if isinstance(message, str) else None
        except json_text.NotJson:
            data = None
        kind = data.get("type") if isinstance(data, dict) else None
        if kind == "stop":
            self.stop_soon()
        elif kind == "ping":  # the console knows its connection is alive by the answer
            self.send(PONG)
        else:
            self.send({"type": "error", "message": f"unknown message {str(message)[:60]!r}"})

    def send(self, message: dict[str, Any] | str) -> None:
        """Send one text message on the data channel (held until it opens)."""
        text = message if isinstance(message, str) else json.dumps(message)
        channel = self.channel
        if channel is not None and channel.readyState == "open":
            channel.send(text)
        elif channel is None and len(self._pending) < PENDING_EVENTS:
            self._pending.append(text)

    async def _forward(self) -> None:
        """The session's events (and the stream's lag) to the data channel; the ``ended``
        state closes the peer."""
        try:
            while True:
                event = await self.presentation.next_event()
                self.send(to_json(event))
                if isinstance(event, StateChange) and event.state == "ended":
                    self.close_soon()
        except (SubscriptionClosed, ListenerTooSlow):
            return

    def stop_soon(self) -> None:
        if self._stopping is None:
            self._stopping = asyncio.create_task(self._stop(), name="webrtc-stop")

    async def _stop(self) -> None:
        """Finalise everything said, send the remaining events and ``ended``, then give the
        client ``ENDED_GRACE`` to close the connection itself."""
        self._ingesting = False
        await self.presentation.stop()  # the forwarder sends what it holds, then returns
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._forwarder
        self.send({"type": "ended"})
        if not self.closing:  # not already closing (connection gone, session ended)
            await asyncio.sleep(ENDED_GRACE)
            self.close_soon()

    async def release(self) -> None:
        self._ingesting = False
        await self.presentation.release()
