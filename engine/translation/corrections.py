"""A person's corrections of source finals within a session's translation stage.

Corrections (engine/editing.py): a person's correction of a source final reaches the stage
through :meth:`engine.translation.stage.SessionTranslator.correct`. A sentence not yet
translated is translated with the corrected text (:meth:`Corrections.source_text`); a
translation final already published is made again from its sentence's corrected source text
and published with the same ``segment`` and ``sources`` and the next ``rev``, ahead of the
sentences waiting in the lane and after the re-makes before it (:class:`Remakes`; a re-made
line is published even when its text came out the same: every caption language hears of
every correction). A Whisper-translate lane decodes the sentence's audio again with the
corrected words as hint text: the stage keeps the audio of its recent sentences for that, at
most ``recent_audio_s`` seconds of it (older sentences are re-made by the route's text
backend if it has one, else left as they were).
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Iterable

from engine.events import Caption
from engine.revisions import Remake, changed_words
from engine.translation.calls import TranslationCalls
from engine.translation.config import TranslationConfig
from engine.translation.drafts import Publish
from engine.translation.lane import Lane, Redo, log_crash
from engine.translation.sentences import Sentence, SourcePiece

log = logging.getLogger(__name__)


class Corrections:
    """What people corrected of the stage's source finals, and the recent closed sentences
    (with their audio where a route translates speech) a correction makes again."""

    def __init__(self, config: TranslationConfig, *, keeps_audio: bool) -> None:
        self._config = config
        self._keeps_audio = keeps_audio
        self._corrected: OrderedDict[int, tuple[str, tuple[str, ...]]] = OrderedDict()
        """Source segment -> its corrected text and the words the correction brought."""
        self._recent: OrderedDict[int, Sentence] = OrderedDict()
        """Recent closed sentences by first segment, with their audio (speech routes)."""

    def learn(self, caption: Caption) -> None:
        """A person corrected the source final ``caption``: its text and the words the
        correction brought, for the last ``corrections_kept`` segments."""
        previous = self._corrected.pop(caption.segment, None)
        taught = tuple(changed_words(previous[0] if previous else "", caption.text))
        self._corrected[caption.segment] = (caption.text, taught)
        while len(self._corrected) > self._config.corrections_kept:
            self._corrected.popitem(last=False)

    def redo(self, remake: Remake, text: str) -> Redo:
        """The job that makes ``remake``'s line again, its source corrected to ``text``."""
        words = tuple(changed_words(self._text_before(remake.line), text))
        return Redo(remake.line, remake.source_text, words)

    def _text_before(self, line: Caption) -> str:
        """The source text a published line was made from, as far as this stage knows."""
        sentence = self._recent.get(line.segment)
        return "" if sentence is None else sentence.text

    def source_text(self, sentence: Sentence) -> str:
        """The sentence's source text with every correction made to it so far."""
        parts = []
        for piece in sentence.pieces:
            corrected = self._corrected.get(piece.caption.segment)
            text = (piece.caption.text if corrected is None else corrected[0]).strip()
            if text:
                parts.append(text)
        return " ".join(parts)

    def taught(self, segments: Iterable[int]) -> tuple[str, ...]:
        """The words the corrections of ``segments`` brought, each once."""
        words: dict[str, None] = {}
        for segment in segments:
            corrected = self._corrected.get(segment)
            if corrected is not None:
                words.update(dict.fromkeys(corrected[1]))
        return tuple(words)

    def remember(self, sentence: Sentence) -> None:
        """Keep a closed sentence (with its audio where a route translates speech) within
        ``recent_audio_s``; without speech routes, only its text, for the last few."""
        if not self._keeps_audio:
            sentence = Sentence(
                tuple(SourcePiece(p.caption) for p in sentence.pieces), sentence.context
            )
        self._recent[sentence.first.segment] = sentence
        limit = self._config.recent_audio_s
        while self._recent and (
            sum(s.end - s.start for s in self._recent.values()) > limit
            or len(self._recent) > self._config.corrections_kept
        ):
            self._recent.popitem(last=False)

    def recent(self, segment: int) -> Sentence | None:
        """The recent closed sentence whose first segment is ``segment``, if still kept."""
        return self._recent.get(segment)


class Remakes:
    """Published translation finals made again after a correction (module docstring)."""

    def __init__(self, publish: Publish, calls: TranslationCalls, corrections: Corrections) -> None:
        self._publish = publish
        self._calls = calls
        self._corrections = corrections

    def queue(self, lane: Lane, job: Redo) -> None:
        """Re-make a line ahead of the sentences waiting in the lane (a person waits for
        it), after the re-makes before it (so the last correction's is published last)."""
        before = lane.redoing

        async def redo() -> None:
            if before is not None:
                await asyncio.gather(before, return_exceptions=True)
            await self.make(lane, job)

        lane.redoing = asyncio.create_task(redo(), name=f"mt-redo-{lane.target}")
        lane.redoing.add_done_callback(log_crash)

    async def make(self, lane: Lane, job: Redo) -> None:
        """Make a published translation final again from its corrected source text."""
        line = job.line
        sentence = self._corrections.recent(line.segment)
        audio = sentence.audio() if sentence is not None else None
        plan = lane.plan
        try:
            if plan.route.speech_final and self._calls.speech and audio is not None:
                text = await self._calls.translate_speech(lane, audio, job.taught)
            else:
                backend = plan.final or plan.draft
                if backend is None:
                    log.info(
                        "no way to re-make %s line %d: left as it was", lane.target, line.segment
                    )
                    return
                context = sentence.context if sentence is not None else None
                text = await self._calls.translate_text(
                    backend, lane.target, job.source_text, context or None
                )
        except Exception:  # a model failure: the line stays as it was
            log.exception("re-making %s line %d failed", lane.target, line.segment)
            return
        async with lane.lock:
            await self._publish(line.revised(text))
