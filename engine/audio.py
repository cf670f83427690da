"""PCM framing and resampling for audio that arrives in arbitrary chunks at any rate."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

SAMPLE_RATE = 16_000
"""The pipeline's internal rate: mono float32 at 16 kHz."""

Samples = npt.NDArray[np.float32]


class AudioFormatError(ValueError):
    """Audio bytes that cannot be decoded in the declared format."""


def decode_pcm16(data: bytes) -> Samples:
    """Little-endian signed 16-bit mono PCM to float32 in [-1, 1)."""
    if len(data) % 2:
        raise AudioFormatError("pcm_s16le needs an even number of bytes")
    return np.frombuffer(data, dtype="<i2").astype(np.float32) / 32768.0


def _lowpass_kernel(cutoff: float, taps: int = 63) -> Samples:
    """Windowed-sinc low-pass; ``cutoff`` is a fraction of the input rate (0 < cutoff < 0.5)."""
    n = np.arange(taps) - (taps - 1) / 2
    kernel = 2 * cutoff * np.sinc(2 * cutoff * n) * np.blackman(taps)
    return (kernel / kernel.sum()).astype(np.float32)


class StreamResampler:
    """Resample a stream chunk by chunk to 16 kHz with no seams between chunks.

    Downsampling low-passes first (windowed sinc) so speech above the new Nyquist does not
    alias; the rate change itself is linear interpolation on the filtered signal. State (the
    filter's history and the fractional read position) carries across :meth:`process` calls.
    """

    def __init__(self, source_rate: int, target_rate: int = SAMPLE_RATE) -> None:
        if source_rate <= 0:
            raise AudioFormatError("sample rate must be positive")
        self.source_rate = source_rate
        self.target_rate = target_rate
        self._step = source_rate / target_rate
        self._kernel: Samples | None = None
        if source_rate > target_rate:
            self._kernel = _lowpass_kernel(0.45 * target_rate / source_rate)
        taps = 0 if self._kernel is None else len(self._kernel) - 1
        self._history: Samples = np.zeros(taps, dtype=np.float32)
        self._pending: Samples = np.zeros(0, dtype=np.float32)  # filtered, not yet consumed
        self._position = 0.0  # read position into _pending, in source samples

    @property
    def passthrough(self) -> bool:
        return self.source_rate == self.target_rate

    def process(self, samples: Samples) -> Samples:
        if self.passthrough or samples.size == 0:
            return samples.astype(np.float32, copy=False)
        if self._kernel is not None:
            padded = np.concatenate([self._history, samples])
            filtered = np.convolve(padded, self._kernel, mode="valid").astype(np.float32)
            self._history = padded[-(len(self._kernel) - 1) :]
        else:
            filtered = samples.astype(np.float32, copy=False)
        data = np.concatenate([self._pending, filtered])
        # Interpolating at x needs data[floor(x) + 1]; stop before the last sample.
        last = len(data) - 1
        if last < 1 or self._position > last - 1:
            self._pending = data
            return np.zeros(0, dtype=np.float32)
        count = int(np.floor((last - 1 - self._position) / self._step)) + 1
        positions = self._position + self._step * np.arange(count)
        out = np.interp(positions, np.arange(len(data)), data).astype(np.float32)
        next_position = self._position + self._step * count
        drop = int(np.floor(next_position))
        self._pending = data[drop:]
        self._position = next_position - drop
        return out


class AudioBuffer:
    """A growing window of 16 kHz audio addressed by absolute session time in seconds.

    Audio before :attr:`start` has been trimmed away; :meth:`slice` takes absolute times.
    """

    def __init__(self, origin: float = 0.0) -> None:
        self._data: Samples = np.zeros(0, dtype=np.float32)
        self._start_sample = round(origin * SAMPLE_RATE)
        self.origin = self._start_sample / SAMPLE_RATE
        """Absolute time of the first sample ever appended."""

    @property
    def start(self) -> float:
        return self._start_sample / SAMPLE_RATE

    @property
    def end(self) -> float:
        return (self._start_sample + len(self._data)) / SAMPLE_RATE

    def append(self, samples: Samples) -> None:
        if samples.size:
            self._data = np.concatenate([self._data, samples])

    def slice(self, start: float, end: float | None = None) -> Samples:
        lo = max(0, round(start * SAMPLE_RATE) - self._start_sample)
        hi = (
            len(self._data)
            if end is None
            else max(lo, round(end * SAMPLE_RATE) - self._start_sample)
        )
        return self._data[lo:hi]

    def trim_before(self, time: float) -> None:
        drop = min(len(self._data), max(0, round(time * SAMPLE_RATE) - self._start_sample))
        if drop:
            self._data = self._data[drop:]
            self._start_sample += drop
