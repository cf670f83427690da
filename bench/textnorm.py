"""Text normalisation applied to both sides before any word comparison (WER, alignment, erasure).

The references in ``shared/eval`` differ in style (cased and punctuated with disfluencies,
verse with curly apostrophes, digits or spelled-out numbers), and so does Whisper's output, so
both are reduced to the same plain word sequence. The rules are listed in ``docs/metrics.md``.
"""

from __future__ import annotations

import re
import unicodedata

FILLERS: frozenset[str] = frozenset(
    {"um", "umm", "uh", "uhh", "uhm", "er", "erm", "ah", "hmm", "hm", "mm", "mmm"}
)
"""Hesitation words dropped from both sides."""

_ONES = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen"
).split()
_TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()

_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "`": "'"})
_THOUSANDS_SEPARATOR = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_DECIMAL_POINT = re.compile(r"(?<=\d)\.(?=\d)")
_PERCENT = re.compile(r"(?<=\d)\s*%")
_NOT_WORD = re.compile(r"[^\w\s]|_")
_DIGITS = re.compile(r"\d+")

MAX_SPELLED_NUMBER = 9999


def number_to_words(n: int) -> str:
    """Spell a whole number from 0 to 9999 in English words without "and" or hyphens.

    >>> number_to_words(2021)
    'two thousand twenty one'
    """
    if not 0 <= n <= MAX_SPELLED_NUMBER:
        raise ValueError(f"number_to_words handles 0..{MAX_SPELLED_NUMBER}, got {n}")
    if n < 20:
        return _ONES[n]
    if n < 100:
        tens, rest = divmod(n, 10)
        return _TENS[tens] if rest == 0 else f"{_TENS[tens]} {_ONES[rest]}"
    if n < 1000:
        hundreds, rest = divmod(n, 100)
        head = f"{_ONES[hundreds]} hundred"
        return head if rest == 0 else f"{head} {number_to_words(rest)}"
    thousands, rest = divmod(n, 1000)
    head = f"{_ONES[thousands]} thousand"
    return head if rest == 0 else f"{head} {number_to_words(rest)}"


def _spell_token(token: str) -> str:
    """Spell a token made only of digits (0..9999); leave every other token as it is."""
    if _DIGITS.fullmatch(token) and int(token) <= MAX_SPELLED_NUMBER:
        return number_to_words(int(token))
    return token


def normalise_words(text: str) -> list[str]:
    """Return the normalised words of ``text`` (see :func:`normalise`)."""
    text = unicodedata.normalize("NFKC", text).lower().translate(_APOSTROPHES)
    text = _THOUSANDS_SEPARATOR.sub("", text)
    text = _DECIMAL_POINT.sub(" point ", text)
    text = _PERCENT.sub(" percent", text)
    text = text.replace("'", "")
    text = _NOT_WORD.sub(" ", text)
    words: list[str] = []
    for token in text.split():
        if token in FILLERS:
            continue
        words.extend(_spell_token(token).split())
    return words


def normalise(text: str) -> str:
    """Normalise ``text`` for word comparison.

    Steps, in order: Unicode NFKC; lowercase; curly apostrophes to ``'``; thousands separators
    between digits removed (``64,000`` -> ``64000``); a point between digits read as ``point``;
    ``%`` after a digit read as ``percent``; apostrophes removed (``beauty's`` -> ``beautys``);
    every other character that is not a letter, digit or whitespace (hyphens and dashes
    included) becomes a space; fillers (:data:`FILLERS`) dropped; each all-digit token from 0
    to 9999 spelled out (``1`` -> ``one``); whitespace collapsed to single spaces.
    """
    return " ".join(normalise_words(text))
