"""The memory benchmark: how much a server holds with each set of models, at rest and live.

For each configuration (``--config NAME=ENV,ENV`` adds one; the defaults are in
:data:`CONFIGS`) the bench starts a server with those settings added to its environment
and reads the server process's resident memory (RSS):

- **ready**: when ``GET /readyz`` first answers 200 (the models are loaded and warmed);
- **at rest**: once it has moved by less than ``--still-mb`` over ``--still-s`` (the voices
  warm in the background after readiness), at most ``--settle-timeout`` seconds later;
- **live**: the peak while one presenter streams the first ``--seconds`` of a real English
  recording in real time into a session that offers ``--lang``, with one listener of that
  language who asked for the spoken translation;
- **after**: at rest again, once the session has ended.

It reports what each configuration held and what the listener got (finals in ``--lang`` and
audio chunks by voice kind), so a configuration that served less is visible. No goal: the
figures size a deployment (README, "Deploying"; docs/metrics.md, "Memory").
"""

from __future__ import annotations

import argparse
import asyncio
import shlex
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from bench.churn import parse_env
from bench.format import MISSING, fixed, machine_detail, mib, utc_now, write_report_files
from bench.paths import RESULTS
from bench.recordings import EVAL_LONGFORM_EN, Recording, load_recording
from bench.replay import ReplayError, trimmed
from bench.resources import RssSampler, footprint, machine_info
from bench.server import ServerError, ServerHandle, server_under_test
from bench.speech import ListenerLog, present_to_listener

CONFIGS: dict[str, dict[str, str]] = {
    "defaults": {},
    "espeak-ng voices": {"INTERP_NATURAL_VOICES": "0"},
    "no spoken translation": {"INTERP_SPEECH": "0"},
    "English only": {"INTERP_MULTILINGUAL": "0"},
    "English only, no spoken translation": {"INTERP_MULTILINGUAL": "0", "INTERP_SPEECH": "0"},
}
"""The settings README's "Settings" table names for saving memory, alone and together."""
DEFAULT_RECORDING = EVAL_LONGFORM_EN / "librivox_shakespeare_sonnet_001.wav"
DEFAULT_SECONDS = 45.0
DEFAULT_LANG = "es"
"""A Kokoro language in the defaults: the spoken translation's largest model is live."""
DEFAULT_STILL_MB = 2.0
DEFAULT_STILL_S = 10.0
DEFAULT_SETTLE_TIMEOUT_S = 120.0
DEFAULT_READY_TIMEOUT_S = 180.0
STILL_POLL_S = 1.0


@dataclass(frozen=True, slots=True)
class MemorySettings:
    """What ``python -m bench memory`` was asked to do."""

    configs: Mapping[str, Mapping[str, str]]
    recording: Path
    out: Path
    seconds: float = DEFAULT_SECONDS
    lang: str = DEFAULT_LANG
    still_mb: float = DEFAULT_STILL_MB
    still_s: float = DEFAULT_STILL_S
    settle_timeout: float = DEFAULT_SETTLE_TIMEOUT_S
    ready_timeout: float = DEFAULT_READY_TIMEOUT_S


@dataclass(frozen=True, slots=True)
class ConfigRun:
    """One configuration's readings, in bytes; ``error`` when its server did not start
    (no readings) or its live part failed (none from there on)."""

    name: str
    env: Mapping[str, str]
    ready_bytes: int | None = None
    rest_bytes: int | None = None
    live_peak_bytes: int | None = None
    after_bytes: int | None = None
    finals: int = 0
    natural_chunks: int = 0
    fast_chunks: int = 0
    error: str | None = None


async def rss_at_rest(pid: int, settings: MemorySettings) -> int:
    """The process's RSS once it stayed within ``still_mb`` for ``still_s`` (or its last
    reading when ``settle_timeout`` runs out). Memory has no change notification: this polls."""
    process = psutil.Process(pid)
    readings: list[int] = []
    window = max(1, round(settings.still_s / STILL_POLL_S))
    loop = asyncio.get_running_loop()
    deadline = loop.time() + settings.settle_timeout
    while True:
        readings.append(int(process.memory_info().rss))
        recent = readings[-window - 1 :]
        if len(recent) > window and max(recent) - min(recent) < settings.still_mb * 1e6:
            return readings[-1]
        if loop.time() >= deadline:
            return readings[-1]
        await asyncio.sleep(STILL_POLL_S)


async def live_session(
    server: ServerHandle, recording: Recording, lang: str
) -> tuple[RssSampler, ListenerLog]:
    """One presenter streams ``recording`` in real time; one ``lang`` listener hears it."""
    async with RssSampler(server.pid) as rss:
        _, log = await present_to_listener(server.base_url, recording, lang, "bench memory")
    return rss, log


async def measure_config(
    name: str, env: Mapping[str, str], recording: Recording, settings: MemorySettings
) -> ConfigRun:
    """Start a server with ``env``, read it at rest, live and after."""
    log_path = settings.out / f"server-memory-{'-'.join(name.split())}.log"
    try:
        async with server_under_test(None, None, log_path, settings.ready_timeout, env) as server:
            assert server.pid is not None
            ready = footprint(server.pid).rss_bytes
            rest = await rss_at_rest(server.pid, settings)
            try:
                rss, log = await live_session(server, recording, settings.lang)
            except (ReplayError, OSError, TimeoutError) as error:
                return ConfigRun(name, env, ready, rest, error=repr(error))
            after = await rss_at_rest(server.pid, settings)
    except ServerError as error:
        first_line = str(error).splitlines()[0]
        return ConfigRun(name, env, error=first_line)
    kinds = [str(header.get("voice", "")) for _, header, _ in log.chunks]
    return ConfigRun(
        name,
        env,
        ready,
        rest,
        rss.peak_bytes,
        after,
        finals=len(log.finals),
        natural_chunks=kinds.count("natural"),
        fast_chunks=kinds.count("fast"),
    )


