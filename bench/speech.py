"""``python -m bench speech``: spoken translation, measured.

1. **Synthesis real-time factor per voice**: each voice speaks human translations from
   FLEURS (``eng_Latn`` for English, ``spa_Latn`` for Spanish, ...) in process; seconds of
   synthesis per second of audio, and the time to the first piece (what a listener waits).
2. **Through the real server**: a presenter replays a long-form recording in real time into a
   session offering Spanish; one listener per spoken language with ``audio=1`` records when
   each final caption and each audio chunk arrived. Reported per language:

   - *first audio*: from the arrival of a segment's final caption (in that language) to the
     arrival of its first audio chunk. The goal (p50 <= 0.4 s; 0.8 s for a Kokoro voice) is
     on segments whose voice was idle; segments that waited for the previous sentence to
     finish playing are reported too. Each chunk's ``voice`` is counted: how much a natural
     voice spoke, and how much its fast fallback spoke in its place.
   - *lag behind the speaker*: the listener plays chunks in order, each as soon as it arrived
     and the previous one ended; a chunk's lag is when it ends playing minus when the speaker
     finished saying what it speaks (replay start + the ``end`` of its translation final in
     session audio: the end of the whole sentence, which may span several source segments).
     It adds up recognition, translation and speech. The *speech stage's own lag* is when a
     chunk ends playing minus when its final translation arrived; it includes the time the
     final's own audio takes to play, so a long sentence has a long stage lag however promptly
     it is spoken. The *speech stage's wait* leaves that out: the stage lag minus the audio of
     the final played so far, this chunk included. It is the delay the stage adds (speech
     still playing before the final, synthesis) and is what the pace keeping bounds: a final
     waits for the audio queued before it, skipped past ``PaceConfig.bound_s``, and for the
     sentence then playing, which is never cut (docs/metrics.md, "Spoken translation /
     The stage's wait"). "Bounded" means the wait stays under ``bound_s`` plus one sentence
     (``SENTENCE_ALLOWANCE_S``) over the whole replay and the total lag does not grow (last
     third of the replay no worse than the first third plus ``bound_s``).
   - *silences inside a final*: a chunk of a final whose earlier audio has already played
     out when it arrives leaves the listener in silence mid-sentence (a voice slower than
     real time, or a natural call waited for before its fallback spoke): the number of such
     silences, and their seconds in all.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import websockets

from app.settings import Settings
from bench.format import goal_lines, slashed, write_report_files
from bench.metrics import distribution, percentile
from bench.recordings import EVAL_LONGFORM_EN, Recording, load_recording, resolve_wavs
from bench.replay import Replay, present
from bench.resources import machine_info
from bench.server import ServerProcess
from bench.translation_replay import create_translated_session
from engine.speech.config import PaceConfig
from engine.speech.pieces import speech_pieces
from models.voices import VoiceBank, voice_plan

RESULTS = Path(__file__).resolve().parent / "results"
FLEURS = EVAL_LONGFORM_EN.parent.parent / "fleurs_st" / "manifest.jsonl"
DEFAULT_RECORDING = "librivox_shakespeare_sonnets_001-003_concat"
ENGLISH_VOICE_RECORDING = EVAL_LONGFORM_EN.parent / "de" / "librivox_de_simplicissimus.wav"
"""German speech translated into English (Whisper translate): the route that exercises the
bundled Piper voice through the server."""
VOICE_TEXTS = {
    "en": ("eng_Latn", "en"),
    "es": ("spa_Latn", "es"),
    "fr": ("fra_Latn", "fr"),
    "it": ("ita_Latn", "it"),
    "pt": ("por_Latn", "pt"),
    "de": ("deu_Latn", "de"),
}
"""Voice language -> (FLEURS translation key, FLEURS source language to leave out)."""
FIRST_AUDIO_GOAL_S = 0.4
KOKORO_FIRST_AUDIO_GOAL_S = 0.8
"""Kokoro needs a second or so for a clause: its goal is on its own (issue 25)."""
SENTENCE_ALLOWANCE_S = 8.0
"""The sentence playing when a final arrives, which the stage never cuts (module docstring)."""


@dataclass
class ListenerLog:
    lang: str
    finals: dict[int, float] = field(default_factory=dict)
    """Segment -> arrival of its final caption in ``lang``."""
    caption_end: dict[int, float] = field(default_factory=dict)
    """Segment -> end of the segment in session audio seconds (from the source caption)."""
    final_end: dict[int, float] = field(default_factory=dict)
    """Segment -> end in session audio of the final caption in ``lang`` published under it
    (a translation final covers its whole sentence: it ends where the sentence ends)."""
    chunks: list[tuple[float, dict[str, Any], int]] = field(default_factory=list)
    """(arrival, audio header, PCM bytes) per audio chunk."""


async def record_listener(url: str, log: ListenerLog, stop: asyncio.Event) -> None:
    """Record every final caption and audio chunk ``url`` (a listener socket) sends."""
    header: dict[str, Any] | None = None
    async with websockets.connect(url, max_size=2**24) as ws:
        while not stop.is_set():
            try:
                message = await asyncio.wait_for(ws.recv(), 0.25)
            except TimeoutError:
                continue
            now = time.monotonic()
            if isinstance(message, bytes):
                if header is not None:
                    log.chunks.append((now, header, len(message)))
                header = None
                continue
            event = json.loads(message)
            header = event if event.get("type") == "audio" else None
            if event.get("type") == "caption" and event.get("state") == "final":
                segment = int(event["segment"])
                if event.get("source"):
                    log.caption_end[segment] = float(event["end"])
                if event.get("lang") == log.lang:
                    log.finals.setdefault(segment, now)
                    log.final_end.setdefault(segment, float(event["end"]))


async def present_to_listener(
    base_url: str, recording: Recording, lang: str, title: str
) -> tuple[Replay, ListenerLog]:
    """A session offering ``lang``, one listener hearing it (audio on), ``recording`` streamed
    into it in real time; the replay and what the listener got."""
    log = ListenerLog(lang)
    stop = asyncio.Event()
    session = await create_translated_session(base_url, title, "en", [lang])
    url = base_url.replace("http://", "ws://") + f"/ws/listen/{session['code']}"
    listener = asyncio.create_task(record_listener(f"{url}?lang={lang}&audio=1", log, stop))
    try:
        recorded = await present(base_url, session, recording, mode="realtime")
    finally:
        stop.set()
        await listener
    return recorded, log


def voice_rtf(langs: Sequence[str], sentences: int, threads: int = 1) -> list[dict[str, Any]]:
    """Synthesis speed of each language's voice on human translations, pieces cut as the
    server cuts them: the first piece as long as the voice synthesises in
    ``PaceConfig.first_audio_s``, at the cost measured on the first sentence."""
    rows = [json.loads(line) for line in FLEURS.open(encoding="utf-8")]
    bank = VoiceBank(voice_plan({}), threads=threads)
    config = PaceConfig()
    results = []
    for lang in langs:
        voice = bank.load(lang)
        if voice is None or lang not in VOICE_TEXTS:
            continue
        key, skip = VOICE_TEXTS[lang]
        texts = [r["translations"][key] for r in rows if r["lang"] != skip][:sentences]
        voice.synthesize("Warm up.")
        started = time.perf_counter()
        voice.synthesize(texts[0])
        per_char = (time.perf_counter() - started) / len(texts[0])
        lead = max(
            config.min_lead_chars, min(config.lead_chars, int(config.first_audio_s / per_char))
        )
        rtfs, firsts = [], []
        audio_total = synth_total = 0.0
        for text in texts:
            pieces = [p for sentence in speech_pieces(text, lead_chars=lead) for p in sentence]
            for index, piece in enumerate(pieces):
                started = time.perf_counter()
                pcm = voice.synthesize(piece)
                took = time.perf_counter() - started
                seconds = len(pcm) / 2 / voice.sample_rate
                audio_total += seconds
                synth_total += took
                rtfs.append(took / max(seconds, 1e-6))
                if index == 0:
                    firsts.append(took)
        results.append(
            {
                "lang": lang,
                "voice": voice.name,
                "sentences": len(texts),
                "lead_chars": lead,
                "audio_seconds": round(audio_total, 1),
                "rtf_overall": round(synth_total / audio_total, 3),
                "rtf_piece": _dist(rtfs, 3),
                "first_piece_seconds": _dist(firsts, 3),
            }
        )
    return results


def _pair(d: dict[str, Any] | None) -> str:
    """``p50 / p95 (n=count)`` of a distribution, ``–`` when there is none."""
    if not d or not d.get("count"):
        return "–"
    return f"{d['p50']} / {d['p95']} (n={d['count']})"


def _triple(d: dict[str, Any] | None) -> str:
    """``p50 / p95 / max`` of a distribution, ``–`` when there is none."""
    if not d or not d.get("count"):
        return "–"
    return f"{d['p50']} / {d['p95']} / {d['max']}"


def _silences(r: dict[str, Any]) -> str:
    """``n, total / max s`` of a listener's silences inside a final (``0`` when none)."""
    d = r.get("silences_in_final_s")
    if not d or not d.get("count"):
        return "0"
    return f"{d['count']}, {r['silence_in_final_total_s']} / {d['max']}"


