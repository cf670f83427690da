"""The real app with a fake recogniser, served by uvicorn in the test's own event loop, so a
test can reach its lifespan state (``services``, ``peers``) and publish into its hub."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.types import Receive, Scope, Send

from app.main import create_app
from app.services import RecognitionModel
from app.settings import Settings
from engine.audio import Samples
from engine.events import Word
from engine.recognition.asr import Decoded, DecodeOptions, Transcriber
from engine.stream import StreamLimits
from tests.support import free_port


class FakeTranscriber:
    """Every speech window reads "hello" (these tests are about transport, not the model)."""

    name = "fake"
    multilingual = False

    def transcribe(self, audio: Samples, options: DecodeOptions) -> Decoded:
        return Decoded((Word("hello", 0.0, max(0.1, len(audio) / 16000)),))


class SlowTranscriber:
    """Reads "hello", taking ``seconds`` a decode: slower than real time at every step."""

    name = "slow"
    multilingual = False

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def transcribe(self, audio: Samples, options: DecodeOptions) -> Decoded:
        time.sleep(self.seconds)
        return Decoded((Word("hello", 0.0, max(0.1, len(audio) / 16000)),))


@contextlib.contextmanager
def uvicorn_log(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    """uvicorn's log into ``caplog``: its loggers stop at "uvicorn" and are configured as the
    server starts, so enter this once the server is up."""
    logger = logging.getLogger("uvicorn.error")
    logger.addHandler(caplog.handler)
    try:
        yield
    finally:
        logger.removeHandler(caplog.handler)


@dataclass
class InProcess:
    url: str
    app: Starlette
    state: dict[str, Any]
    """The lifespan's state: ``services``, ``peers``, ``send_watch``."""


@contextlib.asynccontextmanager
async def in_process_server(
    tmp_path: Path, transcriber: Transcriber | None = None, **overrides: Any
) -> AsyncIterator[InProcess]:
    """The real app with a fake recogniser (``transcriber``, :class:`FakeTranscriber` by
    default), served by uvicorn in this event loop (so the test can publish into its hub
    directly); ``overrides`` are :class:`Settings` fields."""
    fields: dict[str, Any] = {
        "data_dir": tmp_path,
        "port": free_port(),
        "asr_models": {"en": "fake"},
        "load_multilingual": False,
        "apertium": False,
        "whisper_translate": False,
        "warm_models": False,
        "limits": StreamLimits(max_speed=8.0),
        "session_create_per_minute": 0,
        **overrides,
    }
    settings = Settings(**fields)
    model = RecognitionModel(transcriber or FakeTranscriber())
    app = create_app(settings, transcriber_factory=lambda spec, s: model)
    states: list[dict[str, Any]] = []

    async def keep_state(scope: Scope, receive: Receive, send: Send) -> None:
        """The app, keeping a reference to the lifespan's state (ASGI lifespan state, which
        the app fills at start-up) for the test."""
        if scope["type"] == "lifespan":
            states.append(scope["state"])
        await app(scope, receive, send)

    server = uvicorn.Server(
        uvicorn.Config(keep_state, host="127.0.0.1", port=settings.port, log_level="warning")
    )
    serving = asyncio.create_task(server.serve())
    url = f"http://127.0.0.1:{settings.port}"
    try:
        async with httpx.AsyncClient(base_url=url, timeout=5) as client:
            for _ in range(400):
                with contextlib.suppress(httpx.HTTPError):
                    if (await client.get("/readyz")).status_code == 200:
                        break
                await asyncio.sleep(0.05)
        yield InProcess(url, app, states[0])
    finally:
        server.should_exit = True
        await asyncio.wait_for(serving, 60)


async def new_session(url: str, **body: object) -> dict[str, Any]:
    """``POST /api/sessions`` without blocking the loop the in-process server runs in."""
    payload = {"title": "in process", "source_language": "en", "target_languages": [], **body}
    async with httpx.AsyncClient(timeout=10) as client:
        response = await client.post(f"{url}/api/sessions", json=payload)
    response.raise_for_status()
    data: dict[str, Any] = response.json()
    return data


async def http(method: str, url: str, **kwargs: object) -> httpx.Response:
    """One request without blocking the loop the in-process server runs in."""
    async with httpx.AsyncClient(timeout=10) as client:
        return await client.request(method, url, **kwargs)  # type: ignore[arg-type]
