"""The late-join benchmark: a session an hour in, and an audience that joins at once.

A real event's audience does not all come at the start: a hall scans the QR code after the
break, a venue screen is reloaded mid-talk. Each such listener's backfill is the whole
session so far (engine/delivery/hub.py). One round: seed a data directory with one session
holding ``--segments`` source finals and their Spanish (an hour of talk is about 1100), start
a fresh server on it, let one watcher follow it live, then open ``N`` listener sockets at
once in Spanish with ``since=0`` (spread over ``--client-processes`` processes, niced below
the server), each reading until it holds every final. Reported: the time from the storm's
start until each joiner held every final (p50, p95, max), joiners that failed, the delay of
the events the watcher received meanwhile (arrival minus the server's ``ts``: what everyone
already listening felt), and the server's CPU. docs/metrics.md, "Late joiners".
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import tempfile
import time
import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from websockets.asyncio.client import connect

from bench.format import fixed, machine_line, utc_now, write_report_files
from bench.metrics import Distribution, distribution
from bench.paths import RESULTS
from bench.resources import machine_info
from bench.server import ServerProcess, cpu_seconds
from engine.events import Caption
from engine.store.base import SessionRecord, hash_token, new_code, new_token
from engine.store.sqlite import SqliteSessionStore

WORDS = "and so the committee agreed that the budget for the next quarter would grow".split()


def seed(data_dir: Path, segments: int, presenter_token: str | None = None) -> str:
    """A live session in ``data_dir``'s store with ``segments`` English finals and their
    Spanish, three seconds of audio a segment, whose presenter token is ``presenter_token``
    (a new one nobody knows if None); its code."""
    code = new_code()
    began = time.time() - 3.0 * segments
    with SqliteSessionStore(data_dir / "sessions.sqlite3") as store:
        record = SessionRecord(
            str(uuid.uuid4()),
            code,
            "Plenary",
            "en",
            ("es",),
            hash_token(presenter_token or new_token()),
            "live",
            began,
        )
        store.create(record)
        seq = 0
        for i in range(segments):
            text = " ".join(WORDS[(i + k) % len(WORDS)] for k in range(12)) + "."
            for lang, source in (("en", True), ("es", False)):
                seq += 1
                sources = () if source else (i,)
                caption = Caption(
                    i, lang, source, "final", text, 3.0 * i, 3.0 * i + 2.5, seq=seq, sources=sources
                )
                store.append_final(code, caption)
    return code


@dataclass(frozen=True, slots=True)
class Joined:
    """One joiner: seconds from the storm's start until it held every final (None: never),
    and why its socket closed early, if it did."""

    seconds: float | None
    closed: str | None


async def _join(url: str, finals: int, start_at: float) -> Joined:
    try:
        async with connect(url, open_timeout=300, max_size=None, ping_interval=None) as ws:
            seen = 0
            async for raw in ws:
                if isinstance(raw, str) and '"state":"final"' in raw:
                    seen += 1
                    if seen >= finals:
                        return Joined(time.time() - start_at, None)
            return Joined(None, f"{ws.close_code} {ws.close_reason}")
    except Exception as error:  # a joiner's failure is a result, not a crash
        return Joined(None, f"{type(error).__name__}: {error}")


def _client(url: str, count: int, finals: int, start_at: float) -> list[Joined]:
    """One client process: ``count`` joiners, all opening at ``start_at`` (wall clock)."""
    os.nice(10)

    async def run() -> list[Joined]:
        await asyncio.sleep(max(0.0, start_at - time.time()))
        return list(await asyncio.gather(*(_join(url, finals, start_at) for _ in range(count))))

    return asyncio.run(run())


@dataclass(frozen=True, slots=True)
class Round:
    listeners: int
    joined: Distribution
    failed: int
    failures: list[str]
    watcher_delay: Distribution
    watcher_events: int
    server_cpu_seconds: float
    storm_seconds: float


async def _watch(url: str, since_wall: list[float], delays: list[float]) -> None:
    """Follow the session live; once ``since_wall`` holds the storm's start, keep the delay of
    every event numbered after it."""
    async with connect(url, max_size=None) as ws:
        async for raw in ws:
            if not isinstance(raw, str):
                continue
            now = time.time()
            ts = json.loads(raw).get("ts")
            if since_wall and isinstance(ts, int | float) and ts >= since_wall[0]:
                delays.append(now - ts)


async def _settle(pid: int, limit_s: float = 120.0) -> None:
    """Wait until the server uses under a twentieth of a core over a second (at most
    ``limit_s``)."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        before = cpu_seconds(pid)
        await asyncio.sleep(1.0)
        if cpu_seconds(pid) - before < 0.05:
            return


