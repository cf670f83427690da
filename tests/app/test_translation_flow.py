"""Translated captions end to end: real server, real tiny.en, real Apertium en->es."""

from __future__ import annotations

import asyncio
import json
import shutil
from typing import Any

import httpx
import pytest
import websockets

from tests.data import SONNET, fleurs_audio, fleurs_clips
from tests.support import (
    PresenterRun,
    ServerProcess,
    create_session,
    read_wav,
    stream_recording,
)

pytestmark = [
    pytest.mark.model,
    pytest.mark.skipif(shutil.which("apertium") is None, reason="Debian apertium not installed"),
]


async def _listen(
    url: str, events: list[dict[str, object]], stop: asyncio.Event, switch_to: str | None = None
) -> None:
    async with websockets.connect(url) as ws:
        if switch_to is not None:
            await ws.send(json.dumps({"type": "language", "lang": switch_to}))
        while not stop.is_set():
            try:
                events.append(json.loads(await asyncio.wait_for(ws.recv(), 0.3)))
            except TimeoutError:
                continue


def _covered(events: list[dict[str, object]], lang: str) -> list[list[int]]:
    """The source segments each translation final in ``lang`` covers, in arrival order."""
    return [
        [int(s) for s in e.get("sources") or [e["segment"]]]  # type: ignore[attr-defined]
        for e in events
        if e.get("type") == "caption"
        and e.get("state") == "final"
        and e.get("lang") == lang
        and e.get("source") is False
    ]


def _finals(events: list[dict[str, object]], lang: str, source: bool) -> dict[int, str]:
    return {
        int(e["segment"]): str(e["text"])  # type: ignore[call-overload]
        for e in events
        if e.get("type") == "caption"
        and e.get("state") == "final"
        and e.get("lang") == lang
        and e.get("source") is source
    }


async def test_spanish_listener_gets_a_spanish_final_for_every_source_final(
    server: ServerProcess,
) -> None:
    routes = httpx.get(f"{server.url}/api/routes").json()["routes"]
    assert any(r["source"] == "en" and r["target"] == "es" for r in routes)
    session = create_session(server.url, target_languages=["es"])
    glossary = httpx.put(
        f"{server.url}/api/sessions/{session['code']}/glossary",
        json={"es": {"winters": "INVIERNOS"}},
        headers={"Authorization": f"Bearer {session['presenter_token']}"},
    )
    assert glossary.status_code == 200, glossary.text
    base = server.url.replace("http://", "ws://") + f"/ws/listen/{session['code']}"
    spanish: list[dict[str, object]] = []
    switcher: list[dict[str, object]] = []
    stop = asyncio.Event()
    tasks = [
        asyncio.create_task(_listen(f"{base}?lang=es", spanish, stop)),
        asyncio.create_task(_listen(f"{base}?lang=en", switcher, stop, switch_to="es")),
    ]
    await asyncio.sleep(0.5)
    pcm, rate = read_wav(SONNET)
    run = await stream_recording(server.url, pcm, rate, speed=4.0, session=session)
    source = {int(e["segment"]): e["text"] for e in run.finals() if e["source"]}  # type: ignore[call-overload]

    async def complete() -> None:
        while {s for sources in _covered(spanish, "es") for s in sources} != set(source):
            await asyncio.sleep(0.1)

    await asyncio.wait_for(complete(), 20)
    await asyncio.sleep(0.3)
    stop.set()
    await asyncio.gather(*tasks)
    translated = _finals(spanish, "es", False)
    # Translations are made from whole sentences: every source final is covered by exactly
    # one Spanish final, in order, and a sentence with words has a Spanish text.
    covered = _covered(spanish, "es")
    assert sorted(s for sources in covered for s in sources) == sorted(source)
    assert [sources[0] for sources in covered] == sorted(sources[0] for sources in covered)
    assert len(covered) < len(source), "no final covered several segments of a sentence"
    assert all(translated[sources[0]] for sources in covered if any(source[s] for s in sources))
    # The presenter's glossary term replaced Apertium's own translation.
    assert "INVIERNOS" in " ".join(translated.values()), translated
    text = " ".join(translated.values()).lower()
    assert sum(text.count(w) for w in (" el ", " la ", " de ", " y ", " tu ")) >= 5, text
    # No draft follows the final that covers its segment. (Streamed at 4x, the recogniser
    # sheds drafts; translated drafts in real time are the translation bench's.)
    seen_final: set[int] = set()
    for e in spanish:
        if e.get("type") != "caption" or e.get("source"):
            continue
        if e["state"] == "final":
            seen_final.update(int(s) for s in e.get("sources") or [e["segment"]])  # type: ignore[attr-defined]
        else:
            assert int(e["segment"]) not in seen_final, "draft after final"  # type: ignore[call-overload]
    # The listener that switched without reconnecting reads Spanish too.
    assert _covered(switcher, "es") == covered
    # The Spanish transcript is served and exported.
    txt = httpx.get(
        f"{server.url}/api/sessions/{session['code']}/transcript",
        params={"lang": "es", "format": "txt"},
    ).text
    assert (
        txt.split() == " ".join(translated[k] for k in sorted(translated) if translated[k]).split()
    )


