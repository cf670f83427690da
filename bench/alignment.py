"""Word-level edit-distance alignment of a hypothesis to a reference (both already normalised).

jiwer (RapidFuzz underneath) finds a minimum-edit alignment; these helpers turn its chunks into
what the metrics need: error counts, which reference words a hypothesis matches, and reference
word times borrowed from a timed decode.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import jiwer


@dataclass(frozen=True, slots=True)
class WordErrors:
    """Counts of one alignment of a hypothesis against ``reference_words`` reference words."""

    substitutions: int
    deletions: int
    insertions: int
    hits: int

    @property
    def reference_words(self) -> int:
        return self.substitutions + self.deletions + self.hits

    @property
    def errors(self) -> int:
        return self.substitutions + self.deletions + self.insertions

    @property
    def wer(self) -> float:
        """Errors divided by reference words (``nan`` for an empty reference)."""
        n = self.reference_words
        return self.errors / n if n else float("nan")

    def __add__(self, other: WordErrors) -> WordErrors:
        return WordErrors(
            self.substitutions + other.substitutions,
            self.deletions + other.deletions,
            self.insertions + other.insertions,
            self.hits + other.hits,
        )


@dataclass(frozen=True, slots=True)
class TimedWord:
    """A word with its time span in seconds of the recording."""

    text: str
    start: float
    end: float


def _chunks(reference: Sequence[str], hypothesis: Sequence[str]) -> list[jiwer.AlignmentChunk]:
    out = jiwer.process_words(" ".join(reference), " ".join(hypothesis))
    return list(out.alignments[0])


def word_errors(reference: Sequence[str], hypothesis: Sequence[str]) -> WordErrors:
    """Substitutions, deletions, insertions and hits of ``hypothesis`` against ``reference``."""
    if not reference:
        return WordErrors(0, 0, len(hypothesis), 0)
    if not hypothesis:
        return WordErrors(0, len(reference), 0, 0)
    out = jiwer.process_words(" ".join(reference), " ".join(hypothesis))
    return WordErrors(out.substitutions, out.deletions, out.insertions, out.hits)


def matched_reference_indices(
    reference: Sequence[str], hypothesis: Sequence[str]
) -> frozenset[int]:
    """Indices of the reference words that the minimum-edit alignment pairs with an equal
    hypothesis word."""
    if not reference or not hypothesis:
        return frozenset()
    matched: set[int] = set()
    for chunk in _chunks(reference, hypothesis):
        if chunk.type == "equal":
            matched.update(range(chunk.ref_start_idx, chunk.ref_end_idx))
    return frozenset(matched)


def paired_reference_indices(reference: Sequence[str], hypothesis: Sequence[str]) -> dict[int, int]:
    """Reference index -> hypothesis index for every word pair the alignment makes, equal or
    substituted (insertions and deletions pair nothing)."""
    if not reference or not hypothesis:
        return {}
    pairs: dict[int, int] = {}
    for chunk in _chunks(reference, hypothesis):
        if chunk.type in ("equal", "substitute"):
            for offset in range(chunk.ref_end_idx - chunk.ref_start_idx):
                pairs[chunk.ref_start_idx + offset] = chunk.hyp_start_idx + offset
    return pairs


def reference_word_times(
    reference: Sequence[str], decoded: Sequence[TimedWord], duration: float
) -> tuple[TimedWord, ...]:
    """Give every reference word a time span taken from a timed decode of the same audio.

    ``decoded`` holds normalised words with times. Each reference word paired with a decoded
    word (equal or substituted) takes that word's span. A run of unpaired reference words
    shares the gap between the end of the paired word before it (0 at the start) and the start
    of the paired word after it (``duration`` at the end) in equal slices, in order.
    """
    pairs = paired_reference_indices(reference, [w.text for w in decoded])
    spans: list[tuple[float, float] | None] = [None] * len(reference)
    for ref_index, hyp_index in pairs.items():
        spans[ref_index] = (decoded[hyp_index].start, decoded[hyp_index].end)
    out: list[TimedWord] = []
    i = 0
    while i < len(reference):
        span = spans[i]
        if span is not None:
            out.append(TimedWord(reference[i], span[0], span[1]))
            i += 1
            continue
        j = i
        while j < len(reference) and spans[j] is None:
            j += 1
        gap_start = out[-1].end if out else 0.0
        next_span = spans[j] if j < len(reference) else None
        gap_end = max(gap_start, next_span[0] if next_span is not None else duration)
        step = (gap_end - gap_start) / (j - i)
        for k in range(j - i):
            out.append(
                TimedWord(reference[i + k], gap_start + k * step, gap_start + (k + 1) * step)
            )
        i = j
    return tuple(out)


def split_timed_word(word: TimedWord, tokens: Sequence[str]) -> list[TimedWord]:
    """Spread one decoded word's span evenly over the normalised ``tokens`` it became
    (``"2021"`` becomes four words; ``"um"`` becomes none)."""
    if not tokens:
        return []
    step = (word.end - word.start) / len(tokens)
    return [
        TimedWord(token, word.start + k * step, word.start + (k + 1) * step)
        for k, token in enumerate(tokens)
    ]
