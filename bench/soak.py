"""The soak benchmark: one long real-time session; does the server keep up and keep its memory?

One presenter streams the evaluation recordings, looped (1 s of silence between them), in
real time for ``--minutes`` (default 30) into one session that a few listeners follow
(fan-out's listener processes). Every ``--interval`` seconds (default 10) the bench samples
the server process: resident memory, CPU, open files and threads, plus the machine's load.
Caption lag is the capacity bench's (audio sent − newest caption ``end``, at every caption).

Goals (issue 8): lag under 2 s the whole time, and resident memory growing less than 50 MB
from minute 5 to the end. Definitions: docs/metrics.md, "Soak".
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import psutil

from bench.capacity import LAG_LIMIT_S, LagSample, caption_ends, lag_series, server_lag_max
from bench.clients import ClientPool, split_listeners
from bench.deliveries import (
    ListenerRecord,
    check_finals,
    delay_stats,
    presenter_finals,
    window_deliveries,
)
from bench.format import (
    fixed,
    machine_line,
    ms,
    pyplot,
    save_figure,
    slashed,
    utc_now,
    verdict,
    write_json,
)
from bench.listener import ClientSpec
from bench.metrics import distribution
from bench.paths import RESULTS
from bench.recordings import EVAL_LONGFORM_EN, Recording, default_wavs, load_recording, resolve_wavs
from bench.replay import Replay, create_session, present
from bench.resources import CpuSnapshot, cpu_snapshot, footprint, machine_info, raise_fd_limit
from bench.server import ServerHandle, server_arguments, server_under_test

DEFAULT_OUT = RESULTS
DEFAULT_MINUTES = 30.0
DEFAULT_LISTENERS = 20
SAMPLE_INTERVAL_S = 10.0
GAP_S = 1.0
"""Digital silence between two looped recordings."""
GROWTH_FROM_S = 300.0
"""Memory growth is measured from minute 5 (or a sixth of a shorter run) to the end."""
GROWTH_LIMIT_MB = 50.0
MB = 1e6


def looped(recordings: Sequence[Recording], seconds: float, gap_s: float = GAP_S) -> Recording:
    """``seconds`` of audio: the recordings one after another, ``gap_s`` of silence between
    them, round and round, cut at ``seconds``."""
    if not recordings:
        raise ValueError("looped needs at least one recording")
    rate = recordings[0].sample_rate
    if any(r.sample_rate != rate for r in recordings):
        raise ValueError("looped recordings must share one sample rate")
    wanted = 2 * round(seconds * rate)
    silence = bytes(2 * round(gap_s * rate))
    pieces: list[bytes] = []
    size = 0
    k = 0
    while size < wanted:
        piece = (silence if k else b"") + recordings[k % len(recordings)].pcm
        pieces.append(piece)
        size += len(piece)
        k += 1
    pcm = b"".join(pieces)[:wanted]
    return Recording(
        id=f"loop of {len(recordings)} recording(s)",
        wav=recordings[0].wav,
        reference_text="",
        sample_rate=rate,
        pcm=pcm,
    )


# --- sampling the server ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ResourceSample:
    """The server process and the machine at one moment."""

    cpu: CpuSnapshot
    """Cumulative CPU seconds of every party; ``cpu.wall`` is ``time.monotonic()``."""
    rss_bytes: int | None
    fds: int | None
    threads: int | None
    load_1m: float
    children_rss_bytes: int = 0
    """Resident memory of the server's child processes together (none unless a model
    runs in one)."""


def take_sample(server_pid: int | None, client_pids: Sequence[int]) -> ResourceSample:
    """Read the server's memory, files and threads, and every CPU counter, now."""
    rss = fds = threads = None
    children = 0
    if server_pid is not None:
        now = footprint(server_pid)
        rss, fds, threads = now.rss_bytes, now.fds, now.threads
        for child in psutil.Process(server_pid).children(recursive=True):
            with contextlib.suppress(psutil.Error):
                children += int(child.memory_info().rss)
    return ResourceSample(
        cpu=cpu_snapshot(server_pid, client_pids),
        rss_bytes=rss,
        fds=fds,
        threads=threads,
        load_1m=os.getloadavg()[0],
        children_rss_bytes=children,
    )


