"""``python -m bench voices``: how well each voice can be understood, by round trip.

Each voice speaks the human reference translations of FLEURS sentences into its language
(``translations.spa_Latn`` for Spanish, ...; sentences recorded in that language are left
out), each sentence whole, in process; Whisper base transcribes the audio back (language
given, beam 5) and the word error rate against the text is the voice's round-trip WER.
Whisper's own normalisers prepare both sides (``whisper-normalizer``: the English one for
English, the basic one for the other languages).

The yardstick is Whisper base on real human speech of the same language: the FLEURS
recordings in that language, transcribed the same way and scored against their transcript.
A voice meets the goal when its WER is within 1.3 times that (``GOAL_RATIO``).

Also per voice: synthesis real-time factor (one onnxruntime thread for Kokoro, as served),
and the peak of Kokoro's raw output, which sets each style's gain (models/kokoro.py): the
share of sentences whose peak at that gain passes the ceiling of engine/speech/gain.py (whose
limiter then scales them down).
Definitions: docs/metrics.md, "Natural voices".
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jiwer
import numpy as np

from bench.format import fixed, goal_lines, write_report_files
from bench.metrics import distribution
from bench.paths import RESULTS
from bench.recordings import EVAL_LONGFORM_EN
from bench.resources import machine_info
from engine.audio import StreamResampler
from engine.recognition.asr import DecodeOptions
from engine.speech.gain import CEILING, pcm16

FLEURS_DIR = EVAL_LONGFORM_EN.parent.parent / "fleurs_st"
KEYS = {
    "en": "eng_Latn",
    "es": "spa_Latn",
    "fr": "fra_Latn",
    "it": "ita_Latn",
    "pt": "por_Latn",
    "de": "deu_Latn",
}
"""Our language code -> the FLEURS manifest's translation key."""
GOAL_RATIO = 1.3

Speak = Callable[[str], tuple[np.ndarray, int]]
"""Text -> (float samples, sample rate)."""


@dataclass(frozen=True, slots=True)
class Voice:
    """One voice to score: what it is, and how it speaks."""

    lang: str
    name: str
    kind: str
    speak: Speak
    gain: float = 1.0


def rows() -> list[dict[str, Any]]:
    with (FLEURS_DIR / "manifest.jsonl").open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


def sentences(lang: str, count: int) -> list[str]:
    """The first ``count`` human translations into ``lang`` of sentences recorded in other
    languages."""
    return [r["translations"][KEYS[lang]] for r in rows() if r["lang"] != lang][:count]


def normaliser(lang: str) -> Callable[[str], str]:
    """Whisper's text normaliser for ``lang`` (English has its own)."""
    from whisper_normalizer.basic import BasicTextNormalizer
    from whisper_normalizer.english import EnglishTextNormalizer

    normalise: Callable[[str], str] = (
        EnglishTextNormalizer() if lang == "en" else BasicTextNormalizer()
    )
    return normalise


def corpus_wer(references: Sequence[str], hypotheses: Sequence[str], lang: str) -> float:
    """Word errors over reference words, all sentences together, both sides normalised."""
    normalise = normaliser(lang)
    refs = [normalise(t) for t in references]
    hyps = [normalise(t) for t in hypotheses]
    return float(jiwer.wer(refs, hyps))


class Recogniser:
    """Whisper base, language given, beam 5: what every round trip is scored with."""

    def __init__(self) -> None:
        from models.catalog import resolve_whisper
        from models.whisper import FasterWhisperTranscriber

        self._model = FasterWhisperTranscriber(resolve_whisper("base"))

    def transcribe(self, samples: np.ndarray, rate: int, lang: str) -> str:
        audio = samples.astype(np.float32)
        if rate != 16000:
            audio = StreamResampler(rate, 16000).process(audio)
        decoded = self._model.transcribe(audio, DecodeOptions(language=lang, beam_size=5))
        return " ".join(w.text.strip() for w in decoded.words).strip()


