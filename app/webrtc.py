"""WebRTC with aiortc: ``POST /api/sessions/{code}/webrtc/offer`` (docs/protocol.md).

``role: present`` (the presenter's or a panel speaker's token, as on the presenter socket):
the peer sends one audio track. One task reads it (``await track.recv()`` until
``MediaStreamError``), resamples to 16 kHz mono and feeds the same
:class:`engine.session.PresenterStream` as the presenter WebSocket; everything after ingest
is shared. If the peer also opens a data channel, the server sends on it the text
messages the presenter socket would (``ready``, every event, ``ended``) and takes
``{"type": "stop"}``. The stream is finalised as on Stop when the peer sends ``stop``, when
its track ends, or when its connection closes, fails or never connects.

``role: listen``: a receive-only peer gets the spoken translation in ``lang`` as an audio
track (:class:`app.webrtc_media.SpeechTrack`), from a counted hub subscription with audio on.

Every peer is closed when its session ends (it sees the ``ended`` state on its subscription)
and at shutdown (:meth:`PeerRegistry.close_all` from the lifespan). There is no trickle ICE:
the answer carries every candidate the server gathered (host candidates, plus server-reflexive
and relay ones when ``INTERP_ICE_SERVERS`` names STUN/TURN servers).

Where each part lives: the offer's body (app/webrtc_offer.py), a peer connection's lifetime and
the registry of them (app/webrtc_peer.py), the presenter's peer (app/webrtc_presenter.py), a
listener's peer (app/webrtc_listener.py), audio in and out of tracks (app/webrtc_media.py);
this module answers the HTTP requests and negotiates.
"""

from __future__ import annotations

import logging

from aiortc import (
    RTCConfiguration,
    RTCIceServer,
    RTCPeerConnection,
    RTCSessionDescription,
)
from aiortc.mediastreams import MediaStreamTrack
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from app.api import json_body, services_of
from app.errors import error
from app.origin import origin_allowed
from app.services import Engine
from app.settings import Settings
from app.webrtc_listener import ListenerPeer
from app.webrtc_media import INGEST_RATE, drain_track
from app.webrtc_offer import Offer, OfferError, audio_directions, parse_offer
from app.webrtc_peer import Peer, PeerRegistry, close_connection
from app.webrtc_presenter import PresenterPeer
from engine import languages
from engine.presenting import Presenting, StartRequest, speaker_of
from engine.refusals import Refused
from engine.session import Session

log = logging.getLogger(__name__)


def new_peer_connection(settings: Settings) -> RTCPeerConnection:
    """A peer connection with the configured STUN/TURN servers and no others (aiortc would
    otherwise use a public STUN server by default)."""
    servers = [
        RTCIceServer(urls=list(s.urls), username=s.username, credential=s.credential)
        for s in settings.ice_servers
    ]
    return RTCPeerConnection(RTCConfiguration(iceServers=servers))


def peers_of(request: Request) -> PeerRegistry:
    peers: PeerRegistry = request.state.peers
    return peers


async def config_endpoint(request: Request) -> Response:
    """``GET /api/webrtc/config``: the browser's ``RTCPeerConnection`` configuration."""
    services = services_of(request)
    return JSONResponse({"iceServers": [s.as_json() for s in services.settings.ice_servers]})


async def offer_endpoint(request: Request) -> Response:
    """``POST /api/sessions/{code}/webrtc/offer`` -> ``{"sdp", "type": "answer"}``.

    A malformed offer, or one this server cannot take, is an :class:`OfferError` (its status);
    a refusal goes on to the app's handler and its status table (``HTTP_STATUS``,
    app/errors.py), which every HTTP route shares."""
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
        if offer.role == "present":
            return await _answer_presenter(request, engine.presenting, session, offer, directions)
        return await _answer_listener(request, engine, session, offer, directions)
    except OfferError as exc:
        return error(exc.status, exc.message)


async def _negotiate(pc: RTCPeerConnection, offer: Offer, tracks: list[MediaStreamTrack]) -> None:
    """Apply the offer, collecting the remote tracks it announces (400 if aiortc refuses it)."""
    pc.on("track", tracks.append)
    try:
        await pc.setRemoteDescription(RTCSessionDescription(sdp=offer.sdp, type="offer"))
    except Exception as exc:  # aiortc raises ValueError, InvalidStateError, ... on bad offers
        await close_connection(pc)
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
    await speaker_of(session, offer.token)  # refused before negotiating; start checks again
    if not any(d in ("sendrecv", "sendonly") for d in directions):
        raise OfferError(400, "the offer sends no audio track")
    pc = new_peer_connection(services_of(request).settings)
    tracks: list[MediaStreamTrack] = []
    await _negotiate(pc, offer, tracks)
    try:
        presentation = await presenting.start(
            session, StartRequest(token=offer.token, sample_rate=INGEST_RATE, since=offer.since)
        )
    except Refused:
        await close_connection(pc)
        raise
    peer = PresenterPeer(pc, session, peers_of(request), presentation)
    peers_of(request).add(peer, listener=False)
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
    if peers_of(request).listeners_full:
        raise OfferError(503, "server is at its limit of WebRTC listeners")
    pc = new_peer_connection(services.settings)
    tracks: list[MediaStreamTrack] = []
    await _negotiate(pc, offer, tracks)
    subscription = hub.subscribe(
        session.code, frozenset({lang}), hub.last_seq(session.code), counted=True, audio=True
    )
    peer = ListenerPeer(pc, session, peers_of(request), subscription, hub)
    peers_of(request).add(peer, listener=True)
    for incoming in tracks:  # a sendrecv offer may send audio too: nobody needs it
        peer.spawn(drain_track(incoming), f"webrtc-drain-{session.code}")
    pc.addTrack(peer.track)
    peer.track.start()
    session.audience_changed()
    return await _answer(peer)
