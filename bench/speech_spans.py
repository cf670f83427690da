"""Where a recording has speech, and how far behind its captions are on that speech alone.

:func:`speech_spans` runs Silero VAD (faster-whisper's copy, no padding) over 16-bit PCM.
:func:`unshown_speech` is the *speech lag* of one caption arrival: the age of the oldest
speech sent but not yet covered by a caption. The capacity bench's lag (``sent - covered``)
also counts the silence after the last caption: a final that arrives 1.8 s into a pause,
after drafts had shown every word, reads as 1.8 s behind. The speech lag reads 0 there and
counts a backlog of speech the same way the lag does (docs/metrics.md, "Panels").
"""

from __future__ import annotations

from collections.abc import Sequence

from engine.audio import decode_pcm16

Spans = tuple[tuple[float, float], ...]


def speech_spans(pcm: bytes, rate: int, min_pause_s: float = 0.4) -> Spans:
    """``(start, end)`` seconds of each stretch of speech, split at pauses of
    ``min_pause_s`` or more."""
    from faster_whisper.vad import VadOptions, get_speech_timestamps

    options = VadOptions(min_silence_duration_ms=int(min_pause_s * 1000), speech_pad_ms=0)
    stamps = get_speech_timestamps(decode_pcm16(pcm), options, sampling_rate=rate)
    return tuple((s["start"] / rate, s["end"] / rate) for s in stamps)


def unshown_speech(sent: float, covered: float, spans: Sequence[tuple[float, float]]) -> float:
    """Seconds since the oldest speech sent by ``sent`` and not covered by ``covered`` was
    sent; 0 when everything sent after ``covered`` is silence."""
    for start, end in spans:
        if end <= covered:
            continue
        oldest = max(start, covered)
        return max(0.0, sent - oldest)
    return 0.0
