"""Segment numbers across processes (engine/segment_claims.py) on a real redis-server: two
"processes" (each its own SegmentClaims and Continuity over its own store client) number
one session's segments, one after the other and at once, and never take the same number."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from engine.continuity import Continuity
from engine.segment_claims import CLAIM_SIZE, SegmentClaims
from engine.store.redis import RedisSessionStore
from engine.workers import WorkerPool
from tests.engine.store.test_store import final, make_record
from tests.support import RedisServer


class Node:
    """What one process keeps of the session: its numbering and its claim."""

    def __init__(self, url: str) -> None:
        self.store = RedisSessionStore(url)
        self.pool = WorkerPool("store")
        self.continuity = Continuity(self.store.finals("ABC234"))
        self.claims = SegmentClaims("ABC234", self.continuity, self.store, self.pool)

    def say(self, count: int) -> list[int]:
        """Number ``count`` segments and store their finals, as a stream would."""
        numbers = [self.continuity.next_segment() for _ in range(count)]
        for number in numbers:
            seq = len(self.store.finals("ABC234")) + 1
            self.store.append_final("ABC234", final(seq, segment=number))
        return numbers


@pytest.fixture
def nodes(redis_server: RedisServer) -> Iterator[tuple[Node, Node]]:
    RedisSessionStore(redis_server.url).create(make_record())
    pair = (Node(redis_server.url), Node(redis_server.url))  # both loaded the new session
    yield pair
    for node in pair:
        node.pool.shutdown()
        node.store.close()


async def test_a_stream_that_moves_to_another_node_goes_on_from_its_numbers(
    nodes: tuple[Node, Node],
) -> None:
    a, b = nodes
    await a.claims.hold()
    said_on_a = a.say(3)
    await a.claims.let_go()
    await b.claims.hold()  # B loaded the session before A said anything
    said_on_b = b.say(2)
    assert b.continuity.audio_time == a.store.finals("ABC234")[2].end  # B's clock goes on
    await b.claims.let_go()
    assert said_on_a == [0, 1, 2] and said_on_b == [3, 4]  # consecutive, no repeat


async def test_two_nodes_numbering_at_once_never_take_the_same_number(
    nodes: tuple[Node, Node],
) -> None:
    a, b = nodes
    await a.claims.hold()
    await b.claims.hold()
    said = a.say(2) + b.say(2) + a.say(1)
    assert said == [0, 1, CLAIM_SIZE, CLAIM_SIZE + 1, 2]
    await a.claims.hold()  # a second stream on A shares A's claim
    await a.claims.let_go()
    await a.claims.let_go()  # B claimed after A: A's rest stays out
    await b.claims.let_go()  # the last claim: released after what B said
    await a.claims.hold()
    assert a.say(1) == [CLAIM_SIZE + 2]
    await a.claims.let_go()
