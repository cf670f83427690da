"""Captions pushed out over real HTTP: a local server checks each post the way YouTube Live
and Zoom document their caption ingestion (engine/delivery/push_formats.py names the pages);
an endpoint that answers after 5 s, or never, delays nobody's captions."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import json
import re
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import uvicorn
import websockets
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from engine.events import Caption
from tests.app.inprocess import http, in_process_server, new_session
from tests.support import free_port

YOUTUBE_BODY = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3})\n([^\n]+)\n")


@dataclass
class Ingest:
    """What each fake service accepted, and what it refused (a format error)."""

    youtube: list[tuple[int, str]] = field(default_factory=list)
    zoom: list[tuple[int, str, str]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    slow_answered: int = 0
    last_seq: dict[str, int] = field(default_factory=dict)

    def check_seq(self, service: str, request: Request) -> int | None:
        """seq must be there and grow by one for each new caption (a retry repeats it)."""
        text = request.query_params.get("seq", "")
        if not text.isdigit():
            self.problems.append(f"{service}: no seq")
            return None
        seq, last = int(text), self.last_seq.get(service, 0)
        if seq not in (last, last + 1):
            self.problems.append(f"{service}: seq {seq} after {last}")
        self.last_seq[service] = seq
        return seq

    def check_plain_text(self, service: str, request: Request) -> None:
        kind = request.headers.get("content-type", "")
        if not kind.startswith("text/plain") or "utf-8" not in kind.lower():
            self.problems.append(f"{service}: content type {kind!r}")


def ingest_app(ingest: Ingest) -> Starlette:
    async def youtube(request: Request) -> Response:
        """support.google.com/youtube/answer/6077032: <UTC time>\\n<TEXT>\\n, &seq."""
        ingest.check_plain_text("youtube", request)
        seq = ingest.check_seq("youtube", request)
        body = (await request.body()).decode("utf-8")
        match = YOUTUBE_BODY.fullmatch(body)
        if match is None or seq is None or request.query_params.get("cid") != "stream-key":
            ingest.problems.append(f"youtube: body {body!r}")
            return PlainTextResponse("bad", status_code=400)
        at = dt.datetime.strptime(match[1], "%Y-%m-%dT%H:%M:%S.%f").replace(tzinfo=dt.UTC)
        if abs(at.timestamp() - time.time()) > 60:
            ingest.problems.append(f"youtube: time {match[1]} is not UTC now")
        ingest.youtube.append((seq, match[2]))
        return PlainTextResponse(dt.datetime.now(dt.UTC).isoformat())

    async def zoom(request: Request) -> Response:
        """support.zoom.us/hc/en-us/articles/115002212983: text/plain body, &seq, &lang."""
        ingest.check_plain_text("zoom", request)
        seq = ingest.check_seq("zoom", request)
        lang = request.query_params.get("lang", "")
        body = (await request.body()).decode("utf-8")
        if seq is None or not re.fullmatch(r"[a-z]{2}-[A-Z]{2}", lang) or not body.strip():
            ingest.problems.append(f"zoom: lang {lang!r} body {body!r}")
            return PlainTextResponse("bad", status_code=400)
        ingest.zoom.append((seq, lang, body))
        return PlainTextResponse("")

    async def slow(request: Request) -> Response:
        await asyncio.sleep(5.0)
        ingest.slow_answered += 1
        return PlainTextResponse("")

    async def never(request: Request) -> Response:
        await asyncio.Event().wait()
        return PlainTextResponse("")  # pragma: no cover

    return Starlette(
        routes=[
            Route("/closedcaption", youtube, methods=["POST"]),
            Route("/zoom/closedcaption", zoom, methods=["POST"]),
            Route("/slow", slow, methods=["POST"]),
            Route("/never", never, methods=["POST"]),
        ]
    )


@contextlib.asynccontextmanager
async def serve(app: Starlette) -> AsyncIterator[str]:
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(
            app, host="127.0.0.1", port=port, log_level="warning", timeout_graceful_shutdown=1
        )
    )
    task = asyncio.create_task(server.serve())
    while not server.started:
        await asyncio.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait_for(task, 10)


async def until(check: Callable[[], bool], within_s: float = 15.0) -> None:
    async with asyncio.timeout(within_s):
        while not check():
            await asyncio.sleep(0.05)


class Listener:
    """A listener socket that notes when each final arrived, against its server ``ts``."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.delays: dict[str, float] = {}
        self.task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Listener:
        self.ws = await websockets.connect(self.url)
        self.task = asyncio.create_task(self._read())
        return self

    async def _read(self) -> None:
        async for raw in self.ws:
            event = json.loads(raw)
            if event.get("type") == "caption" and event.get("state") == "final":
                self.delays[event["text"]] = time.time() - float(event["ts"])

    async def __aexit__(self, *exc: object) -> None:
        await self.ws.close()
        if self.task is not None:
            await self.task


