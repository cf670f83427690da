"""The subtitle bench: the venue screen in real Chromium follows a real-time replay of a long
recording, and a push endpoint that answers late or never must not slow anyone down.

Runs of the same replay against one server, ``--runs`` pairs (2) in the order without, with,
with, without, ...: *without* any push target, and *with* two (YouTube's format to an
endpoint that answers after 5 s, Zoom's to one that never answers; a local HTTP server the
bench runs). In each run the screen
(``/s/{code}/screen``, 1920x1080, Debian Chromium through Playwright) and ``--listeners``
listener sockets follow the session. Reported (definitions: docs/metrics.md, "Subtitles"):

- from the screen (static/js/subtitles.js counters, read with ``page.evaluate``): lines whose
  text changed after they moved up (goal 0), the longest line drawn (goal <= 42 characters),
  and the time from a final reaching the page (its message handled) to its first line drawn
  (the animation frame after the DOM change; goal p95 <= 100 ms);
- from the listeners: each event's delivery delay (arrival minus the server's ``ts``) and each
  final's lag after the end of the speech it renders, p50 and p95, with and without the slow
  push targets; goal: the p95s with them within 50 ms of those without.

``python -m bench screen`` writes bench/results/screen.json and screen.md.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import socket
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from bench.listener import ClientSpec, Listener
from bench.paths import RESULTS
from bench.recordings import EVAL_LONGFORM_EN, load_recording, resolve_wavs
from bench.replay import Replay, create_session, present
from bench.resources import machine_info
from bench.screen_report import RunResult, build_report, render_markdown
from bench.server import server_arguments, server_under_test

DEFAULT_FILE = "librivox_shakespeare_sonnets_001-003_concat"
"""158 s: three sonnets read one after another (longform/en)."""
DEFAULT_LISTENERS = 5
SLOW_ANSWER_S = 5.0
CHROMIUM = "/usr/bin/chromium"


@dataclass(frozen=True, slots=True)
class ScreenSettings:
    """What ``python -m bench screen`` was asked to do."""

    wav: Path
    out: Path
    listeners: int = DEFAULT_LISTENERS
    runs: int = 2
    lines: int = 3
    url: str | None = None
    server_pid: int | None = None
    ready_timeout: float = 120.0
    chromium: str = CHROMIUM


def sink_app(closing: asyncio.Event) -> Starlette:
    """The push endpoints: one answers after 5 s, one never answers (until ``closing``)."""

    async def slow(request: Request) -> Response:
        await request.body()
        await asyncio.sleep(SLOW_ANSWER_S)
        return PlainTextResponse("")

    async def never(request: Request) -> Response:
        await request.body()
        await closing.wait()
        return PlainTextResponse("")

    return Starlette(
        routes=[Route("/slow", slow, methods=["POST"]), Route("/never", never, methods=["POST"])]
    )


@contextlib.asynccontextmanager
async def serve_sink() -> AsyncIterator[str]:
    """The push endpoints on a loopback port, listening before the first request is made (the
    bench binds the socket itself, so nothing has to wait for uvicorn to start)."""
    listening = socket.socket()
    listening.bind(("127.0.0.1", 0))
    listening.listen(64)
    port = listening.getsockname()[1]
    closing = asyncio.Event()
    config = uvicorn.Config(sink_app(closing), log_level="warning", timeout_graceful_shutdown=6)
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[listening]))
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        closing.set()
        server.should_exit = True
        with contextlib.suppress(asyncio.CancelledError, TimeoutError):
            await asyncio.wait_for(task, 10)
        listening.close()


async def set_push(base_url: str, session: dict[str, Any], sink: str) -> None:
    """YouTube's format to the endpoint that answers after 5 s, Zoom's to the silent one."""
    auth = {"Authorization": f"Bearer {session['presenter_token']}"}
    async with httpx.AsyncClient(base_url=base_url, timeout=10) as client:
        for service, path in (("youtube", "/slow"), ("zoom", "/never")):
            response = await client.put(
                f"/api/sessions/{session['code']}/push/{service}",
                json={"url": f"{sink}{path}?cid=bench", "lang": "en"},
                headers=auth,
            )
            response.raise_for_status()


async def push_status(base_url: str, session: dict[str, Any]) -> list[dict[str, Any]]:
    auth = {"Authorization": f"Bearer {session['presenter_token']}"}
    async with httpx.AsyncClient(base_url=base_url, timeout=10) as client:
        response = await client.get(f"/api/sessions/{session['code']}/push", headers=auth)
        response.raise_for_status()
        targets: list[dict[str, Any]] = response.json()["targets"]
        return targets


async def run_once(
    base_url: str, settings: ScreenSettings, sink: str | None, browser: Any
) -> RunResult:
    """One replay with the screen and the listeners following; ``sink``: push there too."""
    recording = load_recording(settings.wav)
    session = await create_session(base_url, f"bench screen {'with' if sink else 'without'} push")
    if sink is not None:
        await set_push(base_url, session, sink)
    page = await browser.new_page(viewport={"width": 1920, "height": 1080})
    await page.goto(f"{base_url}/s/{session['code']}/screen?lang=en&lines={settings.lines}")
    await page.wait_for_function("() => window.interpStats && window.interpStats.connected")
    spec = ClientSpec(base_url, str(session["code"]), tuple(range(settings.listeners)))
    listeners = [Listener(i, spec) for i in spec.indices]
    gate = asyncio.Semaphore(10)
    following = [asyncio.create_task(listener.follow(gate)) for listener in listeners]
    await asyncio.gather(*(listener.joined.wait() for listener in listeners))
    wall_minus_monotonic = time.time() - time.monotonic()
    replay = await present(base_url, session, recording, mode="realtime")
    await asyncio.sleep(2.0)  # the last finals reach everyone, the screen draws them
    counters: dict[str, Any] = await page.evaluate(
        "() => JSON.parse(JSON.stringify(window.interpSubtitles))"
    )
    pushed = await push_status(base_url, session) if sink is not None else []
    for listener in listeners:
        await listener.stop()
    await asyncio.gather(*following, return_exceptions=True)
    await page.close()
    return RunResult(
        push=sink is not None,
        screen=counters,
        listeners=tuple(listener.record() for listener in listeners),
        final_ends=final_ends(replay),
        audio_start_wall=replay.schedule.send_times[0] + wall_minus_monotonic,
        push_targets=tuple(pushed),
        recording_s=recording.duration,
    )


def final_ends(replay: Replay) -> dict[int, float]:
    """``seq`` -> audio end (s) of every source final the presenter received: a listener's
    final of the same ``seq`` renders speech that ended then."""
    return {
        int(r.message["seq"]): float(r.message["end"])
        for r in replay.received
        if r.message.get("type") == "caption"
        and r.message.get("state") == "final"
        and r.message.get("source")
    }


async def run_bench(settings: ScreenSettings) -> dict[str, Any]:
    from playwright.async_api import async_playwright

    env = {"INTERP_PUSH_HOSTS": "127.0.0.1", "INTERP_SESSION_RATE": "0"}
    results: list[RunResult] = []
    log_path = settings.out / "screen-server.log"
    async with (
        server_under_test(
            settings.url, settings.server_pid, log_path, settings.ready_timeout, env
        ) as server,
        serve_sink() as sink,
        async_playwright() as playwright,
    ):
        browser = await playwright.chromium.launch(
            executable_path=settings.chromium, args=["--no-sandbox", "--disable-gpu"]
        )
        try:
            # Alternating (without, with, with, without, ...): a trend in the machine's load
            # weighs on both conditions alike.
            order = [(False, True) if i % 2 == 0 else (True, False) for i in range(settings.runs)]
            for pair in order:
                for with_push in pair:
                    result = await run_once(
                        server.base_url, settings, sink if with_push else None, browser
                    )
                    results.append(result)
        finally:
            await browser.close()
    return build_report(results, settings.wav.stem, settings.listeners, machine_info())


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bench screen", description=__doc__)
    parser.add_argument(
        "--file",
        default=DEFAULT_FILE,
        help=f"recording id in {EVAL_LONGFORM_EN} or a WAV path (default: {DEFAULT_FILE})",
    )
    parser.add_argument("--listeners", type=int, default=DEFAULT_LISTENERS)
    parser.add_argument(
        "--runs", type=int, default=2, help="pairs of runs, alternating which comes first"
    )
    parser.add_argument("--lines", type=int, default=3, help="lines the screen shows")
    parser.add_argument("--chromium", default=CHROMIUM)
    parser.add_argument("--out", type=Path, default=RESULTS)
    server_arguments(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    (wav,) = resolve_wavs([args.file])
    settings = ScreenSettings(
        wav=wav,
        out=args.out,
        listeners=args.listeners,
        runs=args.runs,
        lines=args.lines,
        url=args.url,
        server_pid=args.server_pid,
        ready_timeout=args.ready_timeout,
        chromium=args.chromium,
    )
    report = asyncio.run(run_bench(settings))
    from bench.format import write_report_files

    json_path, md_path = write_report_files(args.out, "screen", report, render_markdown(report))
    print(md_path.read_text(encoding="utf-8"))
    print(f"wrote {json_path} and {md_path}")
    return 0
