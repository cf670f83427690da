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
import re
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import numpy as np

from bench.alignment import TimedWord
from bench.capacity import measure_presenter, presenter_recordings
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
from bench.deliveries import (
    ListenerRecord,
    check_finals,
    delay_stats,
    presenter_finals,
    window_deliveries,
)
from bench.format import fixed, machine_line, mib, ms, slashed, utc_now, verdict, write_report_files
from bench.listener import ClientSpec
from bench.metrics import WordLatencies, distribution, word_latencies
from bench.paths import RESULTS
from bench.recordings import EVAL_LONGFORM_EN, Recording, default_wavs, load_recording, resolve_wavs
from bench.reference import DecodeSettings, cached_decode, timed_reference
from bench.replay import Replay, create_session, present, trimmed
from bench.resources import (
    CpuUse,
    RssSampler,
    cpu_snapshot,
    cpu_use,
    machine_info,
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


# --- socket buffers ------------------------------------------------------------------------

_SS_ROW = re.compile(r"^(?:[A-Z][A-Z-]*\s+)?(\d+)\s+(\d+)\s+\S+:(\d+)\s+\S+:(\d+)")
_SS_MEM = re.compile(r"skmem:\(r\d+,rb(\d+),t\d+,tb(\d+)")
_SS_RECEIVED = re.compile(r"\bbytes_received:(\d+)")


@dataclass(frozen=True, slots=True)
class SocketRow:
    """One TCP socket as ``ss -tnm`` shows it."""

    local_port: int
    peer_port: int
    recv_q: int
    """Bytes received by the kernel, not yet read by the process."""
    send_q: int
    """Bytes written by the process, not yet acknowledged by the peer."""
    rcvbuf: int
    sndbuf: int
    bytes_received: int = 0
    """Bytes the kernel received on this socket so far (read or not)."""


def parse_ss(text: str) -> list[SocketRow]:
    """The established sockets of ``ss -tnmi`` output (a row, then its ``skmem`` and
    ``tcp_info`` line)."""
    rows: list[SocketRow] = []
    pending: tuple[int, int, int, int] | None = None
    for line in text.splitlines():
        if (row := _SS_ROW.match(line)) is not None:
            recv_q, send_q, local, peer = (int(g) for g in row.groups())
            pending = (local, peer, recv_q, send_q)
        elif pending is not None and (mem := _SS_MEM.search(line)) is not None:
            received = _SS_RECEIVED.search(line)
            rows.append(
                SocketRow(
                    *pending,
                    rcvbuf=int(mem[1]),
                    sndbuf=int(mem[2]),
                    bytes_received=int(received[1]) if received else 0,
                )
            )
            pending = None
    return rows


def socket_snapshot(port: int) -> list[SocketRow] | None:
    """Every established loopback TCP socket to or from ``port`` (``None`` without ``ss``)."""
    try:
        done = subprocess.run(
            ["ss", "-tnmi", "state", "established", f"( sport = :{port} or dport = :{port} )"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return parse_ss(done.stdout)


def buffers_json(rows: Sequence[SocketRow] | None, port: int, connected_s: float) -> dict[str, Any]:
    """What the kernel held for the listeners when the replays ended: server-side sockets
    with data their listener had not acknowledged (the stalled ones: a healthy listener's
    queue is empty by then), listener-side sockets with data not read, and how fast bytes
    reach a listener (the most any listener socket received over ``connected_s``, the time
    since the listeners began connecting)."""
    if rows is None:
        return {"available": False}
    server = [r for r in rows if r.local_port == port]
    clients = [r for r in rows if r.peer_port == port]
    unsent = sorted((r.send_q for r in server if r.send_q > 0), reverse=True)
    unread = sorted((r.recv_q for r in clients if r.recv_q > 0), reverse=True)
    received = max((r.bytes_received for r in clients), default=0)
    sndbuf = max((r.sndbuf for r in server), default=0)
    rcvbuf = max((r.rcvbuf for r in clients), default=0)
    rate = received / connected_s if connected_s > 0 else 0.0
    return {
        "available": True,
        "server_sockets": len(server),
        "server_sockets_with_unsent_bytes": len(unsent),
        "unsent_bytes_max": max(unsent, default=0),
        "unsent_bytes_total": sum(unsent),
        "server_sndbuf_bytes_max": sndbuf,
        "listener_sockets_with_unread_bytes": len(unread),
        "unread_bytes_max": max(unread, default=0),
        "listener_rcvbuf_bytes_max": rcvbuf,
        "listener_bytes_received_max": received,
        "listener_bytes_per_second": rate,
        "seconds_until_buffers_full_estimate": (sndbuf + rcvbuf) / rate if rate > 0 else None,
    }


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


# --- metrics -------------------------------------------------------------------------------


def presenter_latencies(reference: Sequence[TimedWord], recorded: Replay) -> WordLatencies:
    """The captions bench's per-word draft and final latency of one replay."""
    return word_latencies(reference, recorded.caption_updates(), recorded.schedule)


def audience_counts(recorded: Replay, start: float, end: float) -> dict[str, int | None]:
    """The ``listeners`` of the ``state`` events the presenter received: the last one
    stamped before ``start``, the smallest and largest stamped within ``[start, end]``,
    and the last one of all."""
    states = [
        (float(m["ts"]), int(m["listeners"]))
        for r in recorded.received
        if (m := r.message).get("type") == "state" and "listeners" in m and "ts" in m
    ]
    during = [n for ts, n in states if start <= ts <= end]
    before = [n for ts, n in states if ts < start]
    return {
        "before": before[-1] if before else None,
        "min_during": min(during, default=None),
        "max_during": max(during, default=None),
        "last": states[-1][1] if states else None,
    }


def _dist(values: Sequence[float | None]) -> dict[str, Any]:
    return asdict(distribution(values))


def round_latencies(
    run: LoadRound, references: Sequence[Sequence[TimedWord]]
) -> list[WordLatencies]:
    """Each presenter's per-word latencies in one round."""
    return [presenter_latencies(ref, rep) for ref, rep in zip(references, run.replays, strict=True)]


def round_json(
    run: LoadRound,
    recordings: Sequence[Recording],
    references: Sequence[Sequence[TimedWord]],
    latencies: Sequence[WordLatencies],
) -> dict[str, Any]:
    """One round (``latencies``: its :func:`round_latencies`): presenter latency and lag;
    for the loaded round the audience too."""
    presenters: list[dict[str, Any]] = []
    for recording, ref, rep, lat in zip(
        recordings, references, run.replays, latencies, strict=True
    ):
        lag = measure_presenter(recording, rep)
        presenters.append(
            {
                "recording": rep.recording,
                "session": rep.session_code,
                "audio_s": rep.schedule.audio_seconds,
                "reference_words": len(ref),
                "draft_latency_s": _dist(lat.shown),
                "final_latency_s": _dist(lat.final),
                "words_never_shown": lat.never_shown,
                "words_never_final": lat.never_final,
                "lag_s": asdict(lag.lag),
                "end_lag_s": lag.end_lag_s,
                "finals": len(presenter_finals(rep)),
            }
        )
    start, end = run.window
    cpu = run.cpu
    report: dict[str, Any] = {
        "round": run.name,
        "pair": run.pair,
        "listeners": len(run.records),
        "draft_latency_s": _dist([v for lat in latencies for v in lat.shown]),
        "final_latency_s": _dist([v for lat in latencies for v in lat.final]),
        "lag_max_s": max((p["lag_s"]["max"] or 0.0 for p in presenters), default=None),
        "per_presenter": presenters,
        "server": {
            "cpu_cores": cpu.server,
            "rss_start_mib": mib(run.rss_start_bytes),
            "rss_peak_mib": mib(run.rss_peak_bytes),
        },
        "clients_cpu_cores": cpu.clients_total,
        "bench_cpu_cores": cpu.bench,
        "machine": {
            "busy_cores": cpu.machine,
            "other_cores": cpu.other,
            "load_average_before": [round(x, 2) for x in run.load_average_before],
            "load_average_after": [round(x, 2) for x in run.load_average_after],
        },
        "wall_s": end - start,
        "join_s": run.join_s,
        "settled": run.settled,
    }
    if run.records:
        report["audience"] = audience_json(run)
    return report


def audience_json(run: LoadRound) -> dict[str, Any]:
    """Healthy listeners: delays and finals; stalled listeners: what became of them."""
    start, end = run.window
    expected = [presenter_finals(r) for r in run.replays]
    healthy = [
        (r, s) for r, s in zip(run.records, run.record_sessions, strict=True) if not r.stalled
    ]
    stalled = [(r, s) for r, s in zip(run.records, run.record_sessions, strict=True) if r.stalled]
    checks = [check_finals(expected[s], r.finals) for r, s in healthy]
    in_window = [window_deliveries(r, start, end) for r, _ in healthy]
    delays = [d.delay for ds in in_window for d in ds]
    kinds = sorted({d.kind for ds in in_window for d in ds})
    stats = delay_stats(delays)
    stalled_rows = []
    for record, session in stalled:
        check = check_finals(expected[session], record.finals)
        stalled_rows.append(
            {
                "index": record.index,
                "session": session,
                "closes": list(record.closes),
                "reconnects": record.reconnects,
                "messages": len(record.deliveries),
                "finals_missing_at_end": check.missing,
                "error": record.error,
            }
        )
    close_codes = Counter(c.split(" ", 1)[0] for r, _ in stalled for c in r.closes[:1])
    return {
        "socket_buffers_at_end": run.buffers,
        "healthy": len(healthy),
        "stalled": len(stalled),
        "connect_failures": [f"{r.index}: {r.error}" for r, _ in healthy if r.error][:10],
        "delay_s": asdict(stats),
        "delay_by_kind_s": {
            kind: asdict(delay_stats([d.delay for ds in in_window for d in ds if d.kind == kind]))
            for kind in kinds
        },
        "events_per_listener": _dist([len(ds) for ds in in_window]),
        "finals": {
            "presenters": [len(e) for e in expected],
            "healthy_exact": sum(c.exact for c in checks),
            "missing_total": sum(c.missing for c in checks),
            "differing_total": sum(c.differing for c in checks),
            "extra_total": sum(c.extra for c in checks),
        },
        "healthy_reconnects": sum(r.reconnects for r, _ in healthy),
        "healthy_closes": dict(Counter(c for r, _ in healthy for c in r.closes).most_common(10)),
        "stalled_outcome": {
            "closed_by_server": sum(bool(r.closes) for r, _ in stalled),
            "first_close_codes": dict(close_codes),
            "still_open_at_end": sum(not r.closes and r.error is None for r, _ in stalled),
            "reconnects": sum(r.reconnects for r, _ in stalled),
            "with_every_final_at_end": sum(
                row["finals_missing_at_end"] == 0 for row in stalled_rows
            ),
            "per_listener": stalled_rows,
        },
        "server_audience_count": [audience_counts(rep, start, end) for rep in run.replays],
    }


LATENCY_KEYS = (
    ("draft_latency_s", "p50"),
    ("draft_latency_s", "p95"),
    ("final_latency_s", "p50"),
    ("final_latency_s", "p95"),
)


def pooled_latencies(rounds: Sequence[Sequence[WordLatencies]]) -> dict[str, Any]:
    """Draft and final latency over every word of every presenter of ``rounds`` (each
    round's :func:`round_latencies`)."""
    words = [lat for latencies in rounds for lat in latencies]
    return {
        "rounds": len(rounds),
        "draft_latency_s": _dist([v for lat in words for v in lat.shown]),
        "final_latency_s": _dist([v for lat in words for v in lat.final]),
    }


BOOTSTRAP_SAMPLES = 2000
BOOTSTRAP_SEED = 0


def pair_intervals(
    pairs: Sequence[tuple[Sequence[WordLatencies], Sequence[WordLatencies]]],
    samples: int = BOOTSTRAP_SAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> dict[str, Any] | None:
    """How far the pooled loaded / quiet ratios move with which rounds happened to be run.

    ``pairs``: each pair's (quiet, loaded) :func:`round_latencies`. The pairs are resampled
    with replacement ``samples`` times (a fixed seed, so a report is reproducible); each
    sample pools its rounds' words as the report does and takes the four ratios of
    :data:`LATENCY_KEYS` and their worst. Returns the central 95% of each; None for fewer
    than two pairs. The rounds are where the noise lives: each fresh server's real-time
    steps fall differently, and the segmentation with them.
    """
    if len(pairs) < 2:
        return None

    def values(latencies: Sequence[WordLatencies], kind: str) -> np.ndarray:
        return np.array(
            [v for lat in latencies for v in getattr(lat, kind) if v is not None], dtype=float
        )

    kinds = {"draft_latency_s": "shown", "final_latency_s": "final"}
    per_pair = [
        {m: (values(quiet, k), values(loaded, k)) for m, k in kinds.items()}
        for quiet, loaded in pairs
    ]
    rng = np.random.default_rng(seed)
    columns = {key: col for col, key in enumerate(LATENCY_KEYS)}
    ratios = np.full((samples, len(LATENCY_KEYS)), np.nan)
    for i in range(samples):
        chosen = [per_pair[j] for j in rng.integers(0, len(pairs), len(pairs))]
        for metric in kinds:
            quiet = np.concatenate([c[metric][0] for c in chosen])
            loaded = np.concatenate([c[metric][1] for c in chosen])
            if not (quiet.size and loaded.size):
                continue
            base, value = np.percentile(quiet, [50, 95]), np.percentile(loaded, [50, 95])
            for stat, b, v in zip(("p50", "p95"), base, value, strict=True):
                if b > 0:
                    ratios[i, columns[(metric, stat)]] = v / b
    worst = np.nanmax(ratios, axis=1)

    def central(column: np.ndarray) -> list[float] | None:
        kept = column[~np.isnan(column)]
        return None if kept.size == 0 else [float(x) for x in np.percentile(kept, [2.5, 97.5])]

    return {
        "samples": samples,
        "seed": seed,
        "ratios": {
            metric_name(metric, stat): central(ratios[:, col])
            for col, (metric, stat) in enumerate(LATENCY_KEYS)
        },
        "worst": central(worst),
    }


def worst_ratio(rows: Sequence[dict[str, Any]]) -> float | None:
    return max((r["ratio"] for r in rows if r["ratio"] is not None), default=None)


def metric_name(metric: str, stat: str) -> str:
    """``("draft_latency_s", "p50")`` -> ``"draft latency p50"``."""
    return f"{metric.removesuffix('_s').replace('_', ' ')} {stat}"


def comparison(quiet: dict[str, Any], loaded: dict[str, Any]) -> list[dict[str, Any]]:
    """Loaded / quiet for each latency statistic."""
    rows = []
    for metric, stat in LATENCY_KEYS:
        a, b = quiet[metric][stat], loaded[metric][stat]
        rows.append(
            {
                "metric": metric_name(metric, stat),
                "quiet_s": a,
                "loaded_s": b,
                "ratio": None if a is None or b is None or a <= 0 else b / a,
            }
        )
    return rows


def report_json(run: LoadRun, settings: LoadSettings, command: str) -> dict[str, Any]:
    """The whole report as JSON-ready data."""
    goals = settings.goals
    latencies = [round_latencies(r, run.references) for r in run.rounds]
    rounds = [
        round_json(r, run.recordings, run.references, lat)
        for r, lat in zip(run.rounds, latencies, strict=True)
    ]
    pooled = {
        kind: pooled_latencies(
            [lat for r, lat in zip(run.rounds, latencies, strict=True) if r.name == kind]
        )
        for kind in ("quiet", "loaded")
    }
    rows = comparison(pooled["quiet"], pooled["loaded"])
    by_pair = {(r.pair, r.name): lat for r, lat in zip(run.rounds, latencies, strict=True)}
    pairs = sorted({pair for pair, _ in by_pair})
    intervals = pair_intervals([(by_pair[(p, "quiet")], by_pair[(p, "loaded")]) for p in pairs])
    ratios = [r["ratio"] for r in rows]
    latency_ok = all(r is not None and r <= goals.latency_ratio_max for r in ratios)
    per_pair = []
    for pair in pairs:
        quiet, loaded = (
            next(r for r in rounds if r["pair"] == pair and r["round"] == kind)
            for kind in ("quiet", "loaded")
        )
        pair_rows = comparison(quiet, loaded)
        per_pair.append({"pair": pair, "rows": pair_rows, "worst_ratio": worst_ratio(pair_rows)})
    audiences = [r["audience"] for r in rounds if r.get("audience")]
    p99s = [a["delay_s"]["p99"] for a in audiences]
    p99 = None if not p99s or None in p99s else max(p99s)
    delay_ok = p99 is not None and p99 <= goals.delay_p99_s
    healthy = sum(a["healthy"] for a in audiences)
    exact = sum(a["finals"]["healthy_exact"] for a in audiences)
    finals_ok = bool(audiences) and exact == healthy
    worst = worst_ratio(rows)
    return {
        "benchmark": "load",
        "command": command,
        "created_utc": utc_now(),
        "machine": machine_info(),
        "server": {
            "url": settings.url,
            "started_by_bench": settings.url is None,
            "fresh_per_round": settings.url is None,
        },
        "recordings": [r.id for r in run.recordings],
        "trimmed_to_s": settings.seconds,
        "presenters": settings.presenters,
        "listeners": settings.listeners,
        "stalled": settings.stalled,
        "client_nice": settings.client_nice,
        "pairs": settings.pairs,
        "limits": asdict(goals),
        "goals": {
            "presenter latency, loaded / quiet rounds pooled (worst of draft and final p50 "
            "and p95)": {
                "value": "–" if worst is None else f"{worst:.2f}",
                "goal": f"<= {goals.latency_ratio_max:g}",
                "met": latency_ok,
            },
            "p99 delay to healthy listeners (worst loaded round), ms": {
                "value": "–" if p99 is None else f"{1000 * p99:.0f}",
                "goal": f"<= {1000 * goals.delay_p99_s:.0f}",
                "met": delay_ok,
            },
            "healthy listeners with every final of their session (all loaded rounds)": {
                "value": f"{exact} / {healthy}" if audiences else "–",
                "goal": "all",
                "met": finals_ok,
            },
        },
        "goal_met": latency_ok and delay_ok and finals_ok,
        "latency_comparison": rows,
        "latency_intervals": intervals,
        "pooled": pooled,
        "latency_by_pair": per_pair,
        "rounds": rounds,
    }


def _span(span: Sequence[float] | None) -> str:
    return "–" if span is None else f"{span[0]:.2f}-{span[1]:.2f}"


def report_markdown(report: dict[str, Any]) -> str:
    """The report's tables in Markdown."""
    machine, limits = report["machine"], report["limits"]
    rounds = report["rounds"]
    lines = [
        "# Load benchmark: real-time presenters, a large audience, some of it stalled",
        "",
        f"- Command: `{report['command']}`",
        f"- Machine: {machine_line(machine)}; server, listeners and presenters all on this "
        "machine (loopback); the listener processes at nice "
        f"{report['client_nice']}, so that they take only CPU the server leaves",
        f"- Date (UTC): {report['created_utc']}",
        f"- {report['presenters']} presenters in real time, each its own session: "
        + ", ".join(f"`{r}`" for r in report["recordings"])
        + (f" (first {report['trimmed_to_s']} s)" if report["trimmed_to_s"] else "")
        + f"; loaded round: {report['listeners']} listeners spread over the sessions, "
        f"{report['stalled']} of them stalled (connect, then read nothing until the end); "
        f"{report['pairs']} pairs of rounds, quiet then loaded, each on a fresh server",
        "- Load average (1 / 5 / 15 min) before the first round: "
        + slashed(rounds[0]["machine"]["load_average_before"])
        + "; after the last: "
        + slashed(rounds[-1]["machine"]["load_average_after"]),
        "",
        "| goal | measured | target | met |",
        "|---|---|---|---|",
    ]
    for name, goal in report["goals"].items():
        lines.append(f"| {name} | {goal['value']} | {goal['goal']} | {verdict(goal['met'])} |")
    lines += [
        "",
        "## Presenter caption latency (all words of all presenters, rounds of a kind pooled)",
        "",
        "| metric | quiet s | loaded s | loaded / quiet |",
        "|---|---|---|---|",
    ]
    intervals = report["latency_intervals"]
    for row in report["latency_comparison"]:
        lines.append(
            f"| {row['metric']} | {fixed(row['quiet_s'])} | {fixed(row['loaded_s'])} "
            f"| {fixed(row['ratio'])} |"
        )
    if intervals is not None:
        lines += [
            "",
            f"With the pairs resampled ({intervals['samples']} times, seed {intervals['seed']}),"
            " the central 95% of each ratio (how much it owes to which rounds were run):",
            "",
            "| metric | 95% interval |",
            "|---|---|",
        ]
        for name, span in [*intervals["ratios"].items(), ("worst of the four", intervals["worst"])]:
            lines.append(f"| {name} | {_span(span)} |")
    lines += [
        "",
        "Pair by pair, loaded / quiet (how much one pair alone moves):",
        "",
        "| pair | draft p50 | draft p95 | final p50 | final p95 | worst |",
        "|---|---|---|---|---|---|",
    ]
    for pair in report["latency_by_pair"]:
        cells = " | ".join(fixed(r["ratio"]) for r in pair["rows"])
        lines.append(f"| {pair['pair']} | {cells} | {fixed(pair['worst_ratio'])} |")
    lines += [
        "",
        "| round | pair | listeners | lag max s | server CPU cores | server RSS start / peak MiB "
        "| listener processes CPU cores | other load cores | wall s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rounds:
        lines.append(
            f"| {r['round']} | {r['pair']} | {r['listeners']} | {fixed(r['lag_max_s'])} "
            f"| {fixed(r['server']['cpu_cores'])} | {fixed(r['server']['rss_start_mib'], 0)} / "
            f"{fixed(r['server']['rss_peak_mib'], 0)} | {fixed(r['clients_cpu_cores'])} "
            f"| {fixed(r['machine']['other_cores'])} | {fixed(r['wall_s'], 1)} |"
        )
    lines += [
        "",
        "| round | pair | recording | draft p50 / p95 s | final p50 / p95 s | lag p95 / max s "
        "| finals |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rounds:
        for p in r["per_presenter"]:
            d, f, g = p["draft_latency_s"], p["final_latency_s"], p["lag_s"]
            lines.append(
                f"| {r['round']} | {r['pair']} | {p['recording']} "
                f"| {fixed(d['p50'])} / {fixed(d['p95'])} "
                f"| {fixed(f['p50'])} / {fixed(f['p95'])} | {fixed(g['p95'])} / {fixed(g['max'])} "
                f"| {p['finals']} |"
            )
    for r in rounds:
        audience = r.get("audience")
        if not audience:
            continue
        d, fin, st = audience["delay_s"], audience["finals"], audience["stalled_outcome"]
        closes = ", ".join(f"{code}: {n}" for code, n in st["first_close_codes"].items()) or "none"
        reasons = sorted({c for row in st["per_listener"] for c in row["closes"]})
        lines += [
            "",
            f"## Audience (loaded round, pair {r['pair']})",
            "",
            f"- Healthy listeners: {audience['healthy']}; event delay p50 / p95 / p99 / max "
            f"{ms(d['p50'])} / {ms(d['p95'])} / {ms(d['p99'])} / {ms(d['max'])} ms "
            f"over {d['count']} deliveries (goal p99 <= {1000 * limits['delay_p99_s']:.0f} ms)",
            f"- Finals: {fin['healthy_exact']} / {audience['healthy']} healthy listeners hold "
            f"every final of their session (presenters' finals: {fin['presenters']}; missing "
            f"{fin['missing_total']}, differing {fin['differing_total']}, extra "
            f"{fin['extra_total']}); healthy reconnects {audience['healthy_reconnects']}",
            f"- Stalled listeners: {audience['stalled']}; closed by the server: "
            f"{st['closed_by_server']} (first close codes: {closes}"
            + (f"; reasons: {'; '.join(reasons)}" if reasons else "")
            + f"); still open at the end: {st['still_open_at_end']}; after reading again "
            f"(and reconnecting, {st['reconnects']}), {st['with_every_final_at_end']} held "
            "every final",
            buffers_line(audience["socket_buffers_at_end"]),
            "- Audience count the server announced to each presenter (before the replay; "
            "min / max during it; last): "
            + "; ".join(
                f"{c['before']}; {c['min_during']} / {c['max_during']}; {c['last']}"
                for c in audience["server_audience_count"]
            ),
        ]
    lines += [
        "",
        "Latency per reference word as in the captions bench (docs/metrics.md); lag as in the "
        "capacity bench; delay = receipt at the listener − the event's `ts`, over every live "
        "event stamped during the replays at every healthy listener. CPU in cores over the "
        "replays; other load = busy CPU of the machine not used by the server, the listener "
        "processes or the bench.",
        "",
    ]
    return "\n".join(lines)


def buffers_line(buffers: dict[str, Any] | None) -> str:
    """The kernel socket buffers at the end of the replays, in words."""
    if not buffers or not buffers.get("available"):
        return "- Socket buffers: not measured (no `ss`)"
    fill = buffers["seconds_until_buffers_full_estimate"]
    return (
        "- Socket buffers when the replays ended (`ss`): "
        f"{buffers['server_sockets_with_unsent_bytes']} of {buffers['server_sockets']} server "
        f"sockets held unsent bytes (max {buffers['unsent_bytes_max'] / 1000:.1f} kB, total "
        f"{buffers['unsent_bytes_total'] / 1000:.1f} kB; send buffer up to "
        f"{buffers['server_sndbuf_bytes_max'] / 1e6:.1f} MB), "
        f"{buffers['listener_sockets_with_unread_bytes']} listener sockets held unread bytes "
        f"(max {buffers['unread_bytes_max'] / 1000:.1f} kB; receive buffer up to "
        f"{buffers['listener_rcvbuf_bytes_max'] / 1000:.0f} kB). A listener received "
        f"{buffers['listener_bytes_per_second']:.0f} B/s; at that rate a stalled listener fills "
        "these buffers, so that the server's send blocks and its send timeout starts, after "
        "about " + ("–" if fill is None else f"{fill / 60:.0f} min")
    )


def write_report(run: LoadRun, settings: LoadSettings, command: str) -> tuple[list[Path], str]:
    """Write ``load.json`` and ``load.md`` into ``settings.out``."""
    report = report_json(run, settings, command)
    markdown = report_markdown(report)
    json_path, md_path = write_report_files(settings.out, "load", report, markdown)
    return [json_path, md_path], markdown


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
