"""Worker pools: the order calls start in, and a pool made with ``nice`` or ``idle`` runs below
the rest of the process."""

from __future__ import annotations

import asyncio
import os
import sys
import threading
from collections.abc import Iterator

import pytest

from engine.workers import Below, WorkerPool


def _own_nice() -> int:
    return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


async def test_a_nice_pool_runs_its_calls_at_lower_priority_and_nothing_else() -> None:
    here = _own_nice()
    low = WorkerPool("tts", threads=1, below=Below(nice=5))
    plain = WorkerPool("asr", threads=1)
    try:
        assert await low.run(_own_nice) == min(here + 5, 19)
        assert await plain.run(_own_nice) == here
        assert _own_nice() == here  # the event loop's thread is untouched
    finally:
        low.shutdown()
        plain.shutdown()


@pytest.mark.skipif(sys.platform != "linux", reason="SCHED_IDLE is Linux's")
async def test_an_idle_pool_runs_its_calls_under_sched_idle_and_nothing_else() -> None:
    here = os.sched_getscheduler(0)
    idle = WorkerPool("tts", threads=1, below=Below(idle=True))
    plain = WorkerPool("asr", threads=1)
    try:
        assert here != os.SCHED_IDLE
        assert await idle.run(os.sched_getscheduler, 0) == os.SCHED_IDLE
        # A thread an idle call starts (onnxruntime's) inherits the policy.
        inherited: list[int] = []

        def start_one() -> None:
            thread = threading.Thread(target=lambda: inherited.append(os.sched_getscheduler(0)))
            thread.start()
            thread.join()

        await idle.run(start_one)
        assert inherited == [os.SCHED_IDLE]
        assert await plain.run(os.sched_getscheduler, 0) == here
        assert os.sched_getscheduler(0) == here  # the event loop's thread is untouched
    finally:
        idle.shutdown()
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


@pytest.fixture
def pool() -> Iterator[WorkerPool]:
    """A pool of one thread, shut down after the test."""
    made = WorkerPool("asr", threads=1)
    yield made
    made.shutdown()


async def _occupied(pool: WorkerPool) -> tuple[asyncio.Task[bool], threading.Event]:
    """A call holding the pool's one thread until the returned event is set."""
    release = threading.Event()
    entered = threading.Event()

    def hold() -> bool:
        entered.set()
        return release.wait(10)

    holding = asyncio.create_task(pool.run(hold))
    while not entered.is_set():
        await asyncio.sleep(0.001)
    return holding, release


async def test_run_first_goes_ahead_of_waiting_calls_and_each_level_keeps_its_order(
    pool: WorkerPool,
) -> None:
    order: list[str] = []
    holding, release = await _occupied(pool)
    waiting = [
        asyncio.create_task(pool.run_last(order.append, "speech draft")),
        asyncio.create_task(pool.run(order.append, "draft 1")),
        asyncio.create_task(pool.run(order.append, "draft 2")),
        asyncio.create_task(pool.run_first(order.append, "refine 1")),
        asyncio.create_task(pool.run_first(order.append, "refine 2")),
    ]
    await asyncio.sleep(0.05)
    assert order == []  # the thread is still held
    release.set()
    await asyncio.gather(holding, *waiting)
    assert order == ["refine 1", "refine 2", "draft 1", "draft 2", "speech draft"]


async def test_a_call_cancelled_while_waiting_never_runs_and_frees_its_place(
    pool: WorkerPool,
) -> None:
    order: list[str] = []
    holding, release = await _occupied(pool)
    given_up = asyncio.create_task(pool.run_first(order.append, "given up"))
    later = asyncio.create_task(pool.run(order.append, "later"))
    await asyncio.sleep(0.02)
    given_up.cancel()
    release.set()
    await asyncio.gather(holding, later)
    assert order == ["later"] and given_up.cancelled()
    await asyncio.wait_for(pool.run(order.append, "idle"), 5)  # runs: its place was freed
    assert order == ["later", "idle"] and pool.pending == 0


async def test_a_cancelled_caller_keeps_its_thread_until_the_call_returns_there(
    pool: WorkerPool,
) -> None:
    order: list[str] = []
    holding, release = await _occupied(pool)
    holding.cancel()  # the caller stops waiting; the call still holds the thread
    await asyncio.sleep(0.02)
    draft = asyncio.create_task(pool.run(order.append, "draft"))
    refine = asyncio.create_task(pool.run_first(order.append, "refine"))
    await asyncio.sleep(0.05)
    assert order == []  # neither ran beside the call still in the thread
    release.set()
    await asyncio.wait_for(asyncio.gather(draft, refine), 5)
    assert order == ["refine", "draft"]  # both waited in line for it, in their order


async def test_load_is_the_calls_in_flight_per_thread_averaged_over_its_window() -> None:
    pool = WorkerPool("load", threads=2, load_window_s=0.2)
    try:
        assert pool.load() == 0.0
        gate = threading.Event()
        # Four calls on two threads, held for five windows: two run, two wait.
        calls = [asyncio.ensure_future(pool.run(gate.wait, 5.0)) for _ in range(4)]
        await asyncio.sleep(1.0)
        crowded = pool.load()
        assert 1.9 < crowded <= 2.0
        gate.set()
        await asyncio.gather(*calls)
        await asyncio.sleep(1.0)
        # Five windows with nothing in flight: the average has all but forgotten them.
        assert pool.load() < 0.02
    finally:
        pool.shutdown()


def test_a_pool_with_more_tenants_than_threads_is_crowded() -> None:
    pool = WorkerPool("tenants", threads=2)
    try:
        with pool.tenancy(), pool.tenancy():
            assert pool.tenants == 2 and not pool.crowded()
            with pool.tenancy():
                assert pool.crowded()
            assert not pool.crowded()
        with pytest.raises(RuntimeError), pool.tenancy(), pool.tenancy(), pool.tenancy():
            assert pool.crowded()
            raise RuntimeError("a stream that failed")
        # A tenant that ended by an error left too.
        assert pool.tenants == 0 and not pool.crowded()
    finally:
        pool.shutdown()
