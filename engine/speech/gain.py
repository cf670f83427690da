"""A voice's float samples to the 16-bit PCM that is sent: at the voice's gain, never clipped.

A neural voice's output is float samples that may peak above full scale (Kokoro's do). Each
voice has a fixed gain (chosen from its measured peaks, docs/metrics.md, "Natural voices"),
so that its loudness does not change from piece to piece; a piece that would still peak
above ``ceiling`` is scaled down as a whole to peak at ``ceiling``. A piece is never clipped,
only made quieter.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

FULL_SCALE = 32767
CEILING = 0.95
"""The highest peak sent, as a share of full scale."""


def pcm16(samples: NDArray[np.floating], gain: float = 1.0, ceiling: float = CEILING) -> bytes:
    """``samples`` (float, full scale is 1.0) times ``gain``, as little-endian 16-bit PCM
    whose peak is at most ``ceiling`` of full scale (module docstring)."""
    scaled = np.asarray(samples, dtype=np.float32).ravel() * np.float32(gain)
    if scaled.size == 0:
        return b""
    peak = float(np.max(np.abs(scaled)))
    if not np.isfinite(peak):
        scaled = np.nan_to_num(scaled, nan=0.0, posinf=0.0, neginf=0.0)
        peak = float(np.max(np.abs(scaled)))
    if peak > ceiling:
        scaled *= np.float32(ceiling / peak)
    return np.round(scaled * FULL_SCALE).astype("<i2").tobytes()
