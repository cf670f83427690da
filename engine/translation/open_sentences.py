"""Each speaker's open sentence within a session's translation stage, and the pause that
closes it.

A panel's speakers talk at once, so the stage keeps one :class:`SentenceAssembler` per
speaker (engine/translation/sentences.py, which decides where a sentence closes from the
finals alone). What the finals cannot tell, whether the speaker went on after a final that
left the sentence open, is settled here: by the next caption of that speaker (it began within
``resume_gap_s``, or not), by what the VAD had heard (``NextSpeech``), or else by a timer of
``pause_s`` with nothing of the speaker (docs/metrics.md, "Speech heard before the final" and
"Sentences closed by the silence"). Each sentence closed is handed on to the stage, once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping

import numpy as np

from engine.events import Caption
from engine.recognition.vad import NextSpeech
from engine.translation.lane import speaker_key
from engine.translation.sentences import Sentence, SentenceAssembler, SentenceRules, SourcePiece


class OpenSentences:
    """The open sentence of each speaker, closed at its end, at a long pause or when the
    stream stops; ``closed`` takes each sentence closed (module docstring)."""

    def __init__(
        self, rules: SentenceRules, context_chars: int, closed: Callable[[Sentence], None]
    ) -> None:
        self._rules = rules
        self._context_chars = context_chars
        self._closed = closed
        self._sentences: dict[str, SentenceAssembler] = {}
        """The open sentence of each speaker (a panel's speakers talk at once)."""
        self._pauses: dict[str, asyncio.Task[None]] = {}

    @property
    def by_speaker(self) -> Mapping[str, SentenceAssembler]:
        """The open sentence of each speaker, kept up to date (for drafts to read)."""
        return self._sentences

    def hear(self, draft: Caption) -> None:
        """Take a source draft (in order): its speaker's speech goes on there."""
        who = speaker_key(draft)
        assembler = self._assembler(who)
        self._speech_after_pause(who, draft.start)
        assembler.hear(draft)

    def add(
        self,
        final: Caption,
        audio: np.ndarray | None = None,
        *,
        whole: bool = False,
        after: NextSpeech | None = None,
    ) -> bool:
        """Take a source final (in order) and its audio; ``whole`` and ``after`` as
        :meth:`engine.translation.stage.SessionTranslator.on_source` takes them. Whether its
        sentence is still open (its refined source is worth a draft)."""
        who = speaker_key(final)
        assembler = self._assembler(who)
        self._speech_after_pause(who, final.start)
        sentence = assembler.add(SourcePiece(final, audio), whole=whole)
        if sentence is not None:
            self._stop_pause(who)
            self._closed(sentence)
            return False
        return self._follow(who, assembler.went_on(after))

    def on_silence(self, final: Caption, after: NextSpeech | None) -> bool:
        """What the VAD has heard since ``final``, the last source final passed in, while the
        pause after it is timed: a silence already too long for its sentence to go on
        (``resume_gap_s``, engine/translation/sentences.py) closes the sentence now rather
        than at the timer (docs/metrics.md, "Translation / Sentences closed by the
        silence"). Whether the pause is still timed, so worth telling again."""
        who = speaker_key(final)
        assembler = self._sentences.get(who)
        if who not in self._pauses or assembler is None or not assembler.ends_at(final.segment):
            return False
        if after is not None and assembler.went_on(after) is False:
            self._close_sentence(who)
            return False
        return True

    def close_all(self) -> None:
        """Close every open sentence now (the stream stopped)."""
        for who in list(self._sentences):
            self._close_sentence(who)

    def stop(self) -> None:
        """Cancel the pauses being timed (the stage closes)."""
        for pause in self._pauses.values():
            pause.cancel()

    def _assembler(self, who: str) -> SentenceAssembler:
        assembler = self._sentences.get(who)
        if assembler is None:
            assembler = SentenceAssembler(self._rules, self._context_chars)
            self._sentences[who] = assembler
        return assembler

    def _speech_after_pause(self, who: str, start: float) -> None:
        """The first caption (draft or final) after a final that left ``who``'s sentence
        open: if it begins within ``resume_gap_s`` the speaker went on, and the sentence waits
        for this segment's final, however long its refine takes (its arrival restarts the
        pause if the sentence stays open); otherwise a long pause came first and the sentence
        closes now."""
        if who in self._pauses:
            self._follow(who, self._sentences[who].goes_on(start))

    def _follow(self, who: str, went_on: bool | None) -> bool:
        """What followed ``who``'s last final decides the open sentence: the speaker went on
        (True: no pause to time, it waits for the next final), paused long (False: it closes
        now) or not known yet (None: the pause is timed). Whether it is still open."""
        if went_on is None:
            self._restart_pause(who)
        elif went_on:
            self._stop_pause(who)
        else:
            self._close_sentence(who)
        return went_on is not False

    def _restart_pause(self, who: str) -> None:
        self._stop_pause(who)
        self._pauses[who] = asyncio.create_task(
            self._close_after_pause(who), name="mt-sentence-pause"
        )

    def _stop_pause(self, who: str) -> None:
        pause = self._pauses.pop(who, None)
        if pause is not None and pause is not asyncio.current_task():
            pause.cancel()

    async def _close_after_pause(self, who: str) -> None:
        await asyncio.sleep(self._rules.pause_s)
        self._close_sentence(who)

    def _close_sentence(self, who: str) -> None:
        self._stop_pause(who)
        assembler = self._sentences.get(who)
        sentence = assembler.close() if assembler is not None else None
        if sentence is not None:
            self._closed(sentence)