def test_unsupported_target_language_is_refused(server: ServerProcess) -> None:
    response = httpx.post(
        f"{server.url}/api/sessions",
        json={"title": "x", "source_language": "en", "target_languages": ["ko"]},
    )
    assert response.status_code == 422
    assert "ko" in response.json()["error"]


async def _talk_read_in_english(
    server: ServerProcess, clips: list[dict[str, Any]], lang: str, speed: float
) -> tuple[PresenterRun, list[dict[str, object]]]:
    """Stream ``clips`` back to back, one second of silence between them, as one talk in
    ``lang``, with an English reader listening; return the presenter's run and what the
    reader received once every source final is covered by an English final."""
    session = create_session(server.url, source_language=lang, target_languages=["en"])
    url = server.url.replace("http://", "ws://") + f"/ws/listen/{session['code']}?lang=en"
    english: list[dict[str, object]] = []
    stop = asyncio.Event()
    task = asyncio.create_task(_listen(url, english, stop))
    await asyncio.sleep(0.3)
    silence = b"\x00\x00" * 16000
    pcm = silence.join(read_wav(fleurs_audio(c))[0] for c in clips)
    run = await stream_recording(
        server.url, pcm + silence, 16000, speed=speed, session=session, language=lang
    )
    said = {int(e["segment"]) for e in run.finals() if e["source"]}  # type: ignore[call-overload]

    async def complete() -> None:
        while {s for sources in _covered(english, "en") for s in sources} != said:
            await asyncio.sleep(0.1)

    await asyncio.wait_for(complete(), 60)
    stop.set()
    await task
    return run, english


async def test_spanish_speech_gets_whisper_translated_english_finals(
    server: ServerProcess,
) -> None:
    import sacrebleu

    clips = fleurs_clips("es")[:2]
    assert len(clips) == 2, "two Spanish FLEURS clips in tests/data"
    run, english = await _talk_read_in_english(server, clips, "es", speed=4.0)
    assert [e for e in run.finals() if e["source"] and e["text"]]
    hypothesis = " ".join(
        _finals(english, "en", False)[k] for k in sorted(_finals(english, "en", False))
    )
    reference = " ".join(str(c["translations"]["eng_Latn"]) for c in clips)
    chrf = sacrebleu.corpus_chrf([hypothesis], [[reference]]).score
    # Whisper base translate scored chrF 48.7 on four es/de FLEURS clips offline; a streamed
    # talk is segmented by pauses, which costs some context.
    assert chrf > 30, (chrf, hypothesis, reference)


async def test_german_speech_shows_english_drafts_before_each_sentence_final(
    server: ServerProcess,
) -> None:
    """German into English has no text route: while the sentence is open, its reader sees
    drafts translated from the speech (engine/translation/stage.py), English, under the
    sentence's first segment, before the final that replaces them."""
    (clip, *_) = fleurs_clips("de")
    run, english = await _talk_read_in_english(server, [clip], "de", speed=1.0)
    said = {int(e["segment"]) for e in run.finals() if e["source"]}  # type: ignore[call-overload]
    assert len(said) >= 2, "the clip is said in several segments"
    translated = [e for e in english if e.get("lang") == "en" and e.get("source") is False]
    states = [e["state"] for e in translated if e.get("text")]
    assert "draft" in states and states.index("draft") < states.index("final"), states
    final = next(e for e in translated if e["state"] == "final")
    # The sentence as its reader last saw it before the final (the first is a glance).
    draft = [e for e in translated[: translated.index(final)] if e.get("text")][-1]
    assert draft["state"] == "draft" and draft["segment"] == final["segment"], draft
    german = set(str(clip["source_text"]).lower().split())
    words = str(draft["text"]).lower().split()
    assert len(words) >= 3 and len(german & set(words)) < len(words) / 2, draft


def test_glossary_needs_the_presenter_token_and_offered_languages(server: ServerProcess) -> None:
    session = create_session(server.url, target_languages=["es"])
    url = f"{server.url}/api/sessions/{session['code']}/glossary"
    auth = {"Authorization": f"Bearer {session['presenter_token']}"}
    assert httpx.put(url, json={"es": {"a": "b"}}).status_code == 401
    assert (
        httpx.put(url, json={"es": {"a": "b"}}, headers={"Authorization": "Bearer x"}).status_code
        == 403
    )
    assert httpx.put(url, json={"fr": {"a": "b"}}, headers=auth).status_code == 422
    assert httpx.put(url, json={"es": {"a": 3}}, headers=auth).status_code == 422
    assert httpx.put(url, json={"es": {"talk": "charla"}}, headers=auth).status_code == 200
    assert httpx.get(url).json()["glossary"] == {"es": {"talk": "charla"}}
