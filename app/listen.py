"""WebSocket ``/ws/listen/{code}``: one audience member following a session (or, with
``preview=1`` and the presenter token, the presenter's preview of a language, not counted).

The listener's events come from its hub subscription (bounded queue, overflow policy in
engine/hub.py). A listener that cannot keep up is closed with 1013 and a reason naming the
``since`` to reconnect with; a send that stalls past ``listener_send_timeout`` closes it
too (app/sendwatch.py), so a stalled phone never holds memory or slows anyone else.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from typing import Literal

from starlette.websockets import WebSocket, WebSocketDisconnect

from app import json_text
from app.sendwatch import SendWatch
from app.sockets import PONG, accept_for_session, close, services_of
from engine import languages
from engine.delivery.hub import Hub, ListenerTooSlow, Subscription, SubscriptionClosed
from engine.events import SpeechAudio, to_json
from engine.presenting import check_credentials
from engine.refusals import Refusal, Refused

CLOSE_CODE: dict[Refusal, int] = {
    Refusal.NO_CREDENTIALS: 1008,
    Refusal.BAD_CREDENTIALS: 1008,
}
"""The close code of each refusal a listener can meet (a private session's token,
engine/access.py; docs/protocol.md)."""


@dataclass(frozen=True, slots=True)
class BadControl:
    """A listener's control message refused; ``reason`` is the close reason."""

    reason: str


async def _send_events(
    websocket: WebSocket, sub: Subscription, watch: SendWatch, sending: asyncio.Lock
) -> None:
    """``sending``: held for each event (an audio header and its PCM go together), so a pong
    never comes between them."""
    me = asyncio.current_task()
    assert me is not None
    try:
        while True:
            event = await sub.get()
            watch.begin(me)
            try:
                async with sending:
                    await websocket.send_text(to_json(event))
                    if isinstance(event, SpeechAudio):
                        await websocket.send_bytes(event.pcm)
            finally:
                watch.end(me)
    except asyncio.CancelledError:
        if not watch.stalled(me):
            raise
        me.uncancel()
        # The close frame queues behind what did not drain; do not wait for it for long.
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(watch.timeout):
                await close(websocket, 1013, f"send stalled; reconnect with since={sub.last_seq}")
    except ListenerTooSlow:
        await close(websocket, 1013, f"too far behind; reconnect with since={sub.last_seq}")
    except SubscriptionClosed:
        await close(websocket, 1001, "session closed")
    except (WebSocketDisconnect, RuntimeError):
        return  # the listener left while we were sending


async def listen_endpoint(websocket: WebSocket) -> None:
    accepted = await accept_for_session(websocket)
    if accepted is None:
        return
    engine, session = accepted
    services = services_of(websocket)
    hub = services.hub
    params = websocket.query_params
    preview = params.get("preview", "0")
    try:
        if preview == "1":  # the presenter's preview of a language: not audience
            check_credentials(session, params.get("token"))
        await engine.access.check(session, params.get("token"))
    except Refused as exc:
        await close(websocket, CLOSE_CODE[exc.reason], exc.message)
        return
    offered = session.offered
    lang = params.get("lang", session.record.source_language)
    if not languages.is_known(lang) or languages.normalise(lang) not in offered:
        await close(websocket, 1003, f"language must be one of {', '.join(offered)}")
        return
    lang = languages.normalise(lang)
    since_text = params.get("since", "0")
    if not since_text.isdigit() or len(since_text) > 18:
        await close(websocket, 1003, "since must be a non-negative integer")
        return
    audio_text = params.get("audio", "0")
    if audio_text not in ("0", "1"):
        await close(websocket, 1003, "audio must be 0 or 1")
        return
    if hub.listener_count(session.code) >= services.settings.max_listeners_per_session:
        await close(websocket, 1013, "this session has as many listeners as it allows")
        return
    sub = hub.subscribe(
        session.code,
        frozenset({lang}),
        int(since_text),
        audio=audio_text == "1",
        counted=preview != "1",
    )
    sending = asyncio.Lock()
    sender = asyncio.create_task(_send_events(websocket, sub, websocket.state.send_watch, sending))
    session.audience_changed()
    try:
        while not sender.done():
            receive = asyncio.ensure_future(websocket.receive())
            done, _ = await asyncio.wait({receive, sender}, return_when=asyncio.FIRST_COMPLETED)
            if receive not in done:
                receive.cancel()
                with contextlib.suppress(asyncio.CancelledError, WebSocketDisconnect, RuntimeError):
                    await receive
                break
            message = receive.result()
            if message["type"] == "websocket.disconnect":
                break
            reply = _control(message.get("text"), sub, offered, hub)
            if isinstance(reply, BadControl):
                await close(websocket, 1003, reply.reason)
                break
            if reply == "pong":
                async with sending:
                    await websocket.send_text(PONG)
                continue
            session.audience_changed()  # what is translated and spoken may have changed
    finally:
        hub.unsubscribe(sub)
        sender.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await sender
        session.audience_changed()


def _control(
    text: str | None, sub: Subscription, offered: list[str], hub: Hub
) -> BadControl | Literal["pong"] | None:
    """Apply a listener's control message: None once applied, ``"pong"`` for a ping (to be
    answered), :class:`BadControl` if it is invalid."""
    if text is None:
        return BadControl("listeners send text messages only")
    try:
        data = json_text.parse(text)
    except json_text.NotJson:
        return BadControl("message is not valid JSON")
    if not isinstance(data, dict):
        return BadControl("message must be a JSON object")
    kind = data.get("type")
    if kind == "language":
        lang = data.get("lang")
        if not isinstance(lang, str) or not languages.is_known(lang):
            return BadControl("unknown language")
        lang = languages.normalise(lang)
        if lang not in offered:
            return BadControl(f"language must be one of {', '.join(offered)}")
        hub.set_languages(sub, frozenset({lang}))
        return None
    if kind == "audio":
        enabled = data.get("enabled")
        if not isinstance(enabled, bool):
            return BadControl("audio.enabled must be a boolean")
        hub.set_audio(sub, enabled)
        return None
    if kind == "ping":
        return "pong"
    return BadControl(f"unknown message type {kind!r}")
