"""The captions report: JSON (everything, per word) and Markdown (the tables), plus traces."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bench.alignment import WordErrors
from bench.captions import CaptionRun, FileResult, Goals, Overall, RunSettings, overall
from bench.corpus import class_of
from bench.format import fixed, machine_detail, mark, utc_now, write_report_files, write_trace
from bench.metrics import CAUSAL_SLACK_S, Distribution
from bench.reference import whisper_model_dir
from bench.replay import Replay
from bench.resources import machine_info


def _errors(errors: WordErrors) -> dict[str, int]:
    return {
        "substitutions": errors.substitutions,
        "deletions": errors.deletions,
        "insertions": errors.insertions,
        "hits": errors.hits,
    }


def _wer(errors: WordErrors) -> float | None:
    return None if errors.reference_words == 0 else errors.wer


def _distribution(d: Distribution) -> dict[str, Any]:
    return asdict(d)


def file_json(result: FileResult) -> dict[str, Any]:
    """One recording's metrics, with per-word latencies."""
    return {
        "recording": result.recording,
        "audio_s": result.audio_seconds,
        "reference_words": result.errors.reference_words,
        "wer": _wer(result.errors),
        "errors": _errors(result.errors),
        "offline_wer": _wer(result.offline_errors),
        "offline_errors": _errors(result.offline_errors),
        "wer_ratio": result.wer_ratio,
        "draft_latency_s": _distribution(result.draft_latency),
        "final_latency_s": _distribution(result.final_latency),
        "words_never_shown": result.latencies.never_shown,
        "words_never_final": result.latencies.never_final,
        "time_to_first_caption_s": result.time_to_first_caption_s,
        "end_lag_s": result.end_lag_s,
        "erasure": result.erasure.normalised,
        "retracted_words": result.erasure.retracted_words,
        "final_words": result.erasure.final_words,
        "wall_s": result.wall_seconds,
        "real_time_factor": result.real_time_factor,
        "server_cpu_s": result.server_cpu_seconds,
        "cpu_per_audio_s": result.cpu_per_audio_second,
        "caption_events": {"draft": result.draft_events, "final": result.final_events},
        "segments": result.segments,
        "hypothesis": result.hypothesis,
        "offline_hypothesis": result.offline_hypothesis,
        "words": [
            {
                "word": word.text,
                "start": word.start,
                "end": word.end,
                "draft_latency_s": shown,
                "final_latency_s": final,
            }
            for word, shown, final in zip(
                result.reference, result.latencies.shown, result.latencies.final, strict=True
            )
        ],
    }


def overall_json(summary: Overall, files: int) -> dict[str, Any]:
    """The metrics over all recordings."""
    return {
        "files": files,
        "audio_s": summary.audio_seconds,
        "reference_words": summary.errors.reference_words,
        "wer": _wer(summary.errors),
        "errors": _errors(summary.errors),
        "offline_wer": _wer(summary.offline_errors),
        "offline_errors": _errors(summary.offline_errors),
        "wer_ratio": summary.wer_ratio,
        "draft_latency_s": _distribution(summary.draft_latency),
        "final_latency_s": _distribution(summary.final_latency),
        "words_never_shown": summary.never_shown,
        "words_never_final": summary.never_final,
        "time_to_first_caption_s": _distribution(summary.time_to_first_caption),
        "end_lag_s": _distribution(summary.end_lag),
        "erasure": summary.erasure.normalised,
        "retracted_words": summary.erasure.retracted_words,
        "final_words": summary.erasure.final_words,
        "wall_s": summary.wall_seconds,
        "real_time_factor": summary.real_time_factor,
        "server_cpu_s": summary.server_cpu_seconds,
        "cpu_per_audio_s": summary.cpu_per_audio_second,
    }


def goals_met(summary: Overall, goals: Goals) -> dict[str, bool | None]:
    """Whether each goal is met overall (``None`` when it could not be measured)."""
    draft, final, wer_ratio = (
        summary.draft_latency.p50,
        summary.final_latency.p50,
        summary.wer_ratio,
    )
    return {
        "draft_latency_p50": None if draft is None else draft <= goals.draft_latency_p50_s,
        "final_latency_p50": None if final is None else final <= goals.final_latency_p50_s,
        "wer_ratio": None if wer_ratio is None else wer_ratio <= goals.wer_ratio_max,
    }


