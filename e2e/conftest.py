"""Fixtures for the real-browser tests: Debian's Chromium driven by Playwright.

Chromium gets a fake microphone that plays a real recording (`fake_audio`), so a test hears
exactly what a presenter would have said. The server under test comes from the session-scoped
`live_server` fixture in the repository's root conftest.py (a real uvicorn with real models).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import threading
import wave
from collections.abc import Coroutine, Iterator
from concurrent.futures import Future
from dataclasses import dataclass, field
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
from playwright.sync_api import (
    Browser,
    ConsoleMessage,
    Error,
    Page,
    Playwright,
    Request,
    Route,
    sync_playwright,
)

from engine.events import Caption
from engine.session import Session
from tests.app.inprocess import InProcess, in_process_server
from tests.data import SONNET, SONNET_OCTAVE_LINES, SONNET_OCTAVE_S, reference

T = TypeVar("T")

CHROMIUM = Path("/usr/bin/chromium")
REPO_ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = REPO_ROOT / "test-artifacts"
README_SCREENSHOTS = REPO_ROOT / "docs" / "screenshots"


@dataclass(frozen=True)
class FakeAudio:
    """A WAV file Chromium plays once as its microphone, and what is said in it."""

    path: Path
    duration_s: float
    reference: str


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Run the browser tests last, whatever order the command line named them in: Playwright's
    sync API keeps its event loop running in the main thread for the rest of the session
    (`playwright_instance`), and an asyncio test after it fails ("Cannot run the event loop
    while another loop is running"). Skip them, before any fixture (and any model) loads,
    when Chromium is missing."""
    here = Path(__file__).resolve().parent
    items.sort(key=lambda item: here in item.path.parents)  # stable: order kept within each
    if CHROMIUM.exists():
        return
    skip = pytest.mark.skip(reason=f"{CHROMIUM} is missing (apt-get install chromium)")
    for item in items:
        if item.get_closest_marker("browser") is not None:
            item.add_marker(skip)


def write_trimmed_wav(source: Path, target: Path, seconds: float, fade_s: float = 0.05) -> float:
    """Copy the first `seconds` of a 16-bit PCM WAV with a short fade-out; return its duration."""
    with wave.open(str(source), "rb") as reader:
        params = reader.getparams()
        if params.sampwidth != 2:
            raise ValueError(f"{source}: expected 16-bit PCM, got {params.sampwidth * 8}-bit")
        frames = min(params.nframes, round(seconds * params.framerate))
        data = bytearray(reader.readframes(frames))
    fade = min(frames, round(fade_s * params.framerate))
    step = params.nchannels * 2
    for i in range(fade):
        gain = (fade - i) / fade
        for channel in range(params.nchannels):
            offset = (frames - fade + i) * step + channel * 2
            sample = int.from_bytes(data[offset : offset + 2], "little", signed=True)
            data[offset : offset + 2] = round(sample * gain).to_bytes(2, "little", signed=True)
    with wave.open(str(target), "wb") as writer:
        writer.setparams(params)
        writer.writeframes(bytes(data))
    return frames / params.framerate


def screenshots_dir(artifacts_dir: Path) -> Path:
    """Where the pictures go: the README's folder only when asked for, so that a test run
    leaves the tracked files as they were."""
    chosen = (
        README_SCREENSHOTS
        if os.environ.get("INTERP_README_SCREENSHOTS") == "1"
        else artifacts_dir / "screenshots"
    )
    chosen.mkdir(parents=True, exist_ok=True)
    return chosen


