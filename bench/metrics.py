"""Caption metrics: pure functions over what a replay recorded (no I/O, no clocks).

Definitions, as implemented here, are in ``docs/metrics.md``.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from bench.alignment import TimedWord, matched_reference_indices
from bench.textnorm import normalise_words

CAUSAL_SLACK_S = 1.0
"""A displayed word may only match reference words that start before the audio sent so far
plus this much (absorbs reference timing error; see docs/metrics.md)."""


@dataclass(frozen=True, slots=True)
class CaptionUpdate:
    """One source-language caption event as the client received it."""

    arrival: float
    segment: int
    state: Literal["draft", "final"]
    text: str


@dataclass(frozen=True, slots=True)
class TranscriptSnapshot:
    """What the client shows right after one update, as normalised words.

    ``displayed``: every segment in order, its final if it has one, else its newest draft.
    ``finals``: the finals received so far, in segment order.
    """

    arrival: float
    displayed: tuple[str, ...]
    finals: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class SendSchedule:
    """When each audio chunk was sent: chunk ``i`` holds samples up to ``chunk_end_samples[i]``
    (exclusive) and was handed to the socket at wall time ``send_times[i]``."""

    sample_rate: int
    chunk_end_samples: tuple[int, ...]
    send_times: tuple[float, ...]

    def __post_init__(self) -> None:
        if len(self.chunk_end_samples) != len(self.send_times) or not self.send_times:
            raise ValueError("a send schedule needs one send time per chunk, at least one chunk")

    @property
    def audio_seconds(self) -> float:
        return self.chunk_end_samples[-1] / self.sample_rate

    def send_time_of(self, audio_time: float) -> float:
        """Wall time at which the sample at ``audio_time`` seconds was sent (times past the
        end map to the last chunk)."""
        sample = max(0, math.floor(audio_time * self.sample_rate))
        index = bisect.bisect_right(self.chunk_end_samples, sample)
        return self.send_times[min(index, len(self.send_times) - 1)]

    def audio_sent_by(self, wall_time: float) -> float:
        """Seconds of audio sent at or before ``wall_time``."""
        count = bisect.bisect_right(self.send_times, wall_time)
        return self.chunk_end_samples[count - 1] / self.sample_rate if count else 0.0


@dataclass(frozen=True, slots=True)
class Distribution:
    """Summary of a list of values; every statistic is ``None`` when there are none."""

    count: int
    p50: float | None
    p95: float | None
    mean: float | None
    min: float | None
    max: float | None


@dataclass(frozen=True, slots=True)
class Erasure:
    """Words retracted from displayed drafts, relative to the words finally kept."""

    retracted_words: int
    final_words: int

    @property
    def normalised(self) -> float | None:
        return self.retracted_words / self.final_words if self.final_words else None

    def __add__(self, other: Erasure) -> Erasure:
        return Erasure(
            self.retracted_words + other.retracted_words, self.final_words + other.final_words
        )


@dataclass(frozen=True, slots=True)
class WordLatencies:
    """Per reference word: seconds from sending the audio of its end to the first update in
    which it was matched, ``None`` if it never was."""

    shown: tuple[float | None, ...]
    final: tuple[float | None, ...]

    @property
    def never_shown(self) -> int:
        return sum(v is None for v in self.shown)

    @property
    def never_final(self) -> int:
        return sum(v is None for v in self.final)


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0..100) with linear interpolation between closest ranks
    (NumPy's default method)."""
    if not values:
        raise ValueError("percentile of no values")
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100.0
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def distribution(values: Iterable[float | None]) -> Distribution:
    """Count, median, 95th percentile, mean, min and max of the values that are not ``None``."""
    present = [v for v in values if v is not None]
    if not present:
        return Distribution(0, None, None, None, None, None)
    return Distribution(
        count=len(present),
        p50=percentile(present, 50),
        p95=percentile(present, 95),
        mean=sum(present) / len(present),
        min=min(present),
        max=max(present),
    )


def transcript_snapshots(updates: Iterable[CaptionUpdate]) -> list[TranscriptSnapshot]:
    """The displayed and final-only transcripts after each update, in arrival order.

    A draft for a segment that already has its final is ignored (a final never changes).
    """
    drafts: dict[int, tuple[str, ...]] = {}
    finals: dict[int, tuple[str, ...]] = {}
    out: list[TranscriptSnapshot] = []
    for update in updates:
        if update.segment in finals:
            continue
        words = tuple(normalise_words(update.text))
        if update.state == "final":
            finals[update.segment] = words
            drafts.pop(update.segment, None)
        else:
            drafts[update.segment] = words
        shown = {**drafts, **finals}
        out.append(
            TranscriptSnapshot(
                arrival=update.arrival,
                displayed=tuple(w for seg in sorted(shown) for w in shown[seg]),
                finals=tuple(w for seg in sorted(finals) for w in finals[seg]),
            )
        )
    return out


