"""``role: listen`` over WebRTC: a receive-only peer gets the spoken translation in one
language as an audio track (:class:`app.webrtc_media.SpeechTrack`), from a counted hub
subscription with audio on. The track closes the peer when the session ends or its
subscription closes."""

from __future__ import annotations

from aiortc import RTCPeerConnection

from app.webrtc_media import SpeechTrack
from app.webrtc_peer import Peer, PeerRegistry
from engine.delivery.hub import Hub, Subscription
from engine.session import Session


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


def subscription_language(subscription: Subscription) -> str:
    (lang,) = subscription.langs
    return lang
