"""Panels end to end: two speakers, each in their own language, streaming at once into one
session, and questions from the floor (real server, real models, real recordings)."""

from __future__ import annotations

import asyncio
import json
import shutil
from typing import cast

import httpx
import pytest
import websockets

from tests.data import ENGLISH, SPANISH
from tests.support import ServerProcess, create_session, read_wav, stream_recording

pytestmark = [
    pytest.mark.model,
    pytest.mark.skipif(shutil.which("apertium") is None, reason="Debian apertium not installed"),
]


async def _listen(url: str, events: list[dict[str, object]], stop: asyncio.Event) -> None:
    async with websockets.connect(url, max_size=2**22) as ws:
        while not stop.is_set():
            try:
                message = await asyncio.wait_for(ws.recv(), 0.3)
            except TimeoutError:
                continue
            if isinstance(message, str):
                events.append(json.loads(message))


def _finals(events: list[dict[str, object]]) -> list[dict[str, object]]:
    return [e for e in events if e.get("type") == "caption" and e.get("state") == "final"]


def _segment(value: object) -> int:
    """A segment number, from an event's JSON (where segments are integers)."""
    return int(cast(int, value))


def _sources(event: dict[str, object]) -> list[int]:
    """The source segments a final covers: those it names, else its own."""
    return [_segment(s) for s in cast("list[object]", event.get("sources") or [event["segment"]])]


def _speaker(event: dict[str, object]) -> dict[str, object]:
    """Who said ``event``, which names them."""
    speaker = event["speaker"]
    assert isinstance(speaker, dict), event
    return speaker


def _speaker_id(event: dict[str, object]) -> object:
    """The id of who said ``event`` (None if it names nobody)."""
    speaker = event.get("speaker", {})
    assert isinstance(speaker, dict), event
    return speaker.get("id")


def _auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def test_two_speakers_in_two_languages_stream_at_once(server: ServerProcess) -> None:
    session = create_session(server.url, target_languages=["es"])
    code, presenter = session["code"], session["presenter_token"]
    url = f"{server.url}/api/sessions/{code}"
    added = httpx.post(
        f"{url}/speakers", json={"name": "Ana", "language": "es"}, headers=_auth(presenter)
    )
    assert added.status_code == 201, added.text
    ana = added.json()
    assert ana["present_url"] == f"/p/{code}#token={ana['token']}"
    # Only the presenter adds speakers; a speaker's language must be one the session offers.
    assert (
        httpx.post(f"{url}/speakers", json={"name": "X"}, headers=_auth(ana["token"])).status_code
        == 403
    )
    assert (
        httpx.post(
            f"{url}/speakers", json={"name": "X", "language": "de"}, headers=_auth(presenter)
        ).status_code
        == 400
    )
    facts = httpx.get(url).json()
    assert [(s["id"], s["name"], s["language"]) for s in facts["speakers"]] == [
        ("presenter", "Presenter", "en"),
        (ana["id"], "Ana", "es"),
    ]
    who = httpx.get(f"{url}/whoami", headers=_auth(ana["token"])).json()
    assert who == {"role": "speaker", "speaker": {**who["speaker"], "live": False}}
    nobody = httpx.get(f"{url}/whoami", headers=_auth("not-a-token"))
    assert nobody.status_code == 200 and nobody.json() == {"role": None, "speaker": None}
    assert httpx.get(f"{url}/whoami").status_code == 401

    base = server.url.replace("http://", "ws://") + f"/ws/listen/{code}"
    english: list[dict[str, object]] = []
    spanish: list[dict[str, object]] = []
    stop = asyncio.Event()
    listeners = [
        asyncio.create_task(_listen(f"{base}?lang=en", english, stop)),
        asyncio.create_task(_listen(f"{base}?lang=es", spanish, stop)),
    ]
    await asyncio.sleep(0.5)
    en_pcm, en_rate = read_wav(ENGLISH)
    es_pcm, es_rate = read_wav(SPANISH)
    runs = await asyncio.gather(
        stream_recording(server.url, en_pcm, en_rate, speed=2.0, session=session),
        stream_recording(
            server.url,
            es_pcm,
            es_rate,
            speed=2.0,
            session={**session, "presenter_token": ana["token"]},
            language="es",
        ),
    )
    said = {
        who: {
            _segment(e["segment"])
            for e in run.finals()
            if e["source"] and e["text"] and _speaker(e)["id"] == who
        }
        for who, run in zip(("presenter", ana["id"]), runs, strict=True)
    }
    assert said["presenter"] and said[ana["id"]]

    async def complete() -> None:
        while True:
            covered = {s for e in _finals(english) if not e["source"] for s in _sources(e)}
            if covered >= said[ana["id"]]:
                return
            await asyncio.sleep(0.1)

    await asyncio.wait_for(complete(), 60)
    stop.set()
    await asyncio.gather(*listeners)
    # Every caption names its speaker; each speaker's source finals are in their language.
    for event in _finals(english) + _finals(spanish):
        speaker = event["speaker"]
        assert isinstance(speaker, dict) and speaker["id"] in said, event
        if event["source"]:
            assert event["lang"] == ("en" if speaker["id"] == "presenter" else "es")
    # The English reader got the presenter's words and Ana's translated; the Spanish reader
    # got Ana's words and the presenter's translated.
    english_said = {
        _segment(e["segment"]) for e in _finals(english) if e["source"] and e["lang"] == "en"
    }
    assert english_said >= said["presenter"]
    assert any(not e["source"] and e["lang"] == "en" for e in _finals(english))
    assert any(not e["source"] and e["lang"] == "es" for e in _finals(spanish))