class Sampler:
    """Takes a :class:`ResourceSample` now and then every ``interval`` seconds (on a fixed
    schedule) until stopped, and one last when stopped."""

    def __init__(self, server_pid: int | None, client_pids: Sequence[int], interval: float):
        self._pid = server_pid
        self._clients = list(client_pids)
        self._interval = interval
        self.samples: list[ResourceSample] = []
        self._task: asyncio.Task[None] | None = None

    def _take(self) -> None:
        with contextlib.suppress(psutil.NoSuchProcess):
            self.samples.append(take_sample(self._pid, self._clients))

    async def _run(self) -> None:
        began = time.monotonic()
        k = 1
        while True:
            await asyncio.sleep(max(0.0, began + k * self._interval - time.monotonic()))
            self._take()
            k += 1

    async def __aenter__(self) -> Sampler:
        self._take()
        self._task = asyncio.create_task(self._run())
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self._take()


# --- metrics (pure) -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Point:
    """One row of the time series: the interval ending at a resource sample."""

    at_s: float
    """Seconds since the first audio chunk was sent."""
    rss_mb: float | None
    children_rss_mb: float
    fds: int | None
    threads: int | None
    server_cores: float | None
    """Server CPU over the interval that ends here (``None`` for the first sample)."""
    other_cores: float | None
    load_1m: float
    lag_max_s: float | None
    """The largest caption lag sampled in the interval (``None``: no caption in it)."""
    lag_last_s: float | None
    """The newest caption lag at or before this moment."""
    captions: int
    """Source caption events that arrived in the interval."""


def time_series(
    samples: Sequence[ResourceSample], lags: Sequence[LagSample], first_chunk: float
) -> list[Point]:
    """One point per resource sample; ``lags`` are measured from ``first_chunk`` (monotonic),
    the samples carry monotonic wall times."""
    points: list[Point] = []
    previous: ResourceSample | None = None
    for sample in samples:
        at = sample.cpu.wall - first_chunk
        start = -float("inf") if previous is None else previous.cpu.wall - first_chunk
        inside = [s.lag for s in lags if start < s.at <= at]
        before = [s.lag for s in lags if s.at <= at]
        server = other = None
        if previous is not None:
            wall = sample.cpu.wall - previous.cpu.wall
            if wall > 0:
                if sample.cpu.server is not None and previous.cpu.server is not None:
                    server = (sample.cpu.server - previous.cpu.server) / wall
                clients = sum(sample.cpu.clients) - sum(previous.cpu.clients)
                bench = sample.cpu.bench - previous.cpu.bench
                busy = sample.cpu.machine - previous.cpu.machine
                other = (busy - clients - bench) / wall - (server or 0.0)
        points.append(
            Point(
                at_s=at,
                rss_mb=None if sample.rss_bytes is None else sample.rss_bytes / MB,
                children_rss_mb=sample.children_rss_bytes / MB,
                fds=sample.fds,
                threads=sample.threads,
                server_cores=server,
                other_cores=other,
                load_1m=sample.load_1m,
                lag_max_s=max(inside, default=None),
                lag_last_s=before[-1] if before else None,
                captions=len(inside),
            )
        )
        previous = sample
    return points


def growth_start_s(stream_s: float) -> float:
    """Where memory growth is measured from: minute 5, or a sixth of a run shorter than 30
    minutes (so short runs report the same fields)."""
    return min(GROWTH_FROM_S, stream_s / 6.0)


@dataclass(frozen=True, slots=True)
class Growth:
    """Resident memory from ``from_s`` to the end of the stream."""

    from_s: float
    to_s: float
    rss_from_mb: float
    rss_to_mb: float
    slope_mb_per_hour: float | None
    """Least-squares slope of RSS over the samples between ``from_s`` and ``to_s``."""

    @property
    def growth_mb(self) -> float:
        return self.rss_to_mb - self.rss_from_mb


def memory_growth(points: Sequence[Point], from_s: float, to_s: float) -> Growth | None:
    """RSS at the first sample at or after ``from_s`` against the last sample at or before
    ``to_s`` (the end of the stream); ``None`` without two such samples."""
    inside = [p for p in points if p.rss_mb is not None and from_s <= p.at_s <= to_s + 1e-6]
    if len(inside) < 2:
        return None
    first, last = inside[0], inside[-1]
    xs = [p.at_s for p in inside]
    ys = [p.rss_mb or 0.0 for p in inside]
    mean_x, mean_y = sum(xs) / len(xs), sum(ys) / len(ys)
    sxx = sum((x - mean_x) ** 2 for x in xs)
    slope = (
        None
        if sxx == 0
        else sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / sxx * 3600
    )
    return Growth(first.at_s, last.at_s, first.rss_mb or 0.0, last.rss_mb or 0.0, slope)


