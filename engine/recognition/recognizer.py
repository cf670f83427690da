"""Streaming recognition of one audio stream: VAD, LocalAgreement drafts, refined finals.

A step takes all audio that arrived since the last step (compute-aware: a slow machine gets
larger steps, not a backlog), scores it with the VAD, and then either

- closes the open segment at a pause (silence of ``min_silence_s`` after speech; only a
  ``long_pause_s`` one after under ``min_close_speech_s`` of speech), or at a committed
  sentence end once the segment is long enough, or at its quietest moment when it grows
  past ``max_segment_s``; a closed segment is re-decoded once with more care (beam
  ``refine_beam``, previous finals as the prompt) into its final caption; or
- as soon as the speech pauses, before the pause is long enough to close the segment, makes
  that careful decode early (``early_finals``): if the pause then closes the segment with
  only silence after the decoded audio, the final needs no decode of its own and follows the
  pause at once; if the speaker goes on, the decode was spent for nothing; or
- re-decodes the open segment greedily and feeds the hypothesis to LocalAgreement-2, which
  yields a draft caption (committed words, then the unstable tail), if the VAD heard speech
  since the last draft (in a pause a draft would only decode the same words again, taking
  the worker from another stream).

A refine decode runs beside the steps that follow it (``refine_wait_s``): the next segment
drafts while the last one's final is decoded, and that final comes out of
:meth:`StreamingRecognizer.refined_finals` as soon as the decode is done (a stream awaits it
beside its steps), or out of a later step.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from engine.audio import AudioBuffer, Samples
from engine.events import Caption, Word
from engine.recognition.asr import Transcriber
from engine.recognition.bounds import SegmentBounds
from engine.recognition.config import RecognizerConfig
from engine.recognition.decoding import Decoder, Refined, RunInThread
from engine.recognition.drafts import Drafts
from engine.recognition.early import EarlyDecodes
from engine.recognition.finals import FinalCaptions
from engine.recognition.ready import ReadyCaptions
from engine.recognition.recent_finals import RecentFinals
from engine.recognition.segment import Closing, Segment
from engine.recognition.sentence_hold import SentenceHold
from engine.recognition.shedding import Shed, SheddingRules, next_level
from engine.recognition.vad import NextSpeech, SpeechTimeline, StreamingVad


class StreamingRecognizer:
    """Recognises one stream; emits :class:`Caption` events with ``source=True``.

    Its parts: where a segment begins and ends (engine/recognition/bounds.py), the decodes
    (decoding.py) and the recent finals they hear (recent_finals.py), the drafts (drafts.py),
    the finals (finals.py) held until their pause tells (sentence_hold.py), and the captions
    ready to give out (ready.py). This class runs the steps and closes the segments."""

    def __init__(
        self,
        transcriber: Transcriber,
        vad: StreamingVad,
        run: RunInThread,
        next_segment: Callable[[], int],
        config: RecognizerConfig | None = None,
        *,
        start_time: float = 0.0,
        context: str = "",
        terms: str = "",
        run_first: RunInThread | None = None,
        crowded: Callable[[], bool] = lambda: False,
    ) -> None:
        """``terms``: the session's terms as hint text (engine/terms.py), given to every
        decode, drafts and finals; :meth:`set_terms` replaces it while the stream runs.
        ``run_first``: how the VAD and a final's decode reach a model, ahead of the drafts
        waiting for it (:meth:`engine.workers.WorkerPool.run_first`; ``run`` if not
        given): the pause that closes a segment and its final are what the rest waits
        for. ``crowded``: whether the pool ``run`` calls into has more streams than threads
        (:meth:`engine.workers.WorkerPool.crowded`; never, if not given)."""
        self.config = config = config or RecognizerConfig()
        self._vad = vad
        self._run_first = run_first or run
        self._crowded = crowded
        self._next_segment = next_segment
        self._buffer = AudioBuffer(start_time)
        self._speech = SpeechTimeline(
            self._buffer.origin, config.speech_threshold, config.speech_hold
        )
        self._scored_until = self._buffer.origin
        """How much audio the VAD has been given: it keeps the part of a window it has not
        scored yet, so that part must not be given again."""
        self._recent = RecentFinals(
            context, config.prompt_chars, config.refine_context_s, config.refine_context_below_s
        )
        self._decoder = Decoder(
            transcriber, self._buffer, self._recent, config, run, self._run_first, terms
        )
        self._bounds = SegmentBounds(self._speech, config)
        self._early = EarlyDecodes(self._speech, self._bounds, config)
        self._segment = Segment(self._buffer.origin)
        self.processed_until = self._buffer.origin
        self._handed_until = self._buffer.origin
        """The end of the audio given by :meth:`hand_over`: not a backlog."""
        self.shed = Shed.NONE
        """What this stream sheds now because it is behind (engine/recognition/shedding.py)."""
        self._shedding = SheddingRules(
            config.context_max_backlog_s,
            config.beam_backlog_s,
            config.max_backlog_s,
            config.context_late_final_s,
        )
        self._sentences = SentenceHold(self._speech, config.language, config.sentence_pause_s)
        self._drafts = Drafts(self._decoder, self._sentences, config, self._buffer.origin)
        self._finals = FinalCaptions(self._buffer, self._speech, self._recent, config, next_segment)
        self._closing: Closing | None = None
        """The segment closed last, while its refine runs."""
        self._ready = ReadyCaptions()

    @property
    def received_until(self) -> float:
        return self._buffer.end

    @property
    def backlog(self) -> float:
        return self._buffer.end - self.processed_until

    @property
    def language(self) -> str | None:
        return self.config.language

    @property
    def context(self) -> str:
        """Recent final text, for the next stream of the same session."""
        return self._recent.text

    @property
    def draft_steps(self) -> int:
        return self._drafts.steps

    @property
    def skipped_drafts(self) -> int:
        return self._drafts.skipped

    @property
    def early_decodes(self) -> int:
        return self._early.decodes

    @property
    def early_finals(self) -> int:
        """Finals that used their early decode (the rest of ``early_decodes`` were spent)."""
        return self._early.finals

    @property
    def context_misses(self) -> int:
        """Refine decodes that heard context and gave no words, so were made again without."""
        return self._decoder.context_misses

    def set_terms(self, hint: str) -> None:
        """The session's terms changed: every decode from now on is biased towards them."""
        self._decoder.set_terms(hint)

    def next_speech(self, end: float) -> NextSpeech:
        """What the VAD has heard after a final that ends at ``end`` (its ``NextSpeech``)."""
        return self._speech.next_speech(end, self.config.lead_in_s)

    def take_final_audio(self, segment: int) -> Samples | None:
        """The audio of a segment just finalised (kept only with ``keep_final_audio``, for
        speech translation of the final); each is handed out once."""
        return self._finals.take_audio(segment)

    def draft_audio(self, segment: int) -> Samples | None:
        """The audio heard so far of ``segment`` if it is the open one (only with
        ``keep_final_audio``): what a speech translation drafts from before its final."""
        seg = self._segment
        if not self.config.keep_final_audio or seg.id != segment:
            return None
        return self._buffer.slice(seg.start, self._buffer.end).copy()

    def push(self, samples: Samples) -> None:
        """Append 16 kHz audio (cheap; safe on the event loop)."""
        self._buffer.append(samples)

    def hand_over(self, samples: Samples) -> None:
        """Append audio that was held before this recogniser existed (while a detector
        listened for the language). The step that takes it does not count it as a backlog:
        it tells nothing of a worker falling behind, and shedding for it would decode the
        turn's first final greedily and without its drafts."""
        self.push(samples)
        self._handed_until = self._buffer.end

    async def step(self, *, draft: bool = True) -> list[Caption]:
        """Process all audio that has arrived; return the captions it produced. A step that
        raises (a model failure) has still dealt with its audio: the next step does not count
        it as a backlog to shed for."""
        now = self._buffer.end
        try:
            return await self._step(now, draft)
        finally:
            self.processed_until = max(self.processed_until, now)

    async def _step(self, now: float, draft: bool) -> list[Caption]:
        backlog = now - max(self.processed_until, self._handed_until)
        self.shed = next_level(
            self.shed,
            backlog,
            self._shedding,
            self._finals.lateness,
            crowded=self.config.shed_when_crowded and self._crowded(),
        )
        await self._score(now)
        self._ready.give(self._sentences.release())
        self._ready.give(await self._refined(wait=0.0))
        self._bounds.skip_silence(self._segment)
        # One segment closes per pause, in order, however much audio this step covers.
        while (cut := self._bounds.find_cut(self._segment, now)) is not None:
            self._ready.give(await self._close(cut, self._segment.agreement.words()))
        self._ready.give(await self._refined(wait=self.config.refine_wait_s))
        seg = self._segment
        span = self._speech.speech_span(seg.start)
        if span is None:
            # Only silence so far: keep a short lead-in, drop the rest.
            seg.start = max(seg.start, now - self.config.lead_in_s)
            self._trim(seg.start)
        elif draft and self._early.due(seg, span, now, backlog, self._closing):
            self._ready.give(await self._refined(wait=None))  # done: the early decode's context
            await self._decode_early(span[1], now)
        elif draft:
            self._ready.give(await self._drafts.step(seg, span, now, self.shed, self._segment_id))
        self._ready.give(await self._refined(wait=0.0))
        return self._ready.take()

    async def refined_finals(self) -> list[Caption]:
        """Wait until a final is due: the refine of the segment closed last is done, or a
        running step has taken a final. Return it, with any held final it releases and
        every caption made before it and not given out yet. A stream awaits this beside its
        steps, so a final comes out when it is made rather than when the step then decoding
        a draft returns (docs/metrics.md, "Panels / Finals as their refine finishes").
        Cancelling it while it waits changes nothing."""
        while True:
            await self._ready.final_due()
            self._ready.add(await self._refined(wait=0.0))  # done: takes no turn of the loop
            if ready := self._ready.take():
                return ready

    async def finish(self) -> list[Caption]:
        """The stream ended: finalise everything said."""
        now = self._buffer.end
        self._ready.give(await self.step(draft=False))
        seg = self._segment
        if self._speech.speech_span(seg.start) is not None or seg.agreement.words():
            self._ready.give(
                await self._close(
                    now,
                    seg.agreement.words(),
                    pad=0.4,
                    full_window=self.config.stop_refine_full_window,
                    ended=True,
                )
            )
        self._ready.give(await self._refined(wait=None))
        self._ready.give(self._sentences.end())  # the stream ended in its pause
        self.processed_until = now
        return self._ready.take()

    async def _score(self, now: float) -> None:
        audio = self._buffer.slice(self._scored_until, now)
        if audio.size:
            self._speech.extend(await self._run_first(self._vad.process, audio))
            self._scored_until = now

    def _trim(self, time: float) -> None:
        """Forget audio before ``time``, except what the next refine may hear again; nothing
        while a closed segment's refine runs (its final reads the audio: it trims then)."""
        if self._closing is not None:
            return
        self._speech.trim_before(time)
        kept = self._recent.trim(self._segment.start)
        self._buffer.trim_before(time if kept is None else min(time, kept))

    async def _decode_early(self, speech_end: float, now: float) -> None:
        """Start the refine decode of the open segment up to its pause (it runs while the
        step goes on: a speaker who goes on gets drafts beside it)."""
        seg = self._segment
        end = min(now, speech_end + self._bounds.cut_delay(seg, now))
        self._early.started(seg, speech_end, asyncio.ensure_future(self._refine_decode(seg, end)))
        await asyncio.sleep(0)  # let it reach the pool now
        self._drafts.hold_back(speech_end)

    async def _close(
        self,
        cut: float,
        hint: list[Word],
        *,
        pad: float = 0.0,
        full_window: bool | None = None,
        ended: bool = False,
    ) -> list[Caption]:
        """Close the open segment at ``cut`` and start the next one there; its final follows
        its refine (:meth:`_refined`), at once if the stream ``ended``.

        ``hint`` is what streaming showed for the segment. The whole segment is decoded once
        more (beam ``refine_beam``, or greedily with ``refine`` off, since the last draft may
        predate the last word); the hint bounds the decode's end. An early decode of the
        segment serves instead when only silence followed it. The segment closed before
        this one is finalised first: its final is this refine's context.
        """
        events = await self._refined(wait=None)
        seg = self._segment
        closing = self._finals.closing(seg, cut, hint)
        if self._speech.speech_span(seg.start) is not None:
            closing.refine = self._early.serving(seg, cut) or asyncio.ensure_future(
                self._refine_decode(seg, cut, pad=pad, full_window=full_window)
            )
            closing.refine.add_done_callback(lambda _: self._ready.refine_done())
        self._closing = closing
        self._segment = Segment(cut)
        self._bounds.skip_silence(self._segment)
        if ended:
            events.extend(await self._refined(wait=None, ended=True))
        return events

    async def _refined(self, *, wait: float | None, ended: bool = False) -> list[Caption]:
        """The final of the segment closed last, once its refine is done: waiting at most
        ``wait`` seconds for it (None: until it is). ``ended``: the stream ended, so the
        final ends a sentence. A refine that failed (a model error, a full pool) still
        raises, but the streamed words are the final first, queued to give out."""
        closing = self._closing
        if closing is None:
            return []
        task = closing.refine
        if task is not None and not task.done() and wait is not None:
            if wait <= 0:
                return []
            done, _ = await asyncio.wait({task}, timeout=wait)
            if not done or self._closing is not closing:  # or refined_finals took it
                return []
        self._closing = None
        try:
            refined = None if task is None else await task
        except Exception:
            self._ready.give(self._finalise(closing, None, ended=ended))
            raise
        return self._finalise(closing, refined, ended=ended)

    def _finalise(self, closing: Closing, refined: Refined | None, *, ended: bool) -> list[Caption]:
        """The final caption of a closed segment, from its refine (module docstring;
        engine/recognition/finals.py), held until its pause tells whether it ends a
        sentence."""
        final = self._finals.make(closing, refined)
        self._trim(closing.cut - self.config.lead_in_s)
        return self._sentences.hold(final, ended=ended)

    async def _refine_decode(
        self, seg: Segment, end: float, *, pad: float = 0.0, full_window: bool | None = None
    ) -> Refined:
        """The refine decode of ``seg`` up to ``end`` (:meth:`Decoder.refine`), at the level
        the stream sheds at when it starts."""
        return await self._decoder.refine(
            seg.start, end, self.shed, pad=pad, full_window=full_window
        )

    def _segment_id(self) -> int:
        """The id of the open segment, taken from the session when it first shows anything,
        so segments that held only noise use up no number. A closed segment whose refine
        still runs takes its number before the open one shows: ids follow the speech."""
        closing = self._closing
        if closing is not None and closing.segment.id < 0 and closing.refine is not None:
            closing.segment.numbered(self._next_segment)
        return self._segment.numbered(self._next_segment)
