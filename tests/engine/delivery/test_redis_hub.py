"""RedisHub against a real redis-server: several hubs in one process stand for several
nodes sharing one Redis (numbering, ordering, backfill and resume across nodes, audience
aggregation, spoken-translation audio, a Redis restart)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable

import pytest

from engine.delivery.hub import AudienceChanged, StateChanged, Subscription
from engine.delivery.redis import RedisHub, RedisHubConfig
from engine.events import Caption, Event, SpeechAudio, StateChange
from engine.store.redis import RedisSessionStore
from tests.engine.store.test_store import make_record
from tests.support import RedisServer

CODE = "ABC234"
FAST = RedisHubConfig(heartbeat_s=0.1, block_ms=100, outage_s=30.0)


def cap(segment: int, state: str = "draft", text: str = "x", lang: str = "en") -> Caption:
    return Caption(segment, lang, lang == "en", state, text, 0.0, 1.0)  # type: ignore[arg-type]


async def receive(sub: Subscription, count: int, within: float = 10.0) -> list[Event]:
    async with asyncio.timeout(within):
        return [await sub.get() for _ in range(count)]


async def eventually(check: Callable[[], bool], within: float = 10.0) -> None:
    deadline = time.monotonic() + within
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.02)


@pytest.fixture
def store(redis_server: RedisServer) -> RedisSessionStore:
    opened = RedisSessionStore(redis_server.url)
    opened.create(make_record(code=CODE))
    return opened


@pytest.fixture
async def nodes(redis_server: RedisServer) -> AsyncIterator[list[RedisHub]]:
    hubs = [RedisHub(redis_server.url, node=name, config=FAST) for name in "ABC"]
    for hub in hubs:
        await hub.start()
    yield hubs
    for hub in hubs:
        await hub.close()


async def test_events_reach_another_node_in_seq_order_and_finals_are_stored(
    nodes: list[RedisHub], store: RedisSessionStore
) -> None:
    a, b, _ = nodes
    a.open(CODE)
    b.open(CODE)
    on_b = b.subscribe(CODE, frozenset({"en"}))
    on_a = a.subscribe(CODE, frozenset({"en"}))
    sent: list[Event] = [
        cap(0, text="hel"),
        cap(1, "final", "hello"),
        StateChange("live", 2),
        cap(2, "final", "world"),
    ]
    emitted = [await a.emit(CODE, event) for event in sent]
    assert [e.seq for e in emitted] == [1, 2, 3, 4]
    got_b = await receive(on_b, 4)
    got_a = await receive(on_a, 4)
    assert [e.seq for e in got_b] == [1, 2, 3, 4] == [e.seq for e in got_a]
    assert [getattr(e, "text", None) for e in got_b] == ["hel", "hello", None, "world"]
    assert got_b[0].ts == pytest.approx(emitted[0].ts, abs=0.001)
    # The finals went into the shared store in the same step as the stream.
    assert [(c.seq, c.text) for c in store.finals(CODE)] == [(2, "hello"), (4, "world")]
    # with the time each was numbered, as a backfill after a restart must carry it
    assert [c.ts for c in store.finals(CODE)] == [emitted[1].ts, emitted[3].ts]


async def test_two_nodes_emitting_at_once_share_one_gapless_order(nodes: list[RedisHub]) -> None:
    a, b, c = nodes
    for hub in nodes:
        hub.open(CODE)
    watcher = c.subscribe(CODE, frozenset({"en"}))

    async def burst(hub: RedisHub, name: str) -> list[int]:
        return [(await hub.emit(CODE, cap(i, "final", f"{name}{i}"))).seq for i in range(40)]

    from_a, from_b = await asyncio.gather(burst(a, "a"), burst(b, "b"))
    assert sorted(from_a + from_b) == list(range(1, 81))
    got = await receive(watcher, 80)
    assert [e.seq for e in got] == list(range(1, 81))  # stream order is seq order


async def test_backfill_and_resume_on_another_node(
    nodes: list[RedisHub], store: RedisSessionStore
) -> None:
    a, b, c = nodes
    a.open(CODE)
    for i in range(5):
        await a.emit(CODE, cap(i, text=f"draft {i}"))
        await a.emit(CODE, cap(i, "final", f"final {i}"))
    await a.emit(CODE, cap(5, text="open segment"))  # seq 11
    # A listener saw everything up to seq 6 on A, then reconnects to B with since=6.
    b.open(CODE, store.last_seq(CODE), store.finals(CODE))
    moved = b.subscribe(CODE, frozenset({"en"}), since=6)
    got = await receive(moved, 3)
    assert [(e.seq, getattr(e, "text", "")) for e in got] == [
        (8, "final 3"),
        (10, "final 4"),
        (11, "open segment"),
    ]
    await a.emit(CODE, cap(5, "final", "final 5"))
    (live,) = await receive(moved, 1)
    assert (live.seq, getattr(live, "text", "")) == (12, "final 5")
    with pytest.raises(TimeoutError):
        await receive(moved, 1, within=0.5)  # nothing twice
    # A node that loads the session later backfills from the store and the stream.
    c.open(CODE, store.last_seq(CODE), store.finals(CODE))
    late = c.subscribe(CODE, frozenset({"en"}))
    finals = [e for e in await receive(late, 6) if isinstance(e, Caption)]
    assert [e.text for e in finals] == [f"final {i}" for i in range(6)]


async def test_audience_is_the_union_over_nodes(nodes: list[RedisHub]) -> None:
    a, b, _ = nodes
    changed: list[str] = []

    async def follow() -> None:
        async for change in a.remote_changes():
            if isinstance(change, AudienceChanged):
                changed.append(change.code)

    follower = asyncio.create_task(follow())
    a.open(CODE)
    b.open(CODE)
    a.subscribe(CODE, frozenset(), counted=False)  # the presenter's own view
    a.subscribe(CODE, frozenset({"en"}))
    spanish = b.subscribe(CODE, frozenset({"es"}), audio=True)
    b.subscribe(CODE, frozenset({"fr"}))
    await eventually(lambda: a.listener_count(CODE) == 3)
    assert a.wanted_languages(CODE) == {"en", "es", "fr"}
    assert a.wanted_speech(CODE) == {"es"}
    b.subscribe(CODE, frozenset({"es"}))
    await eventually(lambda: a.listener_count(CODE) == 4)
    assert dict(a.listeners_by_language(CODE)) == {"en": 1, "es": 2, "fr": 1}
    await eventually(lambda: bool(changed))
    assert set(changed) == {CODE}
    follower.cancel()
    await eventually(lambda: b.listener_count(CODE) == 4)
    b.unsubscribe(spanish)
    await eventually(lambda: a.wanted_speech(CODE) == frozenset())
    assert a.listener_count(CODE) == 3
    assert dict(a.listeners_by_language(CODE)) == {"en": 1, "es": 1, "fr": 1}


async def test_another_nodes_state_change_is_fed_to_this_node(nodes: list[RedisHub]) -> None:
    a, b, _ = nodes
    a.open(CODE)
    b.open(CODE)
    changes = aiter(a.remote_changes())
    await b.emit(CODE, StateChange("ended", 0))
    await a.emit(CODE, StateChange("live", 0))  # this node's own: not fed back
    change = await asyncio.wait_for(anext(changes), 5)
    assert change == StateChanged(CODE, "ended")
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(anext(changes), 0.5)


async def stop_heartbeating(hub: RedisHub) -> None:
    """Stop ``hub``'s tasks, as a killed process would stop. One cancellation is sometimes
    lost (about 1 in 100 under load, Python 3.11 and redis-py 8.1: the audience task was
    seen waiting again, still "cancelling"), so it is asked for again until they end."""
    async with asyncio.timeout(5):
        while not all(task.done() for task in hub._tasks):
            for task in hub._tasks:
                task.cancel()
            await asyncio.sleep(0.05)


async def test_a_dead_nodes_audience_expires(redis_server: RedisServer) -> None:
    config = RedisHubConfig(heartbeat_s=0.1, block_ms=100, stale_s=0.5)
    a, b = RedisHub(redis_server.url, config=config), RedisHub(redis_server.url, config=config)
    await a.start()
    await b.start()
    try:
        a.open(CODE)
        b.open(CODE)
        b.subscribe(CODE, frozenset({"es"}))
        await eventually(lambda: a.listener_count(CODE) == 1)
        await stop_heartbeating(b)
        await eventually(lambda: a.listener_count(CODE) == 0, within=5)
        assert a.wanted_languages(CODE) == frozenset()
    finally:
        await a.close()
        await b.close()


async def test_speech_audio_crosses_nodes_live_and_is_never_backfilled(
    nodes: list[RedisHub],
) -> None:
    a, b, _ = nodes
    a.open(CODE)
    b.open(CODE)
    hearing = b.subscribe(CODE, frozenset({"es"}), audio=True)
    reading = b.subscribe(CODE, frozenset({"es"}))
    pcm = bytes(range(256)) * 40
    await a.emit(CODE, cap(0, "final", "hola", lang="es"))
    await a.emit(CODE, SpeechAudio(0, "es", 22050, pcm, text="hola"))
    got = await receive(hearing, 2)
    assert isinstance(got[1], SpeechAudio) and got[1].pcm == pcm and got[1].seq == 2
    assert [e.seq for e in await receive(reading, 1)] == [1]
    with pytest.raises(TimeoutError):
        await receive(reading, 1, within=0.4)  # audio only for audio listeners
    later = b.subscribe(CODE, frozenset({"es"}), audio=True)
    assert [e.seq for e in await receive(later, 1)] == [1]
    with pytest.raises(TimeoutError):
        await receive(later, 1, within=0.4)  # the chunk is not replayed


async def test_settle_waits_until_own_events_are_delivered(nodes: list[RedisHub]) -> None:
    a = nodes[0]
    a.open(CODE)
    mine = a.subscribe(CODE, frozenset({"en"}))
    for i in range(20):
        await a.emit(CODE, cap(i, "final", f"f{i}"))
    await a.settle(CODE)
    assert len(mine.queue) == 20


async def test_redis_restart_loses_no_final_and_readiness_says_so(
    redis_server: RedisServer, nodes: list[RedisHub], store: RedisSessionStore
) -> None:
    a, b, _ = nodes
    a.open(CODE)
    b.open(CODE)
    listener = b.subscribe(CODE, frozenset({"en"}))
    await eventually(lambda: a.unavailable_reason() is None and b.unavailable_reason() is None)
    total = 40

    async def talk() -> list[int]:
        seqs = []
        for i in range(total):
            seqs.append((await a.emit(CODE, cap(i, "final", f"final {i}"))).seq)
            await asyncio.sleep(0.02)
        return seqs

    talking = asyncio.create_task(talk())
    await asyncio.sleep(0.3)
    await asyncio.to_thread(redis_server.stop, True)
    await eventually(lambda: b.unavailable_reason() is not None, within=5)
    assert "Redis unavailable" in str(b.unavailable_reason())
    await asyncio.sleep(1.0)
    await asyncio.to_thread(redis_server.start)
    seqs = await asyncio.wait_for(talking, 30)
    assert seqs == list(range(1, total + 1))
    got = await receive(listener, total, within=20)
    assert [getattr(e, "text", "") for e in got] == [f"final {i}" for i in range(total)]
    assert [c.seq for c in store.finals(CODE)] == seqs
    await eventually(lambda: a.unavailable_reason() is None and b.unavailable_reason() is None)
