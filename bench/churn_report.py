"""The churn report: ``churn.json`` (the readings, every session's outcome in counts, the
series) and ``churn.md`` (the table). Definitions: docs/metrics.md, "Churn"."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.format import MISSING, fixed, machine_line, utc_now, verdict, write_report_files
from bench.metrics import distribution
from bench.resources import Footprint, machine_info

if TYPE_CHECKING:
    from bench.churn import Checkpoint, ChurnRun, ChurnSettings, SessionResult

MB = 1e6


def footprint_json(point: Footprint) -> dict[str, Any]:
    return {
        "rss_mb": round(point.rss_bytes / MB, 1),
        "fds": point.fds,
        "threads": point.threads,
    }


def checkpoint_json(point: Checkpoint | None) -> dict[str, Any] | None:
    """A checkpoint's floor, its window and the highest RSS read in it."""
    if point is None:
        return None
    return {
        "sessions": point.sessions,
        "window": [point.readings[0].sessions, point.sessions],
        **footprint_json(point.floor),
        "rss_max_mb": round(point.rss_max_bytes / MB, 1),
    }


def rate(results: Sequence[SessionResult]) -> float | None:
    """Sessions per second of session wall time (the bench's settling waits left out)."""
    seconds = sum(r.seconds for r in results)
    return len(results) / seconds if seconds > 0 else None


def outcomes_json(results: Sequence[SessionResult]) -> dict[str, Any]:
    """How the sessions went, in counts (docs/metrics.md, "Churn")."""
    problems = [f"{r.index}: {r.problem}" for r in results if not r.ok]
    return {
        "run": len(results),
        "ok": sum(r.ok for r in results),
        "ended": sum(r.ended for r in results),
        "end_answered_200": sum(r.end_status == 200 for r in results),
        "listeners_joined": sum(r.listener_joined for r in results),
        "listeners_saw_end": sum(r.listener_saw_end for r in results),
        "listeners_with_every_final": sum(r.listener_missing_finals == 0 for r in results),
        "finals_per_session": asdict(distribution(r.finals for r in results)),
        "failed": len(problems),
        "first_problems": problems[:10],
    }


def report_json(run: ChurnRun, settings: ChurnSettings, command: str) -> dict[str, Any]:
    """The whole report as JSON-ready data."""
    warmup, end = run.warmup, run.end
    growth = None
    goals_met: dict[str, bool | None] = {"rss": None, "fds": None}
    if warmup is not None and end is not None:
        before, after = warmup.floor, end.floor
        growth = {
            "rss_mb": round((after.rss_bytes - before.rss_bytes) / MB, 1),
            "fds": after.fds - before.fds,
            "threads": after.threads - before.threads,
        }
        goals_met = {
            "rss": after.rss_bytes - before.rss_bytes < settings.growth_limit_mb * MB,
            "fds": after.fds <= before.fds,
        }
    measured = [r for r in run.results if warmup is not None and r.index >= warmup.sessions]
    session_s = distribution(r.seconds for r in run.results)
    return {
        "benchmark": "churn",
        "command": command,
        "created_utc": utc_now(),
        "machine": machine_info(),
        "server": {"started_by_bench": True, "env": settings.server_env()},
        "recording": settings.clip.stem,
        "audio_s": round(run.audio_s, 2),
        "speed": settings.speed,
        "settle_s": settings.settle_s,
        "window": settings.window,
        "sessions_planned": settings.sessions,
        "warmup_sessions": settings.warmup,
        "stopped": run.stopped,
        "sessions": outcomes_json(run.results),
        "session_s": {k: v if v is None else round(v, 3) for k, v in asdict(session_s).items()},
        "sessions_per_s": {"all": rate(run.results), "after_warmup": rate(measured)},
        "start": footprint_json(run.start),
        "after_warmup": checkpoint_json(warmup),
        "end": checkpoint_json(end),
        "growth": growth,
        "goals": {"rss_growth_mb_under": settings.growth_limit_mb, "fds_growth_at_most": 0},
        "goals_met": goals_met,
        "goal_met": (
            None if None in goals_met.values() else bool(goals_met["rss"] and goals_met["fds"])
        ),
        "series_columns": ["sessions", "at_s", "rss_mb", "fds", "threads"],
        "series": [
            [r.sessions, round(r.at_s, 1), *footprint_json(r.footprint).values()]
            for r in run.readings
        ],
    }


