"""A two-way conversation in one session (traveller mode, server side): turns in English and
in Spanish, given or detected, each translated into the other language and spoken."""

from __future__ import annotations

import asyncio
import json
import shutil

import httpx
import pytest
import websockets

from tests.app.test_speech_flow import Heard, _listen
from tests.data import ENGLISH, SPANISH
from tests.support import ServerProcess, create_session, read_wav

pytestmark = [
    pytest.mark.model,
    pytest.mark.skipif(shutil.which("apertium") is None, reason="Debian apertium not installed"),
    pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="Debian espeak-ng not installed"),
]


async def _turn(
    server: ServerProcess,
    session: dict[str, str],
    wav: object,
    language: str,
    seen: set[int],
    finals: str = "careful",
) -> str:
    """One turn: stream ``wav`` (first 8 s) as ``language`` in real time; return the
    language of its source finals (the presenter socket also replays earlier turns' finals,
    whose segments are in ``seen``)."""
    pcm, rate = read_wav(wav)  # type: ignore[arg-type]
    pcm = pcm[: 8 * rate * 2]
    url = server.url.replace("http://", "ws://") + f"/ws/present/{session['code']}"
    langs: set[str] = set()
    async with websockets.connect(url) as ws:
        await ws.send(
            json.dumps(
                {
                    "type": "start",
                    "token": session["presenter_token"],
                    "sample_rate": rate,
                    "encoding": "pcm_s16le",
                    "language": language,
                    "finals": finals,
                }
            )
        )
        assert json.loads(await ws.recv())["type"] == "ready"
        # In real time, as a traveller speaks: faster, the turns' spoken translations fall
        # more than the speech stage's 6 s behind and it skips to the newest sentence (at 2x
        # that happened with short_pause_s 0.15 and max_segment_s 5).
        step = rate // 10 * 2
        for offset in range(0, len(pcm), step):
            await ws.send(pcm[offset : offset + step])
            await asyncio.sleep(0.1)
        await ws.send(json.dumps({"type": "stop"}))
        async for message in ws:
            event = json.loads(message)
            if event.get("type") != "caption" or not event.get("source"):
                continue
            if event["state"] == "final" and event["segment"] not in seen:
                seen.add(event["segment"])
                langs.add(event["lang"])
    assert len(langs) == 1, langs
    return langs.pop()


async def test_turns_in_either_language_are_translated_and_spoken_both_ways(
    server: ServerProcess,
) -> None:
    session = create_session(server.url, source_language="en", target_languages=["es"])
    base = server.url.replace("http://", "ws://") + f"/ws/listen/{session['code']}"
    hears_spanish, hears_english = Heard(), Heard()
    stop = asyncio.Event()
    tasks = [
        asyncio.create_task(_listen(f"{base}?lang=es&audio=1", hears_spanish, stop)),
        asyncio.create_task(_listen(f"{base}?lang=en&audio=1", hears_english, stop)),
    ]
    await asyncio.sleep(0.5)
    # Detected: English, then Spanish; then Spanish given explicitly.
    seen: set[int] = set()
    assert await _turn(server, session, ENGLISH, "auto", seen) == "en"
    assert await _turn(server, session, SPANISH, "auto", seen) == "es"
    assert await _turn(server, session, SPANISH, "es", seen, finals="fast") == "es"

    def segments(heard: Heard, lang: str, source: bool) -> set[int]:
        """The source segments said in ``lang`` (source) or covered by its translations."""
        return {
            int(s)  # type: ignore[call-overload]
            for e in heard.events
            if e.get("type") == "caption"
            and e.get("state") == "final"
            and e.get("lang") == lang
            and e.get("source") is source
            and e.get("text")
            for s in (e.get("sources") or [e["segment"]])  # type: ignore[attr-defined]
        }

    english_said = segments(hears_spanish, "en", True)
    spanish_said = segments(hears_spanish, "es", True)

    async def complete() -> None:
        while not (
            segments(hears_spanish, "es", False) >= english_said
            and segments(hears_english, "en", False) >= spanish_said
            and hears_spanish.spoken_segments() >= english_said
            and hears_english.spoken_segments() >= spanish_said
        ):
            await asyncio.sleep(0.1)

    await asyncio.wait_for(complete(), 60)
    stop.set()
    await asyncio.gather(*tasks)
    assert english_said and spanish_said
    # Each turn went one way: English turns into Spanish (Kokoro), Spanish turns into
    # English (the bundled Piper voice), espeak-ng standing in for a sentence either fell
    # behind on, or while it loads; nothing was spoken in a turn's own language.
    assert {h["lang"] for h, _ in hears_spanish.audio} == {"es"}
    assert {h["lang"] for h, _ in hears_english.audio} == {"en"}
    spanish_rates = {"natural": 24000, "fast": 22050}
    assert all(h["sample_rate"] == spanish_rates[str(h["voice"])] for h, _ in hears_spanish.audio)
    assert {h["sample_rate"] for h, _ in hears_english.audio} == {22050}
    assert hears_spanish.spoken_segments().isdisjoint(spanish_said)
    assert hears_english.spoken_segments().isdisjoint(english_said)
    spanish = " ".join(
        str(e["text"])
        for e in hears_english.events
        if e.get("type") == "caption" and e.get("source") and e.get("lang") == "es"
    ).lower()
    # Recognised in Spanish, not translated by Whisper into the previous turn's language.
    assert sum(spanish.count(w) for w in (" de ", " la ", " que ", " el ", " y ")) >= 3, spanish
    english = " ".join(
        str(e["text"])
        for e in hears_english.events
        if e.get("type") == "caption" and e.get("state") == "final" and e.get("lang") == "en"
    ).lower()
    assert sum(english.count(w) for w in (" the ", " of ", " and ", " a ")) >= 3, english
    # The English transcript holds what was said in English and what was translated into it.
    txt = httpx.get(
        f"{server.url}/api/sessions/{session['code']}/transcript",
        params={"lang": "en", "format": "json"},
    ).json()
    covered = {s for item in txt for s in item.get("sources") or [item["segment"]]}
    assert covered >= english_said | spanish_said


async def test_auto_needs_two_languages(server: ServerProcess) -> None:
    session = create_session(server.url)  # English only
    url = server.url.replace("http://", "ws://") + f"/ws/present/{session['code']}"
    async with websockets.connect(url) as ws:
        start = {"type": "start", "token": session["presenter_token"], "language": "auto"}
        await ws.send(json.dumps(start))
        with pytest.raises(websockets.ConnectionClosed) as closed:
            await ws.recv()
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1003
    assert "two or more languages" in closed.value.rcvd.reason


async def test_finals_must_be_careful_or_fast(server: ServerProcess) -> None:
    session = create_session(server.url)
    url = server.url.replace("http://", "ws://") + f"/ws/present/{session['code']}"
    async with websockets.connect(url) as ws:
        start = {"type": "start", "token": session["presenter_token"], "finals": "quick"}
        await ws.send(json.dumps(start))
        with pytest.raises(websockets.ConnectionClosed) as closed:
            await ws.recv()
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1003
    assert "finals" in closed.value.rcvd.reason
