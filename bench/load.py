"""The load benchmark: presenters in real time with a large audience, some of it stalled.

``--pairs`` pairs of rounds (default 3), each round against a fresh server, alternating:

1. **quiet**: ``--presenters`` presenters (default 2) replay real recordings in real time, each
   into its own session, all at once, with nobody listening;
2. **loaded**: the same replays with ``--listeners`` listeners (default 1000) spread evenly
   over the sessions (fan-out's listener processes), ``--stalled`` of them (default 10)
   connecting and then reading nothing until the replays are over.

It reports the presenters' caption latency in both kinds of round (the captions bench's
per-word draft and final latency, pooled over the rounds of a kind) and their ratio, the
delay of every event at the healthy listeners, whether every healthy listener holds every
final of its session, and what became of the stalled listeners. One pair cannot settle a 10%
effect (draft p50 is near 0.15 s and moves with the phase of the 100 ms audio messages
against the decode steps: one pair gave 1.77x, the next 1.02x); pooling alternating rounds
averages that out and spreads any drift of the machine over both kinds. Goals (issue 8):
latency within 10% of the quiet rounds, p99 delay at most 150 ms in every loaded round, no
final lost. Definitions: docs/metrics.md, "Load".
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from bench.alignment import TimedWord
from bench.capacity import presenter_recordings
from bench.clients import (
    ClientPool,
    Expect,
    Finish,
    Joined,
    Results,
    Settled,
    default_client_processes,
    split_listeners,
)
from bench.deliveries import ListenerRecord, presenter_finals
from bench.listener import ClientSpec
from bench.load_report import write_report
from bench.load_sockets import buffers_json, socket_snapshot
from bench.paths import RESULTS
from bench.recordings import EVAL_LONGFORM_EN, Recording, default_wavs, load_recording, resolve_wavs
from bench.reference import DecodeSettings, cached_decode, timed_reference
from bench.replay import Replay, create_session, present, trimmed
from bench.resources import (
    CpuUse,
    RssSampler,
    cpu_snapshot,
    cpu_use,
    raise_fd_limit,
)
from bench.server import ServerHandle, server_arguments, server_under_test

DEFAULT_OUT = RESULTS
DEFAULT_PRESENTERS = 2
DEFAULT_LISTENERS = 1000
DEFAULT_STALLED = 10
DEFAULT_PAIRS = 3
DEFAULT_CLIENT_NICE = 10
"""The listener processes run at this nice value: on one machine they would otherwise take
CPU from the server under test at the moments it fans out (measured in docs/metrics.md,
"Load")."""


@dataclass(frozen=True, slots=True)
class Goals:
    """Issue 8's targets for the loaded round."""

    latency_ratio_max: float = 1.10
    """Each of draft/final latency p50/p95 at most this times the quiet round's."""
    delay_p99_s: float = 0.150
    """p99 delay of events at the healthy listeners."""


@dataclass(frozen=True, slots=True)
class LoadSettings:
    """What ``python -m bench load`` was asked to do."""

    wavs: tuple[Path, ...]
    out: Path
    presenters: int = DEFAULT_PRESENTERS
    listeners: int = DEFAULT_LISTENERS
    stalled: int = DEFAULT_STALLED
    pairs: int = DEFAULT_PAIRS
    seconds: float | None = None
    client_processes: int | None = None
    client_nice: int = DEFAULT_CLIENT_NICE
    url: str | None = None
    server_pid: int | None = None
    ready_timeout: float = 120.0
    settle_timeout: float = 180.0
    drain_timeout: float = 30.0
    cache_dir: Path = DEFAULT_OUT / "cache"
    decode: DecodeSettings = field(default_factory=DecodeSettings)
    goals: Goals = field(default_factory=Goals)


# --- who listens where ---------------------------------------------------------------------