def human_baseline(lang: str, recogniser: Recogniser) -> dict[str, Any] | None:
    """Whisper base on the FLEURS recordings of ``lang`` against their transcripts."""
    import wave

    recorded = [r for r in rows() if r["lang"] == lang]
    if not recorded:
        return None
    refs, hyps = [], []
    for row in recorded:
        with wave.open(str(FLEURS_DIR / row["audio"])) as handle:
            pcm = handle.readframes(handle.getnframes())
            rate = handle.getframerate()
        samples = np.frombuffer(pcm, "<i2").astype(np.float32) / 32768.0
        refs.append(row["source_text"])
        hyps.append(recogniser.transcribe(samples, rate, lang))
    return {
        "recordings": len(recorded),
        "wer": round(corpus_wer(refs, hyps, lang), 4),
        "hypotheses": hyps,
    }


def round_trip(voice: Voice, texts: Sequence[str], recogniser: Recogniser) -> dict[str, Any]:
    """Speak every text with ``voice``, transcribe it back, score it."""
    hyps: list[str] = []
    synth = audio = 0.0
    peaks: list[float] = []
    for text in texts:
        started = time.perf_counter()
        raw, rate = voice.speak(text)
        synth += time.perf_counter() - started
        audio += len(raw) / rate
        peaks.append(float(np.max(np.abs(raw))) if len(raw) else 0.0)
        served = np.frombuffer(pcm16(raw, voice.gain), "<i2").astype(np.float32) / 32768.0
        hyps.append(recogniser.transcribe(served, rate, voice.lang))
        print(f"  {voice.lang} {voice.name}: {hyps[-1][:70]}", file=sys.stderr, flush=True)
    peak = distribution(peaks)
    return {
        "lang": voice.lang,
        "voice": voice.name,
        "kind": voice.kind,
        "gain": voice.gain,
        "sentences": len(texts),
        "wer": round(corpus_wer(texts, hyps, voice.lang), 4),
        "rtf": round(synth / audio, 3) if audio else None,
        "audio_seconds": round(audio, 1),
        "raw_peak": {"p50": _r(peak.p50), "p95": _r(peak.p95), "max": _r(peak.max)},
        "over_ceiling_share": round(sum(p * voice.gain > CEILING for p in peaks) / len(peaks), 3),
        "hypotheses": hyps,
    }


def cached_round_trip(
    voice: Voice, texts: Sequence[str], recogniser: Recogniser, out: Path
) -> dict[str, Any]:
    """:func:`round_trip`, kept in ``out/cache/voices`` so that a long run that stopped can
    go on where it was (same voice, language, gain and texts)."""
    key = hashlib.sha256(
        json.dumps([voice.lang, voice.name, voice.gain, list(texts)]).encode()
    ).hexdigest()[:16]
    path = out / "cache" / "voices" / f"{voice.lang}-{voice.name.replace(':', '_')}-{key}.json"
    if path.is_file():
        cached: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        return cached
    result = round_trip(voice, texts, recogniser)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, ensure_ascii=False), encoding="utf-8")
    return result


