"""The presenter lifecycle (engine/presenting.py) and the session registry, with a fake model.

These run the real factory, session, stream, store and hub; only the recognition model and
the voice activity model are fakes: every window louder than a whisper is speech, and every
decode reads "hello".
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from engine.audio import Samples
from engine.delivery.memory import InMemoryHub
from engine.events import Caption, StateChange, Word
from engine.factory import SessionFactory, StagePorts
from engine.presenting import Presentation, Presenting, StartRequest
from engine.recognition.asr import Decoded, DecodeOptions
from engine.recognition.config import RecognizerConfig
from engine.recognition.recognizer import StreamingRecognizer
from engine.recognition.resources import Recognition
from engine.recognition.shedding import Shed
from engine.refusals import Refusal, Refused
from engine.registry import SessionRegistry
from engine.session import Session, SessionPorts
from engine.store.base import SessionRecord
from engine.store.sqlite import SqliteSessionStore
from engine.stream import StreamLimits
from engine.telemetry import NullObserver
from engine.workers import Workers


class LoudnessVad:
    """Speech wherever a window is louder than a whisper."""

    def run(
        self, windows: np.ndarray, h: np.ndarray, c: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        loud = np.sqrt((windows.astype(np.float64) ** 2).mean(axis=1)) > 0.01
        return loud.astype(np.float32), h, c


class HelloTranscriber:
    name = "hello"
    multilingual = False

    def transcribe(self, audio: Samples, options: DecodeOptions) -> Decoded:
        return Decoded((Word(" hello", 0.0, max(0.1, len(audio) / 16000)),))


def speech(seconds: float, pause: float = 1.0) -> bytes:
    """``seconds`` of a loud tone, then ``pause`` of silence, as 16 kHz PCM."""
    t = np.arange(int(seconds * 16000)) / 16000
    tone = (0.3 * np.sin(2 * np.pi * 220 * t) * 32767).astype("<i2")
    return tone.tobytes() + bytes(int(pause * 16000) * 2)


def feed(presentation: Presentation, pcm: bytes) -> None:
    """In 100 ms messages, as a browser sends them."""
    for i in range(0, len(pcm), 3200):
        presentation.feed(pcm[i : i + 3200])


@dataclass
class Engine:
    store: SqliteSessionStore
    hub: InMemoryHub
    factory: CountingFactory
    registry: SessionRegistry
    presenting: Presenting
    workers: Workers


class CountingFactory:
    """The real factory, counting the sessions it builds (and slow to build one)."""

    def __init__(self, inner: SessionFactory) -> None:
        self.inner = inner
        self.ports = inner.ports
        self.builds = 0

    async def build(self, record: SessionRecord, **history: Any) -> Session:
        self.builds += 1
        await asyncio.sleep(0.05)
        return await self.inner.build(record, **history)


@contextlib.asynccontextmanager
async def make_engine(
    tmp_path: Path,
    transcriber: Any = None,
    asr_threads: int = 1,
    stages: StagePorts | None = None,
) -> AsyncIterator[Engine]:
    store = SqliteSessionStore(tmp_path / "sessions.sqlite3")
    hub = InMemoryHub()
    workers = Workers()
    recognition = Recognition(
        transcribers={"en": transcriber or HelloTranscriber()},
        vad=LoudnessVad(),
        pool=workers.pool("asr", threads=asr_threads),
        config=lambda language: replace(RecognizerConfig(), language=language),
    )
    ports = SessionPorts(store, workers.pool("store"), hub, recognition, NullObserver())
    factory = CountingFactory(SessionFactory(ports, stages or StagePorts()))
    registry = SessionRegistry(factory, max_sessions=10, ended_grace_s=0.2)  # type: ignore[arg-type]
    presenting = Presenting(
        registry,
        recognition,
        hub,
        limits=StreamLimits(max_speed=100.0),
        max_live_streams=1,
    )
    try:
        yield Engine(store, hub, factory, registry, presenting, workers)
    finally:
        await presenting.shutdown()
        workers.shutdown()
        store.close()


@pytest.fixture
async def engine(tmp_path: Path) -> AsyncIterator[Engine]:
    async with make_engine(tmp_path) as built:
        yield built


async def test_a_stream_is_finalised_on_stop_and_its_finals_stored(engine: Engine) -> None:
    session, token = await engine.registry.create("Talk", "en", ())
    presentation = await engine.presenting.start(session, StartRequest(token, 16000))
    assert session.state == "live" and engine.presenting.live_streams() == 1
    audio = speech(2.0)
    for i in range(0, len(audio), 3200):
        presentation.feed(audio[i : i + 3200])
    await presentation.stop()
    seen = []
    while True:
        try:
            seen.append(await asyncio.wait_for(presentation.events.get(), 1))
        except Exception:
            break
    finals = [e for e in seen if isinstance(e, Caption) and e.is_final]
    assert session.state == "paused"
    assert isinstance(seen[-1], StateChange) and seen[-1].state == "paused"
    assert finals and all(f.text == "hello" for f in finals)
    assert [c.text for c in engine.store.finals(session.code)] == [f.text for f in finals]
    assert engine.presenting.live_streams() == 0
    await presentation.release()


class GatedTranscriber(HelloTranscriber):
    """Refine decodes (beam 5) wait for ``refine_gate``, drafts (beam 1) for ``draft_gate``;
    ``refining`` and ``drafting`` tell when one has begun."""

    def __init__(self) -> None:
        self.refine_gate, self.draft_gate = threading.Event(), threading.Event()
        self.refining, self.drafting = threading.Event(), threading.Event()

    def transcribe(self, audio: Samples, options: DecodeOptions) -> Decoded:
        began, gate = (
            (self.refining, self.refine_gate)
            if options.beam_size > 1
            else (self.drafting, self.draft_gate)
        )
        began.set()
        assert gate.wait(10)
        return super().transcribe(audio, options)


async def play(presentation: Presentation, pcm: bytes) -> None:
    """In 100 ms messages, letting the stream step between them."""
    for i in range(0, len(pcm), 3200):
        presentation.feed(pcm[i : i + 3200])
        await asyncio.sleep(0.005)


async def until(done: Callable[[], object], what: str = "the decode began") -> None:
    """Wait (5 s at most) until ``done()`` is true; fail saying ``what`` never happened."""
    for _ in range(500):
        if done():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"never: {what}")


async def test_a_final_is_published_when_its_refine_finishes_not_after_the_draft_beside_it(
    tmp_path: Path,
) -> None:
    """The refine of a closed segment runs beside the next segment's draft (two asr
    workers): its final reaches the presenter while that draft is still decoding."""
    transcriber = GatedTranscriber()
    async with make_engine(tmp_path, transcriber, asr_threads=2) as engine:
        session, token = await engine.registry.create("Talk", "en", ())
        presentation = await engine.presenting.start(session, StartRequest(token, 16000))
        transcriber.draft_gate.set()
        await play(presentation, speech(2.5, pause=0.8))
        await until(transcriber.refining.is_set)  # the first segment's refine holds one worker
        transcriber.draft_gate.clear()
        transcriber.drafting.clear()
        await play(presentation, speech(1.5, pause=0.0))
        await until(transcriber.drafting.is_set)  # the next segment's draft holds the other
        transcriber.refine_gate.set()
        seen: list[Caption] = []
        while not any(c.is_final for c in seen):
            event = await asyncio.wait_for(presentation.events.get(), 5)
            if isinstance(event, Caption):
                seen.append(event)
        assert not transcriber.draft_gate.is_set()  # the draft is still decoding
        assert [c.text for c in seen if c.is_final] == ["hello"]
        transcriber.draft_gate.set()
        await presentation.stop()
        await presentation.release()
        assert len(engine.store.finals(session.code)) == 2


@pytest.mark.parametrize(
    ("request_args", "reason"),
    [
        ({"token": None, "sample_rate": 16000}, Refusal.NO_CREDENTIALS),
        ({"token": "wrong", "sample_rate": 16000}, Refusal.BAD_CREDENTIALS),
        ({"sample_rate": 16000, "language": "xx"}, Refusal.UNKNOWN_LANGUAGE),
        ({"sample_rate": 16000, "language": "de"}, Refusal.NO_MODEL),
        ({"sample_rate": 16000, "language": "auto"}, Refusal.NO_MODEL),
        ({"sample_rate": 100}, Refusal.BAD_AUDIO),
    ],
)
async def test_start_refusals_are_typed(
    engine: Engine, request_args: dict[str, Any], reason: Refusal
) -> None:
    session, token = await engine.registry.create("Talk", "en", ())
    with pytest.raises(Refused) as refused:
        await engine.presenting.start(session, StartRequest(**{"token": token, **request_args}))
    assert refused.value.reason is reason
    assert session.state == "waiting" and engine.presenting.live_streams() == 0


async def test_one_stream_per_session_and_the_server_limit(engine: Engine) -> None:
    first, first_token = await engine.registry.create("One", "en", ())
    second, second_token = await engine.registry.create("Two", "en", ())
    presentation = await engine.presenting.start(first, StartRequest(first_token, 16000))
    with pytest.raises(Refused) as again:
        await engine.presenting.start(first, StartRequest(first_token, 16000))
    assert again.value.reason is Refusal.AT_CAPACITY  # the limit (1) is checked first
    with pytest.raises(Refused) as other:
        await engine.presenting.start(second, StartRequest(second_token, 16000))
    assert other.value.reason is Refusal.AT_CAPACITY
    await presentation.stop()
    await presentation.release()
    later = await engine.presenting.start(second, StartRequest(second_token, 16000))
    await later.release()


async def test_a_panels_speakers_each_count_and_a_server_behind_takes_no_more(
    engine: Engine,
) -> None:
    engine.presenting.max_live_streams = 3
    panel, token = await engine.registry.create("Panel", "en", ())
    _, bo_token = await panel.speakers.add("Bo", "en")
    _, cy_token = await panel.speakers.add("Cy", "en")
    first = await engine.presenting.start(panel, StartRequest(token, 16000))
    second = await engine.presenting.start(panel, StartRequest(bo_token, 16000))
    assert engine.presenting.live_streams() == 2  # streams, not sessions
    recognizer = first.stream.recognizer
    assert isinstance(recognizer, StreamingRecognizer)  # its step sets its ``shed`` level
    recognizer.shed = Shed.DRAFTS  # as when recognition has fallen far behind
    with pytest.raises(Refused) as behind:
        await engine.presenting.start(panel, StartRequest(cy_token, 16000))
    assert behind.value.reason is Refusal.AT_CAPACITY and "behind" in behind.value.message
    recognizer.shed = Shed.NONE  # caught up
    third = await engine.presenting.start(panel, StartRequest(cy_token, 16000))
    assert engine.presenting.live_streams() == 3
    for presentation in (first, second, third):
        await presentation.release()


async def test_streams_beyond_the_pools_threads_shed_context_while_they_share_it(
    engine: Engine,
) -> None:
    engine.presenting.max_live_streams = 2
    (asr,) = [pool for pool in engine.workers if pool.name == "asr"]  # one thread
    panel, token = await engine.registry.create("Panel", "en", ())
    _, bo_token = await panel.speakers.add("Bo", "en")

    async def spoken(*presentations: Presentation) -> None:
        for _ in range(3):  # a little at a time: never a backlog to shed for
            for presentation in presentations:
                feed(presentation, speech(0.1, pause=0.0))
            await asyncio.sleep(0.1)

    first = await engine.presenting.start(panel, StartRequest(token, 16000))
    await spoken(first)
    assert asr.tenants == 1 and first.stream.recognizer.shed is Shed.NONE
    second = await engine.presenting.start(panel, StartRequest(bo_token, 16000))
    await spoken(first, second)
    assert asr.tenants == 2
    assert first.stream.recognizer.shed is Shed.CONTEXT
    assert second.stream.recognizer.shed is Shed.CONTEXT
    await second.stop()
    await second.release()
    await spoken(first)
    assert asr.tenants == 1 and first.stream.recognizer.shed is Shed.NONE
    await first.stop()
    await first.release()
    assert asr.tenants == 0


async def test_bad_audio_is_refused_and_the_stream_still_finalises(engine: Engine) -> None:
    session, token = await engine.registry.create("Talk", "en", ())
    presentation = await engine.presenting.start(session, StartRequest(token, 16000))
    feed(presentation, speech(1.0, pause=0.0))
    with pytest.raises(Refused) as odd:
        presentation.feed(b"\x00\x01\x02")
    assert odd.value.reason is Refusal.BAD_AUDIO
    with pytest.raises(Refused) as big:
        presentation.feed(bytes(engine.presenting.limits.max_message_bytes + 2))
    assert big.value.reason is Refusal.MESSAGE_TOO_BIG
    await presentation.release()  # the transport gives up: what was said is finalised
    assert [c.text for c in engine.store.finals(session.code)] == ["hello"]


async def test_concurrent_loads_build_one_session(engine: Engine, tmp_path: Path) -> None:
    created, _ = await engine.registry.create("Talk", "en", ())
    await engine.registry.release(created)  # as after a restart: only the store has it
    engine.factory.builds = 0
    loads = await asyncio.gather(*(engine.registry.get(created.code.lower()) for _ in range(5)))
    assert all(s is loads[0] for s in loads) and loads[0] is not None
    assert engine.factory.builds == 1
    assert engine.registry.loaded(created.code) is loads[0]


async def test_an_ended_session_leaves_memory_and_comes_back_from_the_store(
    engine: Engine,
) -> None:
    began = time.time()
    session, token = await engine.registry.create("Talk", "en", ())
    presentation = await engine.presenting.start(session, StartRequest(token, 16000))
    feed(presentation, speech(1.5))
    listener = engine.hub.subscribe(session.code, frozenset({"en"}))
    await engine.presenting.end(session, token)
    said = time.time()
    await presentation.release()
    assert session.state == "ended" and engine.registry.loaded(session.code) is session
    with pytest.raises(Refused) as ended:
        await engine.presenting.start(session, StartRequest(token, 16000))
    assert ended.value.reason is Refusal.SESSION_ENDED
    for _ in range(50):
        if engine.registry.loaded(session.code) is None:
            break
        await asyncio.sleep(0.05)
    assert engine.registry.loaded(session.code) is None
    assert engine.hub.last_seq(session.code) == 0  # the hub log is gone
    assert listener.queue._closed  # its listeners were told (they reconnect)
    again = await engine.registry.get(session.code)
    assert again is not None and again is not session and again.state == "ended"
    assert [c.text for c in engine.store.finals(session.code)] == ["hello"]
    replay = engine.hub.subscribe(session.code, frozenset({"en"}))
    replayed = [e for e in replay.queue._backfill if isinstance(e, Caption)]
    assert [e.text for e in replayed] == ["hello"]
    # It keeps the time it was numbered while live (docs/protocol.md), not 0.
    assert began <= replayed[0].ts <= said
    for _ in range(50):  # a session loaded after it ended leaves again
        if engine.registry.loaded(session.code) is None:
            break
        await asyncio.sleep(0.05)
    assert engine.registry.loaded(session.code) is None


async def test_ending_needs_the_presenter_token(engine: Engine) -> None:
    session, _ = await engine.registry.create("Talk", "en", ())
    with pytest.raises(Refused) as refused:
        await engine.presenting.end(session, "not the token")
    assert refused.value.reason is Refusal.BAD_CREDENTIALS
    assert session.state == "waiting"
