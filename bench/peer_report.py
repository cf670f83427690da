"""The peer comparison report: ``peer.json`` (everything) and ``peer.md`` (side-by-side tables).

Per-system sections reuse ``bench.report``'s JSON helpers, so every field means what it means
in the captions benchmark; the only difference is ``erasure``, which here is the display-level
erasure for both systems (``bench.peer_mapping``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench.alignment import WordErrors
from bench.captions import Overall, overall, ratio
from bench.format import fixed, machine_line, mark, utc_now, write_report_files, write_trace
from bench.metrics import CAUSAL_SLACK_S
from bench.peer_run import Load, PeerRunSettings, SystemRun
from bench.peer_server import peer_versions
from bench.reference import DecodeSettings, whisper_model_dir
from bench.report import file_json, overall_json, trace_json
from bench.resources import machine_info

PEER_NAME = "WhisperLiveKit"


@dataclass(frozen=True, slots=True)
class PeerGoals:
    """Targets for ours / peer."""

    draft_latency_p50_ratio_max: float = 0.5
    final_latency_p50_ratio_max: float = 0.7
    wer_ratio_max: float = 1.0
    """Ours / peer WER: at most 1 means no worse."""


@dataclass(frozen=True, slots=True)
class Row:
    """One compared metric: how to read it from a system's overall metrics."""

    label: str
    read: Callable[[Overall], float | None]
    digits: int = 2


def wer_of(errors: WordErrors) -> float | None:
    """WER, or ``None`` without reference words."""
    return None if errors.reference_words == 0 else errors.wer


ROWS: tuple[Row, ...] = (
    Row("WER", lambda o: wer_of(o.errors), 3),
    Row("WER / offline WER", lambda o: o.wer_ratio),
    Row("draft latency p50 (s)", lambda o: o.draft_latency.p50),
    Row("draft latency p95 (s)", lambda o: o.draft_latency.p95),
    Row("draft latency mean (s)", lambda o: o.draft_latency.mean),
    Row("final latency p50 (s)", lambda o: o.final_latency.p50),
    Row("final latency p95 (s)", lambda o: o.final_latency.p95),
    Row("final latency mean (s)", lambda o: o.final_latency.mean),
    Row("words never shown", lambda o: float(o.never_shown), 0),
    Row("words never final", lambda o: float(o.never_final), 0),
    Row("time to first caption, median (s)", lambda o: o.time_to_first_caption.p50),
    Row("end lag, median (s)", lambda o: o.end_lag.p50),
    Row("erasure (whole display)", lambda o: o.erasure.normalised, 3),
    Row("CPU s per audio s", lambda o: o.cpu_per_audio_second, 3),
    Row("real-time factor", lambda o: o.real_time_factor, 3),
)


def comparison(ours: Overall, peer: Overall) -> list[dict[str, Any]]:
    """Every row with both values and ``ratio`` = ours / peer (``None`` where undefined)."""
    out: list[dict[str, Any]] = []
    for row in ROWS:
        mine, theirs = row.read(ours), row.read(peer)
        quotient = None if mine is None or theirs is None else ratio(mine, theirs)
        out.append({"metric": row.label, "ours": mine, "peer": theirs, "ratio": quotient})
    return out


def goals_met(ours: Overall, peer: Overall, goals: PeerGoals) -> dict[str, Any]:
    """The three ratios the goals are about, and whether each is met (``None``: unmeasured)."""
    draft = _ratio(ours.draft_latency.p50, peer.draft_latency.p50)
    final = _ratio(ours.final_latency.p50, peer.final_latency.p50)
    wer = _ratio(wer_of(ours.errors), wer_of(peer.errors))

    def within(value: float | None, limit: float) -> bool | None:
        return None if value is None else value <= limit

    return {
        "draft_latency_p50_ratio": draft,
        "final_latency_p50_ratio": final,
        "wer_ratio": wer,
        "met": {
            "draft_latency_p50": within(draft, goals.draft_latency_p50_ratio_max),
            "final_latency_p50": within(final, goals.final_latency_p50_ratio_max),
            "wer": within(wer, goals.wer_ratio_max),
        },
    }