def report_markdown(report: dict[str, Any]) -> str:
    """The report's table in Markdown."""
    sessions, warmup, end, growth = (
        report["sessions"],
        report["after_warmup"] or {},
        report["end"] or {},
        report["growth"] or {},
    )
    env = " ".join(f"{k}={v}" for k, v in report["server"]["env"].items())
    rates = report["sessions_per_s"]
    s = report["session_s"]
    lines = [
        "# Churn benchmark: many short sessions, one after another",
        "",
        f"- Command: `{report['command']}`",
        f"- Machine: {machine_line(report['machine'])}; server and bench on this machine "
        "(loopback)",
        f"- Date (UTC): {report['created_utc']}",
        f"- Each session: create, one listener, `{report['recording']}` "
        f"({report['audio_s']} s) streamed at {report['speed']:g}x real time, stop, end; "
        f"server started with `{env}`",
        f"- Goal: server RSS growth under {report['goals']['rss_growth_mb_under']:g} MB, files "
        f"flat, from session {report['warmup_sessions']} to the end: "
        f"{verdict(report['goal_met'])}",
    ]
    if report["stopped"]:
        lines.append(f"- **Stopped early**: {report['stopped']}")
    lines += [
        "",
        "| server | start | after warm-up | at the end | growth |",
        "|---|---|---|---|---|",
        f"| sessions (readings of the window) | 0 | {_window(warmup)} | {_window(end)} | |",
    ]
    for key, label, digits in (
        ("rss_mb", "resident memory (MB)", 1),
        ("fds", "open files", 0),
        ("threads", "threads", 0),
    ):
        lines.append(
            f"| {label} | {fixed(report['start'][key], digits)} "
            f"| {fixed(warmup.get(key), digits)} | {fixed(end.get(key), digits)} "
            f"| {fixed(growth.get(key), digits)} |"
        )
    lines += [
        f"| resident memory, highest reading (MB) | | {fixed(warmup.get('rss_max_mb'), 1)} "
        f"| {fixed(end.get('rss_max_mb'), 1)} | |",
        "",
        "| sessions run | stop answered `ended` | `end` answered 200 | listeners saw the end "
        "| listeners with every final | failed | session s p50 / p95 / max "
        "| sessions per s (all / after warm-up) |",
        "|---|---|---|---|---|---|---|---|",
        f"| {sessions['run']} / {report['sessions_planned']} | {sessions['ended']} "
        f"| {sessions['end_answered_200']} | {sessions['listeners_saw_end']} "
        f"| {sessions['listeners_with_every_final']} | {sessions['failed']} "
        f"| {fixed(s['p50'])} / {fixed(s['p95'])} / {fixed(s['max'])} "
        f"| {fixed(rates['all'])} / {fixed(rates['after_warmup'])} |",
        "",
        f"Readings {report['settle_s']:g} s after a session ended (psutil: RSS, "
        "`num_fds`, `num_threads` of the server process); a checkpoint is the lowest of "
        f"the readings after each session of its window (up to {report['window']} sessions). "
        "MB = 10^6 bytes. Sessions per second count the sessions' own wall time, not the "
        "waits before readings.",
    ]
    if sessions["first_problems"]:
        lines += ["", "First failed sessions:", ""]
        lines += [f"- {e}" for e in sessions["first_problems"]]
    lines.append("")
    return "\n".join(lines)


def _window(point: dict[str, Any]) -> str:
    if not point:
        return MISSING
    first, last = point["window"]
    return str(last) if first == last else f"{last} ({first}-{last})"


def write_report(run: ChurnRun, settings: ChurnSettings, command: str) -> tuple[list[Path], str]:
    """Write ``churn.json`` and ``churn.md`` into ``settings.out``."""
    report = report_json(run, settings, command)
    markdown = report_markdown(report)
    json_path, md_path = write_report_files(settings.out, "churn", report, markdown)
    return [json_path, md_path], markdown
