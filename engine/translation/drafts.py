"""A session's translated drafts: what a reader of another language sees of the open sentence
before its final.

Drafts are made only for languages someone reads: each source draft of the open segment
replaces the lane's pending draft of that segment (newest wins; the stale ones are counted),
and each source final of a sentence still open is translated as a draft too. A draft shows
the speaker's open sentence so far, translated as one text: its finals, then the stable part
of each later segment's newest draft (all of it, a first glance, for a segment nothing of
which is shown yet once its draft has heard ``glance_after_s``: docs/metrics.md, "A first
glance"), published under the sentence's first segment with ``sources`` naming them (a
segment drafted alone before is taken down with an empty draft). So a reader sees the
sentence its final will replace, worded as a whole, not a translation of each piece
(docs/metrics.md, "Sentence drafts"). Words of the next sentence that showed in a draft
because the speaker went on before the sentence closed are drafted again under their own
segment once that sentence's final is out. What is shown is stabilised
(:func:`engine.translation.text.stabilise`). A draft of a segment a sentence final already
covers is never published, and drafts never wait behind finals (nor run while more than
``degrade_backlog`` finals wait).

A route with no text backend (Whisper-translate alone: German into English) drafts from
speech (:meth:`SentenceDrafts._speech_draft_due`): once ``glance_after_s`` of a sentence is
heard, at each source final of it while it is open, when a segment joins it, and at a source
draft once ``speech_draft_every_s`` more speech has come, the sentence's audio so far (its
finals', then its open segments' as their drafts heard them) is decoded greedily (the fast
Whisper decode), beginning with the draft shown once that came from enough speech, so its
reader sees the sentence take shape and grow instead of nothing until its final
(docs/metrics.md, "Speech drafts").
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping

import numpy as np

from engine.audio import SAMPLE_RATE
from engine.events import Caption, Event
from engine.translation.calls import TranslationCalls
from engine.translation.config import TranslationConfig, TranslationStats
from engine.translation.lane import DraftSource, Lane, PendingDraft, speaker_key
from engine.translation.sentences import SentenceAssembler
from engine.translation.text import stabilise
from engine.workers import Saturated

log = logging.getLogger(__name__)

Publish = Callable[[Event], Awaitable[object]]


class SentenceDrafts:
    """Translated drafts of each speaker's open sentence, per lane (module docstring)."""

    def __init__(
        self,
        publish: Publish,
        calls: TranslationCalls,
        sentences: Mapping[str, SentenceAssembler],
        config: TranslationConfig,
        stats: TranslationStats,
    ) -> None:
        self._publish = publish
        self._calls = calls
        self._sentences = sentences
        """The open sentence of each speaker, as the stage assembles it (read only here)."""
        self.config = config
        self.stats = stats

    def from_speech(self, lanes: Iterable[Lane]) -> bool:
        """Whether a source draft's audio is of use: someone reads one of ``lanes`` that
        drafts from speech."""
        return any(lane.reading and self.speaks(lane) for lane in lanes)

    def speaks(self, lane: Lane) -> bool:
        """Whether ``lane`` drafts from speech: its route has no text backend, and its
        final translates the speech, with a fast decode for drafts."""
        plan = lane.plan
        return plan.draft is None and plan.route.speech_final and self._calls.speech_drafts

    def want(self, lane: Lane, draft: PendingDraft) -> None:
        segment = draft.caption.segment
        if not lane.reading or lane.is_covered(segment):
            return
        heard = draft.refined or draft.audio is not None
        if lane.plan.draft is None and not (heard and self.speaks(lane)):
            return  # no text backend, and no audio to draft from
        if segment in lane.pending:
            self.stats.drafts_stale += 1
        lane.pending[segment] = draft
        lane.wake.set()

    async def run(self, lane: Lane) -> None:
        while True:
            await lane.wake.wait()
            lane.wake.clear()
            while lane.pending:
                _, draft = lane.pending.popitem(last=False)
                await self._translate_draft(lane, draft)

    async def _translate_draft(self, lane: Lane, draft: PendingDraft) -> None:
        if lane.finals.qsize() >= self.config.degrade_backlog:  # overloaded: finals first
            self.stats.drafts_stale += 1
            return
        backend = lane.plan.draft
        if backend is None and not self.speaks(lane):
            return
        caption = draft.caption
        source = caption.text
        if self.config.draft_stable_only and backend is not None:
            # A speech draft hears the audio, not the text; a text draft waits for stable
            # words, until its first glance.
            stable = source[: caption.stable]
            glance = (
                caption.end - caption.start >= self.config.glance_after_s
                and caption.segment not in lane.shown_under
            )
            if stable.strip() or not glance:
                source = stable
        source = source.strip()
        if not source:
            return  # nothing stable yet
        settled = draft.refined or (
            caption.stable >= len(caption.text) and not self.config.draft_stable_only
        )
        lane.sources[caption.segment] = DraftSource(draft, source, settled)
        if caption.segment in lane.held:
            return  # drafted once the sentence that showed its words has its final
        who = speaker_key(caption)
        parts = self._open_sentence(lane, who)
        if backend is not None:
            translate = functools.partial(self._calls.translate_text, backend, lane.target)
            await self._draft_sentence(lane, draft, parts, translate)
            return
        heard = self._sentence_audio(who, parts)
        if heard is None:
            return
        seconds = sum(len(a) for a in heard) / SAMPLE_RATE
        head = parts[0].caption.segment
        last = lane.speech_heard.get(head)
        if not self._speech_draft_due(lane, draft, parts, seconds, last):
            return
        # A draft from enough speech is kept: the next one grows it instead of rewording it.
        keep = lane.shown.get(head, "") if last else ""
        lane.speech_heard[head] = seconds if seconds >= self.config.speech_draft_every_s else 0.0
        audio = np.concatenate(heard)
        await self._draft_sentence(
            lane,
            draft,
            parts,
            lambda _text: self._calls.translate_speech(lane, audio, draft=True, prefix=keep),
        )

    def _speech_draft_due(
        self,
        lane: Lane,
        draft: PendingDraft,
        parts: list[DraftSource],
        seconds: float,
        last: float | None,
    ) -> bool:
        """Whether the open sentence ``parts`` (``seconds`` of audio; ``last``: what its last
        speech draft heard, 0 after a first glance, None before any) is drafted from speech
        now: at a source final, when a segment joins a sentence whose draft is shown, at the
        first glance, or once ``speech_draft_every_s`` more speech has come."""
        config = self.config
        if last is None:
            return seconds >= config.glance_after_s or draft.refined
        joined = parts[0].caption.segment in lane.shown and any(
            part.caption.segment not in lane.shown_under for part in parts
        )
        return draft.refined or joined or seconds - last >= config.speech_draft_every_s

    def _sentence_audio(self, who: str, parts: list[DraftSource]) -> list[np.ndarray] | None:
        """The audio of the open sentence ``parts`` of ``who``, part by part: its finals'
        and then its open segments' as their newest drafts heard them; None if a part's is
        missing."""
        assembler = self._sentences.get(who)
        pieces = {p.caption.segment: p.audio for p in assembler.pieces} if assembler else {}
        heard = [
            pieces[part.caption.segment] if part.caption.segment in pieces else part.draft.audio
            for part in parts
        ]
        audio = [a for a in heard if a is not None]
        return audio if audio and len(audio) == len(heard) else None

    async def _draft_sentence(
        self,
        lane: Lane,
        draft: PendingDraft,
        parts: list[DraftSource],
        translate: Callable[[str], Awaitable[str]],
    ) -> None:
        """Translate the open sentence ``parts`` (``translate`` is given its source text)
        and show it, unless its text is what the lane last drafted of it."""
        if not parts:
            return
        head = parts[0].caption.segment
        text = " ".join(part.text for part in parts)
        if text == lane.draft_source.get(head):
            return  # nothing new since the last draft
        lane.draft_source[head] = text
        try:
            translated = await translate(text)
        except Saturated:
            self.stats.drafts_stale += 1
            return
        except Exception:  # a model failure: drafts are disposable, the final reports it
            self.stats.drafts_failed += 1
            log.exception("draft translation into %s failed", lane.target)
            return
        await self._show_draft(lane, parts, draft, translated)

    def _open_sentence(self, lane: Lane, who: str) -> list[DraftSource]:
        """The open sentence of ``who`` as a translated draft shows it, in segment order: its
        finals so far, then the newest source of each later open segment of that speaker
        (the speaker goes on while a final is still being refined). A sentence's drafts
        are translated as one text and shown under its first segment, so a reader sees
        the sentence its final will replace, worded as a whole."""
        assembler = self._sentences.get(who)
        pieces = assembler.pieces if assembler is not None else ()
        parts = [
            DraftSource(PendingDraft(p.caption, 0.0, refined=True), p.caption.text.strip(), True)
            for p in pieces
        ]
        after = pieces[-1].caption.segment if pieces else None
        parts += [
            source
            for segment, source in sorted(lane.sources.items())
            if source.who == who
            and (after is None or segment > after)
            and not lane.is_covered(segment)
            and segment not in lane.held
        ]
        return [part for part in parts if part.text]

    async def _show_draft(
        self, lane: Lane, parts: list[DraftSource], draft: PendingDraft, text: str
    ) -> None:
        first, last = parts[0].caption, parts[-1].caption
        segments = tuple(part.caption.segment for part in parts)
        async with lane.lock:
            if any(lane.is_covered(s) for s in segments) or not lane.reading:
                self.stats.drafts_late += 1
                return
            previous = lane.shown.get(first.segment, "")
            hold = 0 if all(part.settled for part in parts) else self.config.hold_back_words
            shown = stabilise(previous, text, hold_back=hold)
            self.stats.drafts_translated += 1
            for part in parts:
                segment = part.caption.segment
                lane.shown_under[segment] = first.segment
                if segment != first.segment and segment in lane.shown:
                    # Its words are in the sentence's draft now: its own one is taken down.
                    del lane.shown[segment]
                    await self._publish(_translated_draft(lane.target, part.caption, part.caption))
            if not shown.text or shown.text == previous:
                return
            lane.shown[first.segment] = shown.text
            await self._publish(
                _translated_draft(lane.target, first, last, shown.text, shown.stable, segments)
            )
            self.stats.draft_latency.append(time.perf_counter() - draft.arrived)


def _translated_draft(
    target: str,
    first: Caption,
    last: Caption,
    text: str = "",
    stable: int = 0,
    sources: tuple[int, ...] = (),
) -> Caption:
    """A translated draft under ``first``'s segment holding the words of ``sources`` from
    ``first`` to ``last``; with no text, it takes down the draft shown under that segment."""
    return Caption(
        segment=first.segment,
        lang=target,
        source=False,
        state="draft",
        text=text,
        start=first.start,
        end=last.end,
        stable=stable,
        sources=sources or (first.segment,),
        speaker=first.speaker,
    )
