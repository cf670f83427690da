"""The translation report: ``translation.json`` (everything), ``translation.md`` (the tables)
and one trace per talk."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bench.format import (
    fixed,
    machine_detail,
    mark,
    slashed,
    utc_now,
    write_report_files,
    write_trace,
)
from bench.metrics import Distribution, Erasure, distribution
from bench.resources import machine_info
from bench.translation import (
    CLIP_GAP_S,
    WHISPER_SEGMENT_MAX_S,
    Goals,
    LaneResult,
    TextRouteResult,
    TranslationRun,
    TranslationSettings,
)
from bench.translation_metrics import TextScore
from bench.translation_replay import TalkRun


def _kind(lane: LaneResult) -> str | None:
    return lane.final_backend.split(":", 1)[0] if lane.final_backend else None


def apertium_final_delay(lanes: Sequence[LaneResult]) -> Distribution:
    """Final delay over the segments that complete a sentence (``completes_sentence``) of
    the lanes whose finals come from Apertium: what the translation adds once its sentence
    is whole."""
    return distribution(
        t.final_delay_s
        for lane in lanes
        if _kind(lane) == "apertium"
        for t in lane.timings
        if t.completes_sentence
    )


def whisper_final_delay(lanes: Sequence[LaneResult]) -> Distribution:
    """Final delay over the segments of at most ``WHISPER_SEGMENT_MAX_S`` that complete a
    sentence, of the real-time lanes whose finals come from Whisper-translate."""
    return distribution(
        t.final_delay_s
        for lane in lanes
        if _kind(lane) == "whisper" and lane.mode == "realtime"
        for t in lane.timings
        if t.source_seconds <= WHISPER_SEGMENT_MAX_S and t.completes_sentence
    )


def laal_of(lanes: Sequence[LaneResult], kind: str) -> Distribution:
    """LAAL over every clip of the lanes whose finals come from ``kind`` (``whisper`` or
    ``apertium``)."""
    return distribution(v for lane in lanes if _kind(lane) == kind for v in lane.laal)


def total_erasure(lanes: Sequence[LaneResult], source: bool = False) -> Erasure:
    """Total retracted over total final words of the lanes' translations (or, with
    ``source``, of the source captions on the same sockets)."""
    return sum((lane.source_erasure if source else lane.erasure for lane in lanes), Erasure(0, 0))


def goals_met(run: TranslationRun, goals: Goals) -> dict[str, bool | None]:
    """Whether each goal is met (``None`` when the run did not measure it). Apertium delay and
    erasure come from the long-form talk, Whisper delay from the real-time FLEURS talks."""
    apertium = apertium_final_delay(run.latency).p95
    whisper = whisper_final_delay(run.speech).p50
    erasure = total_erasure(run.latency).normalised
    return {
        "apertium_final_delay_p95": (
            None if apertium is None else apertium <= goals.apertium_final_delay_p95_s
        ),
        "whisper_final_delay_p50": (
            None if whisper is None else whisper <= goals.whisper_final_delay_p50_s
        ),
        "translation_erasure": (
            None if erasure is None else erasure <= goals.translation_erasure_max
        ),
    }


def _score(score: TextScore | None) -> dict[str, Any] | None:
    return None if score is None else asdict(score)


def text_json(result: TextRouteResult) -> dict[str, Any]:
    return {
        "source": result.source,
        "target": result.target,
        "modes": list(result.modes),
        "sentences": result.sentences,
        "bleu": result.score.bleu if result.score else None,
        "chrf": result.score.chrf if result.score else None,
        "ms_per_sentence": asdict(result.ms_per_sentence),
        "warm_up_s": result.warm_up_s,
        "note": result.note,
    }


def lane_json(lane: LaneResult) -> dict[str, Any]:
    """One target language of one talk."""
    return {
        "talk": lane.talk,
        "source": lane.source,
        "target": lane.target,
        "mode": lane.mode,
        "final_backend": lane.final_backend,
        "draft_backend": lane.draft_backend,
        "audio_s": lane.audio_s,
        "bleu": lane.score.bleu if lane.score else None,
        "chrf": lane.score.chrf if lane.score else None,
        "segments": len(lane.timings),
        "segments_with_draft": lane.segments_with_draft,
        "missing_finals": lane.missing_finals,
        "final_delay_s": asdict(lane.final_delay),
        "final_delay_server_s": asdict(lane.final_delay_server),
        "final_delay_upto_10s_s": asdict(lane.final_delay_upto(WHISPER_SEGMENT_MAX_S)),
        "first_shown_delay_s": asdict(lane.first_shown_delay),
        "erasure": lane.erasure.normalised,
        "retracted_words": lane.erasure.retracted_words,
        "final_words": lane.erasure.final_words,
        "source_erasure": lane.source_erasure.normalised,
        "server_cpu_cores": lane.server_cores,
        "other_cores": lane.other_cores,
        "load_average_before": [round(x, 2) for x in lane.load_average_before],
        "load_average_after": [round(x, 2) for x in lane.load_average_after],
        "laal_s": asdict(lane.laal_distribution),
        "clips": [
            {
                "clip": c,
                "hypothesis": h,
                "reference": r,
                "laal_s": lane.laal[i] if i < len(lane.laal) else None,
            }
            for i, (c, h, r) in enumerate(
                zip(lane.clips, lane.hypotheses, lane.references, strict=True)
            )
        ],
        "timings": [asdict(t) for t in lane.timings],
    }


def report_json(
    run: TranslationRun, settings: TranslationSettings, goals: Goals, command: str
) -> dict[str, Any]:
    """The whole report as JSON-ready data."""
    apertium = apertium_final_delay(run.latency)
    whisper = whisper_final_delay(run.speech)
    erasure = total_erasure(run.latency)
    return {
        "benchmark": "translation",
        "command": command,
        "created_utc": utc_now(),
        "machine": machine_info(),
        "text_load_average_1_5_15m": (
            [round(x, 2) for x in run.text_load_average] if run.text_load_average else None
        ),
        "server": {
            "url": run.server_url,
            "started_by_bench": run.server_started,
            "log": str(run.server_log) if run.server_log else None,
        },
        "settings": {
            "sentences": settings.sentences,
            "fleurs_mode": settings.mode,
            "clips_per_language": settings.clips_per_language,
            "clip_gap_s": CLIP_GAP_S,
            "latency_recording": (
                settings.latency_recording.stem if settings.latency_recording else None
            ),
        },
        "scoring": "sacrebleu corpus BLEU (13a, cased) and chrF, defaults",
        "goals": asdict(goals),
        "goals_met": goals_met(run, goals),
        "overall": {
            "apertium_final_delay_s": asdict(apertium),
            "whisper_final_delay_upto_10s_s": asdict(whisper),
            "translation_erasure": erasure.normalised,
            "source_erasure": total_erasure(run.latency, source=True).normalised,
            "laal_s": {kind: asdict(laal_of(run.speech, kind)) for kind in ("whisper", "apertium")},
        },
        "text": [text_json(r) for r in run.text],
        "speech": [lane_json(lane) for lane in run.speech],
        "latency": [lane_json(lane) for lane in run.latency],
        "routes": list(run.routes),
    }


def _ms(d: Distribution) -> str:
    if d.p50 is None or d.p95 is None:
        return "–"
    return f"{d.p50 * 1000:.0f} / {d.p95 * 1000:.0f}"


def report_markdown(report: dict[str, Any], run: TranslationRun) -> str:
    """The report's tables in Markdown."""
    goals, met, machine, overall = (
        report["goals"],
        report["goals_met"],
        report["machine"],
        report["overall"],
    )
    loads = report["text_load_average_1_5_15m"]
    lines = [
        "# Translation benchmark",
        "",
        f"- Command: `{report['command']}`",
        f"- Machine: {machine_detail(machine)}"
        + (f"; after the text part: {slashed(loads)}" if loads else ""),
        f"- Date (UTC): {report['created_utc']}",
        f"- Scoring: {report['scoring']}; FLEURS talks replayed "
        f"{report['settings']['fleurs_mode']}",
        "",
        "## Goals",
        "",
        "| metric | goal | measured | met |",
        "|---|---|---|---|",
        f"| Apertium final after the source final completing its sentence, p95 (ms) "
        f"| <= {goals['apertium_final_delay_p95_s'] * 1000:.0f} "
        f"| {fixed(_scaled(overall['apertium_final_delay_s']['p95']), 0)} "
        f"| {mark(met['apertium_final_delay_p95'])} |",
        f"| Whisper-translate final after the source final completing its sentence, p50, "
        f"segments <= "
        f"{WHISPER_SEGMENT_MAX_S:.0f} s (s) | <= {goals['whisper_final_delay_p50_s']} "
        f"| {fixed(overall['whisper_final_delay_upto_10s_s']['p50'])} "
        f"| {mark(met['whisper_final_delay_p50'])} |",
        f"| erasure of shown draft translations | <= {goals['translation_erasure_max']} "
        f"| {fixed(overall['translation_erasure'], 3)} (source captions: "
        f"{fixed(overall['source_erasure'], 3)}) | {mark(met['translation_erasure'])} |",
        "",
    ]
    if run.text:
        lines += [
            f"## Text: Apertium on FLORES-200 devtest (first {report['settings']['sentences']} "
            "sentences)",
            "",
            "| route | modes | sentences | BLEU | chrF | ms per sentence p50 / p95 | warm-up s |",
            "|---|---|---|---|---|---|---|",
        ]
        for r in run.text:
            lines.append(
                f"| {r.source}->{r.target} | {'+'.join(r.modes)} | {r.sentences} "
                f"| {fixed(r.score.bleu if r.score else None, 1)} "
                f"| {fixed(r.score.chrf if r.score else None, 1)} "
                f"| {fixed(r.ms_per_sentence.p50, 1)} / {fixed(r.ms_per_sentence.p95, 1)} "
                f"| {fixed(r.warm_up_s)} |" + (f" {r.note}" if r.note else "")
            )
        lines.append("")
    if run.speech:
        lines += [
            "## Speech to translation: FLEURS, each language's clips as one talk",
            "",
            "| talk | route | final backend | clips | BLEU | chrF | final delay p50 / p95 ms "
            "| first translation shown p50 / p95 ms | LAAL p50 / p95 s | erasure (source) "
            "| missing finals | load before |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        lines += [_lane_row(lane) for lane in run.speech]
        lines.append("")
    if run.latency:
        lines += [
            "## Latency: long-form English talk in real time",
            "",
            "| talk | route | final backend | segments | final delay p50 / p95 ms "
            "| same on server clock ms | first translation shown p50 / p95 ms "
            "| with draft | erasure (source) | server cores | other cores | load before |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for lane in run.latency:
            lines.append(
                f"| {lane.talk} | {lane.source}->{lane.target} | {lane.final_backend} "
                f"| {len(lane.timings)} | {_ms(lane.final_delay)} "
                f"| {_ms(lane.final_delay_server)} | {_ms(lane.first_shown_delay)} "
                f"| {lane.segments_with_draft} | {_erasures(lane)} "
                f"| {fixed(lane.server_cores)} | {fixed(lane.other_cores)} "
                f"| {' / '.join(str(round(x, 2)) for x in lane.load_average_before)} |"
            )
        lines.append("")
    lines += [
        "Delays are measured on one listener's socket, which receives the source captions and "
        "the translations into its language: arrival of the translated event − arrival of the "
        "segment's source final (final delay) or of its first source event (first shown). "
        "Erasure: words retracted over the drafts of each translated sentence, as its drafts "
        "line showed them / words in the translated finals (docs/metrics.md). LAAL: "
        "length-adaptive average lagging of each clip's translated finals, in seconds since the "
        "clip's audio began (computation-aware; p50 / p95 over clips; real-time talks only).",
        "",
    ]
    return "\n".join(lines)


def _pair(d: Distribution) -> str:
    return "–" if d.p50 is None else f"{fixed(d.p50)} / {fixed(d.p95)}"


def _scaled(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * 1000


def _erasures(lane: LaneResult) -> str:
    return f"{fixed(lane.erasure.normalised, 3)} ({fixed(lane.source_erasure.normalised, 3)})"


def _lane_row(lane: LaneResult) -> str:
    return (
        f"| {lane.talk} | {lane.source}->{lane.target} | {lane.final_backend} "
        f"| {len(lane.clips)} | {fixed(lane.score.bleu if lane.score else None, 1)} "
        f"| {fixed(lane.score.chrf if lane.score else None, 1)} | {_ms(lane.final_delay)} "
        f"| {_ms(lane.first_shown_delay)} | {_pair(lane.laal_distribution)} "
        f"| {_erasures(lane)} | {lane.missing_finals} "
        f"| {' / '.join(str(round(x, 2)) for x in lane.load_average_before)} |"
    )


def trace_json(run: TalkRun) -> dict[str, Any]:
    """One talk's raw record, times in seconds since ``start`` was sent."""
    t0 = run.presenter.start_sent
    return {
        "talk": run.talk,
        "source": run.source,
        "targets": list(run.targets),
        "session_code": run.presenter.session_code,
        "ended_at": run.presenter.ended_at - t0,
        "presenter": [[r.arrival - t0, r.message] for r in run.presenter.received],
        "listeners": {
            lang: [[r.arrival - t0, r.message] for r in received]
            for lang, received in run.listeners.items()
        },
    }


def write_report(
    run: TranslationRun, settings: TranslationSettings, goals: Goals, command: str
) -> tuple[Path, Path, str]:
    """Write ``translation.json``, ``translation.md`` and ``traces/translation-<talk>.json``
    into ``settings.out``; return both paths and the Markdown."""
    report = report_json(run, settings, goals, command)
    markdown = report_markdown(report, run)
    json_path, md_path = write_report_files(
        settings.out, "translation", report, markdown, ensure_ascii=False
    )
    for talk in run.talks:
        write_trace(settings.out, f"translation-{talk.talk}", trace_json(talk), ensure_ascii=False)
    return json_path, md_path, markdown