# --- the run ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SoakSettings:
    """What ``python -m bench soak`` was asked to do."""

    minutes: float
    wavs: tuple[Path, ...]
    out: Path
    listeners: int = DEFAULT_LISTENERS
    interval_s: float = SAMPLE_INTERVAL_S
    lag_limit_s: float = LAG_LIMIT_S
    growth_limit_mb: float = GROWTH_LIMIT_MB
    url: str | None = None
    server_pid: int | None = None
    ready_timeout: float = 120.0
    settle_timeout: float = 120.0
    drain_timeout: float = 30.0
    client_processes: int = 1


@dataclass(frozen=True, slots=True)
class SoakRun:
    """Everything the soak recorded."""

    presenter: Replay
    samples: tuple[ResourceSample, ...]
    records: tuple[ListenerRecord, ...]
    window: tuple[float, float]
    """Wall-clock (unix) span of the stream: ``start`` sent to ``ended`` received."""
    load_average_before: tuple[float, float, float]
    load_average_after: tuple[float, float, float]


async def run_soak_round(
    settings: SoakSettings, recording: Recording, server: ServerHandle
) -> SoakRun:
    """Listeners join, the presenter streams the whole loop while the sampler runs, then the
    listeners drain their finals and close."""
    session = await create_session(server.base_url, "bench soak")
    specs = [
        ClientSpec(server.base_url, str(session["code"]), indices)
        for indices in split_listeners(settings.listeners, settings.client_processes)
    ]
    pool = ClientPool(specs) if settings.listeners > 0 else None
    load_before = os.getloadavg()
    try:
        if pool is not None:
            await pool.join(settings.settle_timeout)
        pids = pool.pids if pool is not None else []
        async with Sampler(server.pid, pids, settings.interval_s) as sampler:
            window_start = time.time()
            presenter = await present(server.base_url, session, recording)
            window_end = time.time()
        records: tuple[ListenerRecord, ...] = ()
        if pool is not None:
            finals = frozenset(presenter_finals(presenter))
            records = tuple((await pool.finish(finals, settings.drain_timeout))[0])
    except BaseException:
        if pool is not None:
            await pool.close(grace=0.0)
        raise
    if pool is not None:
        await pool.close()
    return SoakRun(
        presenter=presenter,
        samples=tuple(sampler.samples),
        records=records,
        window=(window_start, window_end),
        load_average_before=load_before,
        load_average_after=os.getloadavg(),
    )


async def run_soak(settings: SoakSettings) -> SoakRun:
    """Load and loop the recordings, start a fresh server (unless ``settings.url``), run."""
    recording = looped([load_recording(w) for w in settings.wavs], settings.minutes * 60.0)
    raise_fd_limit(settings.listeners + 256)
    async with server_under_test(
        settings.url, settings.server_pid, settings.out / "server-soak.log", settings.ready_timeout
    ) as server:
        return await run_soak_round(settings, recording, server)


# --- the report ---------------------------------------------------------------------------


def _round(value: float | None, digits: int = 3) -> float | None:
    return None if value is None else round(value, digits)


