"""Segment numbers across two real server processes sharing one real Redis
(engine/segment_claims.py): a presenter whose reconnect lands on another node, and two
speakers of a panel streaming into two nodes at once, keep every line. Before, each node
numbered from what it had loaded, so the second node's first segment took number 0 again
and replaced the first node's line in every transcript and on every listener page."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from tests.data import ENGLISH, ENGLISH_FLEURS
from tests.support import ServerProcess, create_session, follow_socket, read_wav, stream_recording


def finals(events: list[dict[str, Any]], lang: str) -> dict[int, dict[str, Any]]:
    """Each segment's newest final in ``lang``, by segment (what a listener page keeps)."""
    return {
        e["segment"]: e
        for e in events
        if e.get("type") == "caption" and e["state"] == "final" and e["lang"] == lang
    }


def transcript(node: ServerProcess, code: str, lang: str) -> list[dict[str, Any]]:
    response = httpx.get(
        f"{node.url}/api/sessions/{code}/transcript", params={"lang": lang, "format": "json"}
    )
    response.raise_for_status()
    lines: list[dict[str, Any]] = response.json()
    return lines


@pytest.mark.skipif(not ENGLISH_FLEURS.exists(), reason="tests/data FLEURS clip missing")
async def test_a_presenter_reconnecting_to_another_node_keeps_every_line(
    nodes: list[ServerProcess],
) -> None:
    a, b = nodes
    session = create_session(a.url)
    code = session["code"]
    events: list[dict[str, Any]] = []
    stop = asyncio.Event()
    listen = b.url.replace("http://", "ws://") + f"/ws/listen/{code}?lang=en"
    listener = asyncio.create_task(follow_socket(listen, events, stop))  # B loads the session now
    await asyncio.sleep(1.0)
    first = await stream_recording(a.url, *read_wav(ENGLISH), speed=4.0, session=session)
    second = await stream_recording(b.url, *read_wav(ENGLISH_FLEURS), speed=4.0, session=session)
    await asyncio.sleep(1.0)
    stop.set()
    await listener
    said_on_a = {e["segment"]: e for e in first.finals("en")}
    said_on_b = {e["segment"]: e for e in second.finals("en") if e["segment"] not in said_on_a}
    assert said_on_a and said_on_b, (first.events, second.events)
    assert len(second.finals("en")) == len(said_on_a) + len(said_on_b)  # no number reused
    # The reconnect goes on after what A said: its numbers and its audio clock.
    assert min(said_on_b) == max(said_on_a) + 1
    assert min(e["start"] for e in said_on_b.values()) >= max(e["end"] for e in said_on_a.values())
    everything = {**said_on_a, **said_on_b}
    assert {s: e["text"] for s, e in finals(events, "en").items()} == {
        s: e["text"] for s, e in everything.items()
    }
    for node in (a, b):
        lines = transcript(node, code, "en")
        assert [line["text"] for line in lines] == [everything[s]["text"] for s in everything]


@pytest.mark.skipif(not ENGLISH_FLEURS.exists(), reason="tests/data FLEURS clip missing")
async def test_two_speakers_streaming_into_two_nodes_keep_their_lines(
    nodes: list[ServerProcess],
) -> None:
    a, b = nodes
    session = create_session(a.url, target_languages=["es"])
    code, token = session["code"], session["presenter_token"]
    added = httpx.post(
        f"{a.url}/api/sessions/{code}/speakers",
        json={"name": "Ana", "language": "en"},
        headers={"Authorization": f"Bearer {token}"},
    )
    assert added.status_code == 201, added.text
    ana = {"code": code, "presenter_token": added.json()["token"]}
    events: dict[str, list[dict[str, Any]]] = {"a": [], "b": []}
    stop = asyncio.Event()
    listeners = [
        asyncio.create_task(
            follow_socket(
                node.url.replace("http://", "ws://") + f"/ws/listen/{code}?lang=es", got, stop
            )
        )
        for node, got in ((a, events["a"]), (b, events["b"]))
    ]
    await asyncio.sleep(1.0)
    runs = await asyncio.gather(
        stream_recording(a.url, *read_wav(ENGLISH), speed=2.0, session=session),
        stream_recording(b.url, *read_wav(ENGLISH_FLEURS), speed=2.0, session=ana),
    )
    await asyncio.sleep(2.0)
    stop.set()
    await asyncio.gather(*listeners)
    said = [e for run in runs for e in run.finals("en")]  # each socket gets the session's
    presenter, guest = (
        {e["segment"] for e in said if e["speaker"]["name"] == name}
        for name in ("Presenter", "Ana")
    )
    assert presenter and guest and not presenter & guest  # each node its own numbers
    for got in events.values():
        source, spanish = finals(got, "en"), finals(got, "es")
        assert set(source) == presenter | guest
        names = {source[s]["speaker"]["name"] for s in source}
        assert names == {"Presenter", "Ana"}
        covered = {s for e in spanish.values() for s in e["sources"]}
        assert covered == presenter | guest  # every source line translated, none replaced
    for node in (a, b):
        for lang in ("en", "es"):
            speakers = [
                line.get("speaker", {}).get("name") for line in transcript(node, code, lang)
            ]
            assert sorted(set(speakers)) == ["Ana", "Presenter"], (node.url, lang, speakers)
