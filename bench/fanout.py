"""The fan-out benchmark: one presenter, N listeners, how late each event reaches them.

One presenter replays a real recording in real time through ``/ws/present/{code}`` while N
listeners follow ``/ws/listen/{code}`` over loopback. The listeners are spread over several
client processes (``bench.clients``; one asyncio loop each) so that the client side is not
what limits the numbers; the report gives their CPU so a reader can judge. Definitions:
docs/metrics.md, "Fan-out"; the report: ``bench.fanout_report``.

One round (one N): start a fresh server, create the session, connect the N listeners and
wait until each has seen the audience count reach N (the join storm is over), replay the
recording, then wait until every listener holds every final the presenter got, and close.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shlex
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bench.clients import (
    LISTENERS_PER_CLIENT_PROCESS,
    MAX_CLIENT_PROCESSES,
    ClientPool,
    default_client_processes,
    split_listeners,
)
from bench.deliveries import ListenerRecord, presenter_finals
from bench.fanout_report import write_report
from bench.listener import PAGE_PING_S, ClientSpec
from bench.paths import RESULTS
from bench.recordings import EVAL_LONGFORM_EN, Recording, load_recording, resolve_wavs
from bench.replay import Replay, create_session, present, trimmed
from bench.resources import CpuUse, RssSampler, cpu_snapshot, cpu_use, raise_fd_limit
from bench.server import ServerHandle, server_arguments, server_under_test

DEFAULT_RECORDING = "librivox_shakespeare_sonnet_001"
DEFAULT_LISTENERS = (100, 500, 1000)


@dataclass(frozen=True, slots=True)
class Goals:
    """The fan-out target: at ``listeners`` listeners, p99 event delay at most this."""

    listeners: int = 1000
    delay_p99_s: float = 0.1


@dataclass(frozen=True, slots=True)
class FanoutSettings:
    """What ``python -m bench fanout`` was asked to do."""

    listeners: tuple[int, ...]
    recording: Path
    out: Path
    seconds: float | None = None
    url: str | None = None
    server_pid: int | None = None
    client_processes: int | None = None
    ready_timeout: float = 120.0
    settle_timeout: float = 180.0
    drain_timeout: float = 30.0
    ping_s: float = PAGE_PING_S
    goals: Goals = field(default_factory=Goals)


@dataclass(frozen=True, slots=True)
class Round:
    """Everything one round recorded (one N)."""

    listeners: int
    client_processes: int
    records: tuple[ListenerRecord, ...]
    presenter: Replay
    window: tuple[float, float]
    """Wall-clock span of the replay: ``start`` sent to ``ended`` received."""
    join_s: float
    settled: bool
    close_s: float
    cpu: CpuUse
    rss_start_bytes: int | None
    rss_peak_bytes: int | None
    load_average_before: tuple[float, float, float]
    load_average_after: tuple[float, float, float]


async def run_round(
    listeners: int, recording: Recording, settings: FanoutSettings, server: ServerHandle
) -> Round:
    """Join ``listeners`` listeners, replay, drain, close; record everything."""
    processes = settings.client_processes or default_client_processes(listeners)
    session = await create_session(server.base_url, f"bench fanout {listeners}")
    specs = [
        ClientSpec(server.base_url, str(session["code"]), indices, ping_s=settings.ping_s)
        for indices in split_listeners(listeners, processes)
    ]
    load_before = os.getloadavg()
    async with RssSampler(server.pid) as rss, ClientPool(specs) as pool:
        join_started = time.monotonic()
        _, settled = await pool.join(settings.settle_timeout)
        join_s = time.monotonic() - join_started

        before = cpu_snapshot(server.pid, pool.pids)
        window_start = time.time()
        presenter = await present(server.base_url, session, recording)
        window_end = time.time()
        cpu = cpu_use(before, cpu_snapshot(server.pid, pool.pids))

        finals = frozenset(presenter_finals(presenter))
        records, close_s = await pool.finish(finals, settings.drain_timeout)
    return Round(
        listeners=listeners,
        client_processes=len(specs),
        records=tuple(records),
        presenter=presenter,
        window=(window_start, window_end),
        join_s=join_s,
        settled=settled,
        close_s=close_s,
        cpu=cpu,
        rss_start_bytes=rss.start_bytes,
        rss_peak_bytes=rss.peak_bytes,
        load_average_before=load_before,
        load_average_after=os.getloadavg(),
    )


async def run_fanout(settings: FanoutSettings, recording: Recording) -> list[Round]:
    """One round per listener count, each against a fresh server (unless ``settings.url``)."""
    raise_fd_limit(max(settings.listeners) + 256)
    rounds: list[Round] = []
    for count in settings.listeners:
        log_path = settings.out / f"server-fanout-{count}.log"
        async with server_under_test(
            settings.url, settings.server_pid, log_path, settings.ready_timeout
        ) as server:
            rounds.append(await run_round(count, recording, settings, server))
    return rounds


# --- the command line -----------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bench fanout", description=__doc__)
    server_arguments(parser)
    parser.add_argument(
        "--listeners",
        type=int,
        nargs="+",
        default=list(DEFAULT_LISTENERS),
        metavar="N",
        help="one round per listener count (default: %(default)s)",
    )
    parser.add_argument(
        "--file",
        default=DEFAULT_RECORDING,
        help="WAV path or recording id in --eval-dir (default: %(default)s)",
    )
    parser.add_argument(
        "--seconds", type=float, help="replay only the first SECONDS of the recording"
    )
    parser.add_argument(
        "--client-processes",
        type=int,
        help="processes the listeners are spread over (default: one per "
        f"{LISTENERS_PER_CLIENT_PROCESS} listeners, at most {MAX_CLIENT_PROCESSES})",
    )
    parser.add_argument(
        "--ping-s",
        type=float,
        default=PAGE_PING_S,
        help="each listener pings its socket this often, as the page does; 0: never "
        "(default: %(default)s)",
    )
    parser.add_argument("--eval-dir", type=Path, default=EVAL_LONGFORM_EN)
    parser.add_argument("--out", type=Path, default=RESULTS)
    return parser


def main(argv: Sequence[str]) -> int:
    """``python -m bench fanout [options]``: every round, the report written and printed."""
    args = build_parser().parse_args(argv)
    (wav,) = resolve_wavs([args.file], args.eval_dir)
    settings = FanoutSettings(
        listeners=tuple(args.listeners),
        recording=wav,
        out=args.out,
        seconds=args.seconds,
        url=args.url,
        server_pid=args.server_pid,
        client_processes=args.client_processes,
        ready_timeout=args.ready_timeout,
        ping_s=args.ping_s,
    )
    recording = trimmed(load_recording(wav), args.seconds)
    rounds = asyncio.run(run_fanout(settings, recording))
    command = shlex.join(["python", "-m", "bench", "fanout", *argv])
    json_path, md_path, markdown = write_report(rounds, settings, command)
    print(markdown)
    print(f"wrote {json_path} and {md_path}")
    return 0