def spread(total: int, parts: int) -> list[int]:
    """``total`` dealt into ``parts`` counts that differ by at most one (first ones larger)."""
    return [total // parts + (k < total % parts) for k in range(parts)]


def stalled_indices(indices: Sequence[int], count: int) -> frozenset[int]:
    """``count`` of ``indices`` evenly spaced (the first one included)."""
    if count <= 0 or not indices:
        return frozenset()
    count = min(count, len(indices))
    return frozenset(indices[(k * len(indices)) // count] for k in range(count))


@dataclass(frozen=True, slots=True)
class Audience:
    """The listener processes: ``specs[k]`` follows session ``sessions[k]``."""

    specs: tuple[ClientSpec, ...]
    sessions: tuple[int, ...]


def plan_audience(
    base_url: str,
    codes: Sequence[str],
    listeners: int,
    stalled: int,
    processes: int,
    nice: int = 0,
) -> Audience:
    """Listeners ``0..listeners-1`` in consecutive blocks, one per session (as even as
    possible), ``stalled`` of them spread the same way and evenly inside each block; each
    session's block is dealt round-robin to its share of the client processes."""
    per_session = spread(listeners, len(codes))
    stalled_per_session = spread(stalled, len(codes))
    procs_per_session = spread(max(processes, len(codes)), len(codes))
    specs: list[ClientSpec] = []
    sessions: list[int] = []
    first = 0
    for s, code in enumerate(codes):
        block = list(range(first, first + per_session[s]))
        first += per_session[s]
        if not block:
            continue
        stuck = stalled_indices(block, stalled_per_session[s])
        for local in split_listeners(len(block), procs_per_session[s]):
            indices = tuple(block[i] for i in local)
            specs.append(
                ClientSpec(base_url, code, indices, stalled=stuck.intersection(indices), nice=nice)
            )
            sessions.append(s)
    return Audience(tuple(specs), tuple(sessions))


# --- one round -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LoadRound:
    """One round: the presenters' replays, and the audience if there was one."""

    name: str
    """``quiet`` or ``loaded``."""
    pair: int
    replays: tuple[Replay, ...]
    records: tuple[ListenerRecord, ...]
    record_sessions: tuple[int, ...]
    """Session (presenter) index of each record."""
    window: tuple[float, float]
    """Wall-clock span: just before the first ``start`` to the last ``ended``."""
    join_s: float | None
    settled: bool | None
    buffers: dict[str, Any] | None
    """Kernel socket buffers when the replays ended (:func:`buffers_json`), with listeners."""
    cpu: CpuUse
    rss_start_bytes: int | None
    rss_peak_bytes: int | None
    load_average_before: tuple[float, float, float]
    load_average_after: tuple[float, float, float]


async def _join(pool: ClientPool, audience: Audience, limit_s: float) -> bool:
    """Wait until every listener connected and (unless stalled) saw its session's audience
    count reach the number that connected to that session."""
    joined = await pool.gather(Joined, limit_s)
    connected: Counter[int] = Counter()
    for session, report in zip(audience.sessions, joined, strict=True):
        connected[session] += report.connected
    pool.send_each([Expect(connected[s], limit_s) for s in audience.sessions])
    settled = await pool.gather(Settled, limit_s + 30)
    return all(s.complete for s in settled)


async def run_round(
    name: str,
    pair: int,
    recordings: Sequence[Recording],
    settings: LoadSettings,
    server: ServerHandle,
    listeners: int,
) -> LoadRound:
    """Create one session per presenter, join the audience (if any), replay all at once."""
    sessions = [
        await create_session(server.base_url, f"bench load {name} {k}")
        for k in range(len(recordings))
    ]
    codes = [str(s["code"]) for s in sessions]
    audience = None
    pool = None
    if listeners > 0:
        processes = settings.client_processes or default_client_processes(listeners)
        audience = plan_audience(
            server.base_url, codes, listeners, settings.stalled, processes, settings.client_nice
        )
    load_before = os.getloadavg()
    async with RssSampler(server.pid) as rss:
        try:
            join_s = settled = None
            began = time.monotonic()
            if audience is not None:
                pool = ClientPool(audience.specs)
                settled = await _join(pool, audience, settings.settle_timeout)
                join_s = time.monotonic() - began
            before = cpu_snapshot(server.pid, pool.pids if pool else [])
            window_start = time.time()
            replays = await asyncio.gather(
                *(present(server.base_url, s, r) for s, r in zip(sessions, recordings, strict=True))
            )
            window_end = time.time()
            cpu = cpu_use(before, cpu_snapshot(server.pid, pool.pids if pool else []))
            buffers = None
            if pool is not None:
                port = urlsplit(server.base_url).port or 80
                rows = await asyncio.to_thread(socket_snapshot, port)
                buffers = buffers_json(rows, port, time.monotonic() - began)
            records: list[ListenerRecord] = []
            record_sessions: list[int] = []
            if pool is not None and audience is not None:
                finals = [frozenset(presenter_finals(r)) for r in replays]
                pool.send_each(
                    [Finish(finals[s], settings.drain_timeout) for s in audience.sessions]
                )
                results = await pool.gather(Results, settings.drain_timeout + 120)
                for session, result in zip(audience.sessions, results, strict=True):
                    records += result.records
                    record_sessions += [session] * len(result.records)
        except BaseException:
            if pool is not None:
                await pool.close(grace=0.0)
            raise
        if pool is not None:
            await pool.close()
    order = sorted(range(len(records)), key=lambda k: records[k].index)
    return LoadRound(
        name=name,
        pair=pair,
        replays=tuple(replays),
        records=tuple(records[k] for k in order),
        record_sessions=tuple(record_sessions[k] for k in order),
        window=(window_start, window_end),
        join_s=join_s,
        settled=settled,
        buffers=buffers,
        cpu=cpu,
        rss_start_bytes=rss.start_bytes,
        rss_peak_bytes=rss.peak_bytes,
        load_average_before=load_before,
        load_average_after=os.getloadavg(),
    )


def reference_words(recording: Recording, settings: LoadSettings) -> tuple[TimedWord, ...]:
    """The timed human reference of the whole recording (offline decode, cached), cut to the
    words that end within the replayed part."""
    offline = cached_decode(recording, settings.decode, settings.cache_dir)
    words = timed_reference(recording, offline)
    if settings.seconds is None:
        return words
    return tuple(w for w in words if w.end <= settings.seconds)


@dataclass(frozen=True, slots=True)
class LoadRun:
    """Both rounds and the inputs of their latency metrics."""

    recordings: tuple[Recording, ...]
    references: tuple[tuple[TimedWord, ...], ...]
    rounds: tuple[LoadRound, ...]


async def run_load(settings: LoadSettings) -> LoadRun:
    """References first (no server running), then each pair's quiet and loaded round, each
    on a fresh server (unless ``settings.url``)."""
    full = [load_recording(w) for w in settings.wavs]
    chosen = presenter_recordings(full, settings.presenters)
    references = tuple(reference_words(r, settings) for r in chosen)
    recordings = tuple(trimmed(r, settings.seconds) for r in chosen)
    raise_fd_limit(settings.listeners + 256)
    rounds = []
    for pair in range(1, settings.pairs + 1):
        for name, listeners in (("quiet", 0), ("loaded", settings.listeners)):
            log = settings.out / f"server-load-{name}.log"
            async with server_under_test(
                settings.url, settings.server_pid, log, settings.ready_timeout
            ) as server:
                rounds.append(await run_round(name, pair, recordings, settings, server, listeners))
    return LoadRun(recordings, references, tuple(rounds))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bench load", description=__doc__)
    parser.add_argument("--presenters", type=int, default=DEFAULT_PRESENTERS)
    parser.add_argument("--listeners", type=int, default=DEFAULT_LISTENERS)
    parser.add_argument("--stalled", type=int, default=DEFAULT_STALLED)
    parser.add_argument(
        "--pairs", type=int, default=DEFAULT_PAIRS, help="quiet + loaded rounds, alternating"
    )
    parser.add_argument(
        "--files",
        nargs="+",
        metavar="FILE",
        help="recordings, presenter k the k-th (cycling); default: the captions bench's",
    )
    parser.add_argument(
        "--seconds", type=float, help="replay only the first SECONDS of each recording"
    )
    parser.add_argument(
        "--client-processes",
        type=int,
        help="listener processes (default: as the fan-out bench, one per 250, at most 4)",
    )
    parser.add_argument(
        "--client-nice",
        type=int,
        default=DEFAULT_CLIENT_NICE,
        help="nice value of the listener processes (default %(default)s; 0: equal to the server)",
    )
    server_arguments(
        parser, "a running server (default: a fresh one per round)", "with --url: its process id"
    )
    parser.add_argument("--eval-dir", type=Path, default=EVAL_LONGFORM_EN)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument(
        "--cache-dir",
        type=Path,
        default=DEFAULT_OUT / "cache",
        help="offline decodes for the reference word times (default: %(default)s)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m bench load [options]``: run both rounds, write the report, print it."""
    words = list(sys.argv[2:] if argv is None else argv)
    args = build_parser().parse_args(words)
    wavs = resolve_wavs(args.files, args.eval_dir) if args.files else default_wavs(args.eval_dir)
    if not wavs:
        print(f"no recordings found in {args.eval_dir}", file=sys.stderr)
        return 2
    settings = LoadSettings(
        wavs=tuple(wavs),
        out=args.out,
        presenters=args.presenters,
        listeners=args.listeners,
        stalled=args.stalled,
        pairs=max(1, args.pairs),
        seconds=args.seconds,
        client_processes=args.client_processes,
        client_nice=args.client_nice,
        url=args.url,
        server_pid=args.server_pid,
        ready_timeout=args.ready_timeout,
        cache_dir=args.cache_dir,
    )
    run = asyncio.run(run_load(settings))
    paths, markdown = write_report(run, settings, " ".join(["python -m bench load", *words]))
    print(markdown)
    print("wrote " + ", ".join(str(p) for p in paths))
    return 0


if __name__ == "__main__":
    sys.exit(main())
