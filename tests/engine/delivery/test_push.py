"""Captions pushed out: the services' formats (engine/delivery/push_formats.py) and the
pusher's queue, order, retries and give-ups (engine/delivery/push.py), with a scripted
poster. The real HTTP path is tests/app/test_push.py."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from urllib.parse import parse_qs, urlsplit

import pytest

from engine.delivery.memory import InMemoryHub
from engine.delivery.push import PostFailed, PushPolicy, PushTarget, SessionPushes
from engine.delivery.push_formats import (
    PushRequest,
    with_params,
    youtube_request,
    youtube_time,
    zoom_request,
)
from engine.events import Caption

YT = "http://upload.youtube.com/closedcaption?cid=abc-123"
ZOOM = "https://wmcapi.zoom.us/closedcaption?id=200610693&ns=GZHkEA%3D%3D&expire=86400&signature=x"


def query(url: str) -> dict[str, list[str]]:
    return parse_qs(urlsplit(url).query)


def test_youtube_posts_a_utc_time_line_then_the_text_with_seq() -> None:
    assert youtube_time(1356307206.873) == "2012-12-24T00:00:06.873"  # the page's example
    request = youtube_request(YT, "Hello\nthere  world", 1356307206.873, 7)
    assert request.body == b"2012-12-24T00:00:06.873\nHello<br>there world\n"
    assert query(request.url) == {"cid": ["abc-123"], "seq": ["7"]}
    assert request.content_type == "text/plain; charset=utf-8"


def test_zoom_posts_plain_text_with_seq_and_lang() -> None:
    request = zoom_request(ZOOM, "Hola a todos.", "es", 3)
    assert request.body == b"Hola a todos."
    params = query(request.url)
    assert params["seq"] == ["3"] and params["lang"] == ["es-ES"]
    assert params["id"] == ["200610693"] and params["ns"] == ["GZHkEA=="]  # kept as given
    assert query(zoom_request(ZOOM, "x", "ja", 1).url)["lang"] == ["jp-JP"]  # Zoom's spelling
    assert query(
        with_params(f"{ZOOM}&seq=1", seq="2").url
        if False
        else with_params(f"{ZOOM}&seq=1", seq="2")
    )["seq"] == ["2"]


class ScriptedPoster:
    """Answers each POST with the next outcome (a status, an exception, or a wait)."""

    def __init__(self, outcomes: list[int | Exception | float] | None = None) -> None:
        self.outcomes = list(outcomes or [])
        self.requests: list[PushRequest] = []
        self.arrived = asyncio.Event()

    async def post(self, request: PushRequest) -> int:
        self.requests.append(request)
        self.arrived.set()
        outcome = self.outcomes.pop(0) if self.outcomes else 200
        if isinstance(outcome, Exception):
            raise outcome
        if isinstance(outcome, float):
            await asyncio.sleep(outcome)
            return 200
        return outcome


FAST = PushPolicy(
    max_pending=3, timeout_s=0.2, attempts=3, first_backoff_s=0.01, max_backoff_s=0.02
)


def pushes_on(hub: InMemoryHub, poster: ScriptedPoster, policy: PushPolicy = FAST) -> SessionPushes:
    hub.open("ABC")
    return SessionPushes(
        lambda langs, since: hub.subscribe("ABC", langs, since, counted=False),
        hub.unsubscribe,
        lambda: hub.last_seq("ABC"),
        poster,
        policy,
    )


def final(segment: int, text: str, lang: str = "en") -> Caption:
    return Caption(segment, lang, lang == "en", "final", text, segment, segment + 1, ts=1e9)


async def until(check: Callable[[], bool], within_s: float = 5.0) -> None:
    async with asyncio.timeout(within_s):
        while not check():
            await asyncio.sleep(0.01)


def seqs(poster: ScriptedPoster) -> list[str]:
    return [query(r.url)["seq"][0] for r in poster.requests]


async def test_finals_of_the_language_are_posted_in_order_and_retries_keep_seq() -> None:
    hub = InMemoryHub()
    poster = ScriptedPoster([503, PostFailed("refused"), 200, 0.5, 200, 200])
    pushes = pushes_on(hub, poster)
    await hub.emit("ABC", final(0, "before"))  # before the target: not pushed
    status = await pushes.set(PushTarget("zoom", ZOOM, "es"))
    assert status.host == "wmcapi.zoom.us" and status.sent == 0
    assert hub.listener_count("ABC") == 0 and hub.wanted_languages("ABC") == {"es"}
    await hub.emit("ABC", final(1, "one", "es"))
    await hub.emit("ABC", Caption(2, "es", False, "draft", "dos", 2, 3))  # drafts are not
    await hub.emit("ABC", final(2, "dos"))  # another language is not
    await hub.emit("ABC", final(2, "dos", "es"))
    await hub.emit("ABC", final(3, "tres", "es"))
    await until(lambda: pushes.statuses()[0].sent == 3)
    # "one" failed twice and went through on its third attempt, all with seq 1; "dos" timed
    # out once (0.5 s against 0.2) and was retried with seq 2.
    assert seqs(poster) == ["1", "1", "1", "2", "2", "3"]
    assert [r.body for r in poster.requests][-1] == b"tres"
    (status,) = pushes.statuses()
    assert status.failed == 0 and status.dropped == 0 and status.last_sent_text == "tres"
    assert status.last_error is not None and "no answer within 0.2 s" in status.last_error
    await pushes.close()
    assert hub.wanted_languages("ABC") == frozenset()


async def test_a_dead_endpoint_gives_up_then_drops_the_oldest() -> None:
    hub = InMemoryHub()
    poster = ScriptedPoster([500] * 100)
    pushes = pushes_on(hub, poster)
    await pushes.set(PushTarget("youtube", YT, "en"))
    for i in range(8):
        await hub.emit("ABC", final(i, f"line {i}"))
    await until(lambda: pushes.statuses()[0].failed >= 2)
    status = pushes.statuses()[0]
    assert status.sent == 0 and status.last_error == "HTTP 500"
    assert status.dropped == 8 - 3  # all came at once: the newest three waited
    # Each new caption takes the next seq; its retries keep it.
    assert seqs(poster)[:6] == ["1", "1", "1", "2", "2", "2"]
    assert re.match(rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\nline 5\n", poster.requests[0].body)
    await pushes.close()


async def test_a_service_has_one_target_and_a_new_one_replaces_it() -> None:
    hub = InMemoryHub()
    poster = ScriptedPoster()
    pushes = pushes_on(hub, poster)
    await pushes.set(PushTarget("youtube", YT, "en"))
    await pushes.set(PushTarget("youtube", YT + "x", "en"))
    await pushes.set(PushTarget("zoom", ZOOM, "en"))
    assert [s.service for s in pushes.statuses()] == ["youtube", "zoom"]
    await hub.emit("ABC", final(0, "once"))
    await until(lambda: len(poster.requests) == 2)
    assert sorted(query(r.url)["seq"][0] for r in poster.requests) == ["1", "1"]
    assert await pushes.remove("zoom") and not await pushes.remove("zoom")
    await pushes.close()
    assert pushes.statuses() == []


@pytest.mark.parametrize("service", ["youtube", "zoom"])
def test_target_host_is_what_the_console_shows(service: str) -> None:
    target = PushTarget(service, YT if service == "youtube" else ZOOM, "en")  # type: ignore[arg-type]
    assert target.host in ("upload.youtube.com", "wmcapi.zoom.us")
