"""The local half of every hub: each session's log and this process's subscribers.

:class:`Fanout` keeps a :class:`engine.delivery.hub.SessionLog` per session and offers each
delivered event to the subscribers of that session in this process (presenter first). The
in-process hub delivers what it emits at once; the Redis hub delivers what it reads back from
the shared stream. Both compose one :class:`Fanout`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable

from engine.delivery.hub import (
    ListenerQueue,
    SessionLog,
    Subscription,
    presenter_first,
    wants,
)
from engine.events import Caption, Event


class Fanout:
    """Session logs and local subscribers (queue overflow policy in engine/delivery/hub.py)."""

    def __init__(self, max_queue: int = 1000, on_change: Callable[[], None] | None = None) -> None:
        """``on_change`` is called when a subscriber joins, leaves or changes what it
        receives (a shared hub republishes this node's audience then)."""
        self._logs: dict[str, SessionLog] = {}
        self._subs: dict[str, set[Subscription]] = {}
        self.max_queue = max_queue
        self._on_change = on_change
        self.replaced_drafts = 0
        """Drafts replaced in listener queues by newer ones, over every listener."""

    def __contains__(self, code: str) -> bool:
        return code in self._logs

    def codes(self) -> list[str]:
        return list(self._logs)

    def open(self, code: str, last_seq: int = 0, finals: Iterable[Caption] = ()) -> bool:
        """Make ``code`` known; False if it already was."""
        if code in self._logs:
            return False
        self._logs[code] = SessionLog(last_seq, finals)
        self._subs[code] = set()
        return True

    def log(self, code: str) -> SessionLog:
        return self._logs[code]

    def deliver(self, code: str, event: Event, *, only_newer: bool = False) -> None:
        """Log an already numbered event and offer it to every local subscriber
        (``only_newer``: not to one that has seen this ``seq`` already)."""
        self._logs[code].append(event)
        for sub in presenter_first(self._subs[code]):
            if not only_newer or event.seq > sub.last_seq:
                sub.offer(event)

    def has_subscribers(self, code: str) -> bool:
        return bool(self._subs.get(code))

    def subscribe(
        self,
        code: str,
        langs: frozenset[str],
        since: int = 0,
        *,
        counted: bool = True,
        audio: bool = False,
    ) -> Subscription:
        sub = Subscription(
            code, langs, ListenerQueue(self.max_queue, self._count_replaced), since, counted, audio
        )
        sub.queue.backfill(self._logs[code].replay(since, langs))
        self._subs[code].add(sub)
        self._changed()
        return sub

    def unsubscribe(self, subscription: Subscription) -> None:
        subs = self._subs.get(subscription.code)
        if subs is not None:
            subs.discard(subscription)
        subscription.queue.close()
        self._changed()

    def set_languages(self, subscription: Subscription, langs: frozenset[str]) -> None:
        added = langs - subscription.langs
        subscription.langs = langs
        log = self._logs.get(subscription.code)
        if added and log is not None:
            subscription.queue.backfill(
                (
                    event
                    for event in log.replay(0, added)
                    if isinstance(event, Caption) and not event.source and event.lang in added
                ),
                keep=lambda event: wants(event, langs, subscription.audio),
            )
        self._changed()

    def set_audio(self, subscription: Subscription, enabled: bool) -> None:
        subscription.audio = enabled
        self._changed()

    def last_seq(self, code: str) -> int:
        log = self._logs.get(code)
        return 0 if log is None else log.seq

    def listener_count(self, code: str) -> int:
        return sum(1 for sub in self._subs.get(code, ()) if sub.counted)

    def listeners_by_language(self, code: str) -> Counter[str]:
        """How many counted listeners of ``code`` follow each language (a listener who
        reads two languages counts in both)."""
        subs = self._subs.get(code, ())
        return Counter(lang for sub in subs if sub.counted for lang in sub.langs)

    def wanted_languages(self, code: str) -> frozenset[str]:
        return frozenset().union(*(sub.langs for sub in self._subs.get(code, ())))

    def wanted_speech(self, code: str) -> frozenset[str]:
        return frozenset().union(*(sub.langs for sub in self._subs.get(code, ()) if sub.audio))

    def deepest_queue(self) -> int:
        return max((len(s.queue) for subs in self._subs.values() for s in subs), default=0)

    def drop(self, code: str) -> None:
        for sub in self._subs.pop(code, set()):
            sub.queue.close()
        self._logs.pop(code, None)

    def _count_replaced(self) -> None:
        self.replaced_drafts += 1

    def _changed(self) -> None:
        if self._on_change is not None:
            self._on_change()


class FanoutSubscribers:
    """The subscriber half of a :class:`engine.delivery.hub.Hub`, answered by the hub's own
    :class:`Fanout` (``self.fanout``): both hubs compose one and share these methods."""

    fanout: Fanout

    def subscribe(
        self,
        code: str,
        langs: frozenset[str],
        since: int = 0,
        *,
        counted: bool = True,
        audio: bool = False,
    ) -> Subscription:
        return self.fanout.subscribe(code, langs, since, counted=counted, audio=audio)

    def unsubscribe(self, subscription: Subscription) -> None:
        self.fanout.unsubscribe(subscription)

    def set_languages(self, subscription: Subscription, langs: frozenset[str]) -> None:
        self.fanout.set_languages(subscription, langs)

    def set_audio(self, subscription: Subscription, enabled: bool) -> None:
        self.fanout.set_audio(subscription, enabled)

    def last_seq(self, code: str) -> int:
        return self.fanout.last_seq(code)