def report_json(run: SoakRun, settings: SoakSettings, command: str) -> dict[str, Any]:
    """Every number of the soak (see docs/metrics.md, "Soak")."""
    schedule = run.presenter.schedule
    first_chunk = schedule.send_times[0]
    lags = lag_series(schedule, caption_ends(run.presenter))
    points = time_series(run.samples, lags, first_chunk)
    stream_s = run.presenter.ended_at - first_chunk
    growth = memory_growth(points, growth_start_s(stream_s), stream_s)
    lag = distribution(s.lag for s in lags)
    rss = [p.rss_mb for p in points if p.rss_mb is not None]
    server_cores = [p.server_cores for p in points if p.server_cores is not None]
    first, last = run.samples[0], run.samples[-1]
    wall = last.cpu.wall - first.cpu.wall
    server_mean = (
        None
        if first.cpu.server is None or last.cpu.server is None or wall <= 0
        else (last.cpu.server - first.cpu.server) / wall
    )
    start, end = run.window
    expected = presenter_finals(run.presenter)
    checks = [check_finals(expected, r.finals) for r in run.records]
    delays = [d.delay for r in run.records for d in window_deliveries(r, start, end)]
    lag_ok = lag.count > 0 and lag.max is not None and lag.max < settings.lag_limit_s
    growth_ok = None if growth is None else growth.growth_mb < settings.growth_limit_mb
    return {
        "benchmark": "soak",
        "command": command,
        "created_utc": utc_now(),
        "machine": machine_info(),
        "server": {"url": settings.url, "started_by_bench": settings.url is None},
        "recordings": [w.stem for w in settings.wavs],
        "gap_s": GAP_S,
        "minutes": settings.minutes,
        "audio_s": schedule.audio_seconds,
        "stream_s": stream_s,
        "end_lag_s": run.presenter.ended_at - schedule.send_times[-1],
        "interval_s": settings.interval_s,
        "listeners": settings.listeners,
        "limits": {"lag_s": settings.lag_limit_s, "growth_mb": settings.growth_limit_mb},
        "goals": {
            "caption lag max (p95), s": {
                "value": f"{fixed(lag.max)} ({fixed(lag.p95)})",
                "goal": f"< {settings.lag_limit_s:g}",
                "met": lag_ok,
            },
            "RSS growth from minute 5 to the end, MB": {
                "value": "–" if growth is None else f"{growth.growth_mb:.1f}",
                "goal": f"< {settings.growth_limit_mb:g}",
                "met": growth_ok,
            },
        },
        "lag_s": asdict(lag),
        "server_lag_max_s": server_lag_max(run.presenter),
        "lag_goal_met": lag_ok,
        "memory": {
            "rss_start_mb": _round(rss[0] if rss else None, 1),
            "rss_end_mb": _round(rss[-1] if rss else None, 1),
            "rss_max_mb": _round(max(rss, default=None), 1),
            "growth_from_s": None if growth is None else round(growth.from_s, 1),
            "growth_to_s": None if growth is None else round(growth.to_s, 1),
            "rss_at_growth_from_mb": None if growth is None else round(growth.rss_from_mb, 1),
            "growth_mb": None if growth is None else round(growth.growth_mb, 1),
            "slope_mb_per_hour": None if growth is None else _round(growth.slope_mb_per_hour, 1),
            "fds_start_end": [first.fds, last.fds],
            "threads_start_end": [first.threads, last.threads],
        },
        "growth_goal_met": growth_ok,
        "goal_met": lag_ok and growth_ok is True,
        "cpu": {
            "server_cores_mean": _round(server_mean),
            "server_cores_per_interval": asdict(distribution(server_cores)),
        },
        "captions": {
            "events": lag.count,
            "finals": len(expected),
        },
        "audience": {
            "listeners_exact": sum(c.exact for c in checks),
            "missing_total": sum(c.missing for c in checks),
            "extra_total": sum(c.extra for c in checks),
            "reconnects": sum(r.reconnects for r in run.records),
            "connect_failures": sum(r.error is not None for r in run.records),
            "delay_s": asdict(delay_stats(delays)),
        },
        "load_average_before": [round(x, 2) for x in run.load_average_before],
        "load_average_after": [round(x, 2) for x in run.load_average_after],
        "load_1m": asdict(distribution(p.load_1m for p in points)),
        "other_cores": asdict(distribution(p.other_cores for p in points)),
        "series_columns": [
            "at_s",
            "rss_mb",
            "server_cores",
            "other_cores",
            "load_1m",
            "lag_max_s",
            "lag_last_s",
            "captions",
            "fds",
            "threads",
            "children_rss_mb",
        ],
        "series": [
            [
                round(p.at_s, 2),
                _round(p.rss_mb, 2),
                _round(p.server_cores),
                _round(p.other_cores),
                round(p.load_1m, 2),
                _round(p.lag_max_s),
                _round(p.lag_last_s),
                p.captions,
                p.fds,
                p.threads,
                round(p.children_rss_mb, 2),
            ]
            for p in points
        ],
        "lag_samples": [[round(s.at, 2), round(s.lag, 3)] for s in lags],
    }