def _r(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def voices_for(lang: str, styles: Sequence[str], model: Any) -> list[Voice]:
    """Every Kokoro style in ``styles`` that speaks ``lang`` (``model``: the loaded
    :class:`models.kokoro.KokoroModel`), espeak-ng, and Piper for English."""
    from models import kokoro
    from models.voices import EspeakSynthesizer, PiperSynthesizer, joe_voice_path, voice_plan

    found: list[Voice] = []
    if lang in kokoro.LANGUAGES:
        for style in styles:

            def speak(text: str, style: str = style) -> tuple[np.ndarray, int]:
                return np.asarray(model.create(text, style, lang)), kokoro.SAMPLE_RATE

            gain = kokoro.STYLE_GAIN.get(style, 1.0)
            found.append(Voice(lang, f"kokoro:{style}", "natural", speak, gain))
    espeak_spec = voice_plan({}, bundled=False, natural=False).get(lang)
    if espeak_spec is not None:
        found.append(_pcm_voice(lang, EspeakSynthesizer(espeak_spec.model), "fast"))
    if lang == "en":
        found.append(_pcm_voice(lang, PiperSynthesizer(joe_voice_path()), "natural"))
    return found


def _pcm_voice(lang: str, synthesizer: Any, kind: str) -> Voice:
    def speak(text: str) -> tuple[np.ndarray, int]:
        pcm = synthesizer.synthesize(text)
        return np.frombuffer(pcm, "<i2").astype(np.float32) / 32768.0, synthesizer.sample_rate

    return Voice(lang, synthesizer.name, kind, speak)


def goals(report: dict[str, Any]) -> dict[str, Any]:
    """Per language: the best natural voice within ``GOAL_RATIO`` of human speech."""
    out: dict[str, Any] = {}
    for lang, human in report["human"].items():
        natural = [v for v in report["voices"] if v["lang"] == lang and v["kind"] == "natural"]
        if human is None or not natural:
            continue
        best = min(natural, key=lambda v: v["wer"])
        limit = round(GOAL_RATIO * human["wer"], 4)
        out[f"round-trip WER, {lang} ({best['voice']})"] = {
            "value": best["wer"],
            "goal": f"<= {GOAL_RATIO} x human {human['wer']} = {limit}",
            "met": best["wer"] <= limit,
        }
    return out


def report_markdown(report: dict[str, Any]) -> str:
    lines = [
        "# Natural voices: round-trip WER",
        "",
        f"Command: `{report['command']}`",
        "",
        "Each voice speaks FLEURS human reference translations (whole sentences); Whisper base "
        "(language given, beam 5) transcribes them back; WER against the text, both sides "
        "normalised by whisper-normalizer (English: EnglishTextNormalizer; others: "
        "BasicTextNormalizer). *Human*: Whisper base on the FLEURS recordings of that "
        "language. RTF: synthesis seconds per audio second (Kokoro on one thread). Raw peak: "
        "Kokoro's output before the gain (1.0 is full scale); *over ceiling*: share of "
        f"sentences that peak above {CEILING} of full scale at the style's gain (the limiter "
        "scales those down).",
        "",
        "| lang | voice | sentences | WER | vs human | RTF | raw peak p50 / p95 / max "
        "| gain | over ceiling |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for lang, human in report["human"].items():
        if human is not None:
            lines.append(
                f"| {lang} | human speech (FLEURS) | {human['recordings']} | "
                f"{fixed(human['wer'], 3)} | 1.0 | | | | |"
            )
        for v in (v for v in report["voices"] if v["lang"] == lang):
            ratio = v["wer"] / human["wer"] if human and human["wer"] else None
            peak = v["raw_peak"]
            lines.append(
                f"| {lang} | {v['voice']} | {v['sentences']} | {fixed(v['wer'], 3)} | "
                f"{fixed(ratio)} | {fixed(v['rtf'])} | "
                f"{fixed(peak['p50'])} / {fixed(peak['p95'])} / {fixed(peak['max'])} | "
                f"{v['gain']} | {v.get('over_ceiling_share', '–')} |"
            )
    lines += goal_lines(report["goals"])
    m = report["machine"]
    lines += [
        "",
        f"Machine: {m['cpu_model']}, {m['usable_cores']} usable cores; load average at the "
        f"start {report['load_average_start']}, at the end {m['load_average_1_5_15m']}.",
        "",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    import os

    from app.settings import Settings
    from models import kokoro

    parser = argparse.ArgumentParser(prog="python -m bench voices", description=__doc__)
    parser.add_argument("--langs", nargs="+", default=["es", "fr", "it", "pt"], choices=KEYS)
    parser.add_argument("--styles", nargs="+", default=list(kokoro.STYLES))
    parser.add_argument("--sentences", type=int, default=12, help="per language and voice")
    parser.add_argument(
        "--threads",
        type=int,
        default=Settings().tts_threads,
        help="Kokoro's onnxruntime threads (default: the server's, %(default)s)",
    )
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument(
        "--report", default="voices", help="report name (REPORT.json and REPORT.md in --out)"
    )
    args = parser.parse_args(argv)
    command = "python -m bench voices " + " ".join(argv if argv is not None else sys.argv[2:])
    report: dict[str, Any] = {
        "command": command.strip(),
        "load_average_start": [round(x, 2) for x in os.getloadavg()],
        "human": {},
        "voices": [],
    }
    recogniser = Recogniser()
    model = kokoro.load_model(threads=args.threads)
    for lang in args.langs:
        report["human"][lang] = human_baseline(lang, recogniser)
        texts = sentences(lang, args.sentences)
        for voice in voices_for(lang, args.styles, model):
            report["voices"].append(cached_round_trip(voice, texts, recogniser, args.out))
    report["goals"] = goals(report)
    report["machine"] = machine_info()
    markdown = report_markdown(report)
    json_path, md_path = write_report_files(args.out, args.report, report, markdown)
    print(markdown)
    print(f"wrote {json_path} and {md_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
