"""The subtitle bench's numbers (bench/screen.py): the screen's counters and the listeners'
latencies per run, pooled by condition (without / with the slow push targets), with the goals
of docs/metrics.md, "Subtitles". Pure: runs in, report out."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bench.deliveries import ListenerRecord
from bench.format import fixed, machine_detail, mark, ms, utc_now, verdict
from bench.metrics import percentile

MAX_LINE_CHARS = 42
DRAW_P95_GOAL_MS = 100.0
UNCHANGED_TOLERANCE_S = 0.05
"""How much later the p95 delivery delay may be with the slow push targets (noise)."""


@dataclass(frozen=True, slots=True)
class RunResult:
    """One replay: what the screen counted and what each listener received."""

    push: bool
    screen: Mapping[str, Any]
    """``window.interpSubtitles`` at the end (static/js/subtitles.js)."""
    listeners: tuple[ListenerRecord, ...]
    final_ends: Mapping[int, float]
    """``seq`` of each source final -> the audio second its speech ended."""
    audio_start_wall: float
    """Wall-clock time the replay's audio began (audio second 0 was sent)."""
    push_targets: tuple[Mapping[str, Any], ...] = ()
    recording_s: float = 0.0


def _stats(values: Sequence[float]) -> dict[str, float | int | None]:
    if not values:
        return {"count": 0, "p50": None, "p95": None, "max": None}
    return {
        "count": len(values),
        "p50": round(percentile(values, 50), 4),
        "p95": round(percentile(values, 95), 4),
        "max": round(max(values), 4),
    }


def delays(runs: Sequence[RunResult], kind: str) -> list[float]:
    """Delivery delays (seconds) of live ``kind`` events at every listener of ``runs``."""
    return [
        d.delay for run in runs for r in run.listeners for d in r.deliveries
        if d.live and d.kind == kind
    ]  # fmt: skip


def lags(runs: Sequence[RunResult]) -> list[float]:
    """Each final's arrival at each listener minus the moment its speech ended."""
    values: list[float] = []
    for run in runs:
        for record in run.listeners:
            for d in record.deliveries:
                end = run.final_ends.get(d.seq)
                if d.live and d.kind == "caption.final" and end is not None:
                    values.append(d.received - (run.audio_start_wall + end))
    return values


def condition(runs: Sequence[RunResult]) -> dict[str, Any]:
    """One condition's pooled numbers."""
    draw = [float(x) for run in runs for x in run.screen.get("drawMs", [])]
    dom = [float(x) for run in runs for x in run.screen.get("domMs", [])]
    longest = max((int(run.screen.get("longestLine", 0)) for run in runs), default=0)
    longest_text = next(
        (str(run.screen.get("longestText", "")) for run in runs
         if int(run.screen.get("longestLine", 0)) == longest),
        "",
    )  # fmt: skip
    return {
        "runs": len(runs),
        "screen": {
            "finals": sum(int(run.screen.get("finals", 0)) for run in runs),
            "drafts": sum(int(run.screen.get("drafts", 0)) for run in runs),
            "changed_after_moving_up": sum(
                int(run.screen.get("changedAfterScroll", 0)) for run in runs
            ),
            "longest_line_chars": longest,
            "longest_line": longest_text,
            "draw_ms": _stats(draw),
            "dom_ms": _stats(dom),
        },
        "listeners": {
            "final_delay_s": _stats(delays(runs, "caption.final")),
            "draft_delay_s": _stats(delays(runs, "caption.draft")),
            "final_lag_s": _stats(lags(runs)),
        },
        "push_targets": [dict(t) for run in runs for t in run.push_targets],
    }


