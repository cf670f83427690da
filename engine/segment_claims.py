"""Segment numbers of one session that no other process uses.

A segment's number is its identity everywhere: listener pages replace a line by it,
transcripts keep one line per number, corrections name it. Each process numbers its own
streams' segments (engine/continuity.py), so processes sharing a Redis store must not take
the same numbers: a presenter whose reconnect lands on another node, or two speakers of a
panel streaming into two nodes, would otherwise overwrite each other's lines.

Before a process numbers anything (a stream opens, a question is accepted), it *holds* the
session's numbering: the first holder claims a block of numbers from the store
(:meth:`engine.store.base.SessionStore.claim_segments`), which no other claim overlaps. A
block that starts past the number this process would have taken next means another process
numbered segments since: the holder then reads what the store says the session said
(numbers, audio time, prompts) before going on; otherwise it reads nothing. When the last
holder lets go, the unused rest of the block is released, so a session that moves from node
to node keeps consecutive numbers; a block claimed while another process holds one leaves a
gap, never a repeat. A SQLite store serves one process and claims nothing.
"""

from __future__ import annotations

import asyncio
import logging

from engine.continuity import Continuity
from engine.store.base import SessionStore
from engine.workers import WorkerPool

log = logging.getLogger(__name__)

CLAIM_SIZE = 1 << 20
"""Numbers one claim reserves: more than the segments of months of speech, so a holder never
runs out; numbers need only be unique, and a block released unused costs nothing."""


class SegmentClaims:
    """One session's claim on its segment numbers in this process (module docstring)."""

    def __init__(
        self, code: str, continuity: Continuity, store: SessionStore, store_pool: WorkerPool
    ) -> None:
        self._code = code
        self._continuity = continuity
        self._store = store
        self._pool = store_pool
        self._holders = 0
        self._claimed_end: int | None = None
        self._lock = asyncio.Lock()

    async def hold(self) -> None:
        """Before numbering: the first holder claims a block, and follows the store where
        another process numbered segments since."""
        async with self._lock:
            if self._claimed_end is None:
                expected = self._continuity.upcoming
                first = await self._pool.run(
                    self._store.claim_segments, self._code, expected, CLAIM_SIZE
                )
                if first > expected:
                    finals = await self._pool.run(self._store.finals, self._code)
                    self._continuity.follow(finals)
                self._continuity.go_on_from(first)
                self._claimed_end = first + CLAIM_SIZE
            self._holders += 1

    async def let_go(self) -> None:
        """A holder is done numbering; the last one releases the rest of the block. A store
        that cannot be reached keeps the block (a gap in the numbers, no repeat)."""
        async with self._lock:
            self._holders -= 1
            if self._holders > 0 or self._claimed_end is None:
                return
            claimed_end, self._claimed_end = self._claimed_end, None
            try:
                await self._pool.run(
                    self._store.release_segments,
                    self._code,
                    claimed_end,
                    self._continuity.upcoming,
                )
            except Exception:
                log.warning("could not release segment numbers of %s", self._code, exc_info=True)
