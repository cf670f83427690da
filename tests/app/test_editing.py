"""Terms, editors and corrections through the real app in process (uvicorn in this loop, a
scripted recogniser, real Apertium en->es): the refusals, a correction reaching a Spanish
listener in both languages, backfill of the newest revision, transcripts and their history,
terms that survive a restart of the app."""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
import websockets

from app.main import create_app
from app.services import RecognitionModel
from app.settings import Settings
from engine.audio import Samples
from engine.events import Word
from engine.recognition.asr import Decoded, DecodeOptions
from engine.stream import StreamLimits
from tests.data import ENGLISH
from tests.support import free_port, read_wav

pytestmark = pytest.mark.skipif(
    shutil.which("apertium") is None, reason="Debian apertium not installed"
)


class ScriptedTranscriber:
    """Every window of speech reads "the cat is here." (these tests are about editing, not
    the model); the hint text each decode got is kept."""

    name = "scripted"
    multilingual = False

    def __init__(self) -> None:
        self.hints: list[str | None] = []

    def transcribe(self, audio: Samples, options: DecodeOptions) -> Decoded:
        self.hints.append(options.hotwords)
        span = max(0.1, len(audio) / 16000) / 4
        return Decoded(
            tuple(
                Word(f" {w}", i * span, (i + 1) * span)
                for i, w in enumerate("the cat is here.".split())
            )
        )


@contextlib.asynccontextmanager
async def serving(data_dir: Path, transcriber: ScriptedTranscriber) -> AsyncIterator[str]:
    settings = Settings(
        data_dir=data_dir,
        port=free_port(),
        asr_models={"en": "scripted"},
        load_multilingual=False,
        whisper_translate=False,
        speech=False,
        warm_models=False,
        limits=StreamLimits(max_speed=8.0),
        session_create_per_minute=0,
    )
    app = create_app(settings, transcriber_factory=lambda spec, s: RecognitionModel(transcriber))
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=settings.port, log_level="warning")
    )
    task = asyncio.create_task(server.serve())
    url = f"http://127.0.0.1:{settings.port}"
    try:
        async with httpx.AsyncClient(base_url=url) as client:
            for _ in range(600):
                with contextlib.suppress(httpx.HTTPError):
                    if (await client.get("/readyz")).status_code == 200:
                        break
                await asyncio.sleep(0.05)
        yield url
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 60)


async def call(method: str, url: str, token: str | None = None, **kwargs: Any) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    async with httpx.AsyncClient(timeout=20) as client:
        return await client.request(method, url, headers=headers, **kwargs)


async def present(url: str, code: str, token: str, seconds: float = 6.6) -> None:
    """Stream the first ``seconds`` of a real English sentence, twice with a pause between
    (two segments), and stop."""
    pcm, rate = read_wav(ENGLISH)
    speech = pcm[: int(seconds * rate) * 2]
    silence = bytes(int(1.5 * rate) * 2)
    ws_url = url.replace("http://", "ws://") + f"/ws/present/{code}"
    async with websockets.connect(ws_url) as ws:
        await ws.send(json.dumps({"type": "start", "token": token, "sample_rate": rate}))
        assert json.loads(await ws.recv())["type"] == "ready"
        step = rate // 10 * 2
        audio = speech + silence + speech + silence
        for offset in range(0, len(audio), step):
            await ws.send(audio[offset : offset + step])
            await asyncio.sleep(0.1 / 8)
        await ws.send(json.dumps({"type": "stop"}))
        async for message in ws:
            if json.loads(message).get("type") == "ended":
                break


class Follower:
    """A listener that records every caption event it reads."""

    def __init__(self, url: str, code: str, lang: str, since: int = 0) -> None:
        self.url = url.replace("http://", "ws://") + f"/ws/listen/{code}?lang={lang}&since={since}"
        self.events: list[dict[str, Any]] = []
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Follower:
        ws = await websockets.connect(self.url)

        async def read() -> None:
            async with ws:
                async for message in ws:
                    self.events.append(json.loads(message))

        self._task = asyncio.create_task(read())
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError, websockets.ConnectionClosed):
            await self._task

    def finals(self, lang: str) -> list[dict[str, Any]]:
        return [
            e
            for e in self.events
            if e["type"] == "caption" and e["state"] == "final" and e["lang"] == lang
        ]

    async def wait_for(self, predicate: Any, within: float = 40.0) -> None:
        async with asyncio.timeout(within):
            while not predicate(self):
                await asyncio.sleep(0.05)


