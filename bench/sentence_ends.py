"""Where sentences end, without the live pipeline: ``python -m bench sentence-ends``.

Two questions the sentence-break goal raises (docs/metrics.md, "Sentence breaks"):

- **Which words can end a sentence.** For each word, how often it ends a sentence in the
  written English of ``../shared/eval/mt_text`` (FLORES-200 devtest and NTREX-128, about
  3,000 sentences): the words of ``CONTINUATIONS["en"]`` and the candidates named by
  ``--words``.
- **What the model itself does.** The spurious sentence breaks per 100 reference words of
  the offline decode (tiny.en, beam 5, the whole file, so every mark heard what follows),
  per class of the punctuated development recordings: the figure live captions, which must
  place a mark before the speech after it exists, are measured against.
"""

from __future__ import annotations

import argparse
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

from bench.corpus import of_classes
from bench.paths import EVAL, RESULTS
from bench.recordings import load_recording
from bench.reference import DecodeSettings, cached_decode
from bench.sentence_breaks import SentenceBreaks, marked_words, sentence_breaks
from engine.recognition.punctuation import CONTINUATIONS

WRITTEN_ENGLISH = (
    EVAL / "mt_text" / "flores200_devtest" / "eng_Latn.devtest",
    EVAL / "mt_text" / "ntrex128" / "ntrex128.src.eng.txt",
)
CANDIDATES = "out up over before after like as so then this that it you here now not more too"


def end_rates(lines: Iterable[str]) -> tuple[Counter[str], Counter[str]]:
    """How often each word occurs, and how often it ends a sentence, in ``lines``."""
    seen: Counter[str] = Counter()
    ending: Counter[str] = Counter()
    for line in lines:
        for word in marked_words(line):
            seen[word.word] += 1
            ending[word.word] += word.ends_sentence
    return seen, ending


def offline_breaks(classes: Sequence[str], cache_dir: Path) -> dict[str, SentenceBreaks]:
    """The offline decode's sentence breaks against the reference, summed per class."""
    tallies: dict[str, SentenceBreaks] = {}
    for tagged in of_classes(classes):
        if not tagged.punctuated:
            continue
        recording = load_recording(tagged.wav())
        offline = cached_decode(recording, DecodeSettings(), cache_dir)
        breaks = sentence_breaks(recording.reference_text, offline.text)
        print(f"| {recording.id} | {tagged.speech} | {_breaks(breaks)} |", flush=True)
        held = tallies.get(tagged.speech)
        tallies[tagged.speech] = breaks if held is None else held + breaks
    return tallies


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench sentence-ends", description=__doc__)
    parser.add_argument("--words", default=CANDIDATES, help="more words to rate (one string)")
    parser.add_argument("--classes", nargs="+", default=["read", "spontaneous"])
    parser.add_argument("--cache-dir", type=Path, default=RESULTS / "cache")
    args = parser.parse_args(argv)
    missing = [str(p) for p in WRITTEN_ENGLISH if not p.is_file()]
    if missing:
        raise SystemExit(f"missing written English (see ../shared/eval/README.md): {missing}")
    lines = [ln for p in WRITTEN_ENGLISH for ln in p.read_text(encoding="utf-8").splitlines()]
    seen, ending = end_rates(lines)
    listed = CONTINUATIONS["en"]
    print(f"Written English: {len(lines)} lines, {sum(ending.values())} sentence ends\n")
    print("| word | listed | occurrences | ends a sentence | rate |\n|---|---|---|---|---|")
    for word in sorted(listed, key=lambda w: -seen[w]) + args.words.split():
        rate = 100.0 * ending[word] / seen[word] if seen[word] else 0.0
        mark = "yes" if word in listed else ""
        print(f"| {word} | {mark} | {seen[word]} | {ending[word]} | {rate:.1f}% |")
    print("\nOffline decode (tiny.en, beam 5, whole file): spurious breaks / 100 words\n")
    print("| recording | class | spurious breaks / 100 words |\n|---|---|---|")
    for speech, tally in offline_breaks(args.classes, args.cache_dir).items():
        print(f"| **all** | {speech} | {_breaks(tally)} |")
    return 0


def _breaks(breaks: SentenceBreaks) -> str:
    return f"{breaks.per_100_words:.1f} ({breaks.spurious} of {breaks.hypothesis_breaks})"
