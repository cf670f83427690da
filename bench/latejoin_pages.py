"""Late joiners' pages: a session hours in, opened in Chromium.

A listener who scans the QR code after lunch, a venue screen reloaded mid-talk, and a console
whose Start (or reconnect) takes the session's source finals again each receive the whole
session so far, and must draw it before the newest line shows. One round per ``--segments``
value: seed a data directory with one session holding that many source finals and their
Spanish (``bench.latejoin.seed``; an hour of talk is about 1100), start a fresh server on it,
and time, in a fresh browser context each, from opening the page (the console: from pressing
Start) until the newest line is drawn (the animation frame after the page holds every final):

- the phone: the listener page in Spanish at 390x844;
- the venue screen: ``/s/{code}/screen?lang=es`` at 1920x1080;
- the console: ``/p/{code}``, whose Start takes every English final again.

docs/metrics.md, "Late joiners / Their pages".
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
import wave
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench.format import fixed, machine_line, utc_now, write_report_files
from bench.latejoin import seed
from bench.paths import RESULTS
from bench.resources import machine_info
from bench.server import ServerProcess
from engine.store.base import new_token

CHROMIUM = "/usr/bin/chromium"
PAGE_TIMEOUT_S = 600.0


def subtitles_hold(segments: int) -> str:
    """Whether a subtitle page (the phone's, the screen's) holds ``segments`` finals."""
    return f"window.interpSubtitles && window.interpSubtitles.finals >= {segments}"


def drawn(held: str) -> str:
    """A page function that resolves once ``held`` (a JavaScript expression: every final
    held) is true, then two animation frames later: the second comes after the first drew."""
    return f"""async () => {{
  while (!({held})) await new Promise((done) => setTimeout(done, 50));
  for (let i = 0; i < 2; i += 1) await new Promise((done) => requestAnimationFrame(done));
}}"""


@dataclass(frozen=True, slots=True)
class PageTimes:
    """Seconds from opening each page until its newest line was drawn."""

    segments: int
    phone_s: float
    screen_s: float
    console_s: float


def _silence(path: Path, seconds: float = 5.0) -> Path:
    """A quiet WAV for the console's fake microphone (the console only needs one to start)."""
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(16000)
        out.writeframes(b"\0\0" * int(16000 * seconds))
    return path


async def _time_page(browser: Any, url: str, held: str, viewport: dict[str, int]) -> float:
    context = await browser.new_context(viewport=viewport)
    try:
        page = await context.new_page()
        started = time.monotonic()
        await page.goto(url)
        await asyncio.wait_for(page.evaluate(drawn(held)), PAGE_TIMEOUT_S)
        return time.monotonic() - started
    finally:
        await context.close()


async def _time_console(browser: Any, url: str, segments: int) -> float:
    context = await browser.new_context(viewport={"width": 1280, "height": 800})
    try:
        page = await context.new_page()
        await page.goto(url)
        await page.wait_for_function(
            "() => !document.getElementById('start-button').disabled", timeout=60_000
        )
        started = time.monotonic()
        await page.click("#start-button")
        held = (
            "document.querySelectorAll(\"#captions .caption[data-state='final']\").length"
            f" >= {segments}"
        )
        await asyncio.wait_for(page.evaluate(drawn(held)), PAGE_TIMEOUT_S)
        seconds = time.monotonic() - started
        await page.click("#stop-button")
        return seconds
    finally:
        await context.close()


async def run_round(segments: int, chromium: str, log: Path) -> PageTimes:
    from playwright.async_api import async_playwright

    token = new_token()
    with tempfile.TemporaryDirectory(prefix="bench-latejoin-pages-") as data:
        code = seed(Path(data), segments, presenter_token=token)
        microphone = _silence(Path(data) / "quiet.wav")
        server = ServerProcess(log, env={"INTERP_DATA_DIR": data, "INTERP_SESSION_RATE": "0"})
        handle = await server.start(ready_timeout=180)
        base = handle.base_url
        try:
            async with async_playwright() as playwright:
                browser = await playwright.chromium.launch(
                    executable_path=chromium,
                    args=[
                        "--no-sandbox",
                        "--disable-gpu",
                        "--use-fake-ui-for-media-stream",
                        "--use-fake-device-for-media-stream",
                        f"--use-file-for-fake-audio-capture={microphone}",
                    ],
                )
                try:
                    phone = await _time_page(
                        browser,
                        f"{base}/s/{code}?lang=es",
                        subtitles_hold(segments),
                        {"width": 390, "height": 844},
                    )
                    screen = await _time_page(
                        browser,
                        f"{base}/s/{code}/screen?lang=es",
                        subtitles_hold(segments),
                        {"width": 1920, "height": 1080},
                    )
                    console = await _time_console(
                        browser, f"{base}/p/{code}#token={token}", segments
                    )
                finally:
                    await browser.close()
        finally:
            await server.stop()
    return PageTimes(segments, round(phone, 2), round(screen, 2), round(console, 2))


def markdown(rounds: Sequence[PageTimes], machine: dict[str, Any], command: str) -> str:
    lines = [
        "# Late joiners' pages",
        "",
        f"`{command}` on {machine_line(machine)}.",
        "Seconds from opening the page (the console: from pressing Start) until its newest",
        "line is drawn, with every earlier final of the session backfilled.",
        "",
        "| segments (finals a Spanish reader gets) | phone s | venue screen s | console s |",
        "|---|---|---|---|",
    ]
    for r in rounds:
        lines.append(
            f"| {r.segments} ({2 * r.segments}) | {fixed(r.phone_s)} | {fixed(r.screen_s)} | "
            f"{fixed(r.console_s)} |"
        )
    return "\n".join(lines) + "\n"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bench latejoin-pages", description=__doc__)
    parser.add_argument(
        "--segments", type=int, nargs="+", default=[1100, 3000], help="an hour: 1100"
    )
    parser.add_argument("--chromium", default=CHROMIUM)
    parser.add_argument("--out", type=Path, default=RESULTS)
    return parser


def main(argv: Sequence[str]) -> int:
    args = build_parser().parse_args(argv)
    log = args.out / "server-latejoin-pages.log"

    async def run_all() -> list[PageTimes]:
        return [await run_round(n, args.chromium, log) for n in args.segments]

    rounds = asyncio.run(run_all())
    machine = machine_info()
    command = ("python -m bench latejoin-pages " + " ".join(argv)).strip()
    report = {
        "created_utc": utc_now(),
        "command": command,
        "machine": machine,
        "rounds": [asdict(r) for r in rounds],
    }
    text = markdown(rounds, machine, command)
    write_report_files(args.out, "latejoin-pages", report, text)
    print(text)
    return 0
