"""Spurious sentence breaks: sentence ends the captions show where the speaker ended none.

Both texts are split into words, each word marked with whether sentence-ending punctuation
(``.``, ``?``, ``!``, ``…``, possibly followed by a closing quote or bracket) follows it. The
words are aligned (minimum edit, on words lowercased with punctuation stripped); a hypothesis
break after a word aligned with a reference word that ends no sentence is spurious. A break
within one word of a reference break counts as that break (the two sides may place a final
word differently). Breaks after hypothesis words that align with nothing (insertions) are
spurious too. The rate is per 100 reference words (docs/metrics.md, "Sentence breaks").
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

import jiwer

_SENTENCE_END = re.compile(r"[.?!…。！？][\"'”’)\]]*$")
_NOT_WORD = re.compile(r"[^\w]|_")
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "`": "'"})


@dataclass(frozen=True, slots=True)
class MarkedWord:
    word: str
    ends_sentence: bool


def marked_words(text: str) -> list[MarkedWord]:
    """The words of ``text`` (lowercase, without punctuation) and whether each ends a
    sentence. A token that is only punctuation ends the sentence of the word before it."""
    words: list[MarkedWord] = []
    folded = unicodedata.normalize("NFKC", text).translate(_APOSTROPHES)
    for token in folded.split():
        word = _NOT_WORD.sub("", token.lower())
        ends = bool(_SENTENCE_END.search(token))
        if word:
            words.append(MarkedWord(word, ends))
        elif ends and words:
            words[-1] = MarkedWord(words[-1].word, True)
    return words


@dataclass(frozen=True, slots=True)
class SentenceBreaks:
    """Counts of one comparison (add them up over recordings)."""

    reference_words: int
    reference_breaks: int
    hypothesis_breaks: int
    spurious: int

    @property
    def per_100_words(self) -> float:
        return 100.0 * self.spurious / self.reference_words if self.reference_words else 0.0

    def __add__(self, other: SentenceBreaks) -> SentenceBreaks:
        return SentenceBreaks(
            self.reference_words + other.reference_words,
            self.reference_breaks + other.reference_breaks,
            self.hypothesis_breaks + other.hypothesis_breaks,
            self.spurious + other.spurious,
        )


def sentence_breaks(reference: str, hypothesis: str, tolerance: int = 1) -> SentenceBreaks:
    """Compare the sentence ends of ``hypothesis`` with those of ``reference``."""
    ref = marked_words(reference)
    hyp = marked_words(hypothesis)
    hyp_breaks = sum(w.ends_sentence for w in hyp)
    ref_breaks = [i for i, w in enumerate(ref) if w.ends_sentence]
    if not ref or not hyp:
        return SentenceBreaks(len(ref), len(ref_breaks), hyp_breaks, hyp_breaks)
    aligned = _aligned_reference_index(ref, hyp)
    breaks_at = [aligned[i] for i, w in enumerate(hyp) if w.ends_sentence]
    unclaimed = set(ref_breaks)
    pending: list[int] = []
    for at in breaks_at:  # exact matches first, so a near one cannot take their break
        if at is not None and at in unclaimed:
            unclaimed.discard(at)
        elif at is not None:
            pending.append(at)
    for at in pending:
        near = [b for b in sorted(unclaimed, key=lambda b: abs(b - at)) if abs(b - at) <= tolerance]
        if near:
            unclaimed.discard(near[0])
    matched = len(ref_breaks) - len(unclaimed)
    return SentenceBreaks(len(ref), len(ref_breaks), hyp_breaks, hyp_breaks - matched)


def _aligned_reference_index(
    ref: Sequence[MarkedWord], hyp: Sequence[MarkedWord]
) -> list[int | None]:
    """For each hypothesis word, the reference word it aligns with (equal or substituted),
    or None for an insertion."""
    out = jiwer.process_words(" ".join(w.word for w in ref), " ".join(w.word for w in hyp))
    aligned: list[int | None] = [None] * len(hyp)
    for chunk in out.alignments[0]:
        if chunk.type in ("equal", "substitute"):
            for offset in range(chunk.hyp_end_idx - chunk.hyp_start_idx):
                aligned[chunk.hyp_start_idx + offset] = chunk.ref_start_idx + offset
    return aligned
