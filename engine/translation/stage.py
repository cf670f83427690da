"""One session's translation stage: source captions in, translated captions out.

Translation is made once per target language that at least one listener or the presenter
selected, never once per listener. Per language (a *lane*):

- Drafts: each draft update of the open segment replaces the lane's pending draft; at most
  one draft translation runs and one (the newest) waits, older ones are dropped and counted.
  What is shown is stabilised (:func:`engine.translation_text.stabilise`). A draft whose segment
  has had its final is never published, and drafts are never queued behind finals.
- Finals: translated once, in segment order, with the previous final as context where the
  backend uses it, and cached per (segment, language). A backend failure publishes an
  :class:`ErrorEvent` (once per run of failures) and the source text, clearly marked.

Overflow policy of the finals queue: finals are never dropped. The queue holds at most one
entry per source segment the recogniser closed, so its growth is bounded by the session's
segment rate (a segment lasts at least a pause; at most ~2 a second). When more than
``degrade_backlog`` finals wait in a lane, or the final backend's pool is saturated, finals are
translated with the route's draft backend (fast) and that lane's drafts are skipped, until
the backlog clears.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np

from engine import languages
from engine.events import Caption, ErrorEvent, Event
from engine.translation.backends import PooledTranslator, TargetPlan, WhisperTranslate
from engine.translation.text import Glossary, Terms, stabilise
from engine.workers import Saturated

log = logging.getLogger(__name__)

Publish = Callable[[Event], Awaitable[object]]


@dataclass(frozen=True, slots=True)
class TranslationConfig:
    hold_back_words: int = 1
    """Last words of a draft translation not shown until a later draft or the final (less
    flicker); 0 shows everything. Not applied when the source draft is wholly stable."""
    draft_stable_only: bool = True
    """Translate only the stable (committed) part of a source draft: its unstable tail
    changes from one draft to the next, and with a different word order in the target every
    change moved words already shown (erasure 0.8-1.0 on the bench, goal 0.3)."""
    backfill_finals: int = 3
    """A language selected later gets this many of the most recent finals translated."""
    degrade_backlog: int = 4
    cache_finals: int = 1000
    """Translated finals kept per language (a later listener of it re-uses them)."""
    context_chars: int = 200


@dataclass(slots=True)
class TranslationStats:
    drafts_translated: int = 0
    drafts_stale: int = 0
    """Replaced by a newer draft before they ran."""
    drafts_late: int = 0
    """Dropped because their segment's final arrived first."""
    drafts_failed: int = 0
    finals_translated: int = 0
    finals_degraded: int = 0
    finals_failed: int = 0
    draft_latency: deque[float] = field(default_factory=lambda: deque(maxlen=512))
    """Seconds from a source draft's arrival to its translation being published."""
    final_latency: deque[float] = field(default_factory=lambda: deque(maxlen=512))


@dataclass(frozen=True, slots=True)
class _Job:
    caption: Caption
    arrived: float
    audio: np.ndarray | None = None
    context: str = ""


class _Lane:
    """The translation state of one target language."""

    def __init__(self, target: str, plan: TargetPlan) -> None:
        self.target = target
        self.plan = plan
        self.active = False
        self.pending: _Job | None = None
        self.wake = asyncio.Event()
        self.finals: asyncio.Queue[_Job | None] = asyncio.Queue()
        self.cache: OrderedDict[int, Caption] = OrderedDict()
        self.closed_upto = -1
        """Highest source segment whose final arrived: its drafts are never shown again."""
        self.published_upto = -1
        self.shown_segment = -1
        self.shown = ""
        self.draft_source = ""
        """The source text the last draft translation was made from."""
        self.previous_translation = ""
        self.failing = False
        self.lock = asyncio.Lock()
        self.tasks: list[asyncio.Task[None]] = []