def report_json(
    run: CaptionRun, settings: RunSettings, summary: Overall, goals: Goals, command: str
) -> dict[str, Any]:
    """The whole report as JSON-ready data."""
    return {
        "benchmark": "captions",
        "mode": settings.mode,
        "command": command,
        "created_utc": utc_now(),
        "machine": machine_info(),
        "server": {
            "url": run.server_url,
            "started_by_bench": run.server_started,
            "log": str(run.server_log) if run.server_log else None,
            "cpu_measured": summary.server_cpu_seconds is not None,
        },
        "offline_baseline": {
            **asdict(settings.decode),
            "model_dir": str(whisper_model_dir(settings.decode.model)),
        },
        "normalisation": "docs/metrics.md#normalisation",
        "causal_slack_s": CAUSAL_SLACK_S,
        "goals": asdict(goals),
        "goals_met": goals_met(summary, goals),
        "overall": overall_json(summary, len(run.results)),
        "classes": {
            name: overall_json(
                group, sum(1 for r in run.results if (class_of(r.recording) or "other") == name)
            )
            for name, group in by_class(run.results).items()
        },
        "files": [file_json(r) for r in run.results],
    }


def _pair(d: Distribution) -> str:
    return f"{fixed(d.p50)} / {fixed(d.p95)}"