def report_markdown(report: dict[str, Any], plot: Path | None) -> str:
    """The soak report in Markdown."""
    machine, lag, mem = report["machine"], report["lag_s"], report["memory"]
    goals, aud, cpu = report["limits"], report["audience"], report["cpu"]
    load, other = report["load_1m"], report["other_cores"]
    lines = [
        "# Soak benchmark: one long real-time session",
        "",
        f"- Command: `{report['command']}`",
        f"- Machine: {machine_line(machine)}",
        f"- Date (UTC): {report['created_utc']}",
        f"- Stream: {report['audio_s'] / 60:.1f} min of audio in real time "
        f"({', '.join(report['recordings'])}, looped with {report['gap_s']:.0f} s of silence "
        f"between them), one presenter, {report['listeners']} listener(s); server sampled "
        f"every {report['interval_s']:.0f} s",
        f"- Load average (1 min) during the stream: median {fixed(load['p50'])}, max "
        f"{fixed(load['max'])}; other work on the machine: median {fixed(other['p50'])} cores, "
        f"p95 {fixed(other['p95'])} (1/5/15 min before: {slashed(report['load_average_before'])}"
        f"; after: {slashed(report['load_average_after'])})",
        "",
        "| metric | measured | goal | met |",
        "|---|---|---|---|",
        f"| caption lag max / p95 / p50 (s) | {fixed(lag['max'])} / {fixed(lag['p95'])} / "
        f"{fixed(lag['p50'])} | max < {goals['lag_s']:.0f} s | {verdict(report['lag_goal_met'])} |",
        f"| RSS growth from {fixed((mem['growth_from_s'] or 0) / 60, 1)} min to the end (MB) "
        f"| {fixed(mem['growth_mb'], 1)} ({fixed(mem['rss_at_growth_from_mb'], 0)} → "
        f"{fixed(mem['rss_end_mb'], 0)}) | < {goals['growth_mb']:.0f} MB "
        f"| {verdict(report['growth_goal_met'])} |",
        f"| RSS trend after that point (MB per hour, least squares) "
        f"| {fixed(mem['slope_mb_per_hour'], 1)} | | |",
        f"| RSS start / max (MB) | {fixed(mem['rss_start_mb'], 0)} "
        f"/ {fixed(mem['rss_max_mb'], 0)} | | |",
        f"| open files, threads (start → end) | {mem['fds_start_end'][0]} → "
        f"{mem['fds_start_end'][1]}, {mem['threads_start_end'][0]} → "
        f"{mem['threads_start_end'][1]} | | |",
        f"| server CPU (cores, mean; per {report['interval_s']:.0f} s p95) "
        f"| {fixed(cpu['server_cores_mean'])}; "
        f"{fixed(cpu['server_cores_per_interval']['p95'])} | | |",
        f"| end lag (s) | {fixed(report['end_lag_s'])} | | |",
        f"| caption events / finals | {report['captions']['events']} / "
        f"{report['captions']['finals']} | | |",
        f"| listeners with every final | {aud['listeners_exact']} / {report['listeners']} "
        f"(reconnects {aud['reconnects']}) | | |",
        f"| listener delay p50 / p99 / max (ms) | {ms(aud['delay_s']['p50'])} / "
        f"{ms(aud['delay_s']['p99'])} / {ms(aud['delay_s']['max'])} | | |",
        "",
        "Lag = audio seconds sent − the largest caption `end` received, at every source "
        "caption (as in the capacity bench). MB = 10^6 bytes. Other work = busy CPU of the "
        "machine not used by the server, the listeners or the bench.",
    ]
    if plot is not None:
        lines += ["", f"![RSS, lag and CPU over time]({plot.name})"]
    lines.append("")
    return "\n".join(lines)


