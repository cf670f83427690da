"""A stream's segment, and what its final waits for: the records of
engine/recognition/recognizer.py.

The open segment is drafted (its LocalAgreement) and may get an early refine decode when its
speech pauses; once cut, it is a :class:`Closing` until its refine decode (the early one or
its own) makes its final.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from engine.events import Word
from engine.recognition.decoding import Refined
from engine.recognition.policy import LocalAgreement


@dataclass(frozen=True, slots=True)
class EarlyDecode:
    """The refine decode of a segment, made when its speech paused at ``speech_end``; it
    serves the segment's final if nothing but silence follows."""

    speech_end: float
    refined: asyncio.Future[Refined]
    """Running on the pool while the step goes on (and the speaker may)."""


@dataclass(slots=True)
class Segment:
    start: float
    id: int = -1
    agreement: LocalAgreement = field(default_factory=LocalAgreement)
    drafted: bool = False
    last_draft: str = ""
    early: EarlyDecode | None = None

    def numbered(self, next_segment: Callable[[], int]) -> int:
        """The segment's id, taken from the session (``next_segment``) the first time it is
        asked for: when the segment first shows anything."""
        if self.id < 0:
            self.id = next_segment()
        return self.id


@dataclass(slots=True)
class Closing:
    """A segment cut at ``cut`` whose final waits for its refine decode (``refine``, its
    early decode's or its own; None when it held no speech)."""

    segment: Segment
    cut: float
    hint: list[Word]
    room: list[int]
    """How many words may follow each hint word (:meth:`FinalCaptions.room_after`,
    engine/recognition/finals.py)."""
    refine: asyncio.Future[Refined] | None = None


def retrieved(future: asyncio.Future[Any]) -> None:
    """Mark a decode's failure seen: one nobody awaits (an early decode the speaker went on
    past) must not be logged as never retrieved; one that serves a final raises there."""
    if not future.cancelled():
        future.exception()