def _dist(values: Sequence[float], digits: int = 3) -> dict[str, Any]:
    d = distribution(values)
    return {
        "count": d.count,
        "p50": None if d.p50 is None else round(d.p50, digits),
        "p95": None if d.p95 is None else round(d.p95, digits),
        "max": None if d.max is None else round(d.max, digits),
    }


def analyse(log: ListenerLog, replay_start: float, bound_s: float) -> dict[str, Any]:
    """First-audio latency and playback lag for one listener (module docstring)."""
    first: dict[int, float] = {}
    first_voice: dict[int, str] = {}
    for arrival, header, _size in log.chunks:
        first.setdefault(int(header["segment"]), arrival)
        first_voice.setdefault(int(header["segment"]), str(header.get("voice", "")))
    idle: list[float] = []
    waited: list[float] = []
    idle_natural: list[float] = []
    play_end = 0.0
    lags: list[tuple[float, float]] = []  # (arrival, lag)
    stage_lags: list[float] = []
    stage_waits: list[float] = []
    played: dict[int, float] = {}  # segment -> seconds of its final's audio played so far
    skipped = 0
    busy_until: dict[int, float] = {}
    silences: list[float] = []  # inside a final (module docstring)
    for arrival, header, size in log.chunks:
        segment = int(header["segment"])
        skipped += int(header.get("skipped", 0))
        if segment in busy_until and arrival > play_end:
            silences.append(arrival - play_end)
        busy_until.setdefault(segment, play_end)
        start = max(arrival, play_end)
        seconds = size / 2 / int(header["sample_rate"])
        play_end = start + seconds
        played[segment] = played.get(segment, 0.0) + seconds
        end = log.final_end.get(segment, log.caption_end.get(segment))
        if end is not None:
            lags.append((arrival, play_end - (replay_start + end)))
        final_at = log.finals.get(segment)
        if final_at is not None:
            stage_lags.append(play_end - final_at)
            stage_waits.append(play_end - final_at - played[segment])
    for segment, at in first.items():
        final_at = log.finals.get(segment)
        if final_at is None:
            continue
        was_idle = busy_until.get(segment, 0.0) <= final_at
        (idle if was_idle else waited).append(at - final_at)
        if was_idle and first_voice.get(segment) == "natural":
            idle_natural.append(at - final_at)
    spoken = set(first)
    finals = set(log.finals)
    kinds = [str(h.get("voice", "")) for _, h, _ in log.chunks]
    third = len(lags) // 3 or 1
    lag_values = [lag for _, lag in lags]
    return {
        "lang": log.lang,
        "finals": len(finals),
        "finals_spoken": len(finals & spoken),
        "chunks": len(log.chunks),
        "natural_chunks": kinds.count("natural"),
        "fast_chunks": kinds.count("fast"),
        "skipped_pieces": skipped,
        "audio_seconds": round(sum(s / 2 / int(h["sample_rate"]) for _, h, s in log.chunks), 1),
        "first_audio_idle_s": _dist(idle),
        "first_audio_idle_natural_s": _dist(idle_natural),
        "first_audio_waited_s": _dist(waited),
        "first_audio_all_s": _dist(idle + waited),
        "lag_s": _dist(lag_values, 2),
        "speech_stage_lag_s": _dist(stage_lags, 2),
        "speech_stage_wait_s": _dist(stage_waits, 2),
        "silences_in_final_s": _dist(silences, 2),
        "silence_in_final_total_s": round(sum(silences), 2),
        "first_audio_values_s": [round(v, 3) for v in idle + waited],
        "lag_series": [[round(at - replay_start, 2), round(lag, 3)] for at, lag in lags],
        "lag_first_third_max_s": round(max(lag_values[:third]), 2) if lags else None,
        "lag_last_third_max_s": round(max(lag_values[-third:]), 2) if lags else None,
        "lag_last_third_p50_s": round(percentile(lag_values[-third:], 50), 2) if lags else None,
        "bound_s": bound_s,
    }


