"""One translated talk: a session with target languages, listeners on chosen languages, and a
presenter replaying a recording in the session's source language.

The presenter is the captions bench's client (:mod:`bench.replay`, its pieces reused) with the
spoken language as a parameter; each listener records every text message with its
``time.monotonic()`` arrival, on the same clock as the presenter.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import httpx
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from bench.recordings import Recording
from bench.replay import (
    Mode,
    Received,
    Replay,
    ReplayError,
    present,
)
from bench.resources import CpuUse, cpu_snapshot, cpu_use
from bench.server import ServerHandle

JOIN_TIMEOUT_S = 10.0
FINALS_TIMEOUT_S = 30.0
"""How long a listener may still wait, after the presenter's ``ended``, for the finals of
its language (``ended`` already waits for the translations to be published)."""


async def create_translated_session(
    base_url: str, title: str, source: str, targets: Sequence[str]
) -> dict[str, Any]:
    """``POST /api/sessions`` with ``source_language`` and ``target_languages``."""
    async with httpx.AsyncClient(base_url=base_url, timeout=60.0) as client:
        response = await client.post(
            "/api/sessions",
            json={"title": title, "source_language": source, "target_languages": list(targets)},
        )
    if response.status_code != 201:
        raise ReplayError(f"POST /api/sessions: {response.status_code} {response.text[:300]}")
    body: dict[str, Any] = response.json()
    return body


class ListenerRecorder:
    """One listener on ``/ws/listen/{code}?lang=...``: records every text message."""

    def __init__(self, base_url: str, code: str, lang: str) -> None:
        scheme, rest = base_url.split("://", 1)
        ws_scheme = "wss" if scheme == "https" else "ws"
        self.url = f"{ws_scheme}://{rest.rstrip('/')}/ws/listen/{code}?lang={lang}"
        self.lang = lang
        self.received: list[Received] = []
        self.close_reason: str | None = None
        self.joined = asyncio.Event()
        self._finals: dict[bool, set[int]] = {True: set(), False: set()}
        self._final_arrived = asyncio.Event()
        self._ws: ClientConnection | None = None

    async def follow(self) -> None:
        """Connect and record until the socket closes (see :meth:`close`)."""
        async with connect(self.url, open_timeout=30, ping_interval=None) as ws:
            self._ws = ws
            try:
                async for raw in ws:
                    if isinstance(raw, bytes):
                        continue
                    message = json.loads(raw)
                    self.received.append(Received(time.monotonic(), message))
                    self._note(message)
            except ConnectionClosed:
                pass  # reported through close_reason
            self.close_reason = f"{ws.close_code} {ws.close_reason}".strip()

    def _note(self, message: Mapping[str, Any]) -> None:
        if message.get("type") == "state":
            self.joined.set()
        elif message.get("type") == "caption" and message.get("state") == "final":
            is_source = bool(message.get("source", True))
            if is_source or message.get("lang") == self.lang:
                # A translation final covers whole sentences: every segment of "sources".
                covered = message.get("sources") or [message["segment"]]
                self._finals[is_source].update(int(segment) for segment in covered)
                self._final_arrived.set()

    async def wait_finals(self, segments: frozenset[int], source: bool, limit_s: float) -> bool:
        """Wait until a final (source, or in this listener's language) of every segment has
        arrived; ``False`` if ``limit_s`` passed first."""
        try:
            async with asyncio.timeout(limit_s):
                while not segments <= self._finals[source]:
                    self._final_arrived.clear()
                    await self._final_arrived.wait()
        except TimeoutError:
            return False
        return True

    def missing(self, segments: frozenset[int], source: bool) -> int:
        """How many of ``segments`` have no final (source, or in this language) yet."""
        return len(segments - self._finals[source])

    async def close(self) -> None:
        """Close the socket (normal closure); :meth:`follow` then returns."""
        if self._ws is not None:
            await self._ws.close()


@dataclass(frozen=True, slots=True)
class TalkRun:
    """What one talk recorded: the presenter's replay and each listener's messages."""

    talk: str
    source: str
    targets: tuple[str, ...]
    presenter: Replay
    listeners: Mapping[str, tuple[Received, ...]]
    """Listener language -> its messages."""
    missing_finals: Mapping[str, int]
    """Listener language -> segments with a source final whose final in that language had
    not arrived when the listener was closed."""
    cpu: CpuUse
    load_average_before: tuple[float, float, float]
    load_average_after: tuple[float, float, float]


async def run_talk(
    server: ServerHandle,
    talk: str,
    recording: Recording,
    source: str,
    targets: Sequence[str],
    listen: Sequence[str],
    mode: Mode,
) -> TalkRun:
    """Create a session ``source -> targets``, join one listener per language of ``listen``,
    replay ``recording``, wait for every listener's finals, close."""
    session = await create_translated_session(server.base_url, f"bench {talk}", source, targets)
    listeners = [ListenerRecorder(server.base_url, session["code"], lang) for lang in listen]
    tasks = [asyncio.create_task(listener.follow()) for listener in listeners]
    try:
        async with asyncio.timeout(JOIN_TIMEOUT_S):
            await asyncio.gather(*(listener.joined.wait() for listener in listeners))
        load_before = os.getloadavg()
        before = cpu_snapshot(server.pid, [])
        presenter = await present(server.base_url, session, recording, language=source, mode=mode)
        after = cpu_snapshot(server.pid, [])
        expected = frozenset(
            int(r.message["segment"])
            for r in presenter.received
            if r.message.get("type") == "caption"
            and r.message.get("state") == "final"
            and r.message.get("source", True)
        )
        missing: dict[str, int] = {}
        for listener in listeners:
            is_source = listener.lang == source
            await listener.wait_finals(expected, is_source, FINALS_TIMEOUT_S)
            missing[listener.lang] = listener.missing(expected, is_source)
    finally:
        for listener in listeners:
            await listener.close()
        if tasks:
            _, stuck = await asyncio.wait(tasks, timeout=JOIN_TIMEOUT_S)
            for task in stuck:  # never connected, so close() could not end it
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
    return TalkRun(
        talk=talk,
        source=source,
        targets=tuple(targets),
        presenter=presenter,
        listeners={listener.lang: tuple(listener.received) for listener in listeners},
        missing_finals=missing,
        cpu=cpu_use(before, after),
        load_average_before=load_before,
        load_average_after=os.getloadavg(),
    )
