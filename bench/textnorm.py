"""Text normalisation applied to both sides before any word comparison (WER, alignment, erasure).

English is scored the way the field scores it: Whisper's English text normaliser (PyPI
``whisper-normalizer``, the same rules as ``openai/whisper``'s ``EnglishTextNormalizer`` that
published WERs and the Open ASR leaderboard use): lowercase, punctuation and fillers ("um",
"uh") removed, British spellings and contractions standardised, numbers written as digits
("sixty four billion" and "64 billion" both become ``64 billion``). Other languages get its
``BasicTextNormalizer`` (lowercase, punctuation and diacritic marks removed).

One step comes before it: typographic apostrophes (``’``, ``‘``, ``ʼ``, a backquote) become
``'``. The normaliser expands ``'s``, ``'d`` and the like only after a plain apostrophe, and the
references mix both styles (``beauty’s`` in the LibriVox verse, ``beauty's`` from Whisper), so
without this a correct word counted as two errors. docs/metrics.md, "Normalisation", gives the
old hand-written rules and what the change of scale was.
"""

from __future__ import annotations

import functools
import unicodedata

from whisper_normalizer.basic import BasicTextNormalizer
from whisper_normalizer.english import EnglishTextNormalizer

_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "`": "'"})


@functools.cache
def _english() -> EnglishTextNormalizer:
    return EnglishTextNormalizer()


@functools.cache
def _basic() -> BasicTextNormalizer:
    return BasicTextNormalizer()


def normalise(text: str, lang: str = "en") -> str:
    """``text`` normalised for word comparison in ``lang`` (see the module docstring)."""
    folded = unicodedata.normalize("NFKC", text).translate(_APOSTROPHES)
    normaliser = _english() if lang == "en" else _basic()
    return " ".join(normaliser(folded).split())


def normalise_words(text: str, lang: str = "en") -> list[str]:
    """The normalised words of ``text`` (see :func:`normalise`)."""
    return normalise(text, lang).split()
