"""Hub and listener-queue policies: coalescing, finals kept, slow listeners closed."""

from __future__ import annotations

import asyncio

import pytest

from engine.delivery.hub import (
    ListenerQueue,
    ListenerTooSlow,
    Subscription,
    SubscriptionClosed,
)
from engine.delivery.memory import InMemoryHub
from engine.events import Caption, Event, StateChange


def cap(
    segment: int, state: str = "draft", text: str = "x", lang: str = "en", seq: int = 0
) -> Caption:
    return Caption(segment, lang, lang == "en", state, text, 0.0, 1.0, seq=seq)  # type: ignore[arg-type]


def drain(queue: ListenerQueue) -> list[Event]:
    """What the queue holds, in the order ``get`` gives it: the backfill, then live events."""
    items: list[Event] = [*queue._backfill, *queue._items]
    queue._backfill.clear()
    queue._items.clear()
    return items


async def received(sub: Subscription) -> list[Event]:
    """Every event ``sub`` can take now, through ``get`` (which keeps ``last_seq``)."""
    events: list[Event] = []
    while True:
        try:
            events.append(await asyncio.wait_for(sub.get(), 0.05))
        except TimeoutError:
            return events


def drain_captions(queue: ListenerQueue) -> list[Caption]:
    """Drain a queue that holds captions only."""
    items = drain(queue)
    captions = [e for e in items if isinstance(e, Caption)]
    assert captions == items, f"not only captions: {items}"
    return captions


def test_newer_draft_replaces_queued_draft_of_same_segment() -> None:
    queue = ListenerQueue()
    for i in range(5):
        queue.put(cap(0, text=f"d{i}", seq=i + 1))
    queue.put(cap(1, text="other", seq=6))
    items = drain_captions(queue)
    assert [c.text for c in items] == ["d4", "other"]
    assert queue.replaced_drafts == 4


def test_final_removes_queued_drafts_and_is_kept() -> None:
    queue = ListenerQueue()
    queue.put(cap(0, text="draft", seq=1))
    queue.put(cap(0, "final", "done", seq=2))
    assert [c.state for c in drain_captions(queue)] == ["final"]


def test_finals_are_never_coalesced() -> None:
    queue = ListenerQueue(max_events=100)
    for i in range(50):
        queue.put(cap(i, "final", f"f{i}", seq=i + 1))
    assert len(drain(queue)) == 50


async def test_listener_too_far_behind_is_closed() -> None:
    queue = ListenerQueue(max_events=10)
    for i in range(11):
        queue.put(cap(i, "final", seq=i + 1))
    with pytest.raises(ListenerTooSlow):
        await queue.get()


async def test_closed_queue_delivers_what_it_holds_then_ends() -> None:
    queue = ListenerQueue()
    queue.put(cap(0, "final", seq=1))
    queue.close()
    assert (await queue.get()).seq == 1
    with pytest.raises(SubscriptionClosed):
        await queue.get()


async def test_stalled_listener_does_not_slow_publishing_or_others() -> None:
    hub = InMemoryHub(max_queue=20)
    hub.open("ABC")
    stalled = hub.subscribe("ABC", frozenset({"en"}))
    healthy = hub.subscribe("ABC", frozenset({"en"}))
    received: list[int] = []

    async def read() -> None:
        while len(received) < 100:
            received.append((await healthy.get()).seq)

    reader = asyncio.create_task(read())
    for i in range(100):
        await hub.emit("ABC", cap(i, "final"))
        await asyncio.sleep(0)
    await asyncio.wait_for(reader, 2)
    assert received == list(range(1, 101))
    with pytest.raises(ListenerTooSlow):
        await stalled.get()


