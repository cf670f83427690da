"""A sentence translated by Whisper, prompted by the translation before it: the translation
stage's one step for a speech route's final, which bench/translation_regroup.py replays.

Whisper conditions on its own earlier output, so a sentence is decoded with the previous
sentence's English translation as its prompt, after the hint text (a glossary's terms, words a
person's correction brought), cut so that the hints always fit. That prompt sometimes misleads
the decode (:class:`Misled`):

- **echo:** it writes the previous translation again in place of the new sentence, or one
  phrase of its own twice (:func:`engine.translation.echoes.echoes`);
- **short:** it stops after a word or two of a long sentence (9.4 s of French came out
  "Jean-Carlo.").

Either way the sentence is decoded again with the hints alone. After an echo the second decode
is kept; after a short stop, the longer of the two (docs/metrics.md, "Translation / Sentences
that echo the prompt" and "Sentences the speaker had not finished").

A prompt can also mislead more quietly: a sentence worded after the one before it, not after
what was said. So a final (``weigh``) is decoded with and without the previous translation at
once (one encoding, two decodes), and the decode the model was surer of is kept when the prompt
misled it in neither way above and the decode without it said all it heard (its token budget
did not cut it; docs/metrics.md, "Translation / The surer decode").
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

import numpy as np

from engine.audio import SAMPLE_RATE
from engine.translation.backends import Weighed, WhisperTranslate
from engine.translation.echoes import echoes


class Misled(StrEnum):
    """How a prompt misled a decode (module docstring)."""

    ECHO = "echo"
    SHORT = "short"
    UNSURE = "unsure"
    """The decode without the previous translation was surer of itself."""


@dataclass(frozen=True, slots=True)
class PromptRules:
    """What a prompt holds and when its decode is made again (module docstring)."""

    context_chars: int = 200
    """The most characters of hints and previous translation a prompt holds."""
    echo_span: int = 4
    """Words in a row said before that make an echo (engine/translation/echoes.py)."""
    short_after_s: float = 3.0
    """A decode of at least this much audio with fewer than ``min_words_per_second`` words
    a second stopped short."""
    min_words_per_second: float = 0.5


@dataclass(frozen=True, slots=True)
class Prompted:
    """A sentence's translation, and how the prompt misled its first decode (None: it did
    not, and there was one decode)."""

    text: str
    misled: Misled | None = None


def prompt_of(hints: str, previous: str, context_chars: int) -> tuple[str | None, str]:
    """``(prompt, previous)``: the hints, then as many of the last words of ``previous`` as
    fit in ``context_chars`` with them; the part of ``previous`` the prompt holds."""
    room = max(0, context_chars - len(hints) - 1)
    kept = previous[-room:] if room else ""
    if len(kept) < len(previous) and not previous[-room - 1].isspace():
        kept = kept.partition(" ")[2]  # a word cut in two is left out
    return " ".join(p for p in (hints, kept) if p) or None, kept


def misled(text: str, previous: str, seconds: float, rules: PromptRules) -> Misled | None:
    """How the previous translation ``previous`` misled the decode ``text`` of ``seconds``
    of audio, if it did (a decode with no previous translation in its prompt was not)."""
    if not previous:
        return None
    if echoes(text, previous, span=rules.echo_span):
        return Misled.ECHO
    if seconds >= rules.short_after_s and len(text.split()) < rules.min_words_per_second * seconds:
        return Misled.SHORT
    return None


async def translate_prompted(
    whisper: WhisperTranslate,
    audio: np.ndarray,
    *,
    hints: str = "",
    previous: str = "",
    prefix: str = "",
    rules: PromptRules | None = None,
    weigh: bool = False,
) -> Prompted:
    """``audio`` (16 kHz) translated with ``hints`` and the end of ``previous`` as the prompt,
    decoded again with the hints alone when that prompt misled it; with ``weigh``, both
    decoded at once and the surer kept where the prompt did not visibly mislead (module
    docstring). Each decode begins with ``prefix``
    (:class:`engine.translation.backends.WhisperTranslate`)."""
    rules = rules or PromptRules()
    prompt, kept = prompt_of(hints, previous, rules.context_chars)
    seconds = len(audio) / SAMPLE_RATE
    if weigh and kept:
        first, alone = await whisper.each(audio, [prompt, hints or None], prefix or None)
        why = misled(first.text, kept, seconds, rules)
        if why is None and _surer(alone, first):
            why = Misled.UNSURE
        return _kept(first.text, alone.text, why)
    text = await whisper(audio, prompt, prefix or None)
    why = misled(text, kept, seconds, rules)
    if why is None:
        return Prompted(text)
    return _kept(text, await whisper(audio, hints or None, prefix or None), why)


def _surer(one: Weighed, other: Weighed) -> bool:
    """``one`` said all it heard (its budget did not cut it) and was surer than ``other``."""
    return (
        one.ended and one.score is not None and other.score is not None and one.score > other.score
    )


def _kept(text: str, again: str, why: Misled | None) -> Prompted:
    """The prompted decode ``text`` or the one with the hints alone, ``again``, by ``why``
    the prompt misled ``text`` (None: it did not)."""
    if why is None or (why is Misled.SHORT and len(again.split()) <= len(text.split())):
        return Prompted(text, why)
    return Prompted(again, why)
