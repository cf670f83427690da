"""One session's translation stage for one source language: source captions in, translated
captions out.

Translation is made once per target language (a *lane*), never once per listener:

- Finals are made from whole sentences (engine/translation/sentences.py): the source finals
  of a sentence are gathered, and once it closes each lane translates it once, with the
  previous sentence as context where the backend uses it. The translation final names the
  source segments it covers (``sources``); its ``segment`` is the first of them. Every lane
  translates every sentence, whether or not anyone reads its language: a lane nobody reads
  uses its route's text backend (cheap; Whisper-translate needs its decoder and runs only
  for a language someone reads), so every offered language's transcript is complete. Where a
  route has no text backend, the lines nobody read are a gap, and the first reader of that
  language is told so.
- Drafts, only for languages someone reads, show each speaker's open sentence so far,
  translated as one text under its first segment, until its final replaces them
  (engine/translation/drafts.py, :class:`SentenceDrafts`; a route with no text backend
  drafts from the sentence's speech). Drafts never wait behind finals.

Both translate through :class:`engine.translation.calls.TranslationCalls`, which applies the
presenter's glossary.

Corrections (engine/editing.py): a person's correction of a source final reaches the stage
through :meth:`SessionTranslator.correct`. A sentence not yet translated is translated with
the corrected text; a translation final already published is made again from its sentence's
corrected source text and published with the same ``segment`` and ``sources`` and the next
``rev``, ahead of the sentences waiting in the lane and after the re-makes before it (a
re-made line is published even when its text came out the same: every caption language
hears of every correction). A Whisper-translate lane decodes the sentence's audio again with
the corrected words as hint text: the stage keeps the audio of its recent sentences for
that, at most ``recent_audio_s`` seconds of it (older sentences are re-made by the route's
text backend if it has one, else left as they were).

Overflow policy of the finals queue: finals are never dropped. The queue holds at most one
entry per closed sentence, so it grows at the session's sentence rate. When more than
``degrade_backlog`` sentences wait in a lane, or the final backend's pool is saturated,
sentences are translated with the route's draft backend (fast) and that lane's drafts are
skipped, until the backlog clears. A backend failure publishes an :class:`ErrorEvent` (once
per run of failures) and the source text, clearly marked.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Iterable, Mapping

import numpy as np

from engine import languages
from engine.events import Caption, ErrorEvent
from engine.recognition.vad import NextSpeech
from engine.revisions import Remake, changed_words
from engine.translation.backends import TargetPlan, WhisperTranslate
from engine.translation.calls import TranslationCalls
from engine.translation.config import TranslationConfig, TranslationStats
from engine.translation.drafts import Publish, SentenceDrafts
from engine.translation.lane import (
    ClosedSentence,
    Lane,
    PendingDraft,
    Redo,
    speaker_key,
)
from engine.translation.sentences import Sentence, SentenceAssembler, SourcePiece
from engine.translation.text import Glossary
from engine.workers import Saturated

log = logging.getLogger(__name__)


class SessionTranslator:
    """Translates one source language's captions of a session into its target languages."""

    def __init__(
        self,
        source: str,
        publish: Publish,
        plans: Mapping[str, TargetPlan],
        *,
        whisper_translate: WhisperTranslate | None = None,
        whisper_drafts: WhisperTranslate | None = None,
        glossary: Glossary | Mapping[str, Mapping[str, str]] | None = None,
        config: TranslationConfig | None = None,
    ) -> None:
        self.source = languages.normalise(source)
        self._publish = publish
        self._lanes = {
            languages.normalise(t): Lane(languages.normalise(t), p) for t, p in plans.items()
        }
        self.config = config or TranslationConfig()
        self.stats = TranslationStats()
        self._calls = TranslationCalls(
            self.config,
            self.stats,
            whisper=whisper_translate,
            whisper_drafts=whisper_drafts,
            glossary=glossary,
        )
        self._sentences: dict[str, SentenceAssembler] = {}
        """The open sentence of each speaker (a panel's speakers talk at once)."""
        self._drafts = SentenceDrafts(
            publish, self._calls, self._sentences, self.config, self.stats
        )
        self._pauses: dict[str, asyncio.Task[None]] = {}
        self._closed = False
        self._corrected: OrderedDict[int, tuple[str, tuple[str, ...]]] = OrderedDict()
        """Source segment -> its corrected text and the words the correction brought."""
        self._keeps_audio = any(plan.route.speech_final for plan in plans.values())
        self._rules = self.config.speech_sentences if self._keeps_audio else self.config.sentences
        self._recent: OrderedDict[int, Sentence] = OrderedDict()
        """Recent closed sentences by first segment, with their audio (speech routes)."""

    @property
    def languages(self) -> frozenset[str]:
        """The target languages someone reads now."""
        return frozenset(t for t, lane in self._lanes.items() if lane.reading)

    @property
    def targets(self) -> frozenset[str]:
        """Every target language this stage translates finals into."""
        return frozenset(self._lanes)

    def set_languages(self, targets: Iterable[str]) -> None:
        """Someone reads exactly ``targets`` from now on (the union of what listeners and the
        presenter selected): those get drafts and the route's best final backend. Call it on
        the event loop (it starts the lanes' tasks)."""
        wanted = {languages.normalise(code) for code in targets}
        self._start()
        for target, lane in self._lanes.items():
            if target in wanted and not lane.reading:
                lane.reading = True
                if lane.gap:
                    lane.gap = False
                    self._spawn(self._report_gap(lane))
            elif target not in wanted and lane.reading:
                lane.reading = False
                lane.pending.clear()

    async def translate_text(self, target: str, text: str) -> str:
        """``text`` translated into ``target`` by the route's text backend (its final one,
        else its draft one); "" when the route has none (a question for the moderator)."""
        lane = self._lanes.get(languages.normalise(target))
        if lane is None:
            return ""
        backend = lane.plan.final or lane.plan.draft
        if backend is None:
            return ""
        return await self._calls.translate_text(backend, lane.target, text)

    def set_glossary(self, glossary: Mapping[str, Mapping[str, str]]) -> None:
        """Replace the presenter's glossary; applies to every translation from now on."""
        self._calls.set_glossary(glossary)

    def correct(self, caption: Caption, remakes: Iterable[Remake] = ()) -> None:
        """A person corrected the source final ``caption`` (``rev`` > 0): a sentence not
        translated yet takes the corrected text; each of ``remakes`` (the published
        translation finals covering it, engine/revisions.py) is made again in its lane."""
        previous = self._corrected.pop(caption.segment, None)
        taught = tuple(changed_words(previous[0] if previous else "", caption.text))
        self._corrected[caption.segment] = (caption.text, taught)
        while len(self._corrected) > self.config.corrections_kept:
            self._corrected.popitem(last=False)
        self._start()
        for remake in remakes:
            lane = self._lanes.get(remake.line.lang)
            if lane is not None and not self._closed:
                words = tuple(changed_words(self._text_before(remake.line), caption.text))
                self._queue_redo(lane, Redo(remake.line, remake.source_text, words))

    def _queue_redo(self, lane: Lane, job: Redo) -> None:
        """Re-make a line ahead of the sentences waiting in the lane (a person waits for
        it), after the re-makes before it (so the last correction's is published last)."""
        before = lane.redoing

        async def redo() -> None:
            if before is not None:
                await asyncio.gather(before, return_exceptions=True)
            await self._redo(lane, job)

        lane.redoing = asyncio.create_task(redo(), name=f"mt-redo-{lane.target}")
        lane.redoing.add_done_callback(_log_crash)

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

    def _taught(self, segments: Iterable[int]) -> tuple[str, ...]:
        words: dict[str, None] = {}
        for segment in segments:
            corrected = self._corrected.get(segment)
            if corrected is not None:
                words.update(dict.fromkeys(corrected[1]))
        return tuple(words)

    async def on_source(
        self,
        caption: Caption,
        audio: np.ndarray | None = None,
        *,
        whole: bool = False,
        after: NextSpeech | None = None,
    ) -> None:
        """Take the next source caption (in order); ``audio`` is the segment's 16 kHz audio,
        given with finals. ``whole``: the final is a sentence of its own (an accepted
        question), closed at once whatever the rules wait for. ``after``: what the VAD had
        heard after a final when it was made (engine/translation/sentences.py). Returns at
        once: translation runs in the lanes' tasks."""
        if not caption.source or self._closed:
            return
        self._start()
        now = time.perf_counter()
        who = speaker_key(caption)
        assembler = self._sentences.get(who)
        if assembler is None:
            assembler = SentenceAssembler(self._rules, self.config.context_chars)
            self._sentences[who] = assembler
        self._speech_after_pause(who, caption.start)
        if not caption.is_final:
            assembler.hear(caption)
            for lane in self._lanes.values():
                self._drafts.want(lane, PendingDraft(caption, now, audio=audio))
            return
        sentence = assembler.add(SourcePiece(caption, audio), whole=whole)
        if sentence is not None:
            self._stop_pause(who)
            self._enqueue(sentence)
            return
        if not self._follow(who, assembler.went_on(after)):
            return
        # The open sentence shows translated drafts of its refined source until its final.
        refined = Caption(
            segment=caption.segment,
            lang=caption.lang,
            source=True,
            state="draft",
            text=caption.text,
            start=caption.start,
            end=caption.end,
            stable=len(caption.text),
        )
        for lane in self._lanes.values():
            self._drafts.want(lane, PendingDraft(refined, now, refined=True))

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

    async def drain(self) -> None:
        """Close the open sentences (the stream stopped) and wait until every sentence queued
        so far has been published."""
        for who in list(self._sentences):
            self._close_sentence(who)
        await asyncio.gather(*(lane.finals.join() for lane in self._lanes.values()))
        redoing = [lane.redoing for lane in self._lanes.values() if lane.redoing is not None]
        await asyncio.gather(*redoing, return_exceptions=True)

    async def close(self) -> None:
        """Finish the queued finals, cancel drafts, stop every lane's tasks."""
        self._closed = True
        for pause in self._pauses.values():
            pause.cancel()
        for lane in self._lanes.values():
            lane.reading = False
            lane.pending.clear()
            if lane.tasks:
                lane.finals.put_nowait(None)
        draft_tasks = [lane.tasks[0] for lane in self._lanes.values() if lane.tasks]
        for task in draft_tasks:
            task.cancel()
        final_tasks = [t for lane in self._lanes.values() for t in lane.tasks[1:]]
        redoing = [lane.redoing for lane in self._lanes.values() if lane.redoing is not None]
        await asyncio.gather(*final_tasks, *draft_tasks, *redoing, return_exceptions=True)

    # -- sentences ---------------------------------------------------------------------------

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
            self._enqueue(sentence)

    def _enqueue(self, sentence: Sentence) -> None:
        self.stats.sentences += 1
        self._remember(sentence)
        closed = ClosedSentence(sentence, time.perf_counter())
        for lane in self._lanes.values():
            self.stats.drafts_late += lane.cover(sentence.segments)
            lane.finals.put_nowait(closed)

    def _remember(self, sentence: Sentence) -> None:
        """Keep a closed sentence (with its audio where a route translates speech) within
        ``recent_audio_s``; without speech routes, only its text, for the last few."""
        if not self._keeps_audio:
            sentence = Sentence(
                tuple(SourcePiece(p.caption) for p in sentence.pieces), sentence.context
            )
        self._recent[sentence.first.segment] = sentence
        limit = self.config.recent_audio_s
        while self._recent and (
            sum(s.end - s.start for s in self._recent.values()) > limit
            or len(self._recent) > self.config.corrections_kept
        ):
            self._recent.popitem(last=False)

    # -- lanes ------------------------------------------------------------------------------

    def _start(self) -> None:
        for lane in self._lanes.values():
            if not lane.tasks and not self._closed:
                lane.tasks = [
                    asyncio.create_task(self._drafts.run(lane), name=f"mt-draft-{lane.target}"),
                    asyncio.create_task(self._final_loop(lane), name=f"mt-final-{lane.target}"),
                ]
                for task in lane.tasks:
                    task.add_done_callback(_log_crash)

    def _spawn(self, work: Awaitable[None]) -> None:
        task = asyncio.ensure_future(work)
        task.add_done_callback(_log_crash)

    @property
    def drafts_from_speech(self) -> bool:
        """Whether a source draft's audio is of use: someone reads a language this stage
        drafts from speech. Otherwise the stream need not hand it over."""
        return self._drafts.from_speech(self._lanes.values())

    async def _final_loop(self, lane: Lane) -> None:
        while True:
            job = await lane.finals.get()
            try:
                if job is None:
                    return
                if isinstance(job, Redo):
                    await self._redo(lane, job)
                    continue
                await self._publish_final(lane, job)
            finally:
                lane.finals.task_done()

    async def _publish_final(self, lane: Lane, job: ClosedSentence) -> None:
        """Translate a closed sentence and publish it; then draft again the segments its
        draft held (:meth:`Lane.release`), whatever became of it."""
        used = self.source_text(job.sentence)
        try:
            caption = await self._final_caption(lane, job.sentence)
            if caption is None:
                return
            async with lane.lock:
                await self._publish(caption)
            self.stats.final_latency.append(time.perf_counter() - job.closed)
            now = self.source_text(job.sentence)
            if now != used:  # corrected while it was being translated
                words = self._taught(job.sentence.segments)
                self._queue_redo(lane, Redo(caption, now, words))
        finally:
            lane.release(job.sentence.segments)

    async def _redo(self, lane: Lane, job: Redo) -> None:
        """Make a published translation final again from its corrected source text."""
        line = job.line
        sentence = self._recent.get(line.segment)
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

    async def _final_caption(self, lane: Lane, sentence: Sentence) -> Caption | None:
        text = ""
        source_text = self.source_text(sentence)
        if source_text:
            try:
                made = await self._translate_final(lane, sentence)
                if made is None:
                    self.stats.finals_skipped += 1
                    lane.gap = True
                    return None
                text = made
                lane.failing = False
                self.stats.finals_translated += 1
            except Exception as exc:  # a model failure: tell the audience, keep the session
                self.stats.finals_failed += 1
                log.exception("final translation %s->%s failed", self.source, lane.target)
                text = f"[{self.source}, untranslated] {source_text}"
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
        degrade = plan.draft is not None and lane.finals.qsize() >= self.config.degrade_backlog
        if not degrade:
            try:
                if plan.route.speech_final:
                    audio = sentence.audio()
                    if lane.reading and self._calls.speech and audio is not None:
                        taught = self._taught(sentence.segments)
                        return await self._calls.translate_speech(lane, audio, taught)
                elif plan.final is not None:
                    return await self._calls.translate_text(
                        plan.final,
                        lane.target,
                        self.source_text(sentence),
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
            self.stats.finals_degraded += 1
        return await self._calls.translate_text(plan.draft, lane.target, self.source_text(sentence))

    async def _report_gap(self, lane: Lane) -> None:
        name = languages.get(lane.target).english_name if languages.is_known(lane.target) else ""
        await self._publish(
            ErrorEvent(
                f"Earlier lines have no {name or lane.target} translation: this server "
                f"translates {self.source} into {lane.target} from speech, only while "
                "someone reads it."
            )
        )


def _log_crash(task: asyncio.Future[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("translation task crashed", exc_info=task.exception())