async def run_memory(settings: MemorySettings) -> list[ConfigRun]:
    """Every configuration, one server after another."""
    recording = trimmed(load_recording(settings.recording), settings.seconds)
    return [
        await measure_config(name, env, recording, settings)
        for name, env in settings.configs.items()
    ]


# --- the report ---------------------------------------------------------------------------


def report_json(
    runs: Sequence[ConfigRun], settings: MemorySettings, command: str
) -> dict[str, Any]:
    """The report: each configuration's readings in MiB and what its listener got."""
    return {
        "created_utc": utc_now(),
        "command": command,
        "machine": machine_info(),
        "recording": settings.recording.name,
        "seconds": settings.seconds,
        "lang": settings.lang,
        "still": {"mb": settings.still_mb, "s": settings.still_s},
        "configs": [
            {
                "name": run.name,
                "env": dict(run.env),
                "ready_mib": mib(run.ready_bytes),
                "rest_mib": mib(run.rest_bytes),
                "live_peak_mib": mib(run.live_peak_bytes),
                "after_mib": mib(run.after_bytes),
                "finals": run.finals,
                "audio_chunks": {"natural": run.natural_chunks, "fast": run.fast_chunks},
                "error": run.error,
            }
            for run in runs
        ],
    }


def report_markdown(report: Mapping[str, Any]) -> str:
    """The report as a Markdown table, one row per configuration."""
    lang = report["lang"]
    lines = [
        "# Server memory by configuration (`python -m bench memory`)",
        "",
        f"{report['created_utc']}; `{report['command']}`",
        "",
        f"Machine: {machine_detail(report['machine'])}",
        "",
        f"| configuration | settings | ready | at rest | live peak | after | {lang} finals "
        "| audio chunks natural / fast |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for run in report["configs"]:
        env = " ".join(f"`{k}={v}`" for k, v in run["env"].items()) or "none"
        chunks = run["audio_chunks"]
        live = fixed(run["live_peak_mib"], 0) if run["error"] is None else f"failed: {run['error']}"
        lines.append(
            f"| {run['name']} | {env} | {fixed(run['ready_mib'], 0)} "
            f"| {fixed(run['rest_mib'], 0)} | {live} | {fixed(run['after_mib'], 0)} "
            f"| {run['finals'] if run['error'] is None else MISSING} "
            f"| {chunks['natural']} / {chunks['fast']} |"
        )
    still = report["still"]
    lines += [
        "",
        "Resident memory (RSS) of the server process in MiB: when `/readyz` first answered "
        f"200; at rest (within {still['mb']:g} MB for {still['s']:g} s); the peak while one "
        f"presenter streamed the first {report['seconds']:g} s of {report['recording']} in "
        f"real time into a session offering {lang}, with one {lang} listener who asked for "
        "audio; at rest again after the session ended.",
        "",
    ]
    return "\n".join(lines)


def parse_config(spec: str) -> tuple[str, dict[str, str]]:
    """``NAME=ENV,ENV`` as its name and settings (``"lean=INTERP_SPEECH=0"``); ``ValueError``
    for a malformed setting or an empty name."""
    name, _, rest = spec.partition("=")
    if not name.strip():
        raise ValueError(f"expected NAME=ENV,ENV, got {spec!r}")
    return name.strip(), parse_env([item for item in rest.split(",") if item])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench memory", description=__doc__)
    parser.add_argument(
        "--config",
        action="append",
        metavar="NAME=ENV,ENV",
        help="a configuration to measure instead of the defaults: a name, then settings "
        "as NAME=VALUE separated by commas (repeatable), e.g. 'lean=INTERP_SPEECH=0'",
    )
    parser.add_argument("--recording", type=Path, default=DEFAULT_RECORDING)
    parser.add_argument("--seconds", type=float, default=DEFAULT_SECONDS)
    parser.add_argument("--lang", default=DEFAULT_LANG)
    parser.add_argument("--still-mb", type=float, default=DEFAULT_STILL_MB)
    parser.add_argument("--still-s", type=float, default=DEFAULT_STILL_S)
    parser.add_argument("--settle-timeout", type=float, default=DEFAULT_SETTLE_TIMEOUT_S)
    parser.add_argument("--ready-timeout", type=float, default=DEFAULT_READY_TIMEOUT_S)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    configs = dict(parse_config(spec) for spec in args.config) if args.config else CONFIGS
    settings = MemorySettings(
        configs=configs,
        recording=args.recording,
        out=args.out,
        seconds=args.seconds,
        lang=args.lang,
        still_mb=args.still_mb,
        still_s=args.still_s,
        settle_timeout=args.settle_timeout,
        ready_timeout=args.ready_timeout,
    )
    runs = asyncio.run(run_memory(settings))
    command = shlex.join(["python", "-m", "bench", "memory", *(argv or sys.argv[1:])])
    report = report_json(runs, settings, command)
    markdown = report_markdown(report)
    write_report_files(args.out, "memory", report, markdown)
    print(markdown)
    return 1 if any(run.error for run in runs) else 0
