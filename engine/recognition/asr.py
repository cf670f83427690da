"""The speech-recognition interface the pipeline depends on."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from engine.audio import Samples
from engine.events import Word

TOKENS_PER_SECOND = 8.0
"""The default token budget per second of audio: speech rarely passes 5 tokens a second,
loops do (docs/metrics.md, "Repetitions", "What a budget buys")."""


def token_budget(seconds: float, per_second: float = TOKENS_PER_SECOND) -> int:
    """``max_new_tokens`` for a decode of ``seconds`` of audio: ``per_second`` tokens a
    second, and a few more for a short piece's marks and its end."""
    return int(per_second * seconds) + 8


@dataclass(frozen=True, slots=True)
class DecodeOptions:
    """How to decode one window of audio.

    Temperature fallback is always off: retries at higher temperatures made hard clips
    slower than real time on this class of machine; loops are guarded in the policy instead.
    """

    language: str | None = None
    task: Literal["transcribe", "translate"] = "transcribe"
    beam_size: int = 1
    prompt: str | None = None
    hotwords: str | None = None
    """Terms to bias the decode towards (engine/terms.py): text before the prompt in
    Whisper's previous-text slot (faster-whisper's ``hotwords``)."""
    prefix: str | None = None
    """The text of the audio's first part (captions already final): the decoder hears that
    audio as context and returns only the words after it (none if it could not follow it)."""
    word_timestamps: bool = True
    max_new_tokens: int | None = None
    full_window: bool = False
    """Decode in Whisper's full 30 s window even where a shorter one would do (slower,
    and on our recordings more accurate: see models/whisper.py)."""


@dataclass(frozen=True, slots=True)
class Decoded:
    """What one decode gave: its words, with times relative to its audio's first sample, and
    whether the decoder is known to have ended by itself (its end-of-text token) rather than
    run out of its token budget (``DecodeOptions.max_new_tokens``).

    A decoder stopped by its budget may have been looping, so a word repeated up to the end
    is taken for a loop. One that ended by itself said what it heard: the same repetition is
    speech ("bye bye bye bye" at the end of a call; ``engine.recognition.policy``)."""

    words: tuple[Word, ...] = ()
    ended: bool = False
    """Known to have ended by itself. False when the budget stopped it, or when the model
    cannot tell (the guard then treats a repetition at the end as it always has)."""
    score: float | None = None
    """The decode's mean log-probability per token, where the model gives one: how sure it
    was of what it wrote. Comparable between decodes of the same audio with different
    prompts (:meth:`PromptedTranscriber.transcribe_each`)."""


class Transcriber(Protocol):
    """A speech recogniser for one model. Called from a worker thread, one call at a time."""

    name: str
    multilingual: bool

    def transcribe(self, audio: Samples, options: DecodeOptions) -> Decoded:
        """Words of ``audio`` (16 kHz mono float32) with times relative to its first sample,
        and how the decode ended."""
        ...


class PromptedTranscriber(Transcriber, Protocol):
    """A recogniser that decodes one piece of audio under several options at the cost of one
    encoding (prompts differ, the audio does not)."""

    def transcribe_each(self, audio: Samples, options: Sequence[DecodeOptions]) -> list[Decoded]:
        """``audio`` decoded once for each of ``options``, in their order, each with its
        :attr:`Decoded.score`."""
        ...


class LanguageIdentifier(Protocol):
    """Which of a few languages is spoken (Whisper's language identification)."""

    def identify(self, audio: Samples, candidates: Sequence[str]) -> dict[str, float]:
        """Probability of each candidate language for ``audio`` (16 kHz mono float32);
        blocking: run it in the ASR pool."""
        ...
