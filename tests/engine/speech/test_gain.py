"""A voice's float samples become 16-bit PCM at its gain, and a loud piece is never clipped."""

from __future__ import annotations

import numpy as np

from engine.speech.gain import CEILING, FULL_SCALE, pcm16


def _samples(pcm: bytes) -> np.ndarray:
    return np.frombuffer(pcm, "<i2").astype(np.float64) / FULL_SCALE


def test_a_quiet_piece_keeps_its_gain_exactly() -> None:
    wave = 0.5 * np.sin(np.linspace(0, 40 * np.pi, 2400))
    out = _samples(pcm16(wave, gain=0.8))
    assert np.allclose(out, 0.4 * np.sin(np.linspace(0, 40 * np.pi, 2400)), atol=1 / FULL_SCALE)


def test_a_piece_that_would_clip_is_scaled_down_whole_not_clipped() -> None:
    wave = np.array([0.1, -0.6, 1.25, -1.2, 0.3], dtype=np.float32)
    out = _samples(pcm16(wave, gain=1.0))
    assert np.max(np.abs(out)) <= CEILING + 1 / FULL_SCALE
    assert abs(np.max(np.abs(out)) - CEILING) < 2 / FULL_SCALE
    # The shape is kept: every sample scaled by the same factor (clipping would flatten the
    # two peaks to the same value).
    assert np.allclose(out / out[2], wave / wave[2], atol=1e-3)
    assert out[2] > -out[3]


def test_empty_and_broken_samples() -> None:
    assert pcm16(np.zeros(0, dtype=np.float32)) == b""
    out = _samples(pcm16(np.array([np.nan, 0.5, np.inf], dtype=np.float32)))
    assert out[0] == 0 and out[2] == 0 and abs(out[1] - 0.5) < 1e-3