async def server_run(
    wav: Path,
    source: str,
    langs: Sequence[str],
    log_dir: Path,
    ready_timeout: float,
    env: dict[str, str] | None = None,
) -> tuple[list[dict[str, Any]], float]:
    """Replay ``wav`` (spoken ``source``) in real time to a session offering ``langs``, one
    audio listener per language; ``env``: the server's extra settings."""
    recording = load_recording(wav)
    server = ServerProcess(
        log_dir / f"server-speech-{source}.log", env={"INTERP_SESSION_RATE": "0", **(env or {})}
    )
    handle = await server.start(ready_timeout)
    try:
        session = await create_translated_session(handle.base_url, "speech bench", source, langs)
        base = handle.base_url.replace("http://", "ws://") + f"/ws/listen/{session['code']}"
        logs = [ListenerLog(lang) for lang in langs]
        stop = asyncio.Event()
        tasks = [
            asyncio.create_task(record_listener(f"{base}?lang={log.lang}&audio=1", log, stop))
            for log in logs
        ]
        await asyncio.sleep(1.0)
        replay = await present(
            handle.base_url, session, recording, language=source, mode="realtime"
        )
        # Audio time t was on the presenter's microphone at replay_start + t.
        schedule = replay.schedule
        replay_start = schedule.send_times[0] - schedule.chunk_end_samples[0] / schedule.sample_rate
        await asyncio.sleep(PaceConfig().bound_s + 4.0)  # let the voices finish
        stop.set()
        await asyncio.gather(*tasks)
    finally:
        await server.stop()
    bound = PaceConfig().bound_s
    return [analyse(log, replay_start, bound) for log in logs], recording.duration


