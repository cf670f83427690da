"""Where the live X->en translation loses to whole clips, from a translation bench run's
traces: ``python -m bench translation-regroup [--results DIR]``.

The FLEURS talks of the run are built again (:func:`bench.translation.build_talk`, so the
audio is the same) and Whisper base translate
(:func:`engine.translation.backends.whisper_translate`, the server's settings) decodes,
offline, for each X->en talk:

- **as live:** each translation final's source segments (their caption spans, joined), with
  the previous final's text as the prompt, by the translation stage's own step
  (:func:`engine.translation.prompted.translate_prompted`: decoded with and without the
  prompt, the one without it kept where the prompt misled the other or the model was surer
  of it);
- **as live, no prompt:** the same sentences, each decoded without a prompt;
- **prompt of N characters** (``--prompt-chars N ...``): the same sentences by the same
  step, with ``PromptRules.context_chars`` N, each prompted by its own previous decode;
- **grouped as the clips:** every source segment of a clip joined, no prompt (what perfect
  sentence grouping would decode);
- **whole clips:** each clip's audio in the talk, no prompt.

Each is scored per clip as the bench scores the live finals (sacrebleu BLEU and chrF over
the clips), pooled and per talk. "As live" should reproduce the live score (the decode is
deterministic); the steps between the rows are what the prompt, grouping and the segments'
audio cost (docs/metrics.md, "Marks inside a sentence", "One step for a prompted decode").
"As live" hears the live finals as its prompts, so it reproduces a run only with the
window that run decoded in (``--full-window``: docs/metrics.md, "Finals in the full
window, again").
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench.paths import RESULTS
from bench.replay import Received
from bench.translation import FLEURS_DIR, INTO_ENGLISH, build_talk, fleurs_clips
from bench.translation_metrics import clip_of, first_finals, heard_captions, sources, translated
from engine.audio import SAMPLE_RATE, decode_pcm16


def _slice(audio: np.ndarray, start: float, end: float) -> np.ndarray:
    return audio[int(start * SAMPLE_RATE) : int(end * SAMPLE_RATE)]


async def regroup(
    results: Path, fleurs_dir: Path, prompt_chars: Sequence[int] = (), full_window: bool = False
) -> dict[str, Any]:
    from sacrebleu.metrics.bleu import BLEU
    from sacrebleu.metrics.chrf import CHRF

    from engine.translation.backends import whisper_translate
    from engine.translation.prompted import PromptRules, translate_prompted
    from engine.workers import WorkerPool
    from models.catalog import resolve_whisper
    from models.whisper import FasterWhisperTranscriber

    transcriber = FasterWhisperTranscriber(resolve_whisper("base"), cpu_threads=2)
    pool = WorkerPool("asr", threads=1, max_pending=4)
    lengths = {f"prompt of {n} characters": PromptRules(context_chars=n) for n in prompt_chars}
    names = ("live", "as live", "as live, no prompt", *lengths)
    rows: dict[str, list[str]] = {n: [] for n in (*names, "grouped as the clips", "whole clips")}
    references: list[str] = []
    chrf_per_talk: dict[str, dict[str, float]] = {}
    try:
        for lang in INTO_ENGLISH:
            trace_path = results / "traces" / f"translation-fleurs-{lang}-talk.json"
            if not trace_path.is_file():
                continue
            clips = [c for c in fleurs_clips(fleurs_dir) if c.lang == lang]
            recording, spans = build_talk(f"fleurs-{lang}-talk", clips)
            audio = decode_pcm16(recording.pcm)
            trace = json.loads(trace_path.read_text(encoding="utf-8"))
            heard = heard_captions(Received(float(t), m) for t, m in trace["listeners"]["en"])
            source = first_finals(sources(heard))
            translate = whisper_translate(transcriber, pool, lang, full_window=full_window)
            per_clip: dict[str, list[list[str]]] = {k: [[] for _ in clips] for k in rows}
            previous = ""
            own = dict.fromkeys(lengths, "")
            for final in first_finals(translated(heard, "en")).values():
                covered = [source[s] for s in final.sources if s in source]
                if not covered:
                    continue
                joined = np.concatenate([_slice(audio, c.start, c.end) for c in covered])
                k = clip_of(covered[0].start, covered[-1].end, spans)
                per_clip["live"][k].append(final.text)
                made = await translate_prompted(translate, joined, previous=previous, weigh=True)
                per_clip["as live"][k].append(made.text)
                # A talk's first sentence already had no prompt: the same decode.
                alone = await translate(joined, None) if previous else made.text
                per_clip["as live, no prompt"][k].append(alone)
                previous = final.text
                for name, rules in lengths.items():
                    shorter = await translate_prompted(
                        translate, joined, previous=own[name], rules=rules, weigh=True
                    )
                    per_clip[name][k].append(shorter.text)
                    own[name] = shorter.text
            by_clip: list[list[np.ndarray]] = [[] for _ in clips]
            for segment in sorted(source):
                caption = source[segment]
                k = clip_of(caption.start, caption.end, spans)
                by_clip[k].append(_slice(audio, caption.start, caption.end))
            for k, span in enumerate(spans):
                if by_clip[k]:
                    grouped = await translate(np.concatenate(by_clip[k]), None)
                    per_clip["grouped as the clips"][k].append(grouped)
                whole = await translate(_slice(audio, span.start, span.end), None)
                per_clip["whole clips"][k].append(whole)
            talk_references = [c.references["en"] for c in clips]
            chrf_per_talk[lang] = {}
            for name in rows:
                texts = [" ".join(parts) for parts in per_clip[name]]
                rows[name] += texts
                chrf_per_talk[lang][name] = CHRF().corpus_score(texts, [talk_references]).score
            references += talk_references
    finally:
        pool.shutdown()
    scores = {
        name: {
            "bleu": BLEU().corpus_score(texts, [references]).score,
            "chrf": CHRF().corpus_score(texts, [references]).score,
        }
        for name, texts in rows.items()
    }
    return {
        "results": str(results),
        "clips": len(references),
        "scores": scores,
        "chrf_per_talk": chrf_per_talk,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench translation-regroup", description=__doc__
    )
    parser.add_argument(
        "--results", type=Path, default=RESULTS, help="the translation bench's --out folder"
    )
    parser.add_argument("--fleurs-dir", type=Path, default=FLEURS_DIR)
    parser.add_argument(
        "--prompt-chars",
        type=int,
        nargs="*",
        default=[],
        metavar="N",
        help="also decode the sentences with prompts of at most N characters",
    )
    parser.add_argument(
        "--full-window",
        action="store_true",
        help="every decode in Whisper's full 30 s window (the server's "
        "INTERP_SPEECH_FINALS_FULL_WINDOW); 'as live' then reproduces only a run made so",
    )
    args = parser.parse_args(argv)
    report = asyncio.run(
        regroup(args.results, args.fleurs_dir, args.prompt_chars, args.full_window)
    )
    talks = list(report["chrf_per_talk"])
    print(f"X->en, {report['clips']} clips, traces of {report['results']}")
    print(
        "| decoded | BLEU | chrF | "
        + " | ".join(f"chrF {lang}" for lang in talks)
        + " |\n|---|---|---|"
        + "---|" * len(talks)
    )
    for name, score in report["scores"].items():
        per_talk = " | ".join(f"{report['chrf_per_talk'][t][name]:.1f}" for t in talks)
        print(f"| {name} | {score['bleu']:.1f} | {score['chrf']:.1f} | {per_talk} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
