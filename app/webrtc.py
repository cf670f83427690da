"""WebRTC with aiortc: ``POST /api/sessions/{code}/webrtc/offer`` (docs/protocol.md).

``role: present`` (presenter token required): the peer sends one audio track. One task reads
it (``await track.recv()`` until ``MediaStreamError``), resamples to 16 kHz mono and feeds
the same :class:`engine.session.PresenterStream` as the presenter WebSocket; everything after
ingest is shared. If the peer also opens a data channel, the server sends on it the text
messages the presenter socket would (``ready``, every event, ``ended``) and takes
``{"type": "stop"}``. The stream is finalised as on Stop when the peer sends ``stop``, when
its track ends, or when its connection closes, fails or never connects.

``role: listen``: a receive-only peer gets the spoken translation in ``lang`` as an audio
track (:class:`app.webrtc_media.SpeechTrack`), from a counted hub subscription with audio on.

Every peer is closed when its session ends (it sees the ``ended`` state on its subscription)
and at shutdown (:meth:`PeerRegistry.close_all` from the lifespan). There is no trickle ICE:
the answer carries every candidate the server gathered (host candidates, plus server-reflexive
and relay ones when ``INTERP_ICE_SERVERS`` names STUN/TURN servers).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from dataclasses import dataclass
from typing import Any

from aiortc import (
    RTCConfiguration,
    RTCDataChannel,
    RTCIceServer,
    RTCPeerConnection,
    RTCSessionDescription,
    sdp,
)
from aiortc.mediastreams import MediaStreamTrack
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from app.api import json_body, services_of
from app.errors import HTTP_STATUS, error
from app.origin import origin_allowed
from app.present import CLOSE_CODE
from app.services import Engine
from app.settings import Settings
from app.webrtc_media import (
    INGEST_RATE,
    SpeechTrack,
    drain_track,
    read_presenter_track,
)
from engine import languages
from engine.delivery.hub import Hub, ListenerTooSlow, Subscription, SubscriptionClosed
from engine.events import StateChange, to_json
from engine.presenting import Presentation, Presenting, StartRequest, check_credentials
from engine.refusals import Refused
from engine.session import Session

log = logging.getLogger(__name__)

CONNECT_TIMEOUT = 30.0
"""A peer that has not connected this long after its answer is closed (its stream finalised)."""
ENDED_GRACE = 5.0
"""After ``ended`` the client closes the connection; the server does if it has not by then."""
MAX_PEERS = 200
"""Peer connections one process holds (each costs a UDP socket, DTLS and an Opus codec)."""
PENDING_EVENTS = 1000
"""Events held for a presenter's data channel until it opens."""


class OfferError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(frozen=True, slots=True)
class Offer:
    sdp: str
    role: str
    token: str | None
    lang: str | None


def parse_offer(data: dict[str, Any]) -> Offer:
    """The body of an offer; :class:`OfferError` (400) when malformed."""
    text = data.get("sdp")
    if data.get("type") != "offer":
        raise OfferError(400, 'type must be "offer"')
    if not isinstance(text, str) or not text.lstrip().startswith("v=0"):
        raise OfferError(400, "sdp must be an SDP offer (text starting with v=0)")
    role = data.get("role")
    if role not in ("present", "listen"):
        raise OfferError(400, 'role must be "present" or "listen"')
    token = data.get("token")
    lang = data.get("lang")
    if token is not None and not isinstance(token, str):
        raise OfferError(400, "token must be a string")
    if lang is not None and not isinstance(lang, str):
        raise OfferError(400, "lang must be a language code")
    return Offer(text, role, token, lang)


def audio_directions(text: str) -> list[str]:
    """Directions of the offer's audio sections (from the offerer's side); 400 when the SDP
    cannot be parsed or has no media at all."""
    try:
        description = sdp.SessionDescription.parse(text)
    except Exception as exc:  # the parser raises whatever its input provokes
        raise OfferError(400, f"malformed SDP offer: {type(exc).__name__}: {exc}") from None
    if not description.media:
        raise OfferError(400, "malformed SDP offer: no media sections")
    return [m.direction or "sendrecv" for m in description.media if m.kind == "audio"]


def new_peer_connection(settings: Settings) -> RTCPeerConnection:
    """A peer connection with the configured STUN/TURN servers and no others (aiortc would
    otherwise use a public STUN server by default)."""
    servers = [
        RTCIceServer(urls=list(s.urls), username=s.username, credential=s.credential)
        for s in settings.ice_servers
    ]
    return RTCPeerConnection(RTCConfiguration(iceServers=servers))


