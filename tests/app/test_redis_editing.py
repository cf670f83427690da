"""Terms and corrections across two real server processes sharing one real Redis: the
presenter streams into A; terms set on B reach A's session; a correction made on B (which
does not hold the presenter) reaches a Spanish listener on A in both languages, numbered
after the captions, and the shared store's transcripts hold it; editor links revoked on A
are refused on B."""

from __future__ import annotations

import asyncio
import shutil
from typing import Any

import httpx
import pytest

from tests.data import ENGLISH
from tests.support import ServerProcess, create_session, follow_socket, read_wav, stream_recording

pytestmark = pytest.mark.skipif(
    shutil.which("apertium") is None, reason="Debian apertium not installed"
)


async def test_terms_and_corrections_cross_processes_in_order(nodes: list[ServerProcess]) -> None:
    a, b = nodes
    session = create_session(a.url, target_languages=["es"], terms=["Quilter"])
    code, token = session["code"], session["presenter_token"]
    auth = {"Authorization": f"Bearer {token}"}
    editor = httpx.post(f"{b.url}/api/sessions/{code}/editors", headers=auth).json()
    editor_auth = {"Authorization": f"Bearer {editor['editor_token']}"}
    terms = ["Quilter", {"text": "lamps", "translations": {"es": "FAROLES"}}]
    put = httpx.put(
        f"{b.url}/api/sessions/{code}/terms", json={"terms": terms}, headers=editor_auth
    )
    assert put.status_code == 200, put.text
    async with asyncio.timeout(10):  # A holds the session's stages: it follows B's terms
        while httpx.get(f"{a.url}/api/sessions/{code}/terms").json()["terms"] != terms:
            await asyncio.sleep(0.1)

    events: list[dict[str, Any]] = []
    stop = asyncio.Event()
    base = a.url.replace("http://", "ws://")
    listener = asyncio.create_task(follow_socket(f"{base}/ws/listen/{code}?lang=es", events, stop))
    await asyncio.sleep(0.5)
    pcm, rate = read_wav(ENGLISH)
    run = await stream_recording(a.url, pcm, rate, speed=4.0, session=session)
    assert run.close_code == 1000
    first = next(e for e in run.finals() if e["source"])

    def spanish_finals() -> list[dict[str, Any]]:
        return [
            e
            for e in events
            if e.get("type") == "caption" and e["state"] == "final" and e["lang"] == "es"
        ]

    async with asyncio.timeout(20):
        while not spanish_finals():
            await asyncio.sleep(0.1)
    # The term's fixed translation applied on A, where the presenter's stages run.
    assert "FAROLES" in " ".join(e["text"] for e in spanish_finals()), spanish_finals()

    fixed = "After early nightfall the yellow lamps of Quilter would light up"
    response = httpx.put(
        f"{b.url}/api/sessions/{code}/segments/{first['segment']}",
        json={"text": fixed},
        headers=editor_auth,
    )
    assert response.status_code == 200, response.text
    assert response.json()["rev"] == 1

    def corrected() -> list[dict[str, Any]]:
        return [e for e in events if e.get("type") == "caption" and e.get("rev")]

    async with asyncio.timeout(20):
        while {e["lang"] for e in corrected()} != {"en", "es"}:
            await asyncio.sleep(0.1)
    await asyncio.sleep(0.5)
    stop.set()
    await listener
    seqs = [int(e["seq"]) for e in events]
    assert seqs == sorted(seqs) and len(seqs) == len(set(seqs))
    source_fix, spanish_fix = sorted(corrected(), key=lambda e: e["lang"])
    assert source_fix["text"] == fixed and source_fix["segment"] == first["segment"]
    assert first["segment"] in spanish_fix["sources"] and "Quilter" in spanish_fix["text"]
    assert min(source_fix["seq"], spanish_fix["seq"]) > max(
        int(e["seq"]) for e in events if e.get("type") == "caption" and not e.get("rev")
    )
    for node in (a, b):
        body = httpx.get(f"{node.url}/api/sessions/{code}/transcript", params={"lang": "es"})
        assert "Quilter" in body.text and "FAROLES" in body.text, node.url
        history = httpx.get(
            f"{node.url}/api/sessions/{code}/transcript", params={"format": "json"}
        ).json()
        line = next(item for item in history if item["segment"] == first["segment"])
        assert line["text"] == fixed and line["history"][0]["text"] == first["text"]
    # Editor links revoked on A stop working on B at once (each check reads the store).
    revoked = httpx.delete(f"{a.url}/api/sessions/{code}/editors", headers=auth)
    assert revoked.status_code == 200 and revoked.json()["revoked"] == 1
    refused = httpx.put(
        f"{b.url}/api/sessions/{code}/terms", json={"terms": terms}, headers=editor_auth
    )
    assert refused.status_code == 403, refused.text
