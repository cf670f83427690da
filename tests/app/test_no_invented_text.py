"""No invented text: a quiet room, breathing between lines and low noise make no captions and
no translations (no "Thank you." out of silence). Real server, real models, real recordings:
the pauses between the sonnet's lines and the silent lead-ins and tails of the FLEURS clips of
tests/data, and a minute of low noise."""

from __future__ import annotations

import asyncio
import json
import shutil

import numpy as np
import pytest
import websockets

from tests.data import SONNET, fleurs_audio, fleurs_clips
from tests.support import ServerProcess, create_session, read_wav, stream_recording

pytestmark = [
    pytest.mark.model,
    pytest.mark.skipif(shutil.which("apertium") is None, reason="Debian apertium not installed"),
]

FRAME = 480  # 30 ms at 16 kHz


def quiet_stretches(pcm: bytes, min_s: float = 0.3, edge_s: float = 0.1) -> list[np.ndarray]:
    """The stretches of a recording at least 25 dB below its speech (the 90th percentile of
    its 30 ms frames) for at least ``min_s``: its pauses and silent ends, each trimmed by
    ``edge_s`` at both ends so no word's edge is kept."""
    samples = np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768
    frames = samples[: len(samples) // FRAME * FRAME].reshape(-1, FRAME)
    level = 20 * np.log10(np.sqrt((frames**2).mean(axis=1)) + 1e-9)
    quiet = level < np.percentile(level, 90) - 25
    stretches, start = [], None
    for index, is_quiet in enumerate([*quiet, False]):
        if is_quiet and start is None:
            start = index
        elif not is_quiet and start is not None:
            if (index - start) * FRAME >= min_s * 16000:
                lo, hi = start * FRAME + int(edge_s * 16000), index * FRAME - int(edge_s * 16000)
                stretches.append(samples[lo:hi])
            start = None
    return stretches


def non_speech() -> bytes:
    """Real pauses, then a minute of low noise (-60 dBFS), as 16 kHz PCM."""
    parts = quiet_stretches(read_wav(SONNET)[0])
    for clip in fleurs_clips():
        parts += quiet_stretches(read_wav(fleurs_audio(clip))[0])
    noise = np.random.default_rng(0).normal(0, 10 ** (-60 / 20), 60 * 16000).astype(np.float32)
    audio = np.concatenate([*parts, noise])
    assert len(audio) > 70 * 16000, "ten seconds of real pauses and the noise"
    return (np.clip(audio, -1, 1) * 32767).astype("<i2").tobytes()


async def test_silence_and_noise_make_no_captions(server: ServerProcess) -> None:
    session = create_session(server.url, target_languages=["es"])
    url = server.url.replace("http://", "ws://") + f"/ws/listen/{session['code']}?lang=es"
    heard: list[dict[str, object]] = []
    stop = asyncio.Event()

    async def listen() -> None:
        async with websockets.connect(url) as ws:
            while not stop.is_set():
                try:
                    heard.append(json.loads(await asyncio.wait_for(ws.recv(), 0.3)))
                except TimeoutError:
                    continue

    listener = asyncio.create_task(listen())
    await asyncio.sleep(0.5)
    run = await stream_recording(server.url, non_speech(), 16000, speed=8.0, session=session)
    await asyncio.sleep(2.0)
    stop.set()
    await listener
    said = [e for e in run.events if e.get("type") == "caption"]
    translated = [e for e in heard if e.get("type") == "caption"]
    assert said == [] and translated == [], (said, translated)