class Peer:
    """One aiortc peer connection of a session, closed once (idempotent :meth:`close`)."""

    def __init__(self, pc: RTCPeerConnection, session: Session, registry: PeerRegistry) -> None:
        self.pc = pc
        self.session = session
        self.registry = registry
        self.connected = asyncio.Event()
        self._closing: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        pc.on("connectionstatechange", self._on_connection_state)

    def spawn(self, coro: Any, name: str) -> asyncio.Task[None]:
        task: asyncio.Task[None] = asyncio.create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def watch(self) -> None:
        """Close the peer if it does not connect within ``CONNECT_TIMEOUT``."""
        self.spawn(self._connect_deadline(), f"webrtc-deadline-{self.session.code}")

    async def _connect_deadline(self) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.connected.wait(), CONNECT_TIMEOUT)
            return
        log.info("webrtc peer of %s did not connect in %.0f s", self.session.code, CONNECT_TIMEOUT)
        self.close_soon()

    def _on_connection_state(self) -> None:
        state = self.pc.connectionState
        if state == "connected":
            self.connected.set()
        elif state in ("failed", "closed"):
            self.close_soon()

    def close_soon(self) -> None:
        if self._closing is None:
            self._closing = asyncio.create_task(self._close(), name="webrtc-close")

    async def close(self) -> None:
        self.close_soon()
        assert self._closing is not None
        await asyncio.shield(self._closing)

    async def _close(self) -> None:
        try:
            await self.release()
        except Exception:
            log.exception("closing a webrtc peer of %s", self.session.code)
        finally:
            with contextlib.suppress(Exception):
                await self.pc.close()
            current = asyncio.current_task()
            for task in list(self._tasks):
                if task is not current:
                    task.cancel()
            self.registry.discard(self)

    async def release(self) -> None:
        """What the peer holds beyond its connection (subclasses)."""


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
            data = json.loads(message) if isinstance(message, str) else None
        except ValueError:
            data = None
        kind = data.get("type") if isinstance(data, dict) else None
        if kind == "stop":
            self.stop_soon()
        elif kind != "ping":
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
        """The session's events to the data channel; the ``ended`` state closes the peer."""
        try:
            while True:
                event = await self.presentation.events.get()
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
        if self._closing is None:  # not already closing (connection gone, session ended)
            await asyncio.sleep(ENDED_GRACE)
            self.close_soon()

    async def release(self) -> None:
        self._ingesting = False
        await self.presentation.release()


class ListenerPeer(Peer):
    """A receive-only listener of the spoken translation in one language."""

    def __init__(
        self,
        pc: RTCPeerConnection,
        session: Session,
        registry: PeerRegistry,
        subscription: Subscription,
        hub: Hub,
    ) -> None:
        super().__init__(pc, session, registry)
        self.track = SpeechTrack(subscription, subscription_language(subscription), self.close_soon)
        self.hub = hub

    async def release(self) -> None:
        self.track.stop()
        self.hub.unsubscribe(self.track.subscription)
        self.session.audience_changed()


class PeerRegistry:
    """Every open peer connection of this process (closed at shutdown)."""

    def __init__(self, limit: int = MAX_PEERS) -> None:
        self.limit = limit
        self._peers: set[Peer] = set()

    def __len__(self) -> int:
        return len(self._peers)

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(list(self._peers))

    def add(self, peer: Peer) -> None:
        self._peers.add(peer)

    def discard(self, peer: Peer) -> None:
        self._peers.discard(peer)

    async def close_all(self) -> None:
        await asyncio.gather(*(p.close() for p in list(self._peers)), return_exceptions=True)


def subscription_language(subscription: Subscription) -> str:
    (lang,) = subscription.langs
    return lang


def peers_of(request: Request) -> PeerRegistry:
    peers: PeerRegistry = request.state.peers
    return peers


async def config_endpoint(request: Request) -> Response:
    """``GET /api/webrtc/config``: the browser's ``RTCPeerConnection`` configuration."""
    services = services_of(request)
    return JSONResponse({"iceServers": [s.as_json() for s in services.settings.ice_servers]})


