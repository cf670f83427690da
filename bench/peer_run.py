"""Peer comparison run: the same recordings, the same model, our server and WhisperLiveKit.

``run_comparison`` decodes the offline references (cached), starts our server
(``bench.server``) and then WhisperLiveKit (faster-whisper, LocalAgreement;
``bench.peer_server``), and replays each recording in real time to one and then the other
(``bench.replay``, ``bench.peer_replay``), never to both at once. The order alternates from one
recording to the next (ours first for the 1st, 3rd, ... recording), so that a change in the
machine's other load during the run falls on both systems alike; an idle server between its
replays uses no CPU worth counting. Every metric comes from ``bench.captions`` /
``bench.metrics``; ``bench.peer_report`` puts the two side by side with the ratio ours / peer.
Definitions: docs/metrics.md, "Peer comparison".
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TypeVar

from bench.captions import FileResult, measure_file
from bench.metrics import Erasure
from bench.peer_mapping import display_erasure
from bench.peer_replay import PeerReplay, replay_peer
from bench.peer_server import PEER_VENV, PeerServer, PeerSettings, write_warmup_wav
from bench.recordings import load_recording
from bench.reference import DecodeSettings, cached_decode, timed_reference, whisper_model_dir
from bench.replay import Replay, replay
from bench.server import ServerHandle, ServerProcess, cpu_seconds

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Load:
    """The machine's 1-minute load average just before and just after one replay (it includes
    the server under test; the machine has other users)."""

    before: float
    after: float


@dataclass(frozen=True, slots=True)
class SystemRun:
    """One system's replays of every recording and the metrics measured from them.

    ``results`` use the display-level erasure (``bench.peer_mapping.display_erasure``) so that
    both systems are measured alike; ``segment_erasure`` keeps ``bench.metrics.erasure`` of the
    raw events (the captions benchmark's definition; for WhisperLiveKit it is an artefact of the
    mapping and is not compared).
    """

    name: str
    results: tuple[FileResult, ...]
    replays: tuple[Replay, ...]
    segment_erasure: tuple[Erasure, ...]
    loads: tuple[Load, ...]
    server_command: tuple[str, ...]
    server_log: Path
    peer_replays: tuple[PeerReplay, ...] = ()
    """WhisperLiveKit only: per file, its raw messages and the mapping's notes."""
    never_caught_up: tuple[str, ...] = ()
    """WhisperLiveKit only: recordings whose captions it had not finished ``end_timeout`` s
    after their audio ended (left out of the comparison, for both systems)."""


@dataclass(frozen=True, slots=True)
class PeerRunSettings:
    """What ``python -m bench.peer`` was asked to do."""

    wavs: tuple[Path, ...]
    out: Path
    model: str = "tiny.en"
    peer_venv: Path = PEER_VENV
    ready_timeout: float = 180.0
    end_timeout: float = 300.0
    """How long after a recording's audio ended each system may take to finish it."""

    @property
    def cache_dir(self) -> Path:
        return self.out / "cache"


def with_display_erasure(result: FileResult, recorded: Replay) -> FileResult:
    """``result`` with its erasure replaced by the display-level erasure of the same events."""
    return dataclasses.replace(result, erasure=display_erasure(recorded.caption_updates()))


def _clock(handle: ServerHandle) -> Callable[[], float] | None:
    return partial(cpu_seconds, handle.pid) if handle.pid is not None else None


async def _timed(step: Awaitable[T]) -> tuple[T, Load]:
    before = os.getloadavg()[0]
    result = await step
    return result, Load(before, os.getloadavg()[0])


async def run_comparison(settings: PeerRunSettings) -> tuple[SystemRun, SystemRun]:
    """Offline references first, then both servers, then the replays (alternating order, one
    at a time), then every metric."""
    recordings = [load_recording(path) for path in settings.wavs]
    decode = DecodeSettings(model=settings.model)
    offline = [cached_decode(r, decode, settings.cache_dir) for r in recordings]
    references = [timed_reference(r, o) for r, o in zip(recordings, offline, strict=True)]

    ours_server = ServerProcess(settings.out / "server-peer-ours.log")
    peer_server = PeerServer(
        settings.out / "server-peer-whisperlivekit.log",
        PeerSettings(
            model_dir=whisper_model_dir(settings.model),
            warmup_wav=write_warmup_wav(recordings[0], settings.cache_dir / "peer-warmup.wav"),
            venv=settings.peer_venv,
        ),
    )
    ours: dict[int, tuple[Replay, Load]] = {}
    peer: dict[int, tuple[PeerReplay, Load]] = {}
    behind: list[str] = []
    async with AsyncExitStack() as stack:
        ours_handle = await ours_server.start(settings.ready_timeout)
        stack.push_async_callback(ours_server.stop)
        peer_handle = await peer_server.start(settings.ready_timeout)
        stack.push_async_callback(peer_server.stop)
        for index, recording in enumerate(recordings):
            for ours_turn in (True, False) if index % 2 == 0 else (False, True):
                if ours_turn:
                    clock = _clock(ours_handle)
                    ours[index] = await _timed(
                        replay(
                            ours_handle.base_url,
                            recording,
                            "realtime",
                            clock,
                            end_timeout=settings.end_timeout,
                        )
                    )
                    continue
                clock = _clock(peer_handle)
                try:
                    peer[index] = await _timed(
                        replay_peer(
                            peer_handle.base_url,
                            recording,
                            clock,
                            end_timeout=settings.end_timeout,
                        )
                    )
                except TimeoutError:  # the peer fell behind for good: say so, go on
                    behind.append(recording.id)
    both = [i for i in range(len(recordings)) if i in ours and i in peer]
    recordings = [recordings[i] for i in both]
    references = [references[i] for i in both]
    offline = [offline[i] for i in both]

    def measure(replays: Sequence[Replay]) -> tuple[tuple[FileResult, ...], tuple[Erasure, ...]]:
        raw = [
            measure_file(rec, ref, off, rep)
            for rec, ref, off, rep in zip(recordings, references, offline, replays, strict=True)
        ]
        shown = tuple(with_display_erasure(r, rep) for r, rep in zip(raw, replays, strict=True))
        return shown, tuple(r.erasure for r in raw)

    ours_replays = tuple(ours[i][0] for i in both)
    peer_replays = tuple(peer[i][0].replay for i in both)
    ours_results, ours_segment = measure(ours_replays)
    peer_results, peer_segment = measure(peer_replays)
    return (
        SystemRun(
            name="ours",
            results=ours_results,
            replays=ours_replays,
            segment_erasure=ours_segment,
            loads=tuple(ours[i][1] for i in both),
            server_command=tuple(ours_server.command),
            server_log=ours_server.log_path,
        ),
        SystemRun(
            name="whisperlivekit",
            results=peer_results,
            replays=peer_replays,
            segment_erasure=peer_segment,
            loads=tuple(peer[i][1] for i in both),
            server_command=tuple(peer_server.command),
            server_log=peer_server.log_path,
            peer_replays=tuple(peer[i][0] for i in both),
            never_caught_up=tuple(behind),
        ),
    )
