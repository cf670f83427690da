"""What a listener received, and how late: the fan-out metrics on pure data.

Every event a listener reads becomes a :class:`Delivery` (when it arrived, the event's
``ts``, whether it was live or backfilled); a listener's whole run is a
:class:`ListenerRecord`. The delay of an event is its arrival at the listener minus its
``ts`` (docs/metrics.md, "Fan-out"); finals are compared with the presenter's by segment.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from bench.metrics import percentile
from bench.replay import Replay


@dataclass(frozen=True, slots=True)
class Delivery:
    """One event as one listener received it. Times are wall-clock unix seconds."""

    received: float
    """``time.time()`` in the client process right after the message was read."""
    ts: float
    """The event's ``ts``: server wall clock when it was numbered."""
    seq: int
    kind: str
    """The event's ``type``; for captions ``caption.draft`` or ``caption.final``."""
    live: bool
    """``ts`` is not before the moment this listener's current socket began opening, i.e.
    the event was not backfilled."""
    rev: int = 0
    """A caption's revision: above 0 for a person's correction (docs/protocol.md)."""

    @property
    def delay(self) -> float:
        return self.received - self.ts


@dataclass(frozen=True, slots=True)
class ListenerRecord:
    """Everything one listener received, over all its connections."""

    index: int
    deliveries: tuple[Delivery, ...]
    finals: Mapping[int, str]
    """Source-language finals by segment (the first one of each; a final never changes)."""
    reconnects: int = 0
    closes: tuple[str, ...] = ()
    """``"code reason"`` of each close the listener did not ask for."""
    error: str | None = None
    """Why the listener could not connect at all."""
    stalled: bool = False
    """It stopped reading after connecting until told to finish (``ClientSpec.stalled``)."""


@dataclass(frozen=True, slots=True)
class DelayStats:
    """Summary of event delays in seconds; every statistic is ``None`` when there are none."""

    count: int
    p50: float | None
    p95: float | None
    p99: float | None
    mean: float | None
    min: float | None
    max: float | None


def delay_stats(values: Sequence[float]) -> DelayStats:
    """Count, p50, p95, p99 (linear interpolation, as everywhere in bench), mean and max."""
    if not values:
        return DelayStats(0, None, None, None, None, None, None)
    return DelayStats(
        count=len(values),
        p50=percentile(values, 50),
        p95=percentile(values, 95),
        p99=percentile(values, 99),
        mean=sum(values) / len(values),
        min=min(values),
        max=max(values),
    )


def window_deliveries(
    record: ListenerRecord, start: float, end: float = math.inf
) -> list[Delivery]:
    """The live (not backfilled) deliveries of events stamped within ``[start, end]``."""
    return [d for d in record.deliveries if d.live and start <= d.ts <= end]


def window_delays(records: Iterable[ListenerRecord], start: float, end: float) -> list[float]:
    """Delays of every live event stamped within ``[start, end]``, over all listeners."""
    return [d.delay for r in records for d in window_deliveries(r, start, end)]


@dataclass(frozen=True, slots=True)
class FinalCheck:
    """One listener's finals compared with the presenter's."""

    missing: int
    """Presenter finals the listener has not got with the same text (absent or differing)."""
    differing: int
    """Of ``missing``: segments the listener has a final for, with other text."""
    extra: int
    """Finals of segments the presenter never got a final for."""

    @property
    def exact(self) -> bool:
        return self.missing == 0 and self.extra == 0


def check_finals(expected: Mapping[int, str], received: Mapping[int, str]) -> FinalCheck:
    """Compare a listener's finals (segment -> text) with the presenter's."""
    differing = sum(1 for s, text in expected.items() if s in received and received[s] != text)
    absent = sum(1 for s in expected if s not in received)
    return FinalCheck(
        missing=absent + differing,
        differing=differing,
        extra=sum(1 for s in received if s not in expected),
    )


def presenter_finals(recorded: Replay) -> dict[int, str]:
    """The presenter's source-language finals by segment (the first of each)."""
    finals: dict[int, str] = {}
    for update in recorded.caption_updates():
        if update.state == "final":
            finals.setdefault(update.segment, update.text)
    return finals
