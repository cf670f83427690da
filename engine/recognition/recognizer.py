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
import functools
import math
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import numpy as np

from engine.audio import AudioBuffer, Samples
from engine.events import Caption, Word
from engine.recognition.asr import DecodeOptions, Transcriber, token_budget
from engine.recognition.config import RecognizerConfig
from engine.recognition.policy import (
    LocalAgreement,
    anchor_to_hint,
    guard_repetitions,
    guard_text,
    join_words,
    word_key,
)
from engine.recognition.sentence_hold import HeldFinal, SentenceHold
from engine.recognition.shedding import Shed, SheddingRules, next_level
from engine.recognition.vad import NextSpeech, SpeechTimeline, StreamingVad

T = TypeVar("T")

TRAILING_SLACK = 0.3
"""Seconds of audio after the VAD's last speech that a draft decode still reads."""

CONTEXT_WINDOW_S = 28.0
"""The most audio a refine decode with context reads: Whisper's 30 s window less room for a
stop's padding (a decode longer than one window cannot hear its context)."""


class RunInThread(Protocol):
    """How the recogniser reaches a model: :meth:`engine.workers.WorkerPool.run`."""

    def __call__(self, fn: Callable[..., T], /, *args: Any) -> Awaitable[T]: ...


@dataclass(frozen=True, slots=True)
class _Heard:
    """Where a final caption's segment began, and its text: context for the next refines."""

    start: float
    text: str


@dataclass(frozen=True, slots=True)
class _Refined:
    """A refine decode's words."""

    words: list[Word]


@dataclass(frozen=True, slots=True)
class _EarlyDecode:
    """The refine decode of a segment, made when its speech paused at ``speech_end``; it
    serves the segment's final if nothing but silence follows."""

    speech_end: float
    refined: asyncio.Future[_Refined]
    """Running on the pool while the step goes on (and the speaker may)."""


@dataclass(slots=True)
class _Segment:
    start: float
    id: int = -1
    agreement: LocalAgreement = field(default_factory=LocalAgreement)
    drafted: bool = False
    last_draft: str = ""
    early: _EarlyDecode | None = None


@dataclass(slots=True)
class _Closing:
    """A segment cut at ``cut`` whose final waits for its refine decode (``refine``, its
    early decode's or its own; None when it held no speech)."""

    segment: _Segment
    cut: float
    hint: list[Word]
    room: list[int]
    """How many words may follow each hint word (:meth:`StreamingRecognizer._room_after`)."""
    refine: asyncio.Future[_Refined] | None = None


def _retrieved(future: asyncio.Future[Any]) -> None:
    """Mark a decode's failure seen: one nobody awaits (an early decode the speaker went on
    past) must not be logged as never retrieved; one that serves a final raises there."""
    if not future.cancelled():
        future.exception()


