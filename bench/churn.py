"""The churn benchmark: many short sessions, one after another; does the server give back
what each one took?

The bench starts a server (an empty data directory; ``--env NAME=VALUE`` adds settings to
its environment) and runs ``--sessions`` sessions in sequence. Each one: ``POST
/api/sessions``; one listener on ``/ws/listen`` (``bench.listener``); the presenter streams a
short clip of real speech at ``--speed`` times real time, sends ``stop`` and waits for
``ended`` (``bench.replay``); ``POST /api/sessions/{code}/end`` with the presenter token;
the listener closes once it has seen the session end, as the listener page does.

The bench reads the server process's resident memory (RSS), open file descriptors and
threads ``--settle`` seconds after a session ended. Two checkpoints compare like with like:
after the first ``--warmup`` sessions and after the last, each the lowest of the readings
after the ``--window`` sessions up to it (the floor: at rest the server's RSS sits at one of
a few levels, and which one changes from session to session). Goal: the floor of RSS grows
by less than ``--growth-limit`` MB between the two, and no more files are open at the end.
Definitions: docs/metrics.md, "Churn".
"""

from __future__ import annotations

import argparse
import asyncio
import re
import shlex
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from bench.churn_report import write_report
from bench.deliveries import check_finals, presenter_finals
from bench.listener import ClientSpec, Listener
from bench.paths import EVAL, RESULTS
from bench.recordings import Recording, load_recording, resolve_wavs
from bench.replay import ReplayError, create_session, present
from bench.resources import Footprint, footprint
from bench.server import server_under_test

DEFAULT_SESSIONS = 2000
DEFAULT_WARMUP = 200
DEFAULT_SPEED = 10.0
DEFAULT_SETTLE_S = 2.0
DEFAULT_CLIP = "librivox_sense_and_sensibility_01_austen_64kb-0880"
"""A 3 s English sentence read by a person (asr_short)."""
CLIPS = EVAL / "asr_short" / "en"
GROWTH_LIMIT_MB = 15.0
DEFAULT_WINDOW = 20
SERIES_POINTS = 20
"""About this many more readings over the run, for the trend."""
MAX_FAILURES_IN_A_ROW = 5
"""A run stops after this many failed sessions in a row (the server is gone or refusing)."""
LISTENER_END_TIMEOUT_S = 10.0
ENV_NAME = re.compile(r"[A-Z_][A-Z0-9_]*")


@dataclass(frozen=True, slots=True)
class ChurnSettings:
    """What ``python -m bench churn`` was asked to do."""

    sessions: int
    warmup: int
    clip: Path
    out: Path
    speed: float = DEFAULT_SPEED
    settle_s: float = DEFAULT_SETTLE_S
    window: int = DEFAULT_WINDOW
    """Sessions whose readings make up each checkpoint (fewer where the run is shorter)."""
    growth_limit_mb: float = GROWTH_LIMIT_MB
    env: Mapping[str, str] = field(default_factory=dict)
    """Added to the server's environment, after the bench's own (:func:`server_env`)."""
    ready_timeout: float = 120.0

    def server_env(self) -> dict[str, str]:
        """The server's settings: audio at ``speed``, no limit on session creation, then
        ``env`` (which may override either)."""
        base = {"INTERP_MAX_AUDIO_SPEED": f"{self.speed:g}", "INTERP_SESSION_RATE": "0"}
        return {**base, **self.env}


@dataclass(frozen=True, slots=True)
class SessionResult:
    """One session, from its creation to its listener's close."""

    index: int
    seconds: float
    """Wall time from ``POST /api/sessions`` to the listener's close."""
    ended: bool = False
    """The presenter's ``stop`` was answered with ``ended``."""
    end_status: int | None = None
    """HTTP status of ``POST /api/sessions/{code}/end``."""
    listener_joined: bool = False
    listener_saw_end: bool = False
    finals: int = 0
    """Source-language finals the presenter received."""
    listener_missing_finals: int | None = None
    error: str | None = None

    @property
    def problem(self) -> str | None:
        """What went wrong, if anything: an error, ``stop`` not answered with ``ended``,
        ``end`` not answered 200, or a listener that did not see the end or lacks finals."""
        if self.error is not None:
            return self.error
        if not self.ended:
            return "stop was not answered with ended"
        if self.end_status != 200:
            return f"end answered {self.end_status}"
        if not self.listener_saw_end:
            return "the listener did not see the session end"
        if self.listener_missing_finals != 0:
            return f"the listener lacks {self.listener_missing_finals} final(s)"
        return None

    @property
    def ok(self) -> bool:
        return self.problem is None


