"""Which words of a reference are its terms, by a written rule (not chosen by hand per file),
and how many of them a transcript got: the term bench's pure parts (docs/metrics.md, "Terms").

The rule: a term is

- a word written with a capital letter that does not stand first in a sentence, in a line
  (verse capitalises every line) or in a quotation, and is not "I" or one of its
  contractions (I'm, I've, I'd, I'll): proper names, products, "TeamViewer";
- a number written in digits ("2021", "64").

A term's recall counts each occurrence in the reference: a transcript that holds a term k
times covers at most k of its occurrences. Both sides are folded the same light way: case,
punctuation and typographic apostrophes ignored, hyphens as spaces, the number words zero to
twenty as digits. So "Euros" matches "euros" and "One." matches "1", while "team viewer"
does not match "TeamViewer" and "six hundred" does not match "600". (Whisper's normaliser,
which WER uses, would also fold "64 billion" into one number, so that "64" is no longer a
word of the reference itself.)
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

_TOKEN = re.compile(r"\d+(?:[.,]\d+)*|[\w’'-]+|[.!?]|[\"“‘]|\n")
_FIRST_PERSON = re.compile(r"^I(?:['’](?:m|ve|d|ll))?$")
_NUMBER_WORDS = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen twenty"
).split()
_DIGITS = {word: str(n) for n, word in enumerate(_NUMBER_WORDS)}
_FOLD_WORD = re.compile(r"[\w']+")


def fold(text: str) -> list[str]:
    """The words of ``text`` as recall compares them (module docstring)."""
    text = text.replace("’", "'").replace("‘", "'").replace("-", " ").casefold()
    words = [w.strip("'") for w in _FOLD_WORD.findall(text.replace(",", ""))]
    return [_DIGITS.get(w, w) for w in words if w]


def reference_terms(text: str) -> list[str]:
    """Every occurrence of a term in ``text`` (the rule above), in order."""
    terms: list[str] = []
    starts = True  # the next word begins a sentence, a line or a quotation
    for token in _TOKEN.findall(text):
        if token in '.!?\n"“‘':
            starts = True
            continue
        if token[0] in "'’":  # an opening quotation mark
            starts = True
        word = token.strip("-'’")
        if not word:
            continue
        if word.replace(",", "").replace(".", "").isdigit():
            terms.append(word)
        elif not starts and any(c.isupper() for c in word) and not _FIRST_PERSON.match(word):
            terms.append(word)
        starts = False
    return terms


def unique(terms: Sequence[str]) -> list[str]:
    """The terms once each, in order of first appearance (the term list a presenter gives)."""
    return list(dict.fromkeys(terms))


@dataclass(frozen=True, slots=True)
class TermRecall:
    """How many occurrences of the reference's terms a transcript holds."""

    found: int
    total: int
    missed: tuple[str, ...]

    @property
    def recall(self) -> float:
        return self.found / self.total if self.total else 1.0

    def __add__(self, other: TermRecall) -> TermRecall:
        return TermRecall(
            self.found + other.found, self.total + other.total, self.missed + other.missed
        )


def _count(words: Sequence[str], phrase: Sequence[str]) -> int:
    n = len(phrase)
    return sum(1 for i in range(len(words) - n + 1) if list(words[i : i + n]) == list(phrase))


def term_recall(terms: Sequence[str], transcript: str) -> TermRecall:
    """The share of ``terms`` (occurrences, repeats included) that ``transcript`` holds."""
    words = fold(transcript)
    found = 0
    missed: list[str] = []
    for term, wanted in Counter(terms).items():
        phrase = fold(term)
        have = min(wanted, _count(words, phrase)) if phrase else 0
        found += have
        missed.extend([term] * (wanted - have))
    return TermRecall(found, len(terms), tuple(missed))
