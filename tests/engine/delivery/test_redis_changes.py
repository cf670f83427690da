"""The Redis hub's feed of what other nodes did: audience changes fold, the rest keeps its
order."""

from __future__ import annotations

import asyncio

from engine.delivery.hub import AudienceChanged, RemoteChange, StateChanged, TermsFollowed
from engine.delivery.redis_changes import ChangeFeed


async def test_audience_changes_fold_and_state_changes_keep_their_order() -> None:
    feed = ChangeFeed()
    for code in ("A", "B", "A", "A"):
        feed.audience(code)
    feed.state("A", "live")
    feed.edit(TermsFollowed("B", ()))
    feed.state("A", "ended")
    taken: list[RemoteChange] = []

    async def take() -> None:
        async for change in feed:
            taken.append(change)

    reader = asyncio.create_task(take())
    await asyncio.sleep(0)
    feed.close()
    await asyncio.wait_for(reader, 1)
    assert taken == [
        StateChanged("A", "live"),
        TermsFollowed("B", ()),
        StateChanged("A", "ended"),
        AudienceChanged("A"),
        AudienceChanged("B"),
    ]
