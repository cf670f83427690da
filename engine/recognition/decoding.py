"""How a recogniser's decodes reach the model: a span of the stream's audio, prompted with
its recent finals and biased towards the session's terms, bounded and guarded; and the
refine decode that makes a segment's final (engine/recognition/recognizer.py).
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import numpy as np

from engine.audio import AudioBuffer
from engine.events import Word
from engine.recognition.asr import DecodeOptions, Transcriber, token_budget
from engine.recognition.config import RecognizerConfig
from engine.recognition.policy import guard_repetitions, word_key
from engine.recognition.recent_finals import Heard, RecentFinals
from engine.recognition.shedding import Shed

T = TypeVar("T")


class RunInThread(Protocol):
    """How the recogniser reaches a model: :meth:`engine.workers.WorkerPool.run`."""

    def __call__(self, fn: Callable[..., T], /, *args: Any) -> Awaitable[T]: ...


@dataclass(frozen=True, slots=True)
class Refined:
    """A refine decode's words."""

    words: list[Word]


class Decoder:
    """Decodes spans of one stream's audio, for its drafts and its finals."""

    def __init__(
        self,
        transcriber: Transcriber,
        buffer: AudioBuffer,
        recent: RecentFinals,
        config: RecognizerConfig,
        run: RunInThread,
        run_first: RunInThread,
        terms: str,
    ) -> None:
        """``run``: how a draft's decode reaches the model; ``run_first``: how a final's
        does, ahead of the drafts waiting for it (:class:`StreamingRecognizer`)."""
        self._transcriber = transcriber
        self._buffer = buffer
        self._recent = recent
        self._config = config
        self._run = run
        self._run_first = run_first
        self._terms = terms
        self.context_misses = 0
        """Refine decodes that heard context and gave no words, so were made again without."""

    def set_terms(self, hint: str) -> None:
        """The session's terms changed: every decode from now on is biased towards them."""
        self._terms = hint

    async def decode(
        self,
        start: float,
        end: float,
        beam: int,
        *,
        timestamps: bool,
        pad: float = 0.0,
        full_window: bool = False,
        heard: Sequence[Heard] = (),
        final: bool = False,
    ) -> list[Word]:
        """Decode ``[start, end)``, followed by ``pad`` seconds of silence (a stream that
        stopped mid-phrase otherwise loses its last word). ``heard``: finals just before
        ``start`` that the decode hears again, their text forced as its prefix. ``final``:
        the decode makes a final, so it goes ahead of waiting drafts."""
        audio = self._buffer.slice(start, end)
        if audio.size < 1600:  # under 0.1 s: nothing a model can read
            return []
        budget = token_budget(end - start, self._config.max_tokens_per_second)
        prefix = " ".join(h.text for h in heard)
        if heard:
            start = heard[0].start
            audio = self._buffer.slice(start, end)
        if pad > 0:
            audio = np.concatenate([audio, np.zeros(int(pad * 16000), dtype=np.float32)])
        options = DecodeOptions(
            language=self._config.language,
            beam_size=beam,
            prompt=self._recent.prompt(prefix),
            hotwords=self._terms or None,
            prefix=prefix or None,
            max_new_tokens=budget,
            word_timestamps=timestamps,
            full_window=full_window,
        )
        run = self._run_first if final else self._run
        decoded = await run(self._transcriber.transcribe, np.ascontiguousarray(audio), options)
        shifted = [
            Word(w.text, w.start + start, w.end + start, w.probability) for w in decoded.words
        ]
        return guard_repetitions(shifted, ended=decoded.ended)

    async def refine(
        self,
        start: float,
        end: float,
        shed: Shed,
        *,
        pad: float = 0.0,
        full_window: bool | None = None,
    ) -> Refined:
        """The careful decode of the segment from ``start`` up to ``end`` that makes its
        final (beam ``refine_beam``, or greedy with ``refine`` off), as the stream sheds at
        ``shed`` (engine/recognition/shedding.py). Word timing is not needed (the caption
        spans the segment), so it skips the alignment pass; the hint anchors its end.
        """
        config = self._config
        if full_window is None:
            full_window = config.refine_full_window
        heard: list[Heard] = []
        if full_window and shed >= Shed.CONTEXT:
            full_window = False
            heard = self._recent.context_for(
                start, end, min(config.shed_context_s, config.refine_context_s)
            )
        elif full_window:
            heard = self._recent.context_for(start, end, config.refine_context_s)
        decode = functools.partial(
            self.decode,
            start,
            end,
            config.refine_beam if config.refine and shed < Shed.BEAM else config.draft_beam,
            timestamps=False,
            pad=pad,
            full_window=full_window,
            final=True,
        )
        words = await decode(heard=heard)
        if heard and not any(word_key(w.text) for w in words):
            # After a forced prefix that ends a sentence and a pause, tiny.en sometimes
            # ends at once (" ."): a whole FLEURS clip's final was lost so. The segment
            # alone is read again.
            self.context_misses += 1
            return Refined(await decode())
        return Refined(words)
