"""The term bench: recall of a reference's terms in the finals, with and without the term
list, and WER, by in-process stepping (bench/steps.py: the same steps for both runs, so the
difference is the terms alone). The terms of each reference are chosen by the rule in
bench/term_rule.py; the list given to the recogniser is those terms once each, as a presenter
would paste them (engine/terms.py makes the hint text). Definitions: docs/metrics.md, "Terms".

``python -m bench terms [--files ID ...] [--step 0.5] [--model tiny.en]``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shlex
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.alignment import WordErrors, word_errors
from bench.paths import RESULTS
from bench.recordings import EVAL_LONGFORM_EN, default_wavs, load_recording, resolve_wavs
from bench.steps import step_through
from bench.term_rule import TermRecall, reference_terms, term_recall, unique
from bench.textnorm import normalise_words
from engine.recognition.config import RecognizerConfig
from engine.terms import Term, recognition_hint
from engine.workers import WorkerPool
from models.catalog import resolve_whisper, silero_vad_path
from models.silero import SileroModel
from models.whisper import FasterWhisperTranscriber


@dataclass(frozen=True, slots=True)
class Run:
    """One recording stepped through once."""

    recall: TermRecall
    errors: WordErrors
    text: str


@dataclass(frozen=True, slots=True)
class FileResult:
    id: str
    terms: tuple[str, ...]
    hint: str
    without: Run
    with_terms: Run


def _row(name: str, terms: int, without: Run, with_terms: Run) -> str:
    return (
        f"| {name} | {terms} | {without.recall.found}/{without.recall.total} "
        f"({without.recall.recall:.2f}) | {with_terms.recall.found}/{with_terms.recall.total} "
        f"({with_terms.recall.recall:.2f}) | {without.errors.wer:.3f} | "
        f"{with_terms.errors.wer:.3f} |"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench terms", description=__doc__)
    parser.add_argument("--files", nargs="+", metavar="FILE")
    parser.add_argument("--step", type=float, default=0.5)
    parser.add_argument("--model", default="tiny.en")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    wavs = resolve_wavs(args.files, EVAL_LONGFORM_EN) if args.files else default_wavs()
    model = FasterWhisperTranscriber(resolve_whisper(args.model))
    model.warm()
    vad = SileroModel(silero_vad_path())
    pool = WorkerPool("asr")
    config = RecognizerConfig()
    load_before = os.getloadavg()
    started = time.perf_counter()
    results: list[FileResult] = []
    for wav in wavs:
        recording = load_recording(wav)
        occurrences = reference_terms(recording.reference_text)
        listed = unique(occurrences)
        hint = recognition_hint([Term(t) for t in listed])
        said = normalise_words(recording.reference_text)
        runs = []
        for terms in ("", hint):
            stepped = asyncio.run(
                step_through(recording.pcm, model, vad, pool, config, args.step, terms)
            )
            runs.append(
                Run(
                    term_recall(occurrences, stepped.text),
                    word_errors(said, normalise_words(stepped.text)),
                    stepped.text,
                )
            )
        result = FileResult(recording.id, tuple(listed), hint, runs[0], runs[1])
        results.append(result)
        print(_row(recording.id, len(occurrences), runs[0], runs[1]), flush=True)
    pool.shutdown()
    total_without = sum((r.without.recall for r in results), TermRecall(0, 0, ()))
    total_with = sum((r.with_terms.recall for r in results), TermRecall(0, 0, ()))
    wer_without = sum((r.without.errors for r in results[1:]), results[0].without.errors)
    wer_with = sum((r.with_terms.errors for r in results[1:]), results[0].with_terms.errors)
    command = shlex.join(["python", "-m", "bench", "terms", *(argv or [])])
    lines = [
        "# Terms: recall of the reference's terms in the finals, and WER",
        "",
        f"`{command}`; model {args.model}, step {args.step} s, in-process stepping; "
        f"load average before {load_before[0]:.2f}, after {os.getloadavg()[0]:.2f} "
        f"({os.cpu_count()} cores); {time.perf_counter() - started:.0f} s.",
        "",
        "| recording | term occurrences | recall without | recall with terms | WER without "
        "| WER with terms |",
        "|---|---|---|---|---|---|",
        *(_row(r.id, r.without.recall.total, r.without, r.with_terms) for r in results),
        _row(
            "all",
            total_without.total,
            Run(total_without, wer_without, ""),
            Run(total_with, wer_with, ""),
        ),
        "",
        "Term lists (bench/term_rule.py): "
        + "; ".join(f"{r.id}: {r.hint or '(none)'}" for r in results),
        "",
        "Missed with terms: "
        + (
            "; ".join(
                f"{r.id}: {', '.join(r.with_terms.recall.missed)}"
                for r in results
                if r.with_terms.recall.missed
            )
            or "none"
        ),
    ]
    markdown = "\n".join(lines) + "\n"
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "terms.md").write_text(markdown)
    report = {
        "command": command,
        "model": args.model,
        "step_s": args.step,
        "load_average": {"before": load_before, "after": os.getloadavg()},
        "recall": {"without": total_without.recall, "with": total_with.recall},
        "wer": {"without": wer_without.wer, "with": wer_with.wer},
        "files": [
            {
                "id": r.id,
                "terms": list(r.terms),
                "hint": r.hint,
                "without": {
                    "found": r.without.recall.found,
                    "total": r.without.recall.total,
                    "missed": list(r.without.recall.missed),
                    "wer": r.without.errors.wer,
                    "text": r.without.text,
                },
                "with": {
                    "found": r.with_terms.recall.found,
                    "total": r.with_terms.recall.total,
                    "missed": list(r.with_terms.recall.missed),
                    "wer": r.with_terms.errors.wer,
                    "text": r.with_terms.text,
                },
            }
            for r in results
        ],
    }
    (args.out / "terms.json").write_text(json.dumps(report, indent=1, ensure_ascii=False))
    print(markdown)
    return 0