@dataclass(frozen=True, slots=True)
class Reading:
    """The server after ``sessions`` sessions, ``at_s`` seconds into the run."""

    sessions: int
    at_s: float
    footprint: Footprint


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """The readings after the sessions of one window, which ends at ``sessions``."""

    sessions: int
    readings: tuple[Reading, ...]

    @property
    def floor(self) -> Footprint:
        """The lowest RSS, files and threads of the readings (each on its own)."""
        points = [r.footprint for r in self.readings]
        return Footprint(
            rss_bytes=min(p.rss_bytes for p in points),
            fds=min(p.fds for p in points),
            threads=min(p.threads for p in points),
        )

    @property
    def rss_max_bytes(self) -> int:
        return max(r.footprint.rss_bytes for r in self.readings)


def window_of(end: int, size: int, first: int = 1) -> range:
    """The session counts whose readings make up the checkpoint at ``end``: the last
    ``size`` up to it, none before ``first``."""
    return range(max(first, end - size + 1), end + 1)


def checkpoint(readings: Sequence[Reading], window: range) -> Checkpoint | None:
    """The checkpoint at the end of ``window``, if the run got there."""
    inside = tuple(r for r in readings if r.sessions in window)
    if not inside or inside[-1].sessions != window[-1]:
        return None
    return Checkpoint(window[-1], inside)


@dataclass(frozen=True, slots=True)
class ChurnRun:
    """Everything one run recorded."""

    results: tuple[SessionResult, ...]
    readings: tuple[Reading, ...]
    """Every reading, in order: the checkpoints' windows and the series."""
    warmup: Checkpoint | None
    """``None`` when the run stopped before the warm-up was over."""
    end: Checkpoint | None
    start: Footprint
    """The server before the first session."""
    audio_s: float
    stopped: str | None = None
    """Why the run stopped before ``sessions``, if it did."""


async def run_session(
    index: int, base_url: str, client: httpx.AsyncClient, recording: Recording, speed: float
) -> SessionResult:
    """One session, from its creation to its listener's close; a failure is recorded in the
    result, not raised."""
    began = time.monotonic()
    listener: Listener | None = None
    follower: asyncio.Task[None] | None = None
    ended = False
    end_status = None
    finals: dict[int, str] = {}
    error = None
    try:
        session = await create_session(base_url, f"bench churn {index}")
        listener = Listener(0, ClientSpec(base_url, str(session["code"]), (0,)))
        follower = asyncio.create_task(listener.follow(asyncio.Semaphore(1)))
        await listener.joined.wait()
        if listener.error is not None:
            raise ReplayError(f"listener did not connect: {listener.error}")
        replay = await present(base_url, session, recording, speed=speed)
        ended = True  # present() returns only once the server answered stop with ended
        finals = presenter_finals(replay)
        response = await client.post(
            f"/api/sessions/{session['code']}/end",
            headers={"Authorization": f"Bearer {session['presenter_token']}"},
        )
        end_status = response.status_code
        async with asyncio.timeout(LISTENER_END_TIMEOUT_S):
            await listener.ended.wait()
    except (ReplayError, httpx.HTTPError, OSError, TimeoutError) as failure:
        error = f"{type(failure).__name__}: {failure}".strip()
    finally:
        if listener is not None and follower is not None:
            await listener.stop()
            await follower
    joined = listener is not None and listener.error is None
    return SessionResult(
        index=index,
        seconds=time.monotonic() - began,
        ended=ended,
        end_status=end_status,
        listener_joined=joined,
        listener_saw_end=listener is not None and listener.ended.is_set(),
        finals=len(finals),
        listener_missing_finals=(
            check_finals(finals, listener.finals).missing
            if listener is not None and joined and ended
            else None
        ),
        error=error,
    )