@pytest.fixture(scope="session")
def artifacts_dir() -> Path:
    """test-artifacts/ at the repository root (screenshots, console logs)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


@pytest.fixture(scope="session")
def fake_audio(tmp_path_factory: pytest.TempPathFactory) -> FakeAudio:
    """The sonnet's octave (its first 30.2 s: the spoken number and eight verse lines, see
    tests/data) as a fake microphone, with its human reference text."""
    target = tmp_path_factory.mktemp("fake-audio") / f"{SONNET.stem}_octave.wav"
    duration = write_trimmed_wav(SONNET, target, SONNET_OCTAVE_S)
    octave = "\n".join(reference(SONNET).splitlines()[:SONNET_OCTAVE_LINES])
    return FakeAudio(path=target, duration_s=duration, reference=octave)


class QuietHandler(SimpleHTTPRequestHandler):
    """Serves files without logging every request to stderr."""

    def log_message(self, format: str, *args: Any) -> None:
        return


@pytest.fixture(scope="session")
def static_server() -> Iterator[str]:
    """The repository's files over HTTP on a free loopback port, static/ at /static/, for the
    tests of one browser module with no app server (module imports and worklets need an
    origin)."""
    handler = functools.partial(QuietHandler, directory=str(REPO_ROOT))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.fixture(scope="session")
def playwright_instance() -> Iterator[Playwright]:
    """One Playwright driver for the whole run."""
    with sync_playwright() as playwright:
        yield playwright


def chromium_args(audio: FakeAudio) -> list[str]:
    """Flags for a headless Chromium whose microphone plays `audio` once (`%noloop`)."""
    return [
        "--use-fake-ui-for-media-stream",
        "--use-fake-device-for-media-stream",
        f"--use-file-for-fake-audio-capture={audio.path}%noloop",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--autoplay-policy=no-user-gesture-required",
    ]


@contextlib.contextmanager
def chromium(playwright: Playwright, audio: FakeAudio, *flags: str) -> Iterator[Browser]:
    """A headless Chromium whose microphone plays `audio` once, with `flags` besides."""
    browser = playwright.chromium.launch(
        executable_path=str(CHROMIUM), headless=True, args=[*chromium_args(audio), *flags]
    )
    try:
        yield browser
    finally:
        browser.close()


@pytest.fixture
def browser(playwright_instance: Playwright, fake_audio: FakeAudio) -> Iterator[Browser]:
    """A fresh Chromium per test: the fake microphone starts from the top of the file."""
    with chromium(playwright_instance, fake_audio) as launched:
        yield launched


# What the pages must work under (and what the server is expected to send later): no inline
# script, style or event-handler attributes anywhere. Added to every HTML response in these tests,
# so a violation shows up as a console error and fails the test.
STRICT_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; media-src 'self' blob:; worker-src 'self'; object-src 'none'; "
    "base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)


@dataclass
class ConsoleLog:
    """Everything the page printed, and the errors among it (uncaught exceptions, CSP reports)."""

    lines: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def write(self, path: Path) -> None:
        """Save the log next to the screenshots."""
        path.write_text("\n".join(self.lines) + "\n", encoding="utf-8")


def add_strict_csp(route: Route, request: Request) -> None:
    """Pass documents through with STRICT_CSP added; everything else untouched."""
    if request.resource_type != "document":
        route.continue_()
        return
    response = route.fetch()
    headers = {**response.headers, "content-security-policy": STRICT_CSP}
    route.fulfill(response=response, headers=headers)


@pytest.fixture
def console_log() -> ConsoleLog:
    """The console of the test's page."""
    return ConsoleLog()


# A phone (iPhone 12-14 class): what a listener holds in the audience.
PHONE = {
    "viewport": {"width": 390, "height": 844},
    "device_scale_factor": 2,
    "is_mobile": True,
    "has_touch": True,
}
LAPTOP = {"viewport": {"width": 1280, "height": 800}}


def open_page(browser: Browser, console_log: ConsoleLog, **context_options: object) -> Page:
    """A page in a new browser context (`context_options`: viewport, is_mobile, ...) under
    STRICT_CSP, its console captured in `console_log`. Close it with `page.context.close()`."""
    context = browser.new_context(**context_options)  # type: ignore[arg-type]
    # A document fulfilled by a route has no IP address space, so Chromium's Local Network
    # Access checks would block its WebSocket to 127.0.0.1; grant what a user would allow.
    context.grant_permissions(["local-network-access"])
    context.route("**/*", add_strict_csp)
    page = context.new_page()

    def on_console(message: ConsoleMessage) -> None:
        console_log.lines.append(f"{message.type}: {message.text}")
        if message.type == "error":
            console_log.errors.append(message.text)

    def on_page_error(error: Error) -> None:
        console_log.lines.append(f"pageerror: {error}")
        console_log.errors.append(str(error))

    page.on("console", on_console)
    page.on("pageerror", on_page_error)
    return page


@pytest.fixture
def page(browser: Browser, console_log: ConsoleLog) -> Iterator[Page]:
    """A laptop-sized page under STRICT_CSP, its console captured in `console_log`."""
    page = open_page(browser, console_log, **LAPTOP)
    try:
        yield page
    finally:
        page.context.close()


@dataclass
class Background:
    """The in-process server, running in its own thread and event loop (Playwright's sync
    API owns this thread's): ``call`` runs a coroutine there and waits for it."""

    server: InProcess
    loop: asyncio.AbstractEventLoop

    def call(self, coroutine: Coroutine[Any, Any, T], timeout: float = 30) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    def session(self, code: str) -> Session:
        session: Session | None = self.call(
            self.server.state["services"].engine().registry.get(code)
        )
        assert session is not None
        return session

    def create(self, **body: Any) -> dict[str, Any]:
        payload = {"title": "Results call", "source_language": "en", **body}
        response = httpx.post(f"{self.server.url}/api/sessions", json=payload, timeout=10)
        response.raise_for_status()
        created: dict[str, Any] = response.json()
        return created

    def say(self, session: Session, script: list[Caption], pause: float = 0.15) -> None:
        async def publish() -> None:
            for caption in script:
                await session.publish(caption)
                await asyncio.sleep(pause)

        self.call(publish())


@pytest.fixture
def background(tmp_path: Path) -> Iterator[Background]:
    loop = asyncio.new_event_loop()
    started: Future[InProcess] = Future()
    stop = asyncio.Event()

    async def serve() -> None:
        # Spanish for a panel's second speaker; Arabic and Japanese: scripts written right to
        # left, and without spaces.
        models = {"en": "fake", "es": "fake", "ar": "fake", "ja": "fake"}
        async with in_process_server(tmp_path, apertium=True, asr_models=models) as server:
            started.set_result(server)
            await stop.wait()

    thread = threading.Thread(target=loop.run_until_complete, args=(serve(),), daemon=True)
    thread.start()
    try:
        yield Background(started.result(60), loop)
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(60)
        loop.close()