def report_markdown(report: dict[str, Any], run: CaptionRun, summary: Overall) -> str:
    """The report's tables in Markdown."""
    goals, met, machine = report["goals"], report["goals_met"], report["machine"]
    lines = [
        f"# Live captions benchmark, {report['mode']} replay",
        "",
        f"- Command: `{report['command']}`",
        f"- Machine: {machine_detail(machine)}",
        f"- Date (UTC): {report['created_utc']}",
        f"- Offline baseline and reference word times: {report['offline_baseline']['model']}, "
        f"beam {report['offline_baseline']['beam_size']}, whole file",
        '- Text normalised by Whisper\'s English normaliser (docs/metrics.md, "Normalisation")',
        "",
        "## Goals (overall)",
        "",
        "| metric | goal | measured | met |",
        "|---|---|---|---|",
        f"| draft latency p50 (s) | <= {goals['draft_latency_p50_s']} "
        f"| {fixed(summary.draft_latency.p50)} | {mark(met['draft_latency_p50'])} |",
        f"| final latency p50 (s) | <= {goals['final_latency_p50_s']} "
        f"| {fixed(summary.final_latency.p50)} | {mark(met['final_latency_p50'])} |",
        f"| WER streaming / offline | <= {goals['wer_ratio_max']} "
        f"| {fixed(summary.wer_ratio)} | {mark(met['wer_ratio'])} |",
        "",
        "## Per file",
        "",
        "| recording | audio s | WER | offline WER | ratio | draft p50 / p95 s "
        "| final p50 / p95 s | never shown / final | first caption s | end lag s "
        "| erasure | RTF | CPU s per audio s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in run.results:
        lines.append(
            f"| {r.recording} | {fixed(r.audio_seconds, 1)} | {fixed(_wer(r.errors), 3)} "
            f"| {fixed(_wer(r.offline_errors), 3)} | {fixed(r.wer_ratio)} "
            f"| {_pair(r.draft_latency)} "
            f"| {_pair(r.final_latency)} | {r.latencies.never_shown} / {r.latencies.never_final} "
            f"| {fixed(r.time_to_first_caption_s)} | {fixed(r.end_lag_s)} "
            f"| {fixed(r.erasure.normalised, 3)} | {fixed(r.real_time_factor, 3)} "
            f"| {fixed(r.cpu_per_audio_second, 3)} |"
        )
    lines.append(
        f"| **overall** | {fixed(summary.audio_seconds, 1)} | {fixed(_wer(summary.errors), 3)} "
        f"| {fixed(_wer(summary.offline_errors), 3)} | {fixed(summary.wer_ratio)} "
        f"| {_pair(summary.draft_latency)} | {_pair(summary.final_latency)} "
        f"| {summary.never_shown} / {summary.never_final} "
        f"| {fixed(summary.time_to_first_caption.p50)} (median) "
        f"| {fixed(summary.end_lag.p50)} (median) | {fixed(summary.erasure.normalised, 3)} "
        f"| {fixed(summary.real_time_factor, 3)} | {fixed(summary.cpu_per_audio_second, 3)} |"
    )
    lines += class_lines(run.results)
    lines += [
        "",
        "Latency p50 / p95 are over all reference words (overall: all words of all files). "
        "WER overall = total errors / total reference words. RTF = wall time from the first "
        "audio chunk to `ended`, divided by audio duration"
        + (
            "; in realtime mode it is about 1 by construction."
            if report["mode"] == "realtime"
            else "; in fast mode latencies include queueing behind the whole file."
        ),
        "",
    ]
    return "\n".join(lines)


def by_class(results: Sequence[FileResult]) -> dict[str, Overall]:
    """The results grouped by speech class (bench/corpus.py), each aggregated like the whole."""
    groups: dict[str, list[FileResult]] = {}
    for r in results:
        groups.setdefault(class_of(r.recording) or "other", []).append(r)
    return {name: overall(group) for name, group in groups.items()}


def class_lines(results: Sequence[FileResult]) -> list[str]:
    """A table per speech class: the quality gap the wave is judged on is the worst class's."""
    classes = by_class(results)
    if len(classes) < 2:
        return []
    lines = [
        "",
        '## Per speech class (docs/metrics.md, "Classes")',
        "",
        "| class | files | audio s | WER | offline WER | ratio | final p50 / p95 s |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, summary in classes.items():
        files = sum(1 for r in results if (class_of(r.recording) or "other") == name)
        lines.append(
            f"| {name} | {files} | {fixed(summary.audio_seconds, 1)} "
            f"| {fixed(_wer(summary.errors), 3)} | {fixed(_wer(summary.offline_errors), 3)} "
            f"| {fixed(summary.wer_ratio)} | {_pair(summary.final_latency)} |"
        )
    worst = max(classes.items(), key=lambda item: item[1].wer_ratio or 0.0)
    lines.append(f"\nWorst class by WER ratio: **{worst[0]}** ({fixed(worst[1].wer_ratio)}).")
    return lines


def trace_json(recorded: Replay) -> dict[str, Any]:
    """One replay's raw record, times in seconds since ``start`` was sent."""
    t0 = recorded.start_sent
    return {
        "recording": recorded.recording,
        "mode": recorded.mode,
        "session_code": recorded.session_code,
        "ready_at": recorded.ready_at - t0,
        "stop_sent": recorded.stop_sent - t0,
        "ended_at": recorded.ended_at - t0,
        "server_cpu_s": recorded.server_cpu_seconds,
        "binary_messages": recorded.binary_messages,
        "sample_rate": recorded.schedule.sample_rate,
        "chunks": [
            [end, sent - t0]
            for end, sent in zip(
                recorded.schedule.chunk_end_samples, recorded.schedule.send_times, strict=True
            )
        ],
        "received": [[r.arrival - t0, r.message] for r in recorded.received],
    }


def write_report(
    run: CaptionRun, settings: RunSettings, goals: Goals, command: str
) -> tuple[Path, Path, str]:
    """Write ``captions-<mode>.json`` and ``.md`` (and one trace per recording under
    ``traces/``) into ``settings.out``; return both paths and the Markdown."""
    summary = overall(run.results)
    report = report_json(run, settings, summary, goals, command)
    markdown = report_markdown(report, run, summary)
    name = f"captions-{settings.mode}"
    json_path, md_path = write_report_files(settings.out, name, report, markdown)
    for recorded in run.replays:
        write_trace(settings.out, f"{name}-{recorded.recording}", trace_json(recorded))
    return json_path, md_path, markdown