class SessionTranslator:
    """Translates one session's source captions into the selected target languages."""

    def __init__(
        self,
        source: str,
        publish: Publish,
        plans: Mapping[str, TargetPlan],
        *,
        whisper_translate: WhisperTranslate | None = None,
        glossary: Glossary | Mapping[str, Mapping[str, str]] | None = None,
        config: TranslationConfig | None = None,
    ) -> None:
        self.source = languages.normalise(source)
        self._publish = publish
        self._lanes = {
            languages.normalise(t): _Lane(languages.normalise(t), p) for t, p in plans.items()
        }
        self._whisper = whisper_translate
        self._glossary = glossary if isinstance(glossary, Glossary) else Glossary(glossary)
        self.config = config or TranslationConfig()
        self.stats = TranslationStats()
        self._recent: deque[_Job] = deque(maxlen=max(1, self.config.backfill_finals))
        self._last_source_final = ""
        self._closed = False

    @property
    def languages(self) -> frozenset[str]:
        """The target languages being translated now."""
        return frozenset(t for t, lane in self._lanes.items() if lane.active)

    def set_languages(self, targets: Iterable[str]) -> None:
        """Translate into exactly ``targets`` from now on (the union of what listeners and the
        presenter selected). A newly added language gets the most recent finals it lacks;
        one removed keeps translating the finals already queued for it, nothing new.
        Call it on the event loop (it starts the lanes' tasks)."""
        wanted = set()
        for code in targets:
            target = languages.normalise(code)
            if target == self.source:
                continue
            if target not in self._lanes:
                log.warning("no translation route %s->%s in this session", self.source, target)
                continue
            wanted.add(target)
        for target, lane in self._lanes.items():
            if target in wanted and not lane.active and not self._closed:
                self._activate(lane)
            elif target not in wanted and lane.active:
                lane.active = False
                lane.pending = None

    def set_glossary(self, glossary: Mapping[str, Mapping[str, str]]) -> None:
        """Replace the presenter's glossary; applies to every translation from now on."""
        self._glossary = Glossary(glossary)

    def cached_final(self, segment: int, target: str) -> Caption | None:
        lane = self._lanes.get(languages.normalise(target))
        return lane.cache.get(segment) if lane else None

    async def on_source(self, caption: Caption, audio: np.ndarray | None = None) -> None:
        """Take the next source caption (in order); ``audio`` is the segment's 16 kHz audio,
        given with finals. Returns at once: translation runs in the lanes' tasks."""
        if not caption.source or self._closed:
            return
        now = time.perf_counter()
        if caption.is_final:
            job = _Job(caption, now, audio, self._last_source_final)
            self._recent.append(job)
            if caption.text:
                self._last_source_final = caption.text[-self.config.context_chars :]
            for lane in self._lanes.values():
                if lane.active:
                    self._enqueue_final(lane, job)
            return
        for lane in self._lanes.values():
            if not lane.active or lane.plan.draft is None or caption.segment <= lane.closed_upto:
                continue
            if lane.pending is not None:
                self.stats.drafts_stale += 1
            lane.pending = _Job(caption, now)
            lane.wake.set()

    async def drain(self) -> None:
        """Wait until every final queued so far has been published."""
        await asyncio.gather(*(lane.finals.join() for lane in self._lanes.values()))

    async def close(self) -> None:
        """Finish the queued finals, cancel drafts, stop every lane's tasks."""
        self._closed = True
        for lane in self._lanes.values():
            lane.active = False
            lane.pending = None
            if lane.tasks:
                lane.finals.put_nowait(None)
        draft_tasks = [lane.tasks[0] for lane in self._lanes.values() if lane.tasks]
        for task in draft_tasks:
            task.cancel()
        final_tasks = [t for lane in self._lanes.values() for t in lane.tasks[1:]]
        await asyncio.gather(*final_tasks, *draft_tasks, return_exceptions=True)

    # -- lanes ------------------------------------------------------------------------------

    def _activate(self, lane: _Lane) -> None:
        lane.active = True
        if not lane.tasks:
            lane.tasks = [
                asyncio.create_task(self._draft_loop(lane), name=f"mt-draft-{lane.target}"),
                asyncio.create_task(self._final_loop(lane), name=f"mt-final-{lane.target}"),
            ]
            for task in lane.tasks:
                task.add_done_callback(_log_crash)
        for job in self._recent:
            self._enqueue_final(lane, job)

    def _enqueue_final(self, lane: _Lane, job: _Job) -> None:
        segment = job.caption.segment
        lane.closed_upto = max(lane.closed_upto, segment)
        if lane.pending is not None and lane.pending.caption.segment <= segment:
            lane.pending = None
            self.stats.drafts_late += 1
        if segment in lane.cache or segment <= lane.published_upto:
            return
        lane.finals.put_nowait(job)

    async def _draft_loop(self, lane: _Lane) -> None:
        while True:
            await lane.wake.wait()
            lane.wake.clear()
            job, lane.pending = lane.pending, None
            if job is None or lane.plan.draft is None:
                continue
            if lane.finals.qsize() >= self.config.degrade_backlog:  # overloaded: finals first
                self.stats.drafts_stale += 1
                continue
            source = job.caption.text
            if self.config.draft_stable_only:
                source = source[: job.caption.stable].strip()
                if not source or (
                    lane.shown_segment == job.caption.segment and source == lane.draft_source
                ):
                    continue  # nothing stable yet, or nothing new since the last draft
            lane.draft_source = source
            try:
                text = await self._translate_text(lane.plan.draft, lane.target, source)
            except Saturated:
                self.stats.drafts_stale += 1
                continue
            except Exception:  # a model failure: drafts are disposable, the final reports it
                self.stats.drafts_failed += 1
                log.exception("draft translation into %s failed", lane.target)
                continue
            await self._show_draft(lane, job, text)

    async def _show_draft(self, lane: _Lane, job: _Job, text: str) -> None:
        caption = job.caption
        async with lane.lock:
            if caption.segment <= lane.closed_upto or not lane.active:
                self.stats.drafts_late += 1
                return
            previous = lane.shown if lane.shown_segment == caption.segment else ""
            settled = caption.stable >= len(caption.text) and not self.config.draft_stable_only
            hold = 0 if settled else self.config.hold_back_words
            shown = stabilise(previous, text, hold_back=hold)
            self.stats.drafts_translated += 1
            if not shown.text or (
                lane.shown_segment == caption.segment and shown.text == lane.shown
            ):
                return
            lane.shown_segment, lane.shown = caption.segment, shown.text
            await self._publish(
                Caption(
                    segment=caption.segment,
                    lang=lane.target,
                    source=False,
                    state="draft",
                    text=shown.text,
                    start=caption.start,
                    end=caption.end,
                    stable=shown.stable,
                )
            )
            self.stats.draft_latency.append(time.perf_counter() - job.arrived)

    async def _final_loop(self, lane: _Lane) -> None:
        while True:
            job = await lane.finals.get()
            try:
                if job is None:
                    return
                caption = await self._final_caption(lane, job)
                async with lane.lock:
                    await self._publish(caption)
                    lane.published_upto = max(lane.published_upto, caption.segment)
                    lane.cache[caption.segment] = caption
                    while len(lane.cache) > self.config.cache_finals:
                        lane.cache.popitem(last=False)
                self.stats.final_latency.append(time.perf_counter() - job.arrived)
            finally:
                lane.finals.task_done()

    async def _final_caption(self, lane: _Lane, job: _Job) -> Caption:
        source = job.caption
        text = ""
        if source.text.strip():
            try:
                text = await self._translate_final(lane, job)
                lane.failing = False
                self.stats.finals_translated += 1
            except Exception as exc:  # a model failure: tell the audience, keep the session
                self.stats.finals_failed += 1
                log.exception("final translation %s->%s failed", self.source, lane.target)
                text = f"[{self.source}, untranslated] {source.text}"
                if not lane.failing:
                    lane.failing = True
                    await self._publish(
                        ErrorEvent(f"translation into {lane.target} failed: {type(exc).__name__}")
                    )
            lane.previous_translation = text[-self.config.context_chars :]
        return Caption(
            segment=source.segment,
            lang=lane.target,
            source=False,
            state="final",
            text=text,
            start=source.start,
            end=source.end,
            stable=len(text),
        )

    async def _translate_final(self, lane: _Lane, job: _Job) -> str:
        plan = lane.plan
        degrade = plan.draft is not None and lane.finals.qsize() >= self.config.degrade_backlog
        if not degrade:
            try:
                if plan.route.speech_final:
                    if self._whisper is not None and job.audio is not None:
                        return await self._translate_speech(lane, job)
                elif plan.final is not None:
                    return await self._translate_text(
                        plan.final, lane.target, job.caption.text, job.context or None
                    )
            except Saturated:
                if plan.draft is None:
                    raise
                log.warning("final backend for %s saturated; using the draft one", lane.target)
        if plan.draft is None:
            raise RuntimeError(f"neither audio nor a text route for a final into {lane.target}")
        self.stats.finals_degraded += 1
        return await self._translate_text(plan.draft, lane.target, job.caption.text)

    async def _translate_speech(self, lane: _Lane, job: _Job) -> str:
        assert self._whisper is not None and job.audio is not None
        terms = self._glossary.for_target(lane.target)
        # Whisper conditions on its own earlier output: the previous English translation.
        prompt = " ".join(
            p for p in (terms.hint() if terms else "", lane.previous_translation) if p
        )
        text = await self._whisper(job.audio, prompt[-self.config.context_chars :] or None)
        return terms.substitute(text) if terms else text

    async def _translate_text(
        self, backend: PooledTranslator, target: str, text: str, context: str | None = None
    ) -> str:
        terms: Terms | None = self._glossary.for_target(target)
        if terms is None:
            return await backend.translate(text, context)
        if backend.translator.passes_placeholders:
            protected, slots = terms.protect(text)
            return terms.restore(await backend.translate(protected, context), slots)
        return terms.substitute(await backend.translate(terms.substitute(text), context))


def _log_crash(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("translation task %s crashed", task.get_name(), exc_info=task.exception())