async def run_round(listeners: int, segments: int, processes: int, log: Path) -> Round:
    with tempfile.TemporaryDirectory(prefix="bench-latejoin-") as data:
        code = seed(Path(data), segments)
        server = ServerProcess(log, env={"INTERP_DATA_DIR": data, "INTERP_SESSION_RATE": "0"})
        handle = await server.start(ready_timeout=180)
        assert handle.pid is not None
        base = handle.base_url.replace("http://", "ws://") + f"/ws/listen/{code}"
        since_wall: list[float] = []
        delays: list[float] = []
        watcher = asyncio.create_task(
            _watch(f"{base}?lang=es&since={2 * segments}", since_wall, delays)
        )
        try:
            await _settle(handle.pid)  # the voices warm in the background after /readyz
            cpu_before = cpu_seconds(handle.pid)
            start_at = time.time() + 1.0
            since_wall.append(start_at)
            shares = [
                listeners // processes + (i < listeners % processes) for i in range(processes)
            ]
            with multiprocessing.get_context("spawn").Pool(processes) as pool:
                results = await asyncio.to_thread(
                    pool.starmap,
                    _client,
                    [(f"{base}?lang=es&since=0", n, 2 * segments, start_at) for n in shares if n],
                )
            storm_seconds = time.time() - start_at
            await asyncio.sleep(1.0)  # the watcher reads what the storm held back
            cpu = cpu_seconds(handle.pid) - cpu_before
        finally:
            watcher.cancel()
            await server.stop()
    joined = [j for part in results for j in part]
    failures = sorted({j.closed for j in joined if j.closed})
    return Round(
        listeners=listeners,
        joined=distribution(j.seconds for j in joined),
        failed=sum(j.seconds is None for j in joined),
        failures=failures[:5],
        watcher_delay=distribution(delays),
        watcher_events=len(delays),
        server_cpu_seconds=round(cpu, 2),
        storm_seconds=round(storm_seconds, 2),
    )


def markdown(rounds: Sequence[Round], segments: int, machine: dict[str, Any], command: str) -> str:
    lines = [
        "# Late joiners",
        "",
        f"`{command}` on {machine_line(machine)}.",
        f"A session of {segments} segments (English and Spanish: {2 * segments} finals for a",
        "Spanish listener); every joiner opens at once with `since=0`.",
        "",
        "| joiners | every final held, p50 / p95 / max s | failed | watcher delay p50 / p95 / "
        "max s (events) | server CPU s |",
        "|---|---|---|---|---|",
    ]
    for r in rounds:
        held = " / ".join(fixed(v) for v in (r.joined.p50, r.joined.p95, r.joined.max))
        watch = " / ".join(
            fixed(v) for v in (r.watcher_delay.p50, r.watcher_delay.p95, r.watcher_delay.max)
        )
        lines.append(
            f"| {r.listeners} | {held} | {r.failed} | {watch} ({r.watcher_events}) | "
            f"{fixed(r.server_cpu_seconds, 1)} |"
        )
    failures = sorted({f for r in rounds for f in r.failures})
    if failures:
        lines += ["", "Failures: " + "; ".join(failures)]
    return "\n".join(lines) + "\n"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bench latejoin", description=__doc__)
    parser.add_argument("--listeners", type=int, nargs="+", default=[50, 200, 500])
    parser.add_argument("--segments", type=int, default=1100, help="an hour of talk: 1100")
    parser.add_argument("--client-processes", type=int, default=2)
    parser.add_argument("--out", type=Path, default=RESULTS)
    return parser


def main(argv: Sequence[str]) -> int:
    args = build_parser().parse_args(argv)
    log = args.out / "server-latejoin.log"

    async def run_all() -> list[Round]:
        return [
            await run_round(n, args.segments, args.client_processes, log) for n in args.listeners
        ]

    rounds = asyncio.run(run_all())
    machine = machine_info()
    command = "python -m bench latejoin " + " ".join(argv)
    report = {
        "created_utc": utc_now(),
        "command": command.strip(),
        "machine": machine,
        "segments": args.segments,
        "rounds": [asdict(r) for r in rounds],
    }
    text = markdown(rounds, args.segments, machine, command.strip())
    write_report_files(args.out, "latejoin", report, text)
    print(text)
    return 0 if all(r.failed == 0 for r in rounds) else 1