def report_markdown(report: dict[str, Any]) -> str:
    lines = [
        "# Spoken translation",
        "",
        f"Command: `{report['command']}`",
        "",
        "## Synthesis speed per voice (FLEURS human translations, in process)",
        "",
        "| lang | voice | sentences | first piece chars | audio s | RTF overall "
        "| RTF p50 / p95 | first piece p50 / p95 s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for v in report["voices"]:
        lines.append(
            f"| {v['lang']} | {v['voice']} | {v['sentences']} | {v.get('lead_chars', '')} | "
            f"{v['audio_seconds']} | "
            f"{v['rtf_overall']} | {v['rtf_piece']['p50']} / {v['rtf_piece']['p95']} | "
            f"{v['first_piece_seconds']['p50']} / {v['first_piece_seconds']['p95']} |"
        )
    for run in report.get("server", []):
        lines += [
            "",
            f"## Through the server: `{run['recording']}` ({run['source']}, "
            f"{run['duration_s']:.0f} s, real time)",
            "",
            "First audio: from the final caption's arrival to its first audio chunk's arrival "
            "at the listener. Lag: when a chunk ends playing minus when the speaker finished "
            "the sentence it speaks. Stage wait: the stage lag less the final's own audio "
            "played so far.",
            "",
            "| lang | finals | spoken | chunks natural / fast | skipped pieces "
            "| first audio, idle voice p50 / p95 s | first audio, idle natural voice p50 / p95 s "
            "| first audio, all p50 / p95 s | speech stage lag p50 / p95 / max s "
            "| speech stage wait p50 / p95 / max s "
            "| total lag p50 / p95 / max s | total lag max, first / last third s "
            "| silences inside a final: n, total / max s |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for r in run["listeners"]:
            lines.append(
                f"| {r['lang']} | {r['finals']} | {r['finals_spoken']} | "
                f"{r.get('natural_chunks', 0)} / {r.get('fast_chunks', 0)} | "
                f"{r['skipped_pieces']} | "
                f"{r['first_audio_idle_s']['p50']} / {r['first_audio_idle_s']['p95']} "
                f"(n={r['first_audio_idle_s']['count']}) | "
                f"{_pair(r.get('first_audio_idle_natural_s'))} | "
                f"{r['first_audio_all_s']['p50']} / {r['first_audio_all_s']['p95']} | "
                f"{r['speech_stage_lag_s']['p50']} / {r['speech_stage_lag_s']['p95']} / "
                f"{r['speech_stage_lag_s']['max']} | "
                f"{_triple(r.get('speech_stage_wait_s'))} | "
                f"{r['lag_s']['p50']} / {r['lag_s']['p95']} / {r['lag_s']['max']} | "
                f"{r['lag_first_third_max_s']} / {r['lag_last_third_max_s']} | "
                f"{_silences(r)} |"
            )
    lines += goal_lines(report["goals"])
    m = report["machine"]
    lines += [
        "",
        f"Machine: {m['cpu_model']}, {m['usable_cores']} usable cores, {m['memory_gib']} GiB; "
        f"load average at the end (1/5/15 min): "
        f"{slashed(m['load_average_1_5_15m'])}.",
    ]
    return "\n".join(lines) + "\n"


def goals(report: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    rows = [(run, r) for run in report.get("server", []) for r in run["listeners"]]
    plan = voice_plan({})
    for run, r in rows:
        where = f"{run['source']}->{r['lang']}"
        spec = plan.get(r["lang"])
        kokoro = spec is not None and spec.backend == "kokoro"
        goal = KOKORO_FIRST_AUDIO_GOAL_S if kokoro else FIRST_AUDIO_GOAL_S
        p50 = r["first_audio_idle_s"]["p50"]
        label = where
        if kokoro:  # the goal is Kokoro's own: segments it began, not its fallback
            p50 = r.get("first_audio_idle_natural_s", {}).get("p50")
            label += ", Kokoro"
        out[f"first audio p50, idle voice ({label})"] = {
            "value": p50,
            "goal": f"<= {goal}",
            "met": p50 is not None and p50 <= goal,
        }
        last, first = r["lag_last_third_max_s"], r["lag_first_third_max_s"]
        wait = r["speech_stage_wait_s"]["max"]
        bounded = (
            last is not None
            and wait is not None
            and wait <= r["bound_s"] + SENTENCE_ALLOWANCE_S
            and last <= first + r["bound_s"]
        )
        out[f"lag bounded over the replay ({where})"] = {
            "value": f"speech stage wait max {wait} s (stage lag max "
            f"{r['speech_stage_lag_s']['max']} s); total max {r['lag_s']['max']} s, last third "
            f"{last} s, first third {first} s",
            "goal": f"stage wait <= {r['bound_s']} + {SENTENCE_ALLOWANCE_S:g} s; last third "
            f"<= first third + {r['bound_s']} s",
            "met": bounded,
        }
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench speech", description=__doc__)
    parser.add_argument("--langs", nargs="+", default=["en", "es", "fr"], help="voices to time")
    parser.add_argument(
        "--targets",
        nargs="+",
        default=["es", "fr"],
        help="spoken languages of the English replay",
    )
    parser.add_argument(
        "--english-voice-file",
        default=str(ENGLISH_VOICE_RECORDING),
        help="German recording replayed with an English audio listener, or 'none'",
    )
    parser.add_argument("--sentences", type=int, default=20)
    parser.add_argument(
        "--tts-threads",
        type=int,
        default=Settings().tts_threads,
        help="Kokoro's threads, in process and in the server (INTERP_TTS_THREADS; default: "
        "the server's, %(default)s)",
    )
    parser.add_argument("--file", default=DEFAULT_RECORDING)
    parser.add_argument("--no-server", action="store_true", help="only the in-process voice part")
    parser.add_argument("--eval-dir", type=Path, default=EVAL_LONGFORM_EN)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--ready-timeout", type=float, default=180.0)
    args = parser.parse_args(argv)
    command = "python -m bench speech " + " ".join(argv if argv is not None else sys.argv[2:])
    report: dict[str, Any] = {"command": command.strip()}
    env = {"INTERP_TTS_THREADS": str(args.tts_threads)}
    report["voices"] = voice_rtf(args.langs, args.sentences, args.tts_threads)
    if not args.no_server:
        (wav,) = resolve_wavs([args.file], args.eval_dir)
        runs = [(wav, "en", args.targets)]
        if args.english_voice_file.lower() != "none":
            runs.append((Path(args.english_voice_file), "de", ["en"]))
        report["server"] = []
        for path, source, targets in runs:
            listeners, duration = asyncio.run(
                server_run(path, source, targets, args.out, args.ready_timeout, env)
            )
            report["server"].append(
                {
                    "recording": path.stem,
                    "source": source,
                    "duration_s": duration,
                    "listeners": listeners,
                }
            )
    report["goals"] = goals(report)
    report["machine"] = machine_info()
    markdown = report_markdown(report)
    json_path, md_path = write_report_files(args.out, "speech", report, markdown)
    print(markdown)
    print(f"wrote {json_path} and {md_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
