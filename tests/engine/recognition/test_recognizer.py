"""The streaming recogniser with a scripted transcriber and VAD (no model).

The fake audio carries its own clock: every sample holds its absolute time / 1000, negated
in silence. The fake VAD hears speech where samples are non-negative; the fake transcriber
"recognises" the scripted words that lie inside the audio it is given, and a wrong guess for
a word cut off at the end of the window (as Whisper does with half a word), a different
guess each call, so LocalAgreement must never commit it.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import threading
from collections.abc import AsyncIterator, Callable
from typing import Any

import numpy as np
import pytest

from engine.audio import SAMPLE_RATE
from engine.events import Caption, Word
from engine.recognition.asr import Decoded, DecodeOptions, Transcriber
from engine.recognition.config import RecognizerConfig
from engine.recognition.recognizer import StreamingRecognizer
from engine.recognition.shedding import Shed
from engine.recognition.vad import WINDOW, NextSpeech
from engine.workers import WorkerPool

SCRIPT = [
    # sentence one, then a pause from 2.6 s to 3.6 s, then sentence two
    Word(" Hello", 0.2, 0.6),
    Word(" there", 0.7, 1.1),
    Word(" my", 1.2, 1.5),
    Word(" friends.", 1.6, 2.4),
    Word(" This", 3.7, 4.0),
    Word(" is", 4.1, 4.3),
    Word(" a", 4.4, 4.5),
    Word(" test.", 4.6, 5.2),
]
SILENCE = [(2.6, 3.6), (5.4, 7.0)]


def make_audio(duration: float, silences: list[tuple[float, float]] = SILENCE) -> np.ndarray:
    t = np.arange(int(duration * SAMPLE_RATE), dtype=np.float64) / SAMPLE_RATE
    audio = t / 1000.0
    for lo, hi in silences:
        mask = (t >= lo) & (t < hi)
        audio[mask] = -audio[mask] - 1e-6
    return audio.astype(np.float32)


class FakeVad:
    """Scores 1 where the fake audio is speech, 0 in its silences, and ``quiet`` in the
    silent windows whose time lies in ``quiet_between`` (what Silero gives the quiet end of
    a word)."""

    def __init__(self, quiet: float = 0.0, quiet_between: tuple[float, float] = (0, 0)) -> None:
        self.windows_seen = 0
        self._pending = np.zeros(0, dtype=np.float32)
        self._quiet = quiet
        self._quiet_between = quiet_between

    def process(self, samples: np.ndarray) -> np.ndarray:
        data = np.concatenate([self._pending, samples])
        count = len(data) // WINDOW
        self._pending = data[count * WINDOW :]
        windows = data[: count * WINDOW].reshape(count, WINDOW)
        self.windows_seen += count
        means = windows.mean(axis=1)
        lo, hi = self._quiet_between
        quiet = (means < 0) & (-means * 1000 >= lo) & (-means * 1000 < hi)
        return np.where(means >= 0, 1.0, np.where(quiet, self._quiet, 0.0)).astype(np.float32)


class FakeTranscriber:
    name = "fake"
    multilingual = False

    def __init__(self, fail_once: bool = False) -> None:
        self.calls: list[DecodeOptions] = []
        self.starts: list[float] = []
        """Where each decode's audio began, in stream seconds."""
        self.fail_once = fail_once

    def transcribe(self, audio: np.ndarray, options: DecodeOptions) -> Decoded:
        self.calls.append(options)
        if self.fail_once:
            self.fail_once = False
            raise RuntimeError("model exploded")
        start = abs(float(audio[0])) * 1000.0
        self.starts.append(start)
        end = start + len(audio) / SAMPLE_RATE
        out = []
        for w in SCRIPT:
            if w.start >= start - 0.05 and w.end <= end:
                out.append(Word(w.text, w.start - start, w.end - start))
            elif w.start >= start and w.start < end - 0.1:
                # A cut-off word is guessed differently from one window to the next.
                out.append(Word(f" uh{len(self.calls)}", w.start - start, end - start))
        if options.prefix:
            # The prefix is the text of the audio's first words: only those after it come
            # back (and the audio must hold the prefix's words).
            said = options.prefix.split()
            assert [w.text.strip() for w in out[: len(said)]] == said
            out = out[len(said) :]
        return Decoded(tuple(out))


async def run_inline(fn: Callable[..., Any], *args: Any) -> Any:
    return fn(*args)


def recognizer_on(
    transcriber: Transcriber,
    run: Callable[..., Any] = run_inline,
    crowded: Callable[[], bool] = lambda: False,
    *,
    vad: FakeVad | None = None,
    run_first: Callable[..., Any] | None = None,
    **config: Any,
) -> StreamingRecognizer:
    """A recogniser on ``transcriber`` and ``vad`` (a new fake VAD if not given), its
    decodes made by ``run`` (finals and the VAD by ``run_first``, if given)."""
    counter = itertools.count()
    return StreamingRecognizer(
        transcriber,
        vad or FakeVad(),  # type: ignore[arg-type]
        run,
        lambda: next(counter),
        RecognizerConfig(**config),
        crowded=crowded,
        run_first=run_first,
    )


