"""The correction bench: how soon a person's fix reaches a listener in another language, and
what it costs the audience (docs/metrics.md, "Corrections").

One round: a fresh server, a session from ``--source`` into ``--target``, one measuring
listener reading the target language and, with ``--listeners N``, N more listeners of the
source language in client processes (bench/clients.py, as the fan-out bench drives them). The
presenter replays a recording in real time. Whenever the measuring listener receives a
translation final (rev 0), the bench corrects the last source segment it covers
(``PUT .../segments/{segment}``: its text and a marker word) and times the moment the
listener holds the re-made translation (a final of the target language with ``rev`` > 0 that
covers the segment); one correction at a time, at most ``--corrections``.

Routes: ``en es`` is Apertium (text); ``de en`` is Whisper-translate only: the re-made line is
the sentence's audio decoded again with the corrected words as hint text.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shlex
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from websockets.asyncio.client import connect

from bench.clients import ClientPool, default_client_processes, split_listeners
from bench.deliveries import ListenerRecord, presenter_finals
from bench.listener import ClientSpec
from bench.metrics import percentile
from bench.paths import EVAL, RESULTS
from bench.recordings import load_recording
from bench.replay import ReplayError, present, trimmed
from bench.server import server_arguments, server_under_test

RECORDINGS = {
    "en": EVAL / "longform" / "en" / "earnings22_1_4482311_3_62.wav",
    "de": EVAL / "longform" / "de" / "librivox_de_simplicissimus.wav",
}
MARKER = "Zorblax"
"""The word each correction adds (a name no model knows: it must come from the fix)."""


@dataclass(slots=True)
class Measured:
    """What the measuring listener saw, and the corrections made."""

    events: list[tuple[float, dict[str, Any]]] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)
    marker_kept: int = 0
    timeouts: int = 0
    corrected: list[int] = field(default_factory=list)


async def _listen(
    url: str, measured: Measured, stop: asyncio.Event, arrived: asyncio.Event
) -> None:
    async with connect(url, max_size=2**22) as ws:
        while not stop.is_set():
            try:
                raw = await asyncio.wait_for(ws.recv(), 0.2)
            except TimeoutError:
                continue
            if isinstance(raw, bytes):
                continue
            measured.events.append((time.monotonic(), json.loads(raw)))
            arrived.set()


async def _correct(
    client: httpx.AsyncClient,
    session: dict[str, Any],
    target: str,
    measured: Measured,
    segment: int,
    source_text: str,
    arrived: asyncio.Event,
    timeout_s: float = 30.0,
) -> None:
    """One correction of source ``segment``, timed until the listener holds its re-made
    translation."""
    text = f"{source_text.rstrip('.')} {MARKER}."
    headers = {"Authorization": f"Bearer {session['presenter_token']}"}
    put_at = time.monotonic()
    response = await client.put(
        f"/api/sessions/{session['code']}/segments/{segment}", json={"text": text}, headers=headers
    )
    response.raise_for_status()
    measured.corrected.append(segment)
    while time.monotonic() < put_at + timeout_s:
        for at, event in measured.events:
            if (
                at >= put_at
                and event.get("type") == "caption"
                and event["lang"] == target
                and event.get("rev")
                and segment in event.get("sources", [event["segment"]])
            ):
                measured.latencies.append(at - put_at)
                measured.marker_kept += MARKER in event["text"]
                return
        arrived.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(arrived.wait(), 0.5)
    measured.timeouts += 1


def _lines(measured: Measured, target: str, after: int = 0) -> list[tuple[int, str]]:
    """(last source segment, its source text) of each translation final (rev 0) received
    from event ``after`` on."""
    events = [e for _, e in measured.events]
    sources = {
        e["segment"]: e["text"]
        for e in events
        if e.get("type") == "caption" and e.get("source") and e["state"] == "final"
    }
    found = []
    for event in events[after:]:
        if (
            event.get("type") == "caption"
            and event["state"] == "final"
            and event["lang"] == target
            and not event.get("rev")
            and event.get("text")
        ):
            segment = int(event.get("sources", [event["segment"]])[-1])
            if segment in sources and segment not in measured.corrected:
                found.append((segment, sources[segment]))
    return found


async def _correct_as_they_come(
    base: str,
    session: dict[str, Any],
    target: str,
    measured: Measured,
    limit: int,
    arrived: asyncio.Event,
) -> None:
    """While the presenter speaks: correct the newest translation final's last source
    segment, one correction at a time."""
    seen = 0
    async with httpx.AsyncClient(base_url=base, timeout=60) as client:
        while len(measured.corrected) < limit:
            await arrived.wait()
            arrived.clear()
            fresh = _lines(measured, target, seen)
            seen = len(measured.events)
            if fresh:
                segment, text = fresh[-1]
                await _correct(client, session, target, measured, segment, text, arrived)
                seen = len(measured.events)


async def _correct_each(
    base: str,
    session: dict[str, Any],
    target: str,
    measured: Measured,
    limit: int,
    arrived: asyncio.Event,
) -> None:
    """After the talk: correct each translated line in turn."""
    async with httpx.AsyncClient(base_url=base, timeout=60) as client:
        for segment, text in _lines(measured, target)[:limit]:
            await _correct(client, session, target, measured, segment, text, arrived)


async def run_round(args: argparse.Namespace) -> dict[str, Any]:
    recording = trimmed(load_recording(RECORDINGS[args.source]), args.seconds)
    env = {"INTERP_SESSION_RATE": "0", "INTERP_SPEECH": "0"}
    log_path = args.out / f"server-corrections-{args.source}-{args.target}.log"
    async with server_under_test(
        args.url, args.server_pid, log_path, args.ready_timeout, env
    ) as server:
        async with httpx.AsyncClient(base_url=server.base_url, timeout=30) as client:
            response = await client.post(
                "/api/sessions",
                json={
                    "title": "bench corrections",
                    "source_language": args.source,
                    "target_languages": [args.target],
                },
            )
            if response.status_code != 201:
                raise ReplayError(f"POST /api/sessions: {response.status_code} {response.text}")
            session: dict[str, Any] = response.json()
        code = session["code"]
        ws = server.base_url.replace("http://", "ws://")
        measured = Measured()
        stop, arrived = asyncio.Event(), asyncio.Event()
        listener = asyncio.create_task(
            _listen(f"{ws}/ws/listen/{code}?lang={args.target}", measured, stop, arrived)
        )
        records: list[ListenerRecord] = []
        load_before = os.getloadavg()
        pool: ClientPool | None = None
        if args.listeners:
            processes = default_client_processes(args.listeners)
            specs = [
                ClientSpec(server.base_url, code, indices)
                for indices in split_listeners(args.listeners, processes)
            ]
            pool = ClientPool(specs)
            await pool.__aenter__()
            await pool.join(180)
        try:
            live = _correct_each if args.after else _correct_as_they_come
            if not args.after:
                corrector = asyncio.create_task(
                    live(server.base_url, session, args.target, measured, args.corrections, arrived)
                )
            replay = await present(
                server.base_url, session, recording, language=args.source, speed=args.speed
            )
            if args.after:
                await asyncio.sleep(3.0)  # the last sentences' translations
                corrector = asyncio.create_task(
                    live(server.base_url, session, args.target, measured, args.corrections, arrived)
                )
            # The correction in flight (if any), or every one after the talk.
            await asyncio.wait({corrector}, timeout=args.settle + (300 if args.after else 0))
            stop.set()
            corrector.cancel()
            await asyncio.gather(listener, corrector, return_exceptions=True)
            if pool is not None:
                finals = frozenset(presenter_finals(replay))
                records, _ = await pool.finish(finals, 60)
        finally:
            if pool is not None:
                await pool.__aexit__(None)
    return _summary(args, measured, records, load_before, recording.duration)


def _summary(
    args: argparse.Namespace,
    measured: Measured,
    records: Sequence[ListenerRecord],
    load_before: tuple[float, float, float],
    seconds: float,
) -> dict[str, Any]:
    latencies = measured.latencies
    corrections = len(measured.corrected)
    extra = [sum(1 for d in r.deliveries if d.rev) for r in records]
    return {
        "route": f"{args.source}->{args.target}",
        "recording_s": round(seconds, 1),
        "corrections": corrections,
        "answered": len(latencies),
        "timeouts": measured.timeouts,
        "marker_kept": measured.marker_kept,
        "latency_s": {
            "p50": round(percentile(latencies, 50), 3) if latencies else None,
            "p95": round(percentile(latencies, 95), 3) if latencies else None,
            "max": round(max(latencies), 3) if latencies else None,
            "all": [round(x, 3) for x in latencies],
        },
        "listeners": len(records),
        "extra_events_per_correction": {
            "max": max(extra) / corrections if extra and corrections else None,
            "min": min(extra) / corrections if extra and corrections else None,
        },
        "reconnects": sum(r.reconnects for r in records),
        "load_average": {"before": load_before, "after": os.getloadavg()},
        "cores": os.cpu_count(),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench corrections", description=__doc__)
    server_arguments(parser)
    parser.add_argument("--source", default="en")
    parser.add_argument("--target", default="es")
    parser.add_argument("--corrections", type=int, default=20)
    parser.add_argument("--listeners", type=int, default=0, help="source-language listeners")
    parser.add_argument("--seconds", type=float, help="replay only the first SECONDS")
    parser.add_argument("--speed", type=float, default=1.0)
    parser.add_argument(
        "--after",
        action="store_true",
        help="correct each translated line after the talk (the pipeline idle), not during it",
    )
    parser.add_argument(
        "--settle", type=float, default=20.0, help="seconds to keep correcting after the end"
    )
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    result = asyncio.run(run_round(args))
    result["command"] = shlex.join(["python", "-m", "bench", "corrections", *(argv or [])])
    result["when"] = "after the talk" if args.after else "during the talk"
    name = (
        f"corrections-{args.source}-{args.target}"
        + (f"-{args.listeners}" if args.listeners else "")
        + ("-after" if args.after else "")
    )
    (args.out / f"{name}.json").write_text(json.dumps(result, indent=1))
    print(json.dumps({k: v for k, v in result.items() if k != "latency_s"}, indent=1))
    print("latency s:", json.dumps(result["latency_s"]))
    return 0
