"""Worker pools: a pool made with ``nice`` runs below the rest of the process."""

from __future__ import annotations

import os
import threading

from engine.workers import WorkerPool


def _own_nice() -> int:
    return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


async def test_a_nice_pool_runs_its_calls_at_lower_priority_and_nothing_else() -> None:
    here = _own_nice()
    low = WorkerPool("tts", threads=1, nice=5)
    plain = WorkerPool("asr", threads=1)
    try:
        assert await low.run(_own_nice) == min(here + 5, 19)
        assert await plain.run(_own_nice) == here
        assert _own_nice() == here  # the event loop's thread is untouched
    finally:
        low.shutdown()
        plain.shutdown()


async def test_start_queues_a_call_nobody_waits_for_ahead_of_later_calls() -> None:
    pool = WorkerPool("tts", threads=1)
    order: list[str] = []
    try:
        started = pool.start(order.append, "warm")
        await pool.run(order.append, "first listener")
        assert started.done() and order == ["warm", "first listener"]
    finally:
        pool.shutdown()