def final_words(updates: Iterable[CaptionUpdate]) -> list[str]:
    """The normalised words of the final transcript: each segment's final, in segment order."""
    finals: dict[int, str] = {}
    for update in updates:
        if update.state == "final" and update.segment not in finals:
            finals[update.segment] = update.text
    return [w for seg in sorted(finals) for w in normalise_words(finals[seg])]


def causal_limit(reference: Sequence[TimedWord], audio_seconds: float, slack: float) -> int:
    """How many leading reference words start before ``audio_seconds + slack``."""
    bound = audio_seconds + slack
    limit = 0
    for word in reference:
        if word.start >= bound:
            break
        limit += 1
    return limit


def first_match_times(
    reference: Sequence[str], observations: Iterable[tuple[float, Sequence[str], int]]
) -> tuple[float | None, ...]:
    """For each reference word, the time of the first observation whose words match it.

    Each observation is ``(time, hypothesis_words, limit)``: the hypothesis is aligned (minimum
    edit distance) to the first ``limit`` reference words only, and a reference word counts as
    matched when the alignment pairs it with an equal hypothesis word.
    """
    first: list[float | None] = [None] * len(reference)
    previous: tuple[tuple[str, ...], int] | None = None
    for time, words, limit in observations:
        key = (tuple(words), limit)
        if key == previous:
            continue
        previous = key
        for index in matched_reference_indices(reference[:limit], words):
            if first[index] is None:
                first[index] = time
    return tuple(first)


def word_latencies(
    reference: Sequence[TimedWord],
    updates: Sequence[CaptionUpdate],
    schedule: SendSchedule,
    slack: float = CAUSAL_SLACK_S,
) -> WordLatencies:
    """Draft (first shown) and final latency of every reference word; see docs/metrics.md."""
    ref_text = [w.text for w in reference]
    snapshots = transcript_snapshots(updates)
    limits = [causal_limit(reference, schedule.audio_sent_by(s.arrival), slack) for s in snapshots]
    shown = first_match_times(
        ref_text, ((s.arrival, s.displayed, lim) for s, lim in zip(snapshots, limits, strict=True))
    )
    final = first_match_times(
        ref_text, ((s.arrival, s.finals, lim) for s, lim in zip(snapshots, limits, strict=True))
    )

    def latency(at: float | None, word: TimedWord) -> float | None:
        return None if at is None else at - schedule.send_time_of(word.end)

    return WordLatencies(
        shown=tuple(latency(at, w) for at, w in zip(shown, reference, strict=True)),
        final=tuple(latency(at, w) for at, w in zip(final, reference, strict=True)),
    )


def retracted_words(previous: Sequence[str], new: Sequence[str]) -> int:
    """Words of ``previous`` beyond its longest common word prefix with ``new``."""
    common = 0
    for old_word, new_word in zip(previous, new, strict=False):
        if old_word != new_word:
            break
        common += 1
    return len(previous) - common


def erasure(updates: Iterable[CaptionUpdate]) -> Erasure:
    """Normalised erasure of the source captions.

    For each segment, the sequence of texts it displayed (its drafts in arrival order, then its
    final; drafts after the final are ignored) is compared pairwise; each change retracts the
    words of the older text beyond the longest common word prefix with the newer. The total over
    all segments is divided by the number of words in all finals. Words are normalised.
    """
    last: dict[int, tuple[str, ...]] = {}
    closed: set[int] = set()
    retracted = 0
    for update in updates:
        if update.segment in closed:
            continue
        words = tuple(normalise_words(update.text))
        if update.segment in last:
            retracted += retracted_words(last[update.segment], words)
        last[update.segment] = words
        if update.state == "final":
            closed.add(update.segment)
    kept = sum(len(last[seg]) for seg in closed)
    return Erasure(retracted_words=retracted, final_words=kept)


def laal(delays: Sequence[float], source_length: float, reference_length: int) -> float | None:
    """Length-adaptive average lagging (Papi et al., 2022) of one translated sentence.

    ``delays[i]`` is how much source had been consumed (here: seconds since the sentence's
    audio began) when target word ``i + 1`` was emitted; ``source_length`` is the sentence's
    length in the same unit. With ``|Y|`` = ``len(delays)`` and ``|Y*|`` =
    ``reference_length``, the rate is ``source_length / max(|Y|, |Y*|)`` (average lagging
    uses ``|Y*|`` alone, which rewards over-long output), ``tau`` is the first word emitted
    once the whole source was consumed (``delays[i] >= source_length``; all words if none
    was), and

    ``LAAL = 1/tau * sum_{i=1..tau} (delays[i-1] - (i - 1) * rate)``.

    ``None`` when no word was emitted or the source is empty.
    """
    if not delays or source_length <= 0:
        return None
    rate = source_length / max(len(delays), reference_length, 1)
    total = 0.0
    tau = 0
    for index, delay in enumerate(delays):
        total += delay - index * rate
        tau = index + 1
        if delay >= source_length:
            break
    return total / tau