class StreamingRecognizer:
    """Recognises one stream; emits :class:`Caption` events with ``source=True``."""

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
        self.config = config or RecognizerConfig()
        self._transcriber = transcriber
        self._vad = vad
        self._run = run
        self._run_first = run_first or run
        self._crowded = crowded
        self._next_segment = next_segment
        self._buffer = AudioBuffer(start_time)
        self._speech = SpeechTimeline(
            self._buffer.origin, self.config.speech_threshold, self.config.speech_hold
        )
        self._scored_until = self._buffer.origin
        """How much audio the VAD has been given: it keeps the part of a window it has not
        scored yet, so that part must not be given again."""
        self._context = context
        self._terms = terms
        self._segment = _Segment(self._buffer.origin)
        self.processed_until = self._buffer.origin
        self._handed_until = self._buffer.origin
        """The end of the audio given by :meth:`hand_over`: not a backlog."""
        self._final_audio: dict[int, Samples] = {}
        self._heard: deque[_Heard] = deque()
        self.shed = Shed.NONE
        """What this stream sheds now because it is behind (engine/recognition/shedding.py)."""
        self._shedding = SheddingRules(
            self.config.context_max_backlog_s,
            self.config.beam_backlog_s,
            self.config.max_backlog_s,
            self.config.context_late_final_s,
        )
        self._final_lateness = 0.0
        """Audio heard after the last final's cut by the time the final was made."""
        self._last_draft_end = self._buffer.origin
        self._drafted_speech_end = self._buffer.origin
        """The VAD's speech end when the last draft was decoded: until speech goes on past
        it, another draft would decode the same words again."""
        self.draft_steps = 0
        self.skipped_drafts = 0
        self.early_decodes = 0
        self.early_finals = 0
        """Finals that used their early decode (the rest of ``early_decodes`` were spent)."""
        self.context_misses = 0
        """Refine decodes that heard context and gave no words, so were made again without."""
        self._sentences = SentenceHold(
            self._speech, self.config.language, self.config.sentence_pause_s
        )
        self._closing: _Closing | None = None
        """The segment closed last, while its refine runs."""
        self._final_due = asyncio.Event()
        """Set when a closed segment's refine finishes, or a step has a final ready
        (:meth:`refined_finals`)."""
        self._ready: list[Caption] = []
        """Captions made and not given out yet, in the order made. A step and
        :meth:`refined_finals` both give out everything ready, so finals come out in segment
        order, and a final a step took comes out before the step's draft is decoded."""

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
        return self._context

    def set_terms(self, hint: str) -> None:
        """The session's terms changed: every decode from now on is biased towards them."""
        self._terms = hint

    def next_speech(self, end: float) -> NextSpeech:
        """What the VAD has heard after a final that ends at ``end`` (its ``NextSpeech``)."""
        return self._speech.next_speech(end, self.config.lead_in_s)

    def take_final_audio(self, segment: int) -> Samples | None:
        """The audio of a segment just finalised (kept only with ``keep_final_audio``, for
        speech translation of the final); each is handed out once."""
        return self._final_audio.pop(segment, None)

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
            self._final_lateness,
            crowded=self.config.shed_when_crowded and self._crowded(),
        )
        await self._score(now)
        self._give(self._sentences.release())
        self._give(await self._refined(wait=0.0))
        self._skip_silence()
        # One segment closes per pause, in order, however much audio this step covers.
        while (cut := self._find_cut(now)) is not None:
            self._give(await self._close(cut, self._segment.agreement.words()))
        self._give(await self._refined(wait=self.config.refine_wait_s))
        seg = self._segment
        span = self._speech.speech_span(seg.start)
        if span is None:
            # Only silence so far: keep a short lead-in, drop the rest.
            seg.start = max(seg.start, now - self.config.lead_in_s)
            self._trim(seg.start)
        elif draft and self._pause_began(seg, span, now, backlog):
            self._give(await self._refined(wait=None))  # done: the early decode's context
            await self._decode_early(span[1], now)
        elif (
            not draft
            or span[1] - span[0] < self.config.min_speech_s
            or now - self._last_draft_end < self.config.draft_interval_s
            or span[1] <= self._drafted_speech_end
        ):
            pass  # too little speech yet, or nothing new heard since the last draft
        elif (
            self.shed >= Shed.DRAFTS and seg.drafted and now - seg.start < self.config.max_segment_s
        ):
            self.skipped_drafts += 1
        else:
            self._give(await self._draft(now, span[1]))
        self._give(await self._refined(wait=0.0))
        return self._take_ready()

    async def refined_finals(self) -> list[Caption]:
        """Wait until a final is due: the refine of the segment closed last is done, or a
        running step has taken a final. Return it, with any held final it releases and
        every caption made before it and not given out yet. A stream awaits this beside its
        steps, so a final comes out when it is made rather than when the step then decoding
        a draft returns (docs/metrics.md, "Panels / Finals as their refine finishes").
        Cancelling it while it waits changes nothing."""
        while True:
            await self._final_due.wait()
            self._final_due.clear()
            self._ready.extend(await self._refined(wait=0.0))  # done: takes no turn of the loop
            if self._ready:
                return self._take_ready()

    def _give(self, captions: list[Caption]) -> None:
        """Queue ``captions`` to give out. A final among them wakes :meth:`refined_finals`:
        a final the step took (one its close waited for, or a held one it released) comes
        out then, not after the draft the step decodes next."""
        self._ready.extend(captions)
        if any(c.is_final for c in captions):
            self._final_due.set()

    def _take_ready(self) -> list[Caption]:
        """The captions ready to give out, taken from the queue."""
        ready, self._ready = self._ready, []
        return ready

    async def finish(self) -> list[Caption]:
        """The stream ended: finalise everything said."""
        now = self._buffer.end
        self._give(await self.step(draft=False))
        seg = self._segment
        if self._speech.speech_span(seg.start) is not None or seg.agreement.words():
            self._give(
                await self._close(
                    now,
                    seg.agreement.words(),
                    pad=0.4,
                    full_window=self.config.stop_refine_full_window,
                    ended=True,
                )
            )
        self._give(await self._refined(wait=None))
        self._give(self._sentences.end())  # the stream ended in its pause
        self.processed_until = now
        return self._take_ready()

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
        oldest = self._segment.start - self.config.refine_context_s
        while self._heard and self._heard[0].start < oldest:
            self._heard.popleft()
        self._buffer.trim_before(min(time, self._heard[0].start) if self._heard else time)

    def _prompt(self, prefix: str = "") -> str | None:
        """Recent final text before ``prefix`` (the part of it the decode hears again)."""
        context = self._context
        if prefix and context.endswith(prefix):
            context = context[: -len(prefix)]
        text = guard_text(context, self.config.prompt_chars)
        return text or None

    async def _decode(
        self,
        start: float,
        end: float,
        beam: int,
        *,
        timestamps: bool,
        pad: float = 0.0,
        full_window: bool = False,
        heard: Sequence[_Heard] = (),
        final: bool = False,
    ) -> list[Word]:
        """Decode ``[start, end)``, followed by ``pad`` seconds of silence (a stream that
        stopped mid-phrase otherwise loses its last word). ``heard``: finals just before
        ``start`` that the decode hears again, their text forced as its prefix. ``final``:
        the decode makes a final, so it goes ahead of waiting drafts."""
        audio = self._buffer.slice(start, end)
        if audio.size < 1600:  # under 0.1 s: nothing a model can read
            return []
        budget = token_budget(end - start, self.config.max_tokens_per_second)
        prefix = " ".join(h.text for h in heard)
        if heard:
            start = heard[0].start
            audio = self._buffer.slice(start, end)
        if pad > 0:
            audio = np.concatenate([audio, np.zeros(int(pad * 16000), dtype=np.float32)])
        options = DecodeOptions(
            language=self.config.language,
            beam_size=beam,
            prompt=self._prompt(prefix),
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

    async def _draft(self, now: float, speech_end: float) -> list[Caption]:
        seg = self._segment
        # Decode only up to shortly after the last speech: Whisper invents text ("Thank
        # you.") in trailing silence. Word timing is off by default: text agreement needs
        # none, and skipping the alignment pass saves a fifth of each step.
        end = min(now, speech_end + TRAILING_SLACK)
        words = await self._decode(
            seg.start, end, self.config.draft_beam, timestamps=self.config.draft_word_timestamps
        )
        self.draft_steps += 1
        self._last_draft_end = now
        self._drafted_speech_end = speech_end
        seg.agreement.update(words)
        shown = seg.agreement.words()
        decoded = join_words(shown)
        text = self._sentences.shaped(decoded)
        if not text or text == seg.last_draft:
            return []
        seg.last_draft = text
        seg.drafted = True
        # shaped() (continuing()) changes only the head: what it dropped there was stable too.
        dropped = len(decoded) - len(text)
        stable = max(0, len(join_words(seg.agreement.committed)) - dropped)
        return [
            Caption(
                segment=self._segment_id(),
                lang=self.config.language,
                source=True,
                state="draft",
                text=text,
                start=shown[0].start if shown else seg.start,
                end=max(shown[-1].end if shown else now, seg.start),
                stable=stable,
            )
        ]

    def _pause_began(
        self, seg: _Segment, span: tuple[float, float], now: float, backlog: float
    ) -> bool:
        """Whether the segment's speech has paused for as long as a cut would follow it, but
        has no early decode for this pause yet, and the segment closed before it has its
        final: the early decode hears that final as context, and waiting for its refine
        would hold this segment's drafts (a later step, still in the pause, starts it)."""
        closing = self._closing
        return (
            self.config.early_finals
            and self.config.refine
            and (closing is None or closing.refine is None or closing.refine.done())
            and span[1] - span[0] >= self.config.min_speech_s
            and self._speech.end >= span[1] + self._cut_delay(now)
            and (
                seg.early is None or (seg.early.speech_end != span[1] and seg.early.refined.done())
            )
            and backlog <= self.config.max_backlog_s
        )

    async def _decode_early(self, speech_end: float, now: float) -> None:
        """Start the refine decode of the open segment up to its pause (it runs while the
        step goes on: a speaker who goes on gets drafts beside it)."""
        end = min(now, speech_end + self._cut_delay(now))
        seg = self._segment
        refined = asyncio.ensure_future(self._refine_decode(seg, end))
        refined.add_done_callback(_retrieved)  # one the speaker went on past is dropped
        seg.early = _EarlyDecode(speech_end, refined)
        self.early_decodes += 1
        await asyncio.sleep(0)  # let it reach the pool now
        # No draft of the same speech while the pause may still close the segment: it would
        # hold the worker when the final is due.
        self._drafted_speech_end = max(self._drafted_speech_end, speech_end)

    def _early_decode(self, cut: float) -> asyncio.Future[_Refined] | None:
        """The early decode if it covers the segment up to ``cut``: only silence lies
        between the speech it heard and the cut."""
        early = self._segment.early
        if early is None or cut < early.speech_end:
            return None
        after = self._speech.speech_span(early.speech_end)
        if after is not None and after[0] < cut:
            return None
        self.early_finals += 1
        return early.refined

    def _pause_needed(self, now: float) -> float:
        """How long a pause closes the open segment: short once it is long, or once it holds
        a committed sentence end."""
        config = self.config
        seg = self._segment
        length = now - seg.start
        committed_sentence = seg.agreement.last_sentence_end(seg.start) > 0
        if length >= config.long_segment_s or (
            committed_sentence and length >= config.sentence_min_s
        ):
            return config.short_pause_s
        return config.min_silence_s

    def _cut_delay(self, now: float) -> float:
        """How far after the speech's end a pause cuts the segment."""
        return min(0.25, self._pause_needed(now) / 2)

    def _find_cut(self, now: float) -> float | None:
        """Where the open segment ends, if it has ended: at the first pause long enough for
        its length and content, or at its quietest moment once it is far too long.

        Cuts follow the VAD, never word timestamps: Whisper's word times drift by up to a
        second near the end of a window, and a cut inside a word loses it from both sides.
        """
        config = self.config
        seg = self._segment
        speech_end = self._speech.first_pause(
            seg.start,
            self._pause_needed(now),
            min_speech=config.min_close_speech_s,
            long_silence=config.long_pause_s,
        )
        if speech_end is not None:
            return min(now, speech_end + self._cut_delay(now))
        if now - seg.start >= config.max_segment_s:
            return self._speech.quietest(seg.start + config.max_segment_s * 2 / 3, now)
        return None

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
        closing = _Closing(seg, cut, hint, self._room_after(hint, cut))
        if self._speech.speech_span(seg.start) is not None:
            closing.refine = self._early_decode(cut) or asyncio.ensure_future(
                self._refine_decode(seg, cut, pad=pad, full_window=full_window)
            )
            closing.refine.add_done_callback(lambda _: self._final_due.set())
        self._closing = closing
        self._segment = _Segment(cut)
        self._skip_silence()
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
            self._give(self._finalise(closing, None, ended=ended))
            raise
        return self._finalise(closing, refined, ended=ended)

    def _finalise(
        self, closing: _Closing, refined: _Refined | None, *, ended: bool
    ) -> list[Caption]:
        """The final caption of a closed segment, from its refine (module docstring)."""
        seg, cut, hint = closing.segment, closing.cut, closing.hint
        self._final_lateness = self._buffer.end - cut
        words = hint
        if refined is not None:
            decoded = anchor_to_hint(refined.words, hint, closing.room)
            if decoded or not hint:
                words = decoded
        text = join_words(words)  # shaped as a continuation, or not, when it goes out
        final: HeldFinal | None = None
        if text or seg.drafted:
            start = hint[0].start if hint else seg.start
            caption = Caption(
                segment=self._segment_id(seg),
                lang=self.config.language,
                source=True,
                state="final",
                text=text,
                start=max(seg.start, min(start, cut)),
                end=max(cut, seg.start),
                stable=len(text),
            )
            speech_end = self._speech.speech_end_before(seg.start, cut)
            final = HeldFinal(caption, cut, cut - (speech_end or cut))
            if self.config.keep_final_audio:
                self._final_audio[seg.id] = self._buffer.slice(seg.start, cut).copy()
        # The next decodes hear the text as decoded, its full stop too: forcing the shaped
        # text instead cost words (docs/metrics.md, "Sentence breaks").
        if text:
            context = f"{self._context} {text}".strip()
            self._context = context[-4 * self.config.prompt_chars :]
            self._heard.append(_Heard(seg.start, text))
        else:
            self._heard.clear()  # the next segment does not follow on from the last final
        self._trim(cut - self.config.lead_in_s)
        return self._sentences.hold(final, ended=ended)

    def _skip_silence(self) -> None:
        """Begin the open segment ``lead_in_s`` before its speech, if that speech is already
        heard and the segment has not been drafted. A step that comes late (a refine held
        the stream) finds the speech after a pause already begun, where a timely step would
        have dropped the silence before it: either way a segment begins a lead-in before its
        speech, so where it begins tells how long the speaker paused (the translation stage
        reads it so: engine/translation/sentences.py)."""
        seg = self._segment
        if seg.drafted:
            return
        span = self._speech.speech_span(seg.start)
        if span is not None:
            seg.start = max(seg.start, span[0] - self.config.lead_in_s)

    async def _refine_decode(
        self, seg: _Segment, end: float, *, pad: float = 0.0, full_window: bool | None = None
    ) -> _Refined:
        """The careful decode of ``seg`` up to ``end`` that makes its final (beam
        ``refine_beam``, or greedy with ``refine`` off). Word timing is not needed (the
        caption spans the segment), so it skips the alignment pass; the hint anchors its end.
        """
        config = self.config
        if full_window is None:
            full_window = config.refine_full_window
        heard: list[_Heard] = []
        if full_window and self.shed >= Shed.CONTEXT:
            full_window = False
            heard = self._context_for(seg, end, min(config.shed_context_s, config.refine_context_s))
        elif full_window:
            heard = self._context_for(seg, end, config.refine_context_s)
        decode = functools.partial(
            self._decode,
            seg.start,
            end,
            config.refine_beam if config.refine and self.shed < Shed.BEAM else config.draft_beam,
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
            return _Refined(await decode())
        return _Refined(words)

    def _context_for(self, seg: _Segment, end: float, within: float) -> list[_Heard]:
        """The recent finals a refine of ``seg`` up to ``end`` hears again: those that began
        within ``within`` seconds of it and leave the decode inside one window."""
        if end - seg.start >= self.config.refine_context_below_s:
            return []
        earliest = max(seg.start - within, end - CONTEXT_WINDOW_S)
        return [h for h in self._heard if h.start >= earliest]

    def _room_after(self, hint: list[Word], cut: float) -> list[int]:
        """How many words may have been spoken after each hint word, up to the end of the
        segment's speech: the last draft can predate the end of the segment by a step, and
        may have garbled a phrase into fewer words. Allows a brisk 3.5 words a second."""
        span = self._speech.speech_span(self._segment.start)
        if span is None:
            return [1] * len(hint)
        end = min(cut, span[1])
        return [1 + math.ceil(max(0.0, end - word.end) * 3.5) for word in hint]

    def _segment_id(self, seg: _Segment | None = None) -> int:
        """The id of ``seg`` (the open segment by default), taken from the session when it
        first shows anything, so segments that held only noise use up no number. A closed
        segment whose refine still runs takes its number before the open one shows: ids
        follow the speech."""
        if seg is None:
            seg = self._segment
            closing = self._closing
            if closing is not None and closing.segment.id < 0 and closing.refine is not None:
                closing.segment.id = self._next_segment()
        if seg.id < 0:
            seg.id = self._next_segment()
        return seg.id
