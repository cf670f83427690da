"""What whole-sentence translation finals can reach on the FLEURS talks, from the audio alone:
``python -m bench sentence-floor [--after 0 1 2 3] [--out DIR]``.

Two questions the translation bench raises, answered without a server (docs/metrics.md,
"Marks inside a sentence" and "Length-adaptive average lagging"):

- **Pauses.** Silero VAD (faster-whisper's, pauses of ``--min-pause`` or more) on each X->en
  clip: the pauses inside a clip, against the silence between two clips of a bench talk (the
  first clip's tail, the talk's ``--gap``, the next clip's lead). A pause rule that tells
  sentence ends from a reader's breath must fall between the two.
- **LAAL floor.** Per clip, :func:`bench.metrics.laal` of a translation as long as the
  reference emitted whole at the clip's speech end plus each of ``--after`` seconds: what a
  sentence final would score if it arrived that long after the speaker stopped.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
import wave
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from bench.metrics import laal
from bench.paths import RESULTS
from bench.speech_spans import speech_spans
from bench.translation import FLEURS_DIR, INTO_ENGLISH, FleursClip, fleurs_clips


@dataclass(frozen=True, slots=True)
class ClipSpeech:
    """Where speech is in one clip, in seconds from its start."""

    clip: str
    lang: str
    duration: float
    spans: tuple[tuple[float, float], ...]
    reference_words: int

    @property
    def pauses(self) -> list[float]:
        return [b[0] - a[1] for a, b in itertools.pairwise(self.spans)]

    @property
    def lead(self) -> float:
        return self.spans[0][0]

    @property
    def tail(self) -> float:
        return self.duration - self.spans[-1][1]


def clip_speech(clip: FleursClip, min_pause_s: float) -> ClipSpeech | None:
    """The clip's speech spans (None if it has no speech)."""
    with wave.open(str(clip.wav), "rb") as reader:
        rate = reader.getframerate()
        frames = reader.getnframes()
        spans = speech_spans(reader.readframes(frames), rate, min_pause_s)
    if not spans:
        return None
    words = len(clip.references["en"].split())
    return ClipSpeech(clip.id, clip.lang, frames / rate, spans, words)


def floor_laal(clips: Sequence[ClipSpeech], after_s: float) -> list[float]:
    """Per clip, the LAAL of a reference-length translation emitted whole ``after_s``
    seconds after the clip's speech ends."""
    out = []
    for clip in clips:
        emitted = clip.spans[-1][1] + after_s
        value = laal([emitted] * clip.reference_words, clip.duration, clip.reference_words)
        if value is not None:
            out.append(value)
    return out


def between_clips(clips: Sequence[ClipSpeech], gap_s: float) -> list[float]:
    """The silence between consecutive clips of one language's talk."""
    return [a.tail + gap_s + b.lead for a, b in itertools.pairwise(clips) if a.lang == b.lang]


def report(clips: Sequence[ClipSpeech], after: Sequence[float], gap_s: float) -> dict:
    inside = sorted(p for c in clips for p in c.pauses)
    between = sorted(between_clips(clips, gap_s))
    return {
        "clips": len(clips),
        "pauses_inside_s": inside,
        "pauses_between_clips_s": between,
        "laal_floor_p50_s": {str(a): statistics.median(floor_laal(clips, a)) for a in after},
        "per_clip": [asdict(c) for c in clips],
    }


def markdown(result: dict, min_pause_s: float, gap_s: float) -> str:
    inside = result["pauses_inside_s"]
    between = result["pauses_between_clips_s"]
    lines = [
        "# Whole-sentence floor (`python -m bench sentence-floor`)",
        "",
        f"{result['clips']} X->en FLEURS clips; Silero VAD pauses of {min_pause_s} s or more; "
        f"{gap_s} s of silence between clips as in the translation bench.",
        "",
        f"- pauses inside clips: {len(inside)}, of which {sum(p >= 0.4 for p in inside)} "
        f"of 0.4 s or more; longest {max(inside, default=0):.2f} s",
        f"- silence between clips: shortest {min(between, default=0):.2f} s, "
        f"median {statistics.median(between) if between else 0:.2f} s",
        "",
        "| whole translation emitted | LAAL p50 over clips |",
        "|---|---|",
    ]
    for after, value in result["laal_floor_p50_s"].items():
        lines.append(f"| speech end + {after} s | {value:.2f} s |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench sentence-floor", description=__doc__)
    parser.add_argument("--after", type=float, nargs="+", default=[0.0, 1.0, 2.0, 3.0])
    parser.add_argument("--min-pause", type=float, default=0.2)
    parser.add_argument("--gap", type=float, default=1.0, help="the talks' silence between clips")
    parser.add_argument("--fleurs-dir", type=Path, default=FLEURS_DIR)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    clips = [
        speech
        for clip in fleurs_clips(args.fleurs_dir)
        if clip.lang in INTO_ENGLISH and (speech := clip_speech(clip, args.min_pause)) is not None
    ]
    result = report(clips, args.after, args.gap)
    text = markdown(result, args.min_pause, args.gap)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "sentence-floor.json").write_text(json.dumps(result, indent=1), encoding="utf-8")
    (args.out / "sentence-floor.md").write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