def _ratio(mine: float | None, theirs: float | None) -> float | None:
    return None if mine is None or theirs is None else ratio(mine, theirs)


def system_json(run: SystemRun) -> dict[str, Any]:
    """One system's section: how it ran, overall and per-file metrics (``bench.report``)."""
    files = []
    for index, result in enumerate(run.results):
        entry = file_json(result)
        entry["erasure_per_segment"] = run.segment_erasure[index].normalised
        load = run.loads[index]
        entry["load_average_1m"] = {"before": round(load.before, 2), "after": round(load.after, 2)}
        if run.peer_replays:
            mapped = run.peer_replays[index].mapped
            entry["mapping"] = {
                "rewrites": mapped.rewrites,
                "uncommitted_words": mapped.uncommitted_words,
                "raw_messages": len(run.peer_replays[index].raw),
            }
        files.append(entry)
    return {
        "server_command": list(run.server_command),
        "server_log": str(run.server_log),
        "overall": overall_json(overall(run.results), len(run.results)),
        "files": files,
    }


def report_json(
    ours: SystemRun,
    peer: SystemRun,
    settings: PeerRunSettings,
    goals: PeerGoals,
    command: str,
) -> dict[str, Any]:
    """The whole report as JSON-ready data."""
    ours_overall, peer_overall = overall(ours.results), overall(peer.results)
    decode = DecodeSettings(model=settings.model)
    return {
        "benchmark": "peer",
        "mode": "realtime",
        "command": command,
        "created_utc": utc_now(),
        "machine": machine_info(),
        "model_dir": str(whisper_model_dir(settings.model)),
        "peer": {"name": PEER_NAME, "versions": peer_versions(settings.peer_venv)},
        "offline_baseline": asdict(decode),
        "normalisation": "docs/metrics.md#normalisation",
        "erasure_definition": "docs/metrics.md#peer-comparison (whole displayed transcript)",
        "causal_slack_s": CAUSAL_SLACK_S,
        "goals": asdict(goals),
        "goals_met": goals_met(ours_overall, peer_overall, goals),
        "comparison": comparison(ours_overall, peer_overall),
        "systems": {"ours": system_json(ours), "peer": system_json(peer)},
        "end_timeout_s": settings.end_timeout,
        "peer_never_caught_up": list(peer.never_caught_up),
    }


def _both(ours: float | None, peer: float | None, digits: int = 2) -> str:
    return f"{fixed(ours, digits)} / {fixed(peer, digits)}"


def _load(load: Load) -> str:
    return f"{load.before:.1f}→{load.after:.1f}"


def _per_file_rows(ours: SystemRun, peer: SystemRun) -> list[str]:
    rows = []
    for mine, theirs, ours_load, peer_load in zip(
        ours.results, peer.results, ours.loads, peer.loads, strict=True
    ):
        rows.append(
            f"| {mine.recording} | {fixed(mine.audio_seconds, 1)} "
            f"| {_both(wer_of(mine.errors), wer_of(theirs.errors), 3)} "
            f"| {_both(mine.draft_latency.p50, theirs.draft_latency.p50)} "
            f"| {_both(mine.final_latency.p50, theirs.final_latency.p50)} "
            f"| {_both(mine.time_to_first_caption_s, theirs.time_to_first_caption_s)} "
            f"| {_both(mine.end_lag_s, theirs.end_lag_s)} "
            f"| {_both(mine.erasure.normalised, theirs.erasure.normalised, 3)} "
            f"| {_both(mine.cpu_per_audio_second, theirs.cpu_per_audio_second, 3)} "
            f"| {_load(ours_load)} / {_load(peer_load)} |"
        )
    return rows