async def test_refusals_of_the_editing_endpoints(tmp_path: Path) -> None:
    async with serving(tmp_path, ScriptedTranscriber()) as url:
        created = await call(
            "POST", f"{url}/api/sessions", json={"title": "t", "terms": ["Zoom", 4]}
        )
        assert created.status_code == 422, created.text
        session = (
            await call("POST", f"{url}/api/sessions", json={"title": "t", "terms": ["Zoom"]})
        ).json()
        code, presenter = session["code"], session["presenter_token"]
        api = f"{url}/api/sessions/{code}"
        body: dict[str, Any] = {"json": {"terms": ["TeamViewer"]}}  # keyword arguments of call
        assert (await call("PUT", f"{api}/terms", **body)).status_code == 401
        assert (await call("PUT", f"{api}/terms", "x" * 32, **body)).status_code == 403
        assert (await call("POST", f"{api}/editors")).status_code == 401
        assert (await call("POST", f"{api}/editors", "x" * 32)).status_code == 403
        made = await call("POST", f"{api}/editors", presenter)
        assert made.status_code == 201, made.text
        editor = made.json()["editor_token"]
        assert made.json()["edit_url"] == f"/e/{code}#token={editor}"
        assert len(editor) >= 22 and editor != presenter
        # An editor may edit, not make editors or end the session.
        assert (await call("POST", f"{api}/editors", editor)).status_code == 403
        assert (await call("POST", f"{api}/end", editor)).status_code == 403
        assert (await call("PUT", f"{api}/terms", editor, **body)).status_code == 200
        assert (await call("GET", f"{api}/terms")).json()["terms"] == ["TeamViewer"]
        bad = await call("PUT", f"{api}/terms", editor, json={"terms": [{"text": ""}]})
        assert bad.status_code == 422
        unknown = await call("PUT", f"{api}/segments/0", editor, json={"text": "x"})
        assert unknown.status_code == 404, unknown.text
        assert (await call("PUT", f"{api}/segments/0", json={"text": "x"})).status_code == 401
        assert (
            await call("PUT", f"{api}/segments/0", "y" * 32, json={"text": "x"})
        ).status_code == 403
        assert (
            await call("PUT", f"{api}/segments/x", editor, json={"text": "x"})
        ).status_code == 404
        assert (await call("PUT", f"{api}/segments/0", editor, json={"text": 3})).status_code == 422
        page = await call("GET", f"{url}/e/{code}")
        assert page.status_code == 200 and "edit.js" in page.text
        assert editor not in page.text


async def test_revoked_editor_links_stop_working_and_new_ones_work(tmp_path: Path) -> None:
    async with serving(tmp_path, ScriptedTranscriber()) as url:
        session = (await call("POST", f"{url}/api/sessions", json={"title": "t"})).json()
        code, presenter = session["code"], session["presenter_token"]
        api = f"{url}/api/sessions/{code}"
        editors = [(await call("POST", f"{api}/editors", presenter)).json() for _ in range(2)]
        tokens = [made["editor_token"] for made in editors]
        body: dict[str, Any] = {"json": {"terms": ["Quilter"]}}
        for token in tokens:
            assert (await call("PUT", f"{api}/terms", token, **body)).status_code == 200
        # Only the presenter revokes: not anyone, not an editor.
        assert (await call("DELETE", f"{api}/editors")).status_code == 401
        assert (await call("DELETE", f"{api}/editors", "x" * 32)).status_code == 403
        assert (await call("DELETE", f"{api}/editors", tokens[0])).status_code == 403
        assert (
            await call("DELETE", f"{url}/api/sessions/NOPE22/editors", presenter)
        ).status_code == 404
        revoked = await call("DELETE", f"{api}/editors", presenter)
        assert revoked.status_code == 200, revoked.text
        assert revoked.json() == {"code": code, "revoked": 2}
        for token in tokens:
            assert (await call("PUT", f"{api}/terms", token, **body)).status_code == 403
            fix = await call("PUT", f"{api}/segments/0", token, json={"text": "x"})
            assert fix.status_code == 403
        # The presenter still edits, and a new editor link works.
        assert (await call("PUT", f"{api}/terms", presenter, **body)).status_code == 200
        fresh = (await call("POST", f"{api}/editors", presenter)).json()["editor_token"]
        assert (await call("PUT", f"{api}/terms", fresh, **body)).status_code == 200
        assert (await call("DELETE", f"{api}/editors", presenter)).json()["revoked"] == 1
        assert (await call("DELETE", f"{api}/editors", presenter)).json()["revoked"] == 0