def build_report(
    runs: Sequence[RunResult], recording: str, listeners: int, machine: Mapping[str, Any]
) -> dict[str, Any]:
    """The report: both conditions, the screen over every run, and the goals."""
    without = condition([r for r in runs if not r.push])
    with_push = condition([r for r in runs if r.push])
    every = condition(list(runs))
    screen = every["screen"]
    draw_p95 = screen["draw_ms"]["p95"]
    base = without["listeners"]["final_delay_s"]["p95"]
    slow = with_push["listeners"]["final_delay_s"]["p95"]
    unchanged = None if base is None or slow is None else slow <= base + UNCHANGED_TOLERANCE_S
    return {
        "bench": "screen",
        "created_utc": utc_now(),
        "recording": recording,
        "recording_s": round(max((r.recording_s for r in runs), default=0.0), 1),
        "listeners": listeners,
        "machine": dict(machine),
        "goals": {
            "changed_after_moving_up": 0,
            "longest_line_chars": MAX_LINE_CHARS,
            "draw_p95_ms": DRAW_P95_GOAL_MS,
            "delivery_p95_tolerance_s": UNCHANGED_TOLERANCE_S,
        },
        "met": {
            "unchanged_lines": screen["changed_after_moving_up"] == 0,
            "line_length": screen["longest_line_chars"] <= MAX_LINE_CHARS,
            "draw_p95": None if draw_p95 is None else draw_p95 <= DRAW_P95_GOAL_MS,
            "latency_unchanged_with_push": unchanged,
        },
        "screen": screen,
        "without_push": without,
        "with_push": with_push,
    }


def render_markdown(report: Mapping[str, Any]) -> str:
    """The report as docs/metrics.md shows it."""
    screen = report["screen"]
    met = report["met"]
    lines = [
        "# Subtitles: the venue screen and listeners with a slow push endpoint",
        "",
        f"Recording `{report['recording']}` ({report['recording_s']} s) replayed in real time, "
        f"the screen (1920x1080, 3 lines) in Chromium and {report['listeners']} listener "
        f"sockets following; {report['without_push']['runs']} runs without and "
        f"{report['with_push']['runs']} with the push targets, alternating. Command: "
        '`python -m bench screen`. Definitions: docs/metrics.md, "Subtitles".',
        "",
        f"Machine: {machine_detail(report['machine'])}. Created {report['created_utc']}.",
        "",
        "| screen | value | goal | met |",
        "|---|---|---|---|",
        f"| lines changed after they moved up | {screen['changed_after_moving_up']} | 0 | "
        f"{mark(met['unchanged_lines'])} |",
        f"| longest line (characters) | {screen['longest_line_chars']} | <= 42 | "
        f"{mark(met['line_length'])} |",
        f"| final reaching the page -> its line drawn, p50 / p95 (ms) | "
        f"{fixed(screen['draw_ms']['p50'], 1)} / {fixed(screen['draw_ms']['p95'], 1)} | "
        f"p95 <= 100 | {mark(met['draw_p95'])} |",
        f"| ... to the DOM change alone, p50 / p95 (ms) | {fixed(screen['dom_ms']['p50'], 1)} / "
        f"{fixed(screen['dom_ms']['p95'], 1)} | | |",
        f"| finals / drafts drawn | {screen['finals']} / {screen['drafts']} | | |",
        "",
        f'Longest line: "{screen["longest_line"]}".',
        "",
        "| listeners | without push | with push (5 s, never) |",
        "|---|---|---|",
    ]
    for key, label in (
        ("final_delay_s", "final delivery delay p50 / p95 (ms)"),
        ("draft_delay_s", "draft delivery delay p50 / p95 (ms)"),
        ("final_lag_s", "final after the end of its speech p50 / p95 (ms)"),
    ):
        a = report["without_push"]["listeners"][key]
        b = report["with_push"]["listeners"][key]
        lines.append(
            f"| {label} | {ms(a['p50'])} / {ms(a['p95'])} | {ms(b['p50'])} / {ms(b['p95'])} |"
        )
    lines += [
        "",
        f"Caption latency of other listeners unchanged with the slow push targets (p95 "
        f"delivery delay within 50 ms): {verdict(met['latency_unchanged_with_push'])}.",
        "",
        "| push target | sent | given up | dropped | last error |",
        "|---|---|---|---|---|",
    ]
    for target in report["with_push"]["push_targets"]:
        lines.append(
            f"| {target['service']} ({target['host']}) | {target['sent']} | {target['failed']} "
            f"| {target['dropped']} | {target['last_error'] or ''} |"
        )
    return "\n".join(lines) + "\n"