async def test_a_speaker_streams_once_and_stops_alone(server: ServerProcess) -> None:
    session = create_session(server.url, target_languages=["es"])
    code = session["code"]
    url = server.url.replace("http://", "ws://") + f"/ws/present/{code}"
    start = {"type": "start", "token": session["presenter_token"], "sample_rate": 16000}
    async with websockets.connect(url) as first:
        await first.send(json.dumps(start))
        assert json.loads(await first.recv())["type"] == "ready"
        who = httpx.get(
            f"{server.url}/api/sessions/{code}/whoami",
            headers=_auth(session["presenter_token"]),
        ).json()
        assert who["speaker"]["live"] is True  # a second tab can say so before Start
        async with websockets.connect(url) as second:
            await second.send(json.dumps(start))
            with pytest.raises(websockets.ConnectionClosed) as closed:
                await second.recv()
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1013
        assert "already live on another device" in closed.value.rcvd.reason
        await first.send(json.dumps({"type": "stop"}))
        async for message in first:
            if json.loads(message).get("type") == "ended":
                break


async def test_questions_are_held_for_the_moderator_then_said_to_everyone(
    server: ServerProcess,
) -> None:
    session = create_session(server.url, target_languages=["es"])
    code, presenter = session["code"], session["presenter_token"]
    url = f"{server.url}/api/sessions/{code}"
    base = server.url.replace("http://", "ws://") + f"/ws/listen/{code}"
    english: list[dict[str, object]] = []
    moderator: list[dict[str, object]] = []
    stop = asyncio.Event()
    tasks = [asyncio.create_task(_listen(f"{base}?lang=en", english, stop))]
    present_url = server.url.replace("http://", "ws://") + f"/ws/present/{code}"
    async with websockets.connect(present_url) as console:
        await console.send(json.dumps({"type": "start", "token": presenter}))
        assert json.loads(await console.recv())["type"] == "ready"

        async def watch() -> None:
            async for message in console:
                moderator.append(json.loads(message))

        watcher = asyncio.create_task(watch())
        await asyncio.sleep(0.5)
        asked = httpx.post(
            f"{url}/questions", json={"lang": "es", "text": "¿Cuándo termina la charla?"}
        )
        assert asked.status_code == 202, asked.text
        question = asked.json()
        assert question["state"] == "held" and question["translation"]
        held = httpx.get(f"{url}/questions", headers=_auth(presenter)).json()["questions"]
        assert [q["id"] for q in held] == [question["id"]]
        assert httpx.get(f"{url}/questions").status_code == 401
        other = httpx.post(f"{url}/questions", json={"lang": "en", "text": "Why?"}).json()
        rejected = httpx.post(f"{url}/questions/{other['id']}/reject", headers=_auth(presenter))
        assert rejected.json()["state"] == "rejected"
        accepted = httpx.post(f"{url}/questions/{question['id']}/accept", headers=_auth(presenter))
        assert accepted.status_code == 200 and accepted.json()["state"] == "accepted"
        again = httpx.post(f"{url}/questions/{question['id']}/accept", headers=_auth(presenter))
        assert again.status_code == 409
        # One more from the same address is the third in five minutes; a fourth is refused.
        httpx.post(f"{url}/questions", json={"lang": "en", "text": "And then?"})
        assert httpx.post(f"{url}/questions", json={"lang": "en", "text": "x"}).status_code == 429

        async def said() -> None:
            while not any(
                _speaker_id(e) == "audience" and not e["source"] for e in _finals(english)
            ):
                await asyncio.sleep(0.1)

        await asyncio.wait_for(said(), 30)
        await console.send(json.dumps({"type": "stop"}))
        await asyncio.wait_for(watcher, 30)
    stop.set()
    await asyncio.gather(*tasks)
    audience = [e for e in _finals(english) if _speaker_id(e) == "audience"]
    assert {e["lang"] for e in audience} == {"es", "en"}  # said in Spanish, translated
    assert not any("Why" in str(e.get("text")) for e in english)  # the rejected one: never
    assert not any(e.get("type") == "question" for e in english)  # the audience never sees them
    states = [e["state"] for e in moderator if e.get("type") == "question"]
    assert states[:1] == ["held"] and "accepted" in states and "rejected" in states