def make_recognizer(
    crowded: Callable[[], bool] = lambda: False, **config: Any
) -> tuple[StreamingRecognizer, FakeTranscriber]:
    transcriber = FakeTranscriber()
    return recognizer_on(transcriber, crowded=crowded, **config), transcriber


async def feed(recognizer: StreamingRecognizer, audio: np.ndarray, step_s: float) -> list[Caption]:
    events: list[Caption] = []
    hop = int(step_s * SAMPLE_RATE)
    for i in range(0, len(audio), hop):
        recognizer.push(audio[i : i + hop])
        events.extend(await recognizer.step())
    return events


def finals(events: list[Caption]) -> list[str]:
    return [e.text for e in events if e.state == "final"]


async def test_drafts_then_finals_at_pauses() -> None:
    recognizer, transcriber = make_recognizer()
    events = await feed(recognizer, make_audio(7.0), 0.3)
    assert finals(events) == ["Hello there my friends.", "This is a test."]
    drafts = [e for e in events if e.state == "draft"]
    assert drafts, "drafts must appear before the final"
    first_final = next(i for i, e in enumerate(events) if e.state == "final")
    assert events.index(drafts[0]) < first_final
    # Segment ids increase; the final of a segment comes after its drafts.
    assert [e.segment for e in events if e.state == "final"] == [0, 1]
    # The refine pass used the larger beam, drafts the greedy one.
    beams = {o.beam_size for o in transcriber.calls}
    assert beams == {1, 5}


async def test_the_speech_after_a_final_is_told_as_the_vad_heard_it() -> None:
    """Asked when a final comes out (as a stream does), :meth:`next_speech` says where the
    speaker's next segment begins, or the earliest it can."""
    recognizer, _ = make_recognizer()
    audio = make_audio(9.0, [(2.6, 3.6), (5.4, 9.0)])
    told: list[tuple[Caption, NextSpeech, float]] = []
    hop = int(0.3 * SAMPLE_RATE)
    for i in range(0, len(audio), hop):
        recognizer.push(audio[i : i + hop])
        for event in await recognizer.step():
            if event.state == "final":
                told.append((event, recognizer.next_speech(event.end), recognizer.received_until))
    (first, after_first, at_first), (second, after_second, at_second) = told
    lead_in = recognizer.config.lead_in_s
    # Only silence after each final when it came out: the next segment begins no earlier
    # than a lead-in before the end of the audio heard by then.
    assert not after_first.heard and not after_second.heard
    assert after_first.start == pytest.approx(max(first.end, at_first - lead_in), abs=0.04)
    assert after_second.start == pytest.approx(max(second.end, at_second - lead_in), abs=0.04)
    # Asked again once the speech came back (3.6 s), it begins a lead-in before it.
    recognizer, _ = make_recognizer()
    await feed(recognizer, make_audio(3.3), 0.3)
    closed = recognizer.next_speech(2.7)
    assert not closed.heard
    recognizer.push(make_audio(4.2)[len(make_audio(3.3)) :])
    await recognizer.step()
    again = recognizer.next_speech(2.7)
    assert again.heard and again.start == pytest.approx(3.6 - lead_in, abs=0.04)


async def test_the_vad_and_the_finals_decodes_go_first_and_the_drafts_wait_their_turn() -> None:
    """Runs through ``run_first`` go ahead of the drafts waiting in the pool
    (engine/workers.py); here each runner only records what it ran."""
    transcriber = FakeTranscriber()
    vad = FakeVad()
    ran: dict[str, list[str]] = {"run": [], "first": []}

    def runner(name: str) -> Callable[..., Any]:
        async def run(fn: Callable[..., Any], *args: Any) -> Any:
            ran[name].append("vad" if fn == vad.process else f"beam {args[1].beam_size}")
            return fn(*args)

        return run

    recognizer = recognizer_on(transcriber, runner("run"), vad=vad, run_first=runner("first"))
    events = await feed(recognizer, make_audio(7.0), 0.3)
    events.extend(await recognizer.finish())
    assert finals(events) == ["Hello there my friends.", "This is a test."]
    assert set(ran["run"]) == {"beam 1"}  # drafts only
    assert set(ran["first"]) == {"vad", "beam 5"}


