"""The single-process hub: emitting numbers an event, stores a final, then delivers it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Mapping

from engine.delivery.fanout import Fanout, FanoutSubscribers
from engine.delivery.hub import Persist, RemoteChange
from engine.events import Caption, Event


class InMemoryHub(FanoutSubscribers):
    """:class:`engine.delivery.hub.Hub` for one process: a :class:`Fanout` and a numbering."""

    def __init__(self, max_queue: int = 1000) -> None:
        self.fanout = Fanout(max_queue)

    def open(self, code: str, last_seq: int = 0, finals: Iterable[Caption] = ()) -> None:
        self.fanout.open(code, last_seq, finals)

    async def emit(self, code: str, event: Event, persist: Persist | None = None) -> Event:
        numbered = self.fanout.log(code).number(event)
        if persist is not None and isinstance(numbered, Caption) and numbered.is_final:
            await persist(numbered)
        self.fanout.deliver(code, numbered)
        return numbered

    async def settle(self, code: str) -> None:
        return None  # emit() delivers synchronously

    async def start(self) -> None:
        return None

    async def close(self) -> None:
        return None

    def unavailable_reason(self) -> str | None:
        return None

    def listener_count(self, code: str) -> int:
        return self.fanout.listener_count(code)

    def listeners_by_language(self, code: str) -> Mapping[str, int]:
        return self.fanout.listeners_by_language(code)

    def wanted_languages(self, code: str) -> frozenset[str]:
        return self.fanout.wanted_languages(code)

    def wanted_speech(self, code: str) -> frozenset[str]:
        return self.fanout.wanted_speech(code)

    def deepest_queue(self) -> int:
        return self.fanout.deepest_queue()

    @property
    def replaced_drafts(self) -> int:
        return self.fanout.replaced_drafts

    def drop(self, code: str) -> None:
        self.fanout.drop(code)

    async def remote_changes(self) -> AsyncIterator[RemoteChange]:
        return
        yield  # an async generator that yields nothing: there are no other nodes
