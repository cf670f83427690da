"""The machine and what each party uses of it: CPU, the server's memory, open files.

A bench run shares the machine with the server under test, the listener processes and
often other people's work, so each report says what the machine is (:func:`machine_info`)
and how many cores each party used (:class:`CpuUse`; docs/metrics.md, "Fan-out").
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import platform
import resource
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from bench.server import cpu_seconds

RSS_SAMPLE_INTERVAL_S = 0.1


MEASURED_PACKAGES = (
    "ctranslate2",
    "faster-whisper",
    "onnxruntime",
    "numpy",
    "kokoro-onnx",
    "piper-tts",
    "whisper-normalizer",
)
"""The installed packages whose release can move a bench's numbers: the decoders, the VAD's
runtime, the voices and the scorer (a fresh machine installs the newest release each allows)."""


def package_versions() -> dict[str, str]:
    """Release of each of :data:`MEASURED_PACKAGES` installed here."""
    from importlib import metadata

    versions = {}
    for name in MEASURED_PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


def cpu_fields() -> dict[str, str]:
    """The first processor's fields in /proc/cpuinfo ("model name", "vendor_id", "flags" ...);
    empty where there is none."""
    cpuinfo = Path("/proc/cpuinfo")
    fields: dict[str, str] = {}
    if cpuinfo.exists():
        for line in cpuinfo.read_text(encoding="utf-8").splitlines():
            key, _, value = line.partition(":")
            fields.setdefault(key.strip(), value.strip())
    return fields


def machine_info() -> dict[str, Any]:
    """CPU model, core counts, memory, OS, Python, the measured packages' releases, and the
    load average when the run ended (other work on the machine skews the numbers)."""
    return {
        "cpu_model": cpu_fields().get("model name") or platform.processor() or "unknown",
        "logical_cores": os.cpu_count(),
        "usable_cores": len(os.sched_getaffinity(0)),
        "memory_gib": round(psutil.virtual_memory().total / 2**30, 1),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "packages": package_versions(),
        "load_average_1_5_15m": [round(x, 2) for x in os.getloadavg()],
    }


def own_cpu_seconds() -> float:
    """User plus system CPU seconds of this process (its threads, not its children)."""
    times = psutil.Process().cpu_times()
    return float(times.user + times.system)


def machine_busy_seconds() -> float:
    """CPU seconds all cores of the machine spent busy so far (user, nice, system, irq,
    softirq; not idle, iowait or steal), whoever used them."""
    t = psutil.cpu_times()
    return float(t.user + t.nice + t.system + t.irq + t.softirq)


@dataclass(frozen=True, slots=True)
class CpuSnapshot:
    """Cumulative CPU seconds of every party at one wall-clock moment."""

    wall: float
    server: float | None
    clients: tuple[float, ...]
    bench: float
    machine: float


def cpu_snapshot(server_pid: int | None, client_pids: Sequence[int]) -> CpuSnapshot:
    """Read every CPU counter now."""
    return CpuSnapshot(
        wall=time.monotonic(),
        server=cpu_seconds(server_pid) if server_pid is not None else None,
        clients=tuple(cpu_seconds(pid) for pid in client_pids),
        bench=own_cpu_seconds(),
        machine=machine_busy_seconds(),
    )


@dataclass(frozen=True, slots=True)
class CpuUse:
    """CPU used between two snapshots, in cores (CPU seconds per wall second)."""

    wall_s: float
    server: float | None
    clients: tuple[float, ...]
    bench: float
    machine: float

    @property
    def clients_total(self) -> float:
        return sum(self.clients)

    @property
    def other(self) -> float:
        """Busy cores not accounted to the server, the clients or this process: other
        people's work on the machine (and the kernel's)."""
        return self.machine - (self.server or 0.0) - self.clients_total - self.bench


def cpu_use(before: CpuSnapshot, after: CpuSnapshot) -> CpuUse:
    """Cores used by each party between ``before`` and ``after``."""
    wall = after.wall - before.wall
    if wall <= 0:
        raise ValueError("cpu_use needs snapshots taken in order, some time apart")
    server = (
        None
        if before.server is None or after.server is None
        else (after.server - before.server) / wall
    )
    return CpuUse(
        wall_s=wall,
        server=server,
        clients=tuple((b - a) / wall for a, b in zip(before.clients, after.clients, strict=True)),
        bench=(after.bench - before.bench) / wall,
        machine=(after.machine - before.machine) / wall,
    )


@dataclass(frozen=True, slots=True)
class Footprint:
    """What one process holds at one moment."""

    rss_bytes: int
    """Resident set size."""
    fds: int
    """Open file descriptors (files, sockets, pipes)."""
    threads: int


def footprint(pid: int) -> Footprint:
    """Resident memory, open file descriptors and threads of process ``pid``, now."""
    process = psutil.Process(pid)
    with process.oneshot():
        return Footprint(
            rss_bytes=int(process.memory_info().rss),
            fds=process.num_fds(),
            threads=process.num_threads(),
        )


class RssSampler:
    """Peak resident memory of one process, sampled every ``RSS_SAMPLE_INTERVAL_S``.

    Memory has no change notification, so sampling is the only way to see a peak; a peak
    shorter than the interval can be missed.
    """

    def __init__(self, pid: int | None) -> None:
        self._process = psutil.Process(pid) if pid is not None else None
        self.start_bytes: int | None = None
        self.peak_bytes: int | None = None
        self._task: asyncio.Task[None] | None = None

    def _sample(self) -> int:
        assert self._process is not None
        rss = int(self._process.memory_info().rss)
        self.peak_bytes = max(self.peak_bytes or 0, rss)
        return rss

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(RSS_SAMPLE_INTERVAL_S)
            self._sample()

    async def __aenter__(self) -> RssSampler:
        if self._process is not None:
            self.start_bytes = self._sample()
            self._task = asyncio.create_task(self._run())
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            with contextlib.suppress(psutil.NoSuchProcess):
                self._sample()


def raise_fd_limit(wanted: int) -> int:
    """Raise this process's soft open-files limit to at least ``wanted`` (up to the hard
    limit); return the soft limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        soft = target
    return soft
