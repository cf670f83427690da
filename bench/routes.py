"""``python -m bench routes``: every translation route of every language pair, measured on the
FLEURS clips of ``../shared/eval/fleurs_st``, whole clip by whole clip, offline.

For each spoken language with clips and each caption language it may be translated into:

- ``whisper``: Whisper base speech translation of the clip into English (beam 5, temperature
  0), for X -> en;
- ``apertium``: the clip transcribed (tiny.en for English, Whisper base for the rest, beam 5),
  then Apertium's text route (direct or through a pivot);
- ``ct2``: the same transcription, then a CTranslate2 model (``--ct2 PAIR=PATH``).

Scored against the clip's human FLORES-200 translation with sacrebleu (corpus BLEU, chrF).
The table goes to ``bench/results/routes.{json,md}`` and, with ``--install``, to
``models/route_quality.json``, which the server reads to choose each pair's default final
route (the best measured chrF) and to show the numbers (``GET /api/routes``).
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bench.format import utc_now, write_report_files
from bench.paths import RESULTS
from bench.talk import _read
from bench.translation import FleursClip, fleurs_clips
from engine import languages
from engine.audio import decode_pcm16
from engine.recognition.asr import DecodeOptions, token_budget
from engine.recognition.policy import guard_repetitions, join_words
from models.apertium import ApertiumTranslator
from models.apertium_modes import available_routes
from models.catalog import resolve_whisper
from models.route_quality import QUALITY_FILE
from models.whisper import FasterWhisperTranscriber

SOURCES = ("en", "de", "fr", "es", "pt")
TARGETS = ("en", "es", "fr", "pt", "it", "de", "ca", "gl")


@dataclass(frozen=True, slots=True)
class RouteScore:
    source: str
    target: str
    backend: str
    """``whisper``, ``apertium`` or ``ct2``."""
    name: str
    clips: int
    bleu: float
    chrf: float


class Recogniser:
    """Whole-clip transcription and speech translation, one model per kind, loaded once."""

    def __init__(self) -> None:
        self._models: dict[str, FasterWhisperTranscriber] = {}

    def model(self, name: str) -> FasterWhisperTranscriber:
        if name not in self._models:
            self._models[name] = FasterWhisperTranscriber(
                resolve_whisper(name), short_window=False, encoder_threads=2
            )
        return self._models[name]

    def run(self, audio: np.ndarray, language: str, task: str) -> str:
        model = self.model("tiny.en" if language == "en" and task == "transcribe" else "base")
        options = DecodeOptions(
            language=language,
            task="translate" if task == "translate" else "transcribe",
            beam_size=5,
            word_timestamps=False,
            max_new_tokens=token_budget(len(audio) / 16000),
            full_window=True,
        )
        decoded = model.transcribe(audio, options)
        return join_words(guard_repetitions(decoded.words, ended=decoded.ended))


def _audio(clip: FleursClip) -> np.ndarray:
    pcm, rate = _read(clip.wav)
    if rate != 16000:
        raise SystemExit(f"{clip.wav}: {rate} Hz, expected 16 kHz")
    return decode_pcm16(pcm)


def _score(
    hypotheses: Sequence[str], references: Sequence[str], target: str
) -> tuple[float, float]:
    from sacrebleu.metrics import BLEU, CHRF

    tokenize = "zh" if target == "zh" else "13a"
    bleu = BLEU(tokenize=tokenize).corpus_score(list(hypotheses), [list(references)]).score
    chrf = CHRF().corpus_score(list(hypotheses), [list(references)]).score
    return round(bleu, 1), round(chrf, 1)


def measure(
    clips: Sequence[FleursClip],
    targets: Sequence[str],
    ct2: Mapping[str, str],
    log: Any = print,
) -> list[RouteScore]:
    """Every route from each clip's language into each of ``targets`` that has one."""
    recogniser = Recogniser()
    apertium = {(s, t): modes for s, t, modes in available_routes()}
    by_source: dict[str, list[FleursClip]] = {}
    for clip in clips:
        by_source.setdefault(clip.lang, []).append(clip)
    scores: list[RouteScore] = []
    for source, group in by_source.items():
        audio = [_audio(c) for c in group]
        transcripts = [recogniser.run(a, source, "transcribe") for a in audio]
        log(f"{source}: transcribed {len(group)} clips")
        for target in targets:
            if target == source:
                continue
            usable = [i for i, c in enumerate(group) if target in c.references]
            if not usable:
                continue
            references = [group[i].references[target] for i in usable]
            if target == "en" and languages.get(source).whisper and source not in ("zh", "ja"):
                hyps = [recogniser.run(audio[i], source, "translate") for i in usable]
                scores.append(
                    RouteScore(
                        source,
                        target,
                        "whisper",
                        "base",
                        len(usable),
                        *_score(hyps, references, target),
                    )
                )
            if (source, target) in apertium:
                with ApertiumTranslator(source, target) as translator:
                    hyps = [translator.translate(transcripts[i]) for i in usable]
                name = "+".join(apertium[(source, target)])
                scores.append(
                    RouteScore(
                        source,
                        target,
                        "apertium",
                        name,
                        len(usable),
                        *_score(hyps, references, target),
                    )
                )
            path = ct2.get(f"{source}-{target}") or ct2.get("*")
            if path:
                from models.ct2_translator import CT2Model

                model = CT2Model(path)
                pair = model.pair(source, target, beam_size=4)
                hyps = [pair.translate(transcripts[i]) for i in usable]
                scores.append(
                    RouteScore(
                        source, target, "ct2", path, len(usable), *_score(hyps, references, target)
                    )
                )
            for score in scores[-3:]:
                if (score.source, score.target) == (source, target):
                    log(
                        f"  {source}->{target} {score.backend}: "
                        f"BLEU {score.bleu}, chrF {score.chrf}"
                    )
    return scores