async def test_a_correction_reaches_every_language_backfill_and_transcripts(
    tmp_path: Path,
) -> None:
    transcriber = ScriptedTranscriber()
    terms = ["TeamViewer", {"text": "churn", "translations": {"es": "bajas"}}]
    async with serving(tmp_path, transcriber) as url:
        session = (
            await call(
                "POST",
                f"{url}/api/sessions",
                json={"title": "t", "target_languages": ["es"], "terms": terms},
            )
        ).json()
        code, presenter = session["code"], session["presenter_token"]
        api = f"{url}/api/sessions/{code}"
        editor = (await call("POST", f"{api}/editors", presenter)).json()["editor_token"]
        async with Follower(url, code, "es") as spanish:
            await present(url, code, presenter)
            await spanish.wait_for(lambda f: len(f.finals("es")) >= 2)
            # Terms reached every decode as hint text.
            assert transcriber.hints and all(h == "TeamViewer, churn." for h in transcriber.hints)
            source = spanish.finals("en")
            first = source[0]["segment"]
            before = len(spanish.events)
            fixed = await call(
                "PUT", f"{api}/segments/{first}", editor, json={"text": "The churn is here."}
            )
            assert fixed.status_code == 200, fixed.text
            assert fixed.json()["rev"] == 1 and fixed.json()["state"] == "final"
            await spanish.wait_for(lambda f: any(e.get("rev") for e in f.finals("es")))
            new = spanish.events[before:]
            # One event per line the listener reads: the source line and its Spanish line.
            assert [(e["lang"], e["rev"]) for e in new] == [("en", 1), ("es", 1)], new
            assert new[0]["text"] == "The churn is here." and new[0]["segment"] == first
            spanish_line = new[1]
            assert first in spanish_line["sources"]
            assert "bajas" in spanish_line["text"], spanish_line  # the term's translation
            # Again: revision 2, and the last write wins.
            again = await call(
                "PUT", f"{api}/segments/{first}", presenter, json={"text": "The churn is there."}
            )
            assert again.json()["rev"] == 2
            await spanish.wait_for(lambda f: any(e.get("rev") == 2 for e in f.finals("es")))
        # A late joiner gets each line once, in its newest revision.
        async with Follower(url, code, "es") as late:
            await late.wait_for(lambda f: len(f.finals("es")) >= 2)
            await asyncio.sleep(0.3)
            lines = [(e["lang"], e["segment"]) for e in late.finals("en") + late.finals("es")]
            assert len(lines) == len(set(lines)), lines
            corrected = [e for e in late.finals("en") if e["segment"] == first]
            assert corrected[0]["text"] == "The churn is there." and corrected[0]["rev"] == 2
        english = (await call("GET", f"{api}/transcript", params={"lang": "en"})).text
        assert english.splitlines()[0] == "The churn is there.", english
        spanish_txt = (await call("GET", f"{api}/transcript", params={"lang": "es"})).text
        assert "bajas" in spanish_txt.splitlines()[0]
        history = (await call("GET", f"{api}/transcript", params={"format": "json"})).json()
        assert history[0]["rev"] == 2
        assert [h["text"] for h in history[0]["history"]] == [
            source[0]["text"],
            "The churn is here.",
        ]
    # The terms survive a restart; so does the editor token.
    async with serving(tmp_path, ScriptedTranscriber()) as url:
        api = f"{url}/api/sessions/{code}"
        assert (await call("GET", f"{api}/terms")).json()["terms"] == terms
        renewed = await call("PUT", f"{api}/terms", editor, json={"terms": ["Zoom"]})
        assert renewed.status_code == 200
