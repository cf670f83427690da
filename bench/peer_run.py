"""Peer comparison run: the same recordings, the same model, our server and WhisperLiveKit.

``run_comparison`` decodes the offline references (cached),
replays every recording in real time to our server (``bench.server`` + ``bench.replay``), stops
it, then does the same with WhisperLiveKit (faster-whisper, LocalAgreement; ``bench.peer_server``
and ``bench.peer_replay``), never both at once. Every metric comes from ``bench.captions`` /
``bench.metrics``; the report (``bench.peer_report``) puts the two side by side with the ratio
ours / peer. Definitions: docs/metrics.md, "Peer comparison".
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from bench.captions import FileResult, measure_file
from bench.metrics import Erasure
from bench.peer_mapping import display_erasure
from bench.peer_replay import PeerReplay, replay_peer
from bench.peer_server import PEER_VENV, PeerServer, PeerSettings, write_warmup_wav
from bench.recordings import Recording, load_recording
from bench.reference import DecodeSettings, cached_decode, timed_reference, whisper_model_dir
from bench.replay import Replay, replay
from bench.server import ServerProcess, cpu_seconds


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
    load_before: tuple[float, float, float]
    load_after: tuple[float, float, float]
    server_command: tuple[str, ...]
    server_log: Path
    peer_replays: tuple[PeerReplay, ...] = ()
    """WhisperLiveKit only: per file, its raw messages and the mapping's notes."""


@dataclass(frozen=True, slots=True)
class PeerRunSettings:
    """What ``python -m bench.peer`` was asked to do."""

    wavs: tuple[Path, ...]
    out: Path
    model: str = "tiny.en"
    peer_venv: Path = PEER_VENV
    ready_timeout: float = 180.0

    @property
    def cache_dir(self) -> Path:
        return self.out / "cache"


def with_display_erasure(result: FileResult, recorded: Replay) -> FileResult:
    """``result`` with its erasure replaced by the display-level erasure of the same events."""
    return dataclasses.replace(result, erasure=display_erasure(recorded.caption_updates()))


async def run_ours(
    recordings: Sequence[Recording], settings: PeerRunSettings
) -> tuple[list[Replay], ServerProcess, tuple[float, float, float]]:
    """Replay every recording in real time to a fresh ``python -m app.cli serve``."""
    server = ServerProcess(settings.out / "server-peer-ours.log")
    handle = await server.start(settings.ready_timeout)
    load_before = os.getloadavg()
    try:
        clock = partial(cpu_seconds, handle.pid) if handle.pid is not None else None
        replays = [await replay(handle.base_url, r, "realtime", clock) for r in recordings]
    finally:
        await server.stop()
    return replays, server, load_before


async def run_peer(
    recordings: Sequence[Recording], settings: PeerRunSettings
) -> tuple[list[PeerReplay], PeerServer, tuple[float, float, float]]:
    """Replay every recording in real time to a fresh WhisperLiveKit server."""
    peer_settings = PeerSettings(
        model_dir=whisper_model_dir(settings.model),
        warmup_wav=write_warmup_wav(recordings[0], settings.out / "cache" / "peer-warmup.wav"),
        venv=settings.peer_venv,
    )
    server = PeerServer(settings.out / "server-peer-whisperlivekit.log", peer_settings)
    handle = await server.start(settings.ready_timeout)
    load_before = os.getloadavg()
    try:
        clock = partial(cpu_seconds, handle.pid) if handle.pid is not None else None
        replays = [await replay_peer(handle.base_url, r, clock) for r in recordings]
    finally:
        await server.stop()
    return replays, server, load_before


async def run_comparison(settings: PeerRunSettings) -> tuple[SystemRun, SystemRun]:
    """Offline references first, then our server, then WhisperLiveKit; then every metric."""
    recordings = [load_recording(path) for path in settings.wavs]
    decode = DecodeSettings(model=settings.model)
    offline = [cached_decode(r, decode, settings.cache_dir) for r in recordings]
    references = [timed_reference(r, o) for r, o in zip(recordings, offline, strict=True)]

    def measure(replays: Sequence[Replay]) -> tuple[tuple[FileResult, ...], tuple[Erasure, ...]]:
        raw = [
            measure_file(rec, ref, off, rep)
            for rec, ref, off, rep in zip(recordings, references, offline, replays, strict=True)
        ]
        shown = tuple(with_display_erasure(r, rep) for r, rep in zip(raw, replays, strict=True))
        return shown, tuple(r.erasure for r in raw)

    our_replays, our_server, our_load = await run_ours(recordings, settings)
    ours_after = os.getloadavg()
    peer_replays, peer_server, peer_load = await run_peer(recordings, settings)
    peer_after = os.getloadavg()

    ours_results, ours_segment = measure(our_replays)
    peer_plain = [p.replay for p in peer_replays]
    peer_results, peer_segment = measure(peer_plain)
    ours = SystemRun(
        name="ours",
        results=ours_results,
        replays=tuple(our_replays),
        segment_erasure=ours_segment,
        load_before=our_load,
        load_after=ours_after,
        server_command=tuple(our_server.command),
        server_log=our_server.log_path,
    )
    peer = SystemRun(
        name="whisperlivekit",
        results=peer_results,
        replays=tuple(peer_plain),
        segment_erasure=peer_segment,
        load_before=peer_load,
        load_after=peer_after,
        server_command=tuple(peer_server.command),
        server_log=peer_server.log_path,
        peer_replays=tuple(peer_replays),
    )
    return ours, peer