class SlowRefines(FakeTranscriber):
    """Refine decodes (the larger beam) wait for ``gate``: a model slower than the speaker."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()

    def transcribe(self, audio: np.ndarray, options: DecodeOptions) -> Decoded:
        if options.beam_size > 1:
            assert self.gate.wait(10)
        return super().transcribe(audio, options)


@contextlib.asynccontextmanager
async def slow_refines(**config: Any) -> AsyncIterator[tuple[StreamingRecognizer, SlowRefines]]:
    """A recogniser on a real two-thread pool whose refines wait for the transcriber's
    gate (opened on the way out)."""
    transcriber = SlowRefines()
    pool = WorkerPool("asr", threads=2, max_pending=8)
    recognizer = recognizer_on(transcriber, pool.run, **config)
    try:
        yield recognizer, transcriber
    finally:
        transcriber.gate.set()
        pool.shutdown()


async def test_the_next_segment_drafts_while_the_last_refine_runs() -> None:
    """A refine that takes longer than ``refine_wait_s`` goes on beside the next segment's
    drafts (the pool's other worker): the speech after the pause shows before the final
    of the speech before it, and the finals keep their order and their ids the speech's."""
    async with slow_refines(refine_wait_s=0.05) as (recognizer, transcriber):
        audio = make_audio(7.0)
        split = int(5.0 * SAMPLE_RATE)
        events = await feed(recognizer, audio[:split], 0.3)
        assert finals(events) == []  # the first sentence's refine is still running
        assert any(e.segment == 1 and "This" in e.text for e in events if e.state == "draft")
        transcriber.gate.set()
        events += await feed(recognizer, audio[split:], 0.3)
        events += await recognizer.finish()
        assert finals(events) == ["Hello there my friends.", "This is a test."]
        assert [e.segment for e in events if e.state == "final"] == [0, 1]


async def test_a_short_pause_while_the_last_refine_runs_does_not_hold_the_drafts() -> None:
    """The second sentence pauses briefly after "This is" (4.3-4.6 s) while the first
    one's refine still runs: its early decode, which would hear that final as context,
    waits for a later step, and the words after the pause are drafted meanwhile."""
    async with slow_refines(refine_wait_s=0.05) as (recognizer, transcriber):
        audio = make_audio(7.0, [(2.6, 3.6), (4.3, 4.6), (5.4, 7.0)])
        split = int(5.5 * SAMPLE_RATE)
        events = await asyncio.wait_for(feed(recognizer, audio[:split], 0.1), 5)
        assert finals(events) == []  # the first sentence's refine is still running
        assert any(e.segment == 1 and "test" in e.text for e in events if e.state == "draft")
        transcriber.gate.set()
        events += await feed(recognizer, audio[split:], 0.1)
        events += await recognizer.finish()
        assert finals(events) == ["Hello there my friends.", "This is a test."]


async def test_a_final_taken_by_refined_finals_is_not_given_again_by_the_step() -> None:
    """A stream awaits ``refined_finals`` beside its step: when the refine the step is
    waiting for finishes, whichever of the two takes the final, it comes out once."""
    async with slow_refines(refine_wait_s=5.0, early_finals=False) as (recognizer, transcriber):
        audio = make_audio(7.0)
        spoken, split = int(2.4 * SAMPLE_RATE), int(3.5 * SAMPLE_RATE)
        events = await feed(recognizer, audio[:spoken], 0.3)
        recognizer.push(audio[spoken:split])  # the pause: long enough to end a sentence
        step = asyncio.ensure_future(recognizer.step())  # closes the sentence, then waits
        ready = asyncio.ensure_future(recognizer.refined_finals())
        await asyncio.sleep(0.1)
        assert not step.done() and not ready.done()
        transcriber.gate.set()
        from_ready = await asyncio.wait_for(ready, 5)
        events += from_ready + await step
        events += await feed(recognizer, audio[split:], 0.3)
        events += await recognizer.finish()
        assert finals(from_ready) == ["Hello there my friends."]
        assert finals(events) == ["Hello there my friends.", "This is a test."]


class GatedDecodes(FakeTranscriber):
    """Each refine (the larger beam) waits for a permit of ``refines``; draft decodes of
    audio that begins at or after ``after`` seconds wait for ``draft_gate``."""

    def __init__(self, after: float) -> None:
        super().__init__()
        self.after = after
        self.refines = threading.Semaphore(0)
        self.draft_gate = threading.Event()
        self.draft_waiting = threading.Event()

    def transcribe(self, audio: np.ndarray, options: DecodeOptions) -> Decoded:
        if options.beam_size > 1:
            assert self.refines.acquire(timeout=10)
        elif abs(float(audio[0])) * 1000.0 >= self.after:
            self.draft_waiting.set()
            assert self.draft_gate.wait(10)
        return super().transcribe(audio, options)

    def open(self) -> None:
        self.refines.release(100)
        self.draft_gate.set()


@pytest.mark.parametrize("second_refine_done", [True, False])
async def test_finals_come_out_in_order_and_before_the_draft_a_step_decodes(
    second_refine_done: bool,
) -> None:
    """A step takes the first sentence's final (its refine was slow), closes the second
    sentence, then decodes a slow draft of the speech after it. The first final comes out
    while that draft decodes, not when the step returns; and if the second sentence's
    refine finishes meanwhile, ``refined_finals`` does not give its final ahead of the first
    (a stream publishes each as it comes)."""
    transcriber = GatedDecodes(after=6.0)
    pool = WorkerPool("asr", threads=3, max_pending=8)
    # Nothing shed for the seconds the step is behind: the refines stay gated.
    recognizer = recognizer_on(
        transcriber,
        pool.run,
        refine_wait_s=0.0,
        early_finals=False,
        context_max_backlog_s=99.0,
        beam_backlog_s=99.0,
        max_backlog_s=99.0,
    )
    published: list[Caption] = []

    async def beside(work: asyncio.Future[list[Caption]]) -> None:
        """Await ``work`` as a stream does, publishing finals as they are made."""
        while not work.done():
            ready = asyncio.ensure_future(recognizer.refined_finals())
            await asyncio.wait({work, ready}, return_when=asyncio.FIRST_COMPLETED)
            if ready.done():
                published.extend(ready.result())
            else:
                ready.cancel()
        published.extend(work.result())

    try:
        # Speech again after the second sentence's pause: a third segment to draft.
        audio = make_audio(8.0, [(2.6, 3.6), (5.4, 6.6)])
        split = int(5.2 * SAMPLE_RATE)
        published += await feed(recognizer, audio[:split], 0.3)
        assert finals(published) == []  # the first sentence's refine waits for a permit
        recognizer.push(audio[split:])  # closes the second sentence, then drafts the third
        stepping = asyncio.ensure_future(beside(asyncio.ensure_future(recognizer.step())))
        await asyncio.sleep(0.1)
        transcriber.refines.release(2 if second_refine_done else 1)
        assert await asyncio.to_thread(transcriber.draft_waiting.wait, 5)
        await asyncio.sleep(0.2)
        expected = ["Hello there my friends.", "This is a test."]
        assert finals(published) == expected[: 2 if second_refine_done else 1]
        transcriber.open()
        await asyncio.wait_for(stepping, 5)
        published += await recognizer.finish()
        assert finals(published) == expected
        assert [e.segment for e in published if e.state == "final"] == [0, 1]
    finally:
        transcriber.open()
        pool.shutdown()


async def test_a_held_final_a_step_releases_comes_out_before_the_draft_it_decodes() -> None:
    """The first sentence pauses only briefly (2.45-2.75 s), so its final is held to see
    whether the pause ends a sentence. The step that hears the speaker go on releases it
    and then decodes a (slow) draft of the new speech: the final comes out of
    ``refined_finals`` meanwhile, as a stream awaits it, not when the step returns."""
    transcriber = GatedDecodes(after=2.4)
    transcriber.refines.release(100)
    pool = WorkerPool("asr", threads=2, max_pending=8)
    recognizer = recognizer_on(transcriber, pool.run)
    try:
        audio = make_audio(7.0, [(2.45, 2.75), (5.4, 7.0)])
        paused, went_on = int(2.75 * SAMPLE_RATE), int(3.6 * SAMPLE_RATE)
        events = await feed(recognizer, audio[:paused], 0.1)
        assert finals(events) == []  # held: the pause may still end a sentence
        recognizer.push(audio[paused:went_on])
        step = asyncio.ensure_future(recognizer.step())
        ready = await asyncio.wait_for(recognizer.refined_finals(), 5)
        assert await asyncio.to_thread(transcriber.draft_waiting.wait, 5)
        assert not step.done()  # the draft decodes still
        assert finals(ready) == ["Hello there my friends"]  # the speaker went on
        transcriber.open()
        events = ready + await step
        events += await feed(recognizer, audio[went_on:], 0.1)
        events += await recognizer.finish()
        assert finals(events) == ["Hello there my friends", "this is a test."]
    finally:
        transcriber.open()
        pool.shutdown()


@pytest.mark.parametrize("held_from", [2.7, 3.0])
async def test_a_late_step_begins_the_next_segment_a_lead_in_before_its_speech(
    held_from: float,
) -> None:
    """A step that comes late (a refine held the stream) finds the speech after a pause
    already begun: the next segment still begins ``lead_in_s`` before that speech, as the
    steps of a stream on time make it, so its start tells how long the speaker paused. The
    stream is held from 2.7 s (the pause, 2.6-3.6 s, has just begun: the late step makes the
    cut) or from 3.0 s (the cut was made, in silence)."""
    audio = make_audio(7.0)
    on_time, _ = make_recognizer()
    timely = await feed(on_time, audio, 0.3)
    late, _ = make_recognizer()
    split = int(held_from * SAMPLE_RATE)
    held = await feed(late, audio[:split], 0.3)
    late.push(audio[split:])  # the rest arrives while a decode held the stream
    held.extend(await late.step())
    held.extend(await late.finish())
    assert finals(held) == finals(timely) == ["Hello there my friends.", "This is a test."]
    lead_in = RecognizerConfig().lead_in_s
    late_start = [e.start for e in held if e.state == "final"][1]
    assert late_start == pytest.approx(3.6 - lead_in, abs=0.05)  # not the cut (about 2.8 s)
    assert next(e.start for e in timely if e.state == "draft" and e.segment == 1) >= late_start


async def test_refine_pass_gets_previous_finals_as_prompt_without_context() -> None:
    recognizer, transcriber = make_recognizer(refine_context_s=0.0)
    await feed(recognizer, make_audio(7.0), 0.3)
    refines = [o for o in transcriber.calls if o.beam_size == 5]
    assert [o.prompt for o in refines[:2]] == [None, "Hello there my friends."]
    assert all(o.prefix is None for o in transcriber.calls)


async def test_refine_hears_the_previous_final_again_as_its_prefix() -> None:
    recognizer, transcriber = make_recognizer()
    events = await feed(recognizer, make_audio(7.0), 0.3)
    # The second sentence's final comes back without the first one's words.
    assert finals(events) == ["Hello there my friends.", "This is a test."]
    refines = [
        (o, t)
        for o, t in zip(transcriber.calls, transcriber.starts, strict=True)
        if o.beam_size == 5
    ]
    first, second = refines[0], refines[-1]
    assert first[0].prefix is None
    assert second[0].prefix == "Hello there my friends."
    # Its audio begins where the first segment began, and the text it hears again is not
    # also given as the prompt.
    assert second[1] == pytest.approx(first[1], abs=0.01)
    assert second[0].prompt is None
    # Drafts decode the open segment alone.
    assert all(o.prefix is None for o in transcriber.calls if o.beam_size == 1)


async def test_context_older_than_refine_context_s_is_not_heard() -> None:
    recognizer, transcriber = make_recognizer(refine_context_s=1.0)
    await feed(recognizer, make_audio(7.0), 0.3)
    last = [o for o in transcriber.calls if o.beam_size == 5][-1]
    # The first segment began more than 1 s before the second: prompted, not heard.
    assert last.prefix is None
    assert last.prompt == "Hello there my friends."


async def test_a_segment_as_long_as_refine_context_below_s_is_not_given_context() -> None:
    recognizer, transcriber = make_recognizer(refine_context_below_s=1.0)
    events = await feed(recognizer, make_audio(7.0), 0.3)
    assert finals(events) == ["Hello there my friends.", "This is a test."]
    last = [o for o in transcriber.calls if o.beam_size == 5][-1]
    # The second segment (2.6-5.4 s) is longer than 1 s: it reads its own audio alone.
    assert last.prefix is None
    assert last.prompt == "Hello there my friends."


async def test_a_step_far_behind_decodes_its_finals_in_the_short_window_with_less_context() -> None:
    recognizer, transcriber = make_recognizer(shed_context_s=4.0)
    # Each step begins 1.2 s behind: over context_max_backlog_s, under beam_backlog_s, so
    # the finals decode (beam 5) in the short window and hear only 4 s of context.
    events = await feed(recognizer, make_audio(7.0), 1.2)
    assert finals(events) == ["Hello there my friends.", "This is a test."]
    assert recognizer.shed == Shed.CONTEXT
    refines = [o for o in transcriber.calls if o.beam_size == 5]
    assert len(refines) >= 2 and not any(o.full_window for o in refines)
    # The second segment begins 3.3 s after the first, a lead-in before its speech.
    assert refines[-1].prefix == "Hello there my friends."
    # A context further back than shed_context_s is not heard.
    recognizer, transcriber = make_recognizer(shed_context_s=3.0)
    await feed(recognizer, make_audio(7.0), 1.2)
    assert all(o.prefix is None for o in transcriber.calls)


async def test_a_crowded_pool_sheds_the_context_from_the_first_step() -> None:
    crowd = [True]
    recognizer, transcriber = make_recognizer(lambda: crowd[0], shed_context_s=4.0)
    audio = make_audio(7.0)
    # Steps of 0.3 s never fall behind, yet the final decodes in the short window.
    events = await feed(recognizer, audio[: 5 * SAMPLE_RATE], 0.3)
    assert finals(events) == ["Hello there my friends."]
    assert recognizer.shed == Shed.CONTEXT
    crowd[0] = False  # the other streams ended
    events = await feed(recognizer, audio[5 * SAMPLE_RATE :], 0.3)
    assert finals(events) == ["This is a test."]
    assert recognizer.shed == Shed.NONE
    windows = [o.full_window for o in transcriber.calls if o.beam_size == 5]
    assert windows[0] is False and windows[-1] is True
    # Switched off, a crowd sheds nothing.
    recognizer, transcriber = make_recognizer(lambda: True, shed_when_crowded=False)
    await feed(recognizer, audio, 0.3)
    assert recognizer.shed == Shed.NONE
    assert all(o.full_window for o in transcriber.calls if o.beam_size == 5)


async def test_finals_that_come_late_shed_the_context_until_one_comes_in_half_the_time() -> None:
    async with slow_refines(context_late_final_s=1.0, refine_wait_s=0.0) as (
        recognizer,
        transcriber,
    ):
        audio = make_audio(7.0)
        hop = int(0.1 * SAMPLE_RATE)
        levels: list[Shed] = []
        for i in range(0, len(audio), hop):
            if i >= 5.0 * SAMPLE_RATE:
                transcriber.gate.set()  # the first final comes 2 s after its cut at 3 s
            recognizer.push(audio[i : i + hop])
            await recognizer.step()
            levels.append(recognizer.shed)
            await asyncio.sleep(0.01)
        # A step every 0.1 s: the backlog never grew, yet the late final shed the context,
        # and the next final, in time, took it back.
        assert levels[:50] == [Shed.NONE] * 50
        assert Shed.CONTEXT in levels and levels[-1] == Shed.NONE
        windows = [o.full_window for o in transcriber.calls if o.beam_size == 5]
        assert windows[0] and not windows[-1]


async def test_audio_handed_over_is_not_a_backlog() -> None:
    """A detector hands the audio it held while identifying the language to the recogniser
    it made: the first step must not shed for it (docs/metrics.md, "Language detection")."""
    recognizer, transcriber = make_recognizer()
    audio = make_audio(10.0)
    recognizer.hand_over(audio[: 7 * SAMPLE_RATE])
    events = await recognizer.step()
    assert finals(events) == ["Hello there my friends.", "This is a test."]
    assert recognizer.shed is Shed.NONE
    refines = [o for o in transcriber.calls if o.beam_size == RecognizerConfig().refine_beam]
    assert len(refines) == 2 and refines[-1].prefix == "Hello there my friends."
    recognizer.push(audio[7 * SAMPLE_RATE :])  # what arrives after it is a backlog again
    await recognizer.step()
    assert recognizer.shed is Shed.DRAFTS


async def test_the_segment_a_stop_closes_is_decoded_without_context() -> None:
    recognizer, transcriber = make_recognizer()
    events = await feed(recognizer, make_audio(4.8), 0.3)
    events += await recognizer.finish()
    assert finals(events) == ["Hello there my friends.", "This is a test."]
    closing = transcriber.calls[-1]
    assert not closing.full_window and closing.prefix is None
    assert closing.prompt == "Hello there my friends."


async def test_finish_flushes_the_open_segment() -> None:
    recognizer, _ = make_recognizer()
    # Stop in the middle of the second sentence, before any pause.
    events = await feed(recognizer, make_audio(4.8), 0.3)
    assert finals(events) == ["Hello there my friends."]
    tail = await recognizer.finish()
    assert [e.state for e in tail] == ["final"]
    assert tail[0].text.startswith("This is a")


async def test_short_pause_after_committed_sentence_end_closes_the_segment() -> None:
    # The 1 s pause is too short for min_silence_s, but it follows a committed sentence end.
    recognizer, _ = make_recognizer(min_silence_s=5.0, sentence_min_s=1.0, short_pause_s=0.5)
    events = await feed(recognizer, make_audio(5.3), 0.25)
    assert finals(events)[0] == "Hello there my friends."


@pytest.mark.parametrize(
    ("long_pause_s", "expected"),
    [
        (1.5, ["Hello there my friends. This is a test."]),
        (0.9, ["Hello there my friends.", "This is a test."]),
    ],
)
async def test_a_pause_after_little_speech_closes_only_if_long(
    long_pause_s: float, expected: list[str]
) -> None:
    # The first sentence holds 2.6 s of speech, then pauses for 1 s: with 3 s of speech
    # needed, only a pause of long_pause_s closes it; the 1.6 s pause after "test." does.
    recognizer, _ = make_recognizer(min_close_speech_s=3.0, long_pause_s=long_pause_s)
    events = await feed(recognizer, make_audio(7.0), 0.25)
    assert finals(events) == expected


@pytest.mark.parametrize(
    ("speech_hold", "expected"),
    [
        (0.1, ["Hello there my friends. This is a test."]),
        (0.0, ["Hello there my friends.", "This is a test."]),
    ],
)
async def test_a_quiet_stretch_after_speech_is_no_pause_while_speech_holds(
    speech_hold: float, expected: list[str]
) -> None:
    # The first silence scores 0.45, under the threshold (0.5) but within the hold of it:
    # speech begun holds through it, so only the second, silent pause closes a segment.
    transcriber = FakeTranscriber()
    recognizer = recognizer_on(transcriber, vad=FakeVad(0.45, (0.0, 3.7)), speech_hold=speech_hold)
    events = await feed(recognizer, make_audio(7.0), 0.25)
    assert finals(events) == expected


async def test_segment_without_pause_is_cut_at_its_quietest_point() -> None:
    recognizer, _ = make_recognizer(
        min_silence_s=5.0, short_pause_s=5.0, long_segment_s=100, max_segment_s=3.0
    )
    events = await feed(recognizer, make_audio(7.0), 0.25)
    # The first cut falls in the pause (2.6-3.6 s), the only quiet stretch after 2 s.
    first = next(e for e in events if e.state == "final")
    assert 2.4 <= first.end <= 3.7 and first.text == "Hello there my friends."


async def test_without_refine_the_committed_words_are_the_final() -> None:
    recognizer, transcriber = make_recognizer(refine=False)
    events = await feed(recognizer, make_audio(7.0), 0.3)
    assert finals(events) == ["Hello there my friends.", "This is a test."]
    assert {o.beam_size for o in transcriber.calls} == {1}


async def test_no_draft_decode_while_nothing_new_is_heard() -> None:
    # No pause is long enough to close the segment here, so each step in the silence from
    # 2.6 s could draft: it would decode the same words again.
    recognizer, transcriber = make_recognizer(
        min_silence_s=5.0, short_pause_s=5.0, early_finals=False
    )
    audio = make_audio(5.0)
    cut = int(2.9 * SAMPLE_RATE)
    await feed(recognizer, audio[:cut], 0.3)
    heard = len(transcriber.calls)
    assert heard > 0
    await feed(recognizer, audio[cut : int(3.6 * SAMPLE_RATE)], 0.3)
    assert len(transcriber.calls) == heard
    # Speech again: drafting resumes.
    events = await feed(recognizer, audio[int(3.6 * SAMPLE_RATE) :], 0.3)
    assert len(transcriber.calls) > heard
    assert any("This" in e.text for e in events if e.state == "draft")


async def steps_with_calls(
    recognizer: StreamingRecognizer, transcriber: FakeTranscriber, audio: np.ndarray, step_s: float
) -> list[tuple[list[Caption], list[DecodeOptions]]]:
    """Each step's events and the decodes it made."""
    out = []
    hop = int(step_s * SAMPLE_RATE)
    for i in range(0, len(audio), hop):
        before = len(transcriber.calls)
        recognizer.push(audio[i : i + hop])
        events = await recognizer.step()
        out.append((events, transcriber.calls[before:]))
    return out


@pytest.mark.parametrize("early", [True, False])
async def test_final_follows_the_pause_without_a_decode_of_its_own(early: bool) -> None:
    # A 0.2 s short pause leaves 0.1 s between the early decode and the cut: a 0.1 s step
    # always lands in it.
    # (No sentence pause: a final that may end a sentence would wait for it.)
    recognizer, transcriber = make_recognizer(
        early_finals=early, short_pause_s=0.2, sentence_pause_s=0.0
    )
    steps = await steps_with_calls(recognizer, transcriber, make_audio(7.0), 0.1)
    closing = [(events, calls) for events, calls in steps if finals(events)]
    assert [finals(events) for events, _ in closing] == [
        ["Hello there my friends."],
        ["This is a test."],
    ]
    refines = [o for o in transcriber.calls if o.beam_size == 5]
    # Either way one careful decode per segment; early, it was made before the close.
    assert len(refines) == 2
    closing_refines = [o for _, calls in closing for o in calls if o.beam_size == 5]
    assert len(closing_refines) == (0 if early else 2)
    assert (recognizer.early_decodes, recognizer.early_finals) == ((2, 2) if early else (0, 0))


async def test_early_decode_is_spent_when_the_speaker_goes_on() -> None:
    # Neither pause is long enough to close the segment: each gets an early decode; the
    # first is spent when speech resumes, the second serves the final at the stop.
    recognizer, transcriber = make_recognizer(
        min_silence_s=2.0, short_pause_s=2.0, max_segment_s=8.0
    )
    events = await feed(recognizer, make_audio(6.5), 0.1)
    assert finals(events) == []
    assert recognizer.early_decodes == 2
    calls = len(transcriber.calls)
    tail = await recognizer.finish()
    assert finals(tail) == ["Hello there my friends. This is a test."]
    assert len(transcriber.calls) == calls, "the stop reused the early decode"
    assert recognizer.early_finals == 1


async def test_early_decode_is_not_used_past_new_speech() -> None:
    # The stop comes mid-word after the pause: the early decode missed that speech.
    recognizer, transcriber = make_recognizer(
        min_silence_s=2.0, short_pause_s=2.0, max_segment_s=8.0
    )
    await feed(recognizer, make_audio(4.1), 0.1)
    assert recognizer.early_decodes == 1
    calls = len(transcriber.calls)
    tail = await recognizer.finish()
    assert len(transcriber.calls) == calls + 1 and recognizer.early_finals == 0
    assert finals(tail)[0].startswith("Hello there my friends. This")


async def test_silence_only_never_decodes() -> None:
    recognizer, transcriber = make_recognizer()
    silence = -np.ones(SAMPLE_RATE * 3, dtype=np.float32) * 1e-3
    events = await feed(recognizer, silence, 0.3)
    assert events == [] and transcriber.calls == []
    assert await recognizer.finish() == []


async def test_model_failure_propagates_and_next_step_recovers() -> None:
    recognizer, transcriber = make_recognizer()
    transcriber.fail_once = True
    audio = make_audio(7.0)
    recognizer.push(audio[:8000])
    recognizer.push(audio[8000:16000])
    with pytest.raises(RuntimeError):
        await recognizer.step()
    # The failed step dealt with its audio: no backlog for the next step to shed for.
    assert recognizer.backlog == 0.0
    events = await feed(recognizer, audio[16000:], 0.3)
    assert "This is a test." in finals(events)


class FailingOnce(FakeTranscriber):
    """The next decode with beam ``fail_beam`` fails."""

    fail_beam: int | None = None

    def transcribe(self, audio: np.ndarray, options: DecodeOptions) -> Decoded:
        if options.beam_size == self.fail_beam:
            self.fail_beam = None
            raise RuntimeError("model exploded")
        return super().transcribe(audio, options)


@pytest.mark.parametrize("fails", ["refine", "draft"])
async def test_a_step_that_fails_at_a_close_loses_no_final(fails: str) -> None:
    """Nothing said is lost to a model failure: the step that closes the first sentence
    fails on that sentence's refine (its streamed words are then its final) or, having
    taken the final, on the draft of the second sentence. The next step gives the final."""
    transcriber = FailingOnce()
    # Nothing shed for the seconds the failing step is behind: refines keep beam 5.
    recognizer = recognizer_on(
        transcriber, context_max_backlog_s=99.0, beam_backlog_s=99.0, max_backlog_s=99.0
    )
    audio = make_audio(7.0)
    spoken, went_on = int(2.5 * SAMPLE_RATE), int(4.4 * SAMPLE_RATE)
    events = await feed(recognizer, audio[:spoken], 0.1)
    assert finals(events) == []
    transcriber.fail_beam = 5 if fails == "refine" else 1
    recognizer.push(audio[spoken:went_on])  # the pause and the first words after it
    with pytest.raises(RuntimeError):
        await recognizer.step()
    assert transcriber.fail_beam is None
    events = await feed(recognizer, audio[went_on:], 0.3)
    events += await recognizer.finish()
    assert [text.lower().rstrip(".") for text in finals(events)] == [
        "hello there my friends",
        "this is a test",
    ]


async def test_the_vad_hears_each_sample_once() -> None:
    # Steps that end mid-window: the VAD keeps the unscored part itself, so a step must not
    # hand it over again (that doubled up to 32 ms of audio a step and ran the speech track
    # ahead of the audio received).
    recognizer, _ = make_recognizer()
    audio = make_audio(7.0)
    await feed(recognizer, audio, 0.3)
    vad = recognizer._vad
    assert isinstance(vad, FakeVad)
    assert vad.windows_seen == len(audio) // WINDOW
    assert recognizer._speech.end <= recognizer.received_until


async def test_a_refine_that_gives_no_words_with_context_is_made_again_without() -> None:
    # Whisper sometimes ends at once after a forced prefix (" ."): the segment alone is
    # decoded again, so its final keeps its words.
    recognizer, transcriber = make_recognizer()
    plain = transcriber.transcribe

    def ends_at_once(audio: np.ndarray, options: DecodeOptions) -> Decoded:
        decoded = plain(audio, options)
        return Decoded((Word(" .", 0.0, 0.1),)) if options.prefix else decoded

    transcriber.transcribe = ends_at_once  # type: ignore[method-assign]
    events = await feed(recognizer, make_audio(7.0), 0.3)
    assert finals(events) == ["Hello there my friends.", "This is a test."]
    assert recognizer.context_misses >= 1
    retried = [o for o in transcriber.calls if o.full_window and not o.prefix]
    assert len(retried) >= 2  # the first segment (no context to hear) and the retry


@pytest.mark.parametrize("keep", [True, False], ids=["kept", "not-kept"])
async def test_a_draft_hands_over_its_open_segments_audio_so_far(keep: bool) -> None:
    """For speech translation (``keep_final_audio``), the open segment's audio heard so far
    goes with its draft (``draft_audio``); a closed segment's, or any without the option,
    does not."""
    recognizer, _ = make_recognizer(keep_final_audio=keep)
    audio = make_audio(7.0)
    events = await feed(recognizer, audio[: int(4.6 * SAMPLE_RATE)], 0.3)
    drafts = [e for e in events if not e.is_final and e.text]
    finals_made = [e for e in events if e.is_final]
    assert drafts and finals_made
    open_draft = drafts[-1]
    heard = recognizer.draft_audio(open_draft.segment)
    assert recognizer.draft_audio(finals_made[0].segment) is None
    if not keep:
        assert heard is None
        return
    assert heard is not None
    # It begins a lead-in before the second sentence (3.7 s) and runs to what was pushed.
    assert len(heard) / SAMPLE_RATE == pytest.approx(4.6 - (3.7 - 0.3), abs=0.15)
    assert float(heard[-1]) == pytest.approx(4.6 / 1000, abs=1e-3)