def markdown(report: Mapping[str, Any]) -> str:
    lines = [
        "# Translation routes, measured",
        "",
        f"{report['created_utc']}; `{report['command']}`; {report['set']}.",
        "",
        "| spoken | captions | route | clips | BLEU | chrF | default |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in report["routes"]:
        lines.append(
            f"| {row['source']} | {row['target']} | {row['backend']} {row['name']} | "
            f"{row['clips']} | {row['bleu']} | {row['chrf']} | {'yes' if row['default'] else ''} |"
        )
    return "\n".join(lines) + "\n"


def with_defaults(scores: Sequence[RouteScore]) -> list[dict[str, Any]]:
    """Each score as a row, marked ``default`` where it has the pair's best chrF."""
    best: dict[tuple[str, str], RouteScore] = {}
    for score in scores:
        key = (score.source, score.target)
        if key not in best or score.chrf > best[key].chrf:
            best[key] = score
    return [{**asdict(s), "default": best[(s.source, s.target)] is s} for s in scores]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench routes", description=__doc__)
    parser.add_argument("--sources", nargs="+", default=list(SOURCES))
    parser.add_argument("--targets", nargs="+", default=list(TARGETS))
    parser.add_argument("--ct2", nargs="*", default=[], metavar="PAIR=PATH")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument(
        "--install", action="store_true", help=f"also write {QUALITY_FILE} for the server"
    )
    args = parser.parse_args(argv)
    ct2 = dict(item.split("=", 1) for item in args.ct2)
    clips = [c for c in fleurs_clips() if c.lang in args.sources]
    started = time.perf_counter()
    scores = measure(clips, args.targets, ct2)
    report = {
        "benchmark": "routes",
        "created_utc": utc_now(),
        "command": "python -m bench routes " + " ".join(argv or []),
        "set": f"FLEURS (fleurs_st), {len(clips)} clips in {', '.join(args.sources)}, "
        "whole clips, offline; sacrebleu corpus BLEU (13a) and chrF",
        "seconds": round(time.perf_counter() - started),
        "routes": with_defaults(scores),
    }
    text = markdown(report)
    print(text)
    write_report_files(args.out, "routes", report, text)
    if args.install:
        QUALITY_FILE.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return 0
