"""A session an hour long: whoever comes late gets all of it.

An hour of talk holds more finals than a listener queue's bound (``listener_queue``, 1000
events). The backfill of a client that comes late (a listener, a presenter's console
starting a new stream, a listener choosing another language) is the session's log, and
does not count against that bound: it did, and each of them was closed or left blank before
its first event (engine/delivery/hub.py)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import websockets

from engine.events import Caption
from engine.session import Session
from tests.app.inprocess import InProcess, in_process_server, new_session

HOUR = 1100  # finals: about an hour of a talk


async def an_hour_of_talk(server: InProcess, code: str, translated: bool = False) -> Session:
    """Publish an hour of source finals into ``code`` (and their Spanish), as its streams
    and translators would have."""
    session = await server.state["services"].engine().registry.get(code)
    assert session is not None
    for i in range(HOUR):
        start, end = 3.0 * i, 3.0 * i + 2
        await session.publish(Caption(i, "en", True, "final", f"Line {i + 1}.", start, end))
        if translated:
            text = f"Línea {i + 1}."
            await session.publish(Caption(i, "es", False, "final", text, start, end, sources=(i,)))
    return session


async def events_until(ws: Any, done: Any) -> list[dict[str, Any]]:
    """Events from ``ws`` until one makes ``done(events)`` true (within a minute)."""
    events: list[dict[str, Any]] = []
    async with asyncio.timeout(60):
        while not done(events):
            message = await ws.recv()
            if isinstance(message, str):
                events.append(json.loads(message))
    return events


def finals(events: list[dict[str, Any]], lang: str) -> list[int]:
    return [
        e["segment"]
        for e in events
        if e.get("type") == "caption" and e["state"] == "final" and e["lang"] == lang
    ]


async def test_a_presenters_console_starting_an_hour_in_gets_the_hour(tmp_path: Path) -> None:
    async with in_process_server(tmp_path) as server:
        created = await new_session(server.url)
        code = created["code"]
        await an_hour_of_talk(server, code)
        url = server.url.replace("http://", "ws://") + f"/ws/present/{code}"
        async with websockets.connect(url) as ws:
            await ws.send(
                json.dumps(
                    {"type": "start", "token": created["presenter_token"], "sample_rate": 16000}
                )
            )
            events = await events_until(ws, lambda got: len(finals(got, "en")) >= HOUR)
            assert events[0]["type"] == "ready"
            assert finals(events, "en") == list(range(HOUR))
            await ws.send(json.dumps({"type": "stop"}))
            rest = await events_until(ws, lambda got: got and got[-1]["type"] == "ended")
            assert rest[-1] == {"type": "ended"}


async def test_a_listener_choosing_a_language_an_hour_in_gets_every_line_of_it(
    tmp_path: Path,
) -> None:
    async with in_process_server(tmp_path, apertium=True) as server:
        created = await new_session(server.url, target_languages=["es"])
        code = created["code"]
        session = await an_hour_of_talk(server, code, translated=True)
        log = server.state["services"].hub.fanout.log(code)
        url = server.url.replace("http://", "ws://") + f"/ws/listen/{code}"
        async with websockets.connect(f"{url}?lang=en&since={log.seq}") as ws:
            await ws.send(json.dumps({"type": "language", "lang": "es"}))
            events = await events_until(ws, lambda got: len(set(finals(got, "es"))) >= HOUR)
            assert sorted(set(finals(events, "es"))) == list(range(HOUR))
            await session.publish(Caption(HOUR, "en", True, "draft", "And now", 3300, 3301))
            live = await events_until(ws, lambda got: any(e.get("text") == "And now" for e in got))
            assert live[-1]["state"] == "draft"