async def test_captions_reach_youtube_and_zoom_as_documented_and_slow_ones_delay_nobody(
    tmp_path: Path,
) -> None:
    ingest = Ingest()
    async with (
        serve(ingest_app(ingest)) as sink,
        in_process_server(tmp_path, push_hosts=("127.0.0.1",), push_timeout_s=6.0) as server,
    ):
        url = server.url
        created = await new_session(url)
        code, token = created["code"], created["presenter_token"]
        auth = {"Authorization": f"Bearer {token}"}
        session = await server.state["services"].engine().registry.get(code)
        push = f"{url}/api/sessions/{code}/push"

        async def say(segment: int, text: str) -> None:
            await session.publish(Caption(segment, "en", True, "final", text, segment, segment + 1))

        # Refusals first: no token, an unknown service, a host not allowed, a bad language.
        body = {"url": f"{sink}/closedcaption?cid=stream-key", "lang": "en"}
        assert (await http("PUT", f"{push}/youtube", json=body)).status_code == 401
        assert (await http("PUT", f"{push}/myspace", json=body, headers=auth)).status_code == 404
        elsewhere = {"url": "http://10.0.0.1/closedcaption", "lang": "en"}
        assert (
            await http("PUT", f"{push}/youtube", json=elsewhere, headers=auth)
        ).status_code == 422
        assert (
            await http("PUT", f"{push}/youtube", json={**body, "lang": "de"}, headers=auth)
        ).status_code == 422
        for malformed in ("http://[::1", "http://127.0.0.1:99999/x", "http://127.0.0.1:0/x"):
            assert (
                await http("PUT", f"{push}/youtube", json={**body, "url": malformed}, headers=auth)
            ).status_code == 422, malformed

        # Both services, then three finals (and a draft, which is not pushed).
        youtube = await http("PUT", f"{push}/youtube", json=body, headers=auth)
        assert youtube.status_code == 200 and youtube.json()["host"] == "127.0.0.1"
        zoom = {"url": f"{sink}/zoom/closedcaption?id=42&signature=s", "lang": "en"}
        assert (await http("PUT", f"{push}/zoom", json=zoom, headers=auth)).status_code == 200
        await session.publish(Caption(0, "en", True, "draft", "Good morn", 0, 1))
        for segment, text in enumerate(
            ["Good morning.", "Welcome to the meeting.", "Let us begin."]
        ):
            await say(segment, text)
        await until(lambda: len(ingest.youtube) == 3 and len(ingest.zoom) == 3)
        assert ingest.problems == []
        assert ingest.youtube == [
            (1, "Good morning."),
            (2, "Welcome to the meeting."),
            (3, "Let us begin."),
        ]
        assert [(seq, lang) for seq, lang, _ in ingest.zoom] == [
            (1, "en-US"),
            (2, "en-US"),
            (3, "en-US"),
        ]
        listed = await http("GET", push, headers=auth)
        assert "stream-key" not in listed.text and "signature" not in listed.text  # secrets
        targets = {t["service"]: t for t in listed.json()["targets"]}
        assert (
            targets["youtube"]["sent"] == 3
            and targets["youtube"]["last_sent_text"] == "Let us begin."
        )
        assert targets["zoom"]["last_error"] is None and targets["zoom"]["last_sent_at"] > 0

        # Now one service answers after 5 s and the other never: a listener's captions
        # arrive as fast as before.
        async with Listener(url.replace("http", "ws") + f"/ws/listen/{code}?lang=en") as before:
            for i in range(5):
                await say(10 + i, f"fast {i}")
                await asyncio.sleep(0.2)
            await until(lambda: len(before.delays) >= 8)  # 3 backfilled + 5 live
        await http(
            "PUT", f"{push}/youtube", json={"url": f"{sink}/never", "lang": "en"}, headers=auth
        )
        await http("PUT", f"{push}/zoom", json={"url": f"{sink}/slow", "lang": "en"}, headers=auth)
        async with Listener(url.replace("http", "ws") + f"/ws/listen/{code}?lang=en") as during:
            await asyncio.sleep(0.3)
            for i in range(5):
                await say(20 + i, f"slow {i}")
                await asyncio.sleep(0.2)
            await until(lambda: all(f"slow {i}" in during.delays for i in range(5)))
        fast = [before.delays[f"fast {i}"] for i in range(5)]
        slow = [during.delays[f"slow {i}"] for i in range(5)]
        assert max(slow) < max(fast) + 0.25, (fast, slow)

        # The console sees the slow answer land and the silent endpoint's error.
        def status() -> dict[str, dict[str, Any]]:
            return {t.service: t.as_json() for t in session.pushes.statuses()}

        await until(lambda: status()["youtube"]["last_error"] is not None)
        assert "no answer within 6 s" in status()["youtube"]["last_error"]
        await until(lambda: ingest.slow_answered >= 1)
        assert (await http("DELETE", f"{push}/youtube", headers=auth)).json()["stopped"] is True
        assert (await http("DELETE", f"{push}/youtube", headers=auth)).json()["stopped"] is False


@pytest.mark.parametrize(
    ("host", "allowed"),
    [("upload.youtube.com", True), ("wmcapi.zoom.us", True), ("zoom.us.evil.com", False)],
)
def test_push_hosts(host: str, allowed: bool) -> None:
    from app.push_api import host_allowed
    from app.settings import Settings

    assert host_allowed(host, Settings().push_hosts) is allowed