async def test_backfill_after_since_has_finals_and_newest_open_draft() -> None:
    hub = InMemoryHub()
    hub.open("ABC")
    sent: list[Event] = [
        cap(0, text="a"),
        cap(0, "final", "A"),
        cap(1, text="b1"),
        cap(1, text="b2"),
        StateChange("live", 3),
        cap(2, "final", "C", lang="es"),
    ]
    for event in sent:
        await hub.emit("ABC", event)
    sub = hub.subscribe("ABC", frozenset({"en"}), since=0)
    items = drain(sub.queue)
    assert [(type(e).__name__, getattr(e, "text", None)) for e in items] == [
        ("Caption", "A"),
        ("Caption", "b2"),
        ("StateChange", None),
    ]
    later = hub.subscribe("ABC", frozenset({"en"}), since=2)
    assert [getattr(e, "text", None) for e in drain(later.queue)] == ["b2", None]


async def test_a_late_listener_gets_a_backfill_longer_than_the_queue_bound() -> None:
    # An hour of a session holds more finals than a listener queue's bound; the backfill
    # must not count against it (it did: every late listener was closed before its first
    # event, and its reconnect with the same `since` met the same).
    hub = InMemoryHub(max_queue=10)
    hub.open("ABC")
    for i in range(30):
        await hub.emit("ABC", cap(i, "final", f"line {i}"))
        await hub.emit("ABC", cap(i, "final", f"linea {i}", lang="es"))
        await hub.emit("ABC", cap(i, "final", f"ligne {i}", lang="fr"))
    late = hub.subscribe("ABC", frozenset({"es"}), since=0)
    await hub.emit("ABC", cap(30, text="live draft"))
    events = await received(late)
    assert [e.seq for e in events] == sorted(e.seq for e in events)
    captions = [e for e in events if isinstance(e, Caption)]
    assert [c.text for c in captions if c.lang == "es"] == [f"linea {i}" for i in range(30)]
    assert [c.text for c in captions if c.lang == "en"] == [
        *(f"line {i}" for i in range(30)),
        "live draft",
    ]
    assert late.last_seq == hub.last_seq("ABC")


async def test_live_events_past_the_bound_still_close_a_listener_reading_its_backfill() -> None:
    hub = InMemoryHub(max_queue=10)
    hub.open("ABC")
    for i in range(30):
        await hub.emit("ABC", cap(i, "final", f"line {i}"))
    late = hub.subscribe("ABC", frozenset({"en"}), since=0)
    read = [(await late.get()).seq for _ in range(5)]
    for i in range(30, 41):
        await hub.emit("ABC", cap(i, "final", f"line {i}"))
    with pytest.raises(ListenerTooSlow):
        await late.get()
    # Its reconnect asks for what came after the last event it read, and gets all of it.
    again = hub.subscribe("ABC", frozenset({"en"}), since=late.last_seq)
    rest = [e.seq for e in await received(again)]
    assert read + rest == list(range(1, 42))


async def test_switching_languages_back_and_forth_holds_no_more_than_the_log() -> None:
    hub = InMemoryHub(max_queue=10)
    hub.open("ABC")
    for i in range(20):
        await hub.emit("ABC", cap(i, "final", f"linea {i}", lang="es"))
    sub = hub.subscribe("ABC", frozenset({"fr"}), since=hub.last_seq("ABC"))
    for lang in ("es", "fr", "es", "fr", "es"):
        hub.set_languages(sub, frozenset({lang}))
    texts = [e.text for e in await received(sub) if isinstance(e, Caption)]
    assert texts == [f"linea {i}" for i in range(20)]


async def test_language_switch_backfills_translated_finals() -> None:
    hub = InMemoryHub()
    hub.open("ABC")
    await hub.emit("ABC", cap(0, "final", "hello"))
    await hub.emit("ABC", cap(0, "final", "hola", lang="es"))
    sub = hub.subscribe("ABC", frozenset({"en"}))
    assert [e.text for e in drain_captions(sub.queue)] == ["hello"]
    hub.set_languages(sub, frozenset({"es"}))
    assert [e.text for e in drain_captions(sub.queue)] == ["hola"]