def series_counts(sessions: int, points: int = SERIES_POINTS) -> frozenset[int]:
    """After which sessions (counts from 1) the server is read for the trend: every
    ``sessions // points`` sessions, and after the last."""
    step = max(1, sessions // points)
    return frozenset(range(step, sessions + 1, step)) | {sessions}


def reading_counts(settings: ChurnSettings) -> tuple[range, range, frozenset[int]]:
    """The warm-up's window, the end's window (none of it in the warm-up), and every count
    after which the server is read."""
    warmup = window_of(settings.warmup, settings.window)
    end = window_of(settings.sessions, settings.window, first=settings.warmup + 1)
    return warmup, end, series_counts(settings.sessions) | set(warmup) | set(end)


async def run_churn(settings: ChurnSettings) -> ChurnRun:
    """Start the server, run every session in turn, read the server after the sessions
    :func:`reading_counts` names."""
    recording = load_recording(settings.clip)
    log_path = settings.out / "server-churn.log"
    warmup_window, end_window, read_after = reading_counts(settings)
    results: list[SessionResult] = []
    readings: list[Reading] = []
    stopped = None
    async with (
        server_under_test(
            None, None, log_path, settings.ready_timeout, settings.server_env()
        ) as server,
        httpx.AsyncClient(base_url=server.base_url, timeout=30.0) as client,
    ):
        assert server.pid is not None  # the bench started it
        start = footprint(server.pid)
        began = time.monotonic()
        failures = 0
        for index in range(settings.sessions):
            result = await run_session(index, server.base_url, client, recording, settings.speed)
            results.append(result)
            failures = 0 if result.ok else failures + 1
            if failures >= MAX_FAILURES_IN_A_ROW:
                stopped = f"{failures} sessions in a row failed; the last: {result.problem}"
                break
            if index + 1 in read_after:
                await asyncio.sleep(settings.settle_s)
                at = time.monotonic() - began
                readings.append(Reading(index + 1, at, footprint(server.pid)))
    return ChurnRun(
        results=tuple(results),
        readings=tuple(readings),
        warmup=checkpoint(readings, warmup_window),
        end=checkpoint(readings, end_window),
        start=start,
        audio_s=recording.duration,
        stopped=stopped,
    )


# --- the command line -----------------------------------------------------------------------


def parse_env(pairs: Sequence[str]) -> dict[str, str]:
    """``NAME=VALUE`` words as a mapping; a malformed word raises ``ValueError``."""
    env: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not ENV_NAME.fullmatch(name):
            raise ValueError(f"expected NAME=VALUE with an upper-case NAME, got {pair!r}")
        env[name] = value
    return env


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bench churn", description=__doc__)
    parser.add_argument(
        "--sessions",
        type=int,
        default=DEFAULT_SESSIONS,
        help="sessions in all (default: %(default)s)",
    )
    parser.add_argument(
        "--warmup",
        type=int,
        default=DEFAULT_WARMUP,
        help="sessions before the first reading (default: %(default)s)",
    )
    parser.add_argument(
        "--speed",
        type=float,
        default=DEFAULT_SPEED,
        help="the clip is streamed this many times faster than real time; the server is "
        "started with INTERP_MAX_AUDIO_SPEED at this value (default: %(default)s)",
    )
    parser.add_argument(
        "--env",
        nargs="+",
        action="extend",
        default=[],
        metavar="NAME=VALUE",
        help="add to the server's environment, e.g. INTERP_ENDED_GRACE_S=1 (repeatable; "
        "overrides the bench's INTERP_MAX_AUDIO_SPEED and INTERP_SESSION_RATE=0)",
    )
    parser.add_argument(
        "--file",
        default=DEFAULT_CLIP,
        help="WAV path or recording id in --eval-dir (default: %(default)s)",
    )
    parser.add_argument("--eval-dir", type=Path, default=CLIPS)
    parser.add_argument(
        "--settle",
        type=float,
        default=DEFAULT_SETTLE_S,
        help="seconds to wait after a session before each reading (default: %(default)s)",
    )
    parser.add_argument(
        "--window",
        type=int,
        default=DEFAULT_WINDOW,
        help="sessions whose readings make up each checkpoint (default: %(default)s)",
    )
    parser.add_argument(
        "--growth-limit", type=float, default=GROWTH_LIMIT_MB, help="MB (default: %(default)s)"
    )
    parser.add_argument("--ready-timeout", type=float, default=120.0)
    parser.add_argument("--out", type=Path, default=RESULTS)
    return parser


def main(argv: Sequence[str]) -> int:
    """``python -m bench churn [options]``: run, write the report, print it."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not 0 < args.warmup < args.sessions:
        parser.error("--warmup must be at least 1 and less than --sessions")
    if args.speed <= 0 or args.window < 1:
        parser.error("--speed and --window must be positive")
    try:
        env = parse_env(args.env)
    except ValueError as error:
        parser.error(f"--env: {error}")
    (clip,) = resolve_wavs([args.file], args.eval_dir)
    settings = ChurnSettings(
        sessions=args.sessions,
        warmup=args.warmup,
        clip=clip,
        out=args.out,
        speed=args.speed,
        settle_s=args.settle,
        window=args.window,
        growth_limit_mb=args.growth_limit,
        env=env,
        ready_timeout=args.ready_timeout,
    )
    run = asyncio.run(run_churn(settings))
    command = shlex.join(["python", "-m", "bench", "churn", *argv])
    paths, markdown = write_report(run, settings, command)
    print(markdown)
    print("wrote " + ", ".join(str(p) for p in paths))
    return 0 if run.stopped is None else 1
