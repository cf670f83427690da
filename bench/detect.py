"""``python -m bench detect``: does automatic language detection lose words?

Each FLEURS clip of ``../shared/eval/fleurs_st`` is stepped through the recogniser twice, in
process and compute-unaware (``--step`` seconds of audio a step, as ``bench steps`` does):
once in its own language, and once with ``"language": "auto"`` between its language and
another (English, or Spanish for an English clip), as ``/talk`` with detection does. Both
runs are scored against the clip's human transcript (Whisper's normalisers). Goal
(docs/metrics.md, "Language detection"): the detected turns' WER at most 1.05x the given
ones', over all clips. Wrongly detected clips are counted apart.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from bench.alignment import WordErrors, word_errors
from bench.talk import _read
from bench.textnorm import normalise_words
from bench.translation import FleursClip, fleurs_clips
from engine.audio import decode_pcm16
from engine.events import Caption
from engine.recognition.config import RecognizerConfig
from engine.recognition.language_id import DetectingRecognizer
from engine.recognition.recognizer import StreamingRecognizer
from engine.recognition.vad import StreamingVad
from engine.workers import WorkerPool
from models.catalog import resolve_whisper, silero_vad_path
from models.silero import SileroModel
from models.whisper import FasterWhisperTranscriber

GOAL_RATIO = 1.05


@dataclass(frozen=True, slots=True)
class ClipResult:
    clip: str
    lang: str
    detected: str | None
    given: WordErrors
    auto: WordErrors


class Models:
    """tiny.en for English, Whisper base for the rest (and for identification)."""

    def __init__(self) -> None:
        self.english = FasterWhisperTranscriber(resolve_whisper("tiny.en"))
        self.base = FasterWhisperTranscriber(resolve_whisper("base"))
        self.vad = SileroModel(silero_vad_path())
        self.pool = WorkerPool("asr")

    def recognizer(
        self, language: str, start: float, counter: itertools.count[int]
    ) -> StreamingRecognizer:
        model = self.english if language == "en" else self.base
        config = replace(
            RecognizerConfig(), language=language, refine_full_window=False, refine_wait_s=None
        )
        return StreamingRecognizer(
            model,
            StreamingVad(self.vad),
            self.pool.run,
            lambda: next(counter),
            config,
            start_time=start,
        )


async def _stream(
    recognizer: StreamingRecognizer | DetectingRecognizer, audio: np.ndarray, step_s: float
) -> str:
    finals: list[Caption] = []
    hop = int(step_s * 16000)
    for offset in range(0, len(audio), hop):
        recognizer.push(audio[offset : offset + hop])
        finals += [e for e in await recognizer.step() if e.is_final]
    finals += [e for e in await recognizer.finish() if e.is_final]
    return " ".join(c.text for c in finals)


async def measure(clip: FleursClip, models: Models, step_s: float) -> ClipResult:
    pcm, rate = _read(clip.wav)
    if rate != 16000:
        raise SystemExit(f"{clip.wav}: {rate} Hz, the replay takes 16 kHz")
    audio = decode_pcm16(pcm)
    counter = itertools.count()
    given = await _stream(models.recognizer(clip.lang, 0.0, counter), audio, step_s)
    other = "es" if clip.lang == "en" else "en"
    vad = StreamingVad(models.vad)

    async def identify(samples: np.ndarray, among: Sequence[str]) -> dict[str, float]:
        return await models.pool.run(models.base.identify, samples, among)

    async def score(samples: np.ndarray) -> np.ndarray:
        return await models.pool.run(vad.process, samples)

    detector = DetectingRecognizer(
        (clip.lang, other),
        identify,
        lambda language, start: models.recognizer(language, start, counter),
        score,
    )
    auto = await _stream(detector, audio, step_s)
    reference = normalise_words(clip.references[clip.lang], clip.lang)
    return ClipResult(
        clip.id,
        clip.lang,
        detector.language,
        word_errors(reference, normalise_words(given, clip.lang)),
        word_errors(reference, normalise_words(auto, clip.lang)),
    )


def report(results: Sequence[ClipResult]) -> str:
    lines = [
        "| language | clips | detected wrongly | WER given | WER detected | ratio |",
        "|---|---|---|---|---|---|",
    ]
    total_given = total_auto = None
    for lang in sorted({r.lang for r in results}):
        rows = [r for r in results if r.lang == lang]
        given = sum((r.given for r in rows[1:]), rows[0].given)
        auto = sum((r.auto for r in rows[1:]), rows[0].auto)
        wrong = sum(1 for r in rows if r.detected != r.lang)
        lines.append(
            f"| {lang} | {len(rows)} | {wrong} | {given.wer:.3f} | {auto.wer:.3f} | "
            f"{auto.wer / given.wer if given.wer else float('nan'):.2f} |"
        )
        total_given = given if total_given is None else total_given + given
        total_auto = auto if total_auto is None else total_auto + auto
    if total_given is not None and total_auto is not None:
        ratio = total_auto.wer / total_given.wer if total_given.wer else float("nan")
        met = "met" if ratio <= GOAL_RATIO else "not met"
        lines.append(
            f"| **all** | {len(results)} | {sum(1 for r in results if r.detected != r.lang)} | "
            f"{total_given.wer:.3f} | {total_auto.wer:.3f} | "
            f"{ratio:.2f} ({met}: goal <= {GOAL_RATIO}) |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench detect", description=__doc__)
    parser.add_argument("--step", type=float, default=0.1, help="audio seconds per step")
    parser.add_argument("--langs", nargs="+", default=["en", "de", "fr", "es", "pt"])
    parser.add_argument("--clips", type=int, default=10, help="clips per language")
    parser.add_argument("--out", type=Path, help="also write the table to this file")
    args = parser.parse_args(argv)
    clips = [c for c in fleurs_clips() if c.lang in args.langs]
    per_lang: dict[str, list[FleursClip]] = {}
    for clip in clips:
        per_lang.setdefault(clip.lang, []).append(clip)
    chosen = [c for lang in args.langs for c in per_lang.get(lang, [])[: args.clips]]
    models = Models()
    started = time.perf_counter()
    results = []
    for clip in chosen:
        result = asyncio.run(measure(clip, models, args.step))
        results.append(result)
        print(
            f"{clip.id}: detected {result.detected}; WER given {result.given.wer:.3f}, "
            f"detected {result.auto.wer:.3f}",
            flush=True,
        )
    table = report(results)
    print(f"\n{table}\n\nstep {args.step} s; {time.perf_counter() - started:.0f} s")
    if args.out is not None:
        args.out.write_text(table + "\n", encoding="utf-8")
    models.pool.shutdown()
    return 0