def report_markdown(report: dict[str, Any], ours: SystemRun, peer: SystemRun) -> str:
    """The report's tables in Markdown."""
    machine, goals, met = report["machine"], report["goals"], report["goals_met"]
    versions = report["peer"]["versions"]
    lines = [
        f"# Peer comparison: ours vs {PEER_NAME}, realtime replay",
        "",
        f"- Command: `{report['command']}`",
        f"- Machine: {machine_line(machine)}; shared with other work: "
        "the 1-minute load average before → after each replay is in the per-file table",
        f"- Date (UTC): {report['created_utc']}",
        f"- Model for both: `{report['model_dir']}` (tiny.en, CTranslate2)",
        f"- {PEER_NAME} {versions['whisperlivekit']} (faster-whisper {versions['faster-whisper']}, "
        f"ctranslate2 {versions['ctranslate2']}): `--backend faster-whisper --backend-policy "
        "localagreement --lan en --pcm-input`, its defaults otherwise (VAC on); shown = "
        "committed lines + buffer, final = committed lines",
        "- Same recordings, 100 ms chunks on the same real-time schedule, same reference word "
        "times, same metric code; both servers up, one replay at a time, the order alternating "
        "per recording (ours first for the 1st, 3rd, ...)",
        "",
        *(
            [
                f"- **{PEER_NAME} never caught up** (its captions unfinished "
                f"{report['end_timeout_s']:.0f} s after the audio ended), left out of the "
                f"comparison for both systems: {', '.join(peer.never_caught_up)}",
            ]
            if peer.never_caught_up
            else []
        ),
        "",
        "## Goals",
        "",
        "| goal | target | measured | met |",
        "|---|---|---|---|",
        f"| draft latency p50, ours / peer | <= {goals['draft_latency_p50_ratio_max']} "
        f"| {fixed(met['draft_latency_p50_ratio'])} | {mark(met['met']['draft_latency_p50'])} |",
        f"| final latency p50, ours / peer | <= {goals['final_latency_p50_ratio_max']} "
        f"| {fixed(met['final_latency_p50_ratio'])} | {mark(met['met']['final_latency_p50'])} |",
        f"| WER, ours / peer | <= {goals['wer_ratio_max']} "
        f"| {fixed(met['wer_ratio'])} | {mark(met['met']['wer'])} |",
        "",
        "## Overall",
        "",
        f"| metric | ours | {PEER_NAME} | ours / peer |",
        "|---|---|---|---|",
    ]
    for row, entry in zip(ROWS, report["comparison"], strict=True):
        lines.append(
            f"| {row.label} | {fixed(entry['ours'], row.digits)} "
            f"| {fixed(entry['peer'], row.digits)} "
            f"| {fixed(entry['ratio'])} |"
        )
    lines += [
        "",
        "## Per file (ours / peer)",
        "",
        "| recording | audio s | WER | draft p50 s | final p50 s | first caption s | end lag s "
        "| erasure | CPU s per audio s | load 1 min |",
        "|---|---|---|---|---|---|---|---|---|---|",
        *_per_file_rows(ours, peer),
        "",
        "Latencies are over all reference words of all files; WER is total errors over total "
        "reference words; erasure counts words taken off the whole displayed transcript "
        '(docs/metrics.md, "Peer comparison"). Lower is better everywhere, so a ratio '
        "below 1 favours ours.",
        "",
    ]
    return "\n".join(lines)


def peer_trace_json(run: SystemRun, index: int) -> dict[str, Any]:
    """WhisperLiveKit's raw messages of one replay, times since the socket opened, with the
    send schedule and the caption events they were mapped to."""
    peer_replay = run.peer_replays[index]
    trace = trace_json(peer_replay.replay)
    t0 = peer_replay.replay.start_sent
    trace["raw"] = [[r.arrival - t0, r.message] for r in peer_replay.raw]
    return trace


def write_peer_report(
    ours: SystemRun,
    peer: SystemRun,
    settings: PeerRunSettings,
    command: str,
    goals: PeerGoals | None = None,
) -> tuple[Path, Path, str]:
    """Write ``peer.json``, ``peer.md`` and one trace per system and recording under
    ``traces/`` into ``settings.out``; return both paths and the Markdown."""
    report = report_json(ours, peer, settings, goals or PeerGoals(), command)
    markdown = report_markdown(report, ours, peer)
    json_path, md_path = write_report_files(settings.out, "peer", report, markdown)
    for recorded in ours.replays:
        write_trace(settings.out, f"peer-ours-{recorded.recording}", trace_json(recorded))
    for index, recorded in enumerate(peer.replays):
        name = f"peer-whisperlivekit-{recorded.recording}"
        write_trace(settings.out, name, peer_trace_json(peer, index))
    return json_path, md_path, markdown