def plot_soak(report: dict[str, Any], path: Path) -> Path:
    """RSS, caption lag and CPU over the stream, one panel each; saved as PNG."""
    plt = pyplot()
    columns = report["series_columns"]
    rows = [dict(zip(columns, row, strict=True)) for row in report["series"]]
    minutes = [r["at_s"] / 60 for r in rows]
    figure, (mem, lag, cpu) = plt.subplots(3, 1, figsize=(9, 8), sharex=True)
    mem.plot(minutes, [r["rss_mb"] for r in rows], color="tab:blue", linewidth=1.2)
    start = report["memory"]["growth_from_s"]
    if start is not None:
        mem.axvline(start / 60, color="grey", linestyle=":", linewidth=1)
    mem.set_ylabel("server RSS (MB)")
    mem.set_title(
        f"growth {report['memory']['growth_mb']} MB after minute "
        f"{(start or 0) / 60:.1f} (goal < {report['limits']['growth_mb']:.0f})",
        fontsize=10,
    )
    samples = report["lag_samples"]
    lag.plot(
        [s[0] / 60 for s in samples],
        [s[1] for s in samples],
        color="lightgrey",
        linewidth=0.6,
        label="at each caption",
    )
    lag.plot(
        minutes,
        [r["lag_max_s"] for r in rows],
        color="tab:orange",
        linewidth=1.2,
        label=f"max per {report['interval_s']:.0f} s",
    )
    lag.axhline(report["limits"]["lag_s"], color="red", linestyle="--", linewidth=1)
    lag.set_ylabel("caption lag (s)")
    lag.set_ylim(bottom=0)
    lag.legend(fontsize=7, loc="upper left")
    cpu.plot(minutes, [r["server_cores"] for r in rows], label="server", linewidth=1.2)
    cpu.plot(minutes, [r["other_cores"] for r in rows], label="other work", linewidth=1.0)
    cpu.plot(minutes, [r["load_1m"] for r in rows], label="load average 1 min", linewidth=0.8)
    cpu.set_ylabel("cores")
    cpu.set_ylim(bottom=0)
    cpu.legend(fontsize=7, loc="upper left")
    cpu.set_xlabel("minutes since the first audio")
    for ax in (mem, lag, cpu):
        ax.grid(alpha=0.3)
    return save_figure(figure, path)


def write_report(run: SoakRun, settings: SoakSettings, command: str) -> tuple[list[Path], str]:
    """Write ``soak.json``, ``soak.md`` and ``soak.png`` into ``settings.out``."""
    settings.out.mkdir(parents=True, exist_ok=True)
    report = report_json(run, settings, command)
    # The JSON first: a long run's numbers must survive a failure of the plot.
    json_path = write_json(settings.out / "soak.json", report)
    plot = plot_soak(report, settings.out / "soak.png")
    markdown = report_markdown(report, plot)
    md_path = settings.out / "soak.md"
    md_path.write_text(markdown, encoding="utf-8")
    return [json_path, md_path, plot], markdown


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bench soak", description=__doc__)
    parser.add_argument(
        "--minutes", type=float, default=DEFAULT_MINUTES, help="length of the stream"
    )
    parser.add_argument(
        "--files",
        nargs="+",
        metavar="FILE",
        help="recordings to loop (default: the captions bench's default files)",
    )
    parser.add_argument("--listeners", type=int, default=DEFAULT_LISTENERS)
    parser.add_argument(
        "--interval", type=float, default=SAMPLE_INTERVAL_S, help="seconds between samples"
    )
    parser.add_argument("--lag-limit", type=float, default=LAG_LIMIT_S)
    parser.add_argument("--growth-limit", type=float, default=GROWTH_LIMIT_MB, help="MB")
    server_arguments(
        parser, "a running server (default: start a fresh one)", "with --url: its process id"
    )
    parser.add_argument("--eval-dir", type=Path, default=EVAL_LONGFORM_EN)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m bench soak [options]``: run, write the report, print it."""
    words = list(sys.argv[2:] if argv is None else argv)
    args = build_parser().parse_args(words)
    wavs = resolve_wavs(args.files, args.eval_dir) if args.files else default_wavs(args.eval_dir)
    if not wavs:
        print(f"no recordings found in {args.eval_dir}", file=sys.stderr)
        return 2
    settings = SoakSettings(
        minutes=args.minutes,
        wavs=tuple(wavs),
        out=args.out,
        listeners=args.listeners,
        interval_s=args.interval,
        lag_limit_s=args.lag_limit,
        growth_limit_mb=args.growth_limit,
        url=args.url,
        server_pid=args.server_pid,
        ready_timeout=args.ready_timeout,
    )
    run = asyncio.run(run_soak(settings))
    paths, markdown = write_report(run, settings, " ".join(["python -m bench soak", *words]))
    print(markdown)
    print("wrote " + ", ".join(str(p) for p in paths))
    return 0


if __name__ == "__main__":
    sys.exit(main())