async def test_presenter_is_offered_each_event_before_the_audience() -> None:
    # Each offer wakes a sender; senders run in the order they were woken.
    hub = InMemoryHub()
    hub.open("ABC")
    received: list[str] = []
    subs = [(f"listener{i}", hub.subscribe("ABC", frozenset({"en"}))) for i in range(30)]
    subs.insert(15, ("presenter", hub.subscribe("ABC", frozenset(), counted=False)))
    subs += [(f"late{i}", hub.subscribe("ABC", frozenset({"en"}))) for i in range(30)]

    async def follow(name: str, sub: Subscription) -> None:
        await sub.get()
        received.append(name)

    tasks = [asyncio.create_task(follow(name, sub)) for name, sub in subs]
    await asyncio.sleep(0)  # every sender waits
    await hub.emit("ABC", cap(0))
    await asyncio.gather(*tasks)
    assert received[0] == "presenter" and len(received) == 61


def test_listener_count_excludes_the_presenter() -> None:
    hub = InMemoryHub()
    hub.open("ABC")
    a = hub.subscribe("ABC", frozenset({"en"}))
    hub.subscribe("ABC", frozenset(), counted=False)
    assert hub.listener_count("ABC") == 1
    hub.unsubscribe(a)
    assert hub.listener_count("ABC") == 0


def test_a_correction_replaces_the_queued_final_of_its_line() -> None:
    queue = ListenerQueue()
    queue.put(cap(1, "final", "team viewer", seq=1))
    queue.put(cap(2, "final", "next", seq=2))
    queue.put(Caption(1, "en", True, "final", "TeamViewer", 0.0, 1.0, seq=3, rev=1))
    assert [(c.segment, c.text) for c in drain_captions(queue)] == [(2, "next"), (1, "TeamViewer")]


async def test_backfill_holds_the_newest_revision_of_each_line_once() -> None:
    hub = InMemoryHub()
    hub.open("ABCDEF")
    first = await hub.emit("ABCDEF", cap(0, "final", "team viewer"))
    await hub.emit("ABCDEF", cap(1, "final", "next"))
    fixed = Caption(0, "en", True, "final", "TeamViewer", 0.0, 1.0, rev=1)
    await hub.emit("ABCDEF", fixed)
    for since, expected in ((0, ["next", "TeamViewer"]), (first.seq, ["next", "TeamViewer"])):
        sub = hub.subscribe("ABCDEF", frozenset({"en"}), since)
        assert [e.text for e in drain_captions(sub.queue)] == expected
    late = hub.subscribe("ABCDEF", frozenset({"en"}), first.seq + 1)
    assert [e.text for e in drain_captions(late.queue)] == ["TeamViewer"]


def test_listeners_by_language_counts_the_audience_only() -> None:
    hub = InMemoryHub()
    hub.open("ABC")
    hub.subscribe("ABC", frozenset(), counted=False)  # the presenter's own view
    english = hub.subscribe("ABC", frozenset({"en"}))
    hub.subscribe("ABC", frozenset({"es"}))
    hub.subscribe("ABC", frozenset({"es"}))
    assert dict(hub.listeners_by_language("ABC")) == {"en": 1, "es": 2}
    hub.set_languages(english, frozenset({"fr"}))
    assert dict(hub.listeners_by_language("ABC")) == {"es": 2, "fr": 1}
    assert dict(hub.listeners_by_language("NOPE")) == {}


def test_state_events_carry_counts_by_language_in_one_json_form() -> None:
    from engine.events import from_dict, language_counts, to_dict

    counts = language_counts({"es": 2, "en": 1, "fr": 0})
    assert counts == (("en", 1), ("es", 2))
    event = StateChange("live", 3, counts, seq=4)
    data = to_dict(event)
    assert data["by_language"] == {"en": 1, "es": 2}
    assert from_dict(data) == event
    assert "by_language" not in to_dict(StateChange("live", 0))


def test_a_redis_audience_entry_without_counts_still_reads() -> None:
    from engine.delivery.redis_audience import Audience

    old, at = Audience.from_json('{"n": 2, "l": ["en"], "s": [], "t": 5.0}')
    assert (old.count, old.by_language, at) == (2, (), 5.0)
    new = Audience(1, frozenset({"es"}), frozenset(), (("es", 1),))
    merged = old | new | new
    assert merged.count == 4 and merged.by_language == (("es", 2),)
    assert Audience.from_json(merged.to_json(9.0)) == (merged, 9.0)