async def offer_endpoint(request: Request) -> Response:
    """``POST /api/sessions/{code}/webrtc/offer`` -> ``{"sdp", "type": "answer"}``."""
    services = services_of(request)
    if not origin_allowed(request, services.settings):
        return error(403, "origin not allowed")
    data = await json_body(request)
    if isinstance(data, JSONResponse):
        return data
    try:
        offer = parse_offer(data)
        engine = services.engine()
        session = await engine.registry.get(request.path_params["code"])
        if session is None:
            raise OfferError(404, "no session with that code")
        if session.state == "ended":
            raise OfferError(410, "session has ended")
        directions = audio_directions(offer.sdp)
        if len(peers_of(request)) >= peers_of(request).limit:
            raise OfferError(503, "server is at its limit of WebRTC connections")
        if offer.role == "present":
            return await _answer_presenter(request, engine.presenting, session, offer, directions)
        return await _answer_listener(request, engine, session, offer, directions)
    except OfferError as exc:
        return error(exc.status, exc.message)
    except Refused as exc:
        return error(HTTP_STATUS[exc.reason], exc.message)


async def _negotiate(pc: RTCPeerConnection, offer: Offer, tracks: list[MediaStreamTrack]) -> None:
    """Apply the offer, collecting the remote tracks it announces (400 if aiortc refuses it)."""
    pc.on("track", tracks.append)
    try:
        await pc.setRemoteDescription(RTCSessionDescription(sdp=offer.sdp, type="offer"))
    except Exception as exc:  # aiortc raises ValueError, InvalidStateError, ... on bad offers
        await pc.close()
        raise OfferError(400, f"SDP offer refused: {type(exc).__name__}: {exc}") from None


async def _answer(peer: Peer) -> Response:
    try:
        await peer.pc.setLocalDescription(await peer.pc.createAnswer())
    except Exception as exc:
        log.info("cannot answer a webrtc offer of %s: %r", peer.session.code, exc)
        await peer.close()
        return error(400, f"cannot answer this offer: {type(exc).__name__}: {exc}")
    peer.watch()
    description = peer.pc.localDescription
    return JSONResponse({"sdp": description.sdp, "type": description.type})


async def _answer_presenter(
    request: Request,
    presenting: Presenting,
    session: Session,
    offer: Offer,
    directions: list[str],
) -> Response:
    check_credentials(session, offer.token)
    if not any(d in ("sendrecv", "sendonly") for d in directions):
        raise OfferError(400, "the offer sends no audio track")
    pc = new_peer_connection(services_of(request).settings)
    tracks: list[MediaStreamTrack] = []
    await _negotiate(pc, offer, tracks)
    try:
        presentation = await presenting.start(
            session, StartRequest(token=offer.token, sample_rate=INGEST_RATE)
        )
    except Refused:
        await pc.close()
        raise
    peer = PresenterPeer(pc, session, peers_of(request), presentation)
    peers_of(request).add(peer)
    peer.take_tracks(tracks)
    return await _answer(peer)


async def _answer_listener(
    request: Request, engine: Engine, session: Session, offer: Offer, directions: list[str]
) -> Response:
    services = services_of(request)
    await engine.access.check(session, offer.token)  # a private session's listener token
    offered = session.offered
    lang = offer.lang
    if lang is None or not languages.is_known(lang) or languages.normalise(lang) not in offered:
        raise OfferError(400, f"lang must be one of {', '.join(offered)}")
    lang = languages.normalise(lang)
    if not any(d in ("sendrecv", "recvonly") for d in directions):
        raise OfferError(400, "the offer receives no audio (add a recvonly audio transceiver)")
    hub = services.hub
    if hub.listener_count(session.code) >= services.settings.max_listeners_per_session:
        raise OfferError(503, "this session has as many listeners as it allows")
    pc = new_peer_connection(services.settings)
    tracks: list[MediaStreamTrack] = []
    await _negotiate(pc, offer, tracks)
    subscription = hub.subscribe(
        session.code, frozenset({lang}), hub.last_seq(session.code), counted=True, audio=True
    )
    peer = ListenerPeer(pc, session, peers_of(request), subscription, hub)
    peers_of(request).add(peer)
    for incoming in tracks:  # a sendrecv offer may send audio too: nobody needs it
        peer.spawn(drain_track(incoming), f"webrtc-drain-{session.code}")
    pc.addTrack(peer.track)
    peer.track.start()
    session.audience_changed()
    return await _answer(peer)
