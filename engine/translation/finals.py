"""A session's translation finals: each closed sentence translated once per lane.

Each lane takes the sentences the stage closed (engine/translation/stage.py, module
docstring), in order, from its finals queue, translates each by the best backend it may use
now, with the previous sentence as context where the backend uses it, and publishes it under
the sentence's first segment with ``sources`` naming its segments. A sentence corrected while
it was being translated is made again at once (engine/translation/corrections.py).

Overflow policy of the finals queue: finals are never dropped. The queue holds at most one
entry per closed sentence, so it grows at the session's sentence rate. When more than
``degrade_backlog`` sentences wait in a lane, or the final backend's pool is saturated,
sentences are translated with the route's draft backend (fast) and that lane's drafts are
skipped, until the backlog clears. A backend failure publishes an :class:`ErrorEvent` (once
per run of failures) and the source text, clearly marked.
"""

from __future__ import annotations

import logging
import time

from engine.events import Caption, ErrorEvent
from engine.translation.calls import TranslationCalls
from engine.translation.config import TranslationConfig, TranslationStats
from engine.translation.corrections import Corrections, Remakes
from engine.translation.drafts import Publish
from engine.translation.lane import ClosedSentence, Lane, Redo
from engine.translation.sentences import Sentence
from engine.workers import Saturated

log = logging.getLogger(__name__)


class SentenceFinals:
    """Translation finals of the closed sentences of ``source``, per lane (module
    docstring)."""

    def __init__(
        self,
        source: str,
        publish: Publish,
        calls: TranslationCalls,
        corrections: Corrections,
        remakes: Remakes,
        config: TranslationConfig,
        stats: TranslationStats,
    ) -> None:
        self._source = source
        self._publish = publish
        self._calls = calls
        self._corrections = corrections
        self._remakes = remakes
        self._config = config
        self._stats = stats

    async def run(self, lane: Lane) -> None:
        while True:
            job = await lane.finals.get()
            try:
                if job is None:
                    return
                if isinstance(job, Redo):
                    await self._remakes.make(lane, job)
                    continue
                await self._publish_final(lane, job)
            finally:
                lane.finals.task_done()

    async def _publish_final(self, lane: Lane, job: ClosedSentence) -> None:
        """Translate a closed sentence and publish it; then draft again the segments its
        draft held (:meth:`Lane.release`), whatever became of it."""
        used = self._corrections.source_text(job.sentence)
        try:
            caption = await self._final_caption(lane, job.sentence)
            if caption is None:
                return
            async with lane.lock:
                await self._publish(caption)
            self._stats.final_latency.append(time.perf_counter() - job.closed)
            now = self._corrections.source_text(job.sentence)
            if now != used:  # corrected while it was being translated
                words = self._corrections.taught(job.sentence.segments)
                self._remakes.queue(lane, Redo(caption, now, words))
        finally:
            lane.release(job.sentence.segments)

    async def _final_caption(self, lane: Lane, sentence: Sentence) -> Caption | None:
        text = ""
        source_text = self._corrections.source_text(sentence)
        if source_text:
            try:
                made = await self._translate_final(lane, sentence)
                if made is None:
                    self._stats.finals_skipped += 1
                    lane.gap = True
                    return None
                text = made
                lane.failing = False
                self._stats.finals_translated += 1
            except Exception as exc:  # a model failure: tell the audience, keep the session
                self._stats.finals_failed += 1
                log.exception("final translation %s->%s failed", self._source, lane.target)
                text = f"[{self._source}, untranslated] {source_text}"
                if not lane.failing:
                    lane.failing = True
                    await self._publish(
                        ErrorEvent(f"translation into {lane.target} failed: {type(exc).__name__}")
                    )
            lane.previous_translation = text
        first = sentence.first
        return Caption(
            segment=first.segment,
            lang=lane.target,
            source=False,
            state="final",
            text=text,
            start=sentence.start,
            end=sentence.end,
            stable=len(text),
            sources=sentence.segments,
            speaker=first.speaker,
        )

    async def _translate_final(self, lane: Lane, sentence: Sentence) -> str | None:
        """The sentence's translation by the best backend the lane may use now; None when
        nobody reads the language and its route has no text backend."""
        plan = lane.plan
        degrade = plan.draft is not None and lane.finals.qsize() >= self._config.degrade_backlog
        if not degrade:
            try:
                if plan.route.speech_final:
                    audio = sentence.audio()
                    if lane.reading and self._calls.speech and audio is not None:
                        taught = self._corrections.taught(sentence.segments)
                        return await self._calls.translate_speech(lane, audio, taught)
                elif plan.final is not None:
                    return await self._calls.translate_text(
                        plan.final,
                        lane.target,
                        self._corrections.source_text(sentence),
                        sentence.context or None,
                    )
            except Saturated:
                if plan.draft is None:
                    raise
                log.warning("final backend for %s saturated; using the draft one", lane.target)
        if plan.draft is None:
            if not lane.reading:
                return None
            raise RuntimeError(f"neither audio nor a text route for a final into {lane.target}")
        if lane.reading:
            self._stats.finals_degraded += 1
        return await self._calls.translate_text(
            plan.draft, lane.target, self._corrections.source_text(sentence)
        )
