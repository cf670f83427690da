"""A stream's captions made and not given out yet, and the signal that a final is due.

A step and :meth:`StreamingRecognizer.refined_finals` (engine/recognition/recognizer.py)
both give out everything ready, so finals come out in segment order, and a final a step took
comes out before the step's draft is decoded; ``refined_finals`` waits for the signal
(docs/metrics.md, "Panels / Finals as their refine finishes").
"""

from __future__ import annotations

import asyncio

from engine.events import Caption


class ReadyCaptions:
    """Captions made and not given out yet, in the order made."""

    def __init__(self) -> None:
        self._captions: list[Caption] = []
        self._final_due = asyncio.Event()
        """Set when a closed segment's refine finishes, or a step has a final ready."""

    def give(self, captions: list[Caption]) -> None:
        """Queue ``captions`` to give out. A final among them signals :meth:`final_due`: a
        final the step took (one its close waited for, or a held one it released) comes out
        then, not after the draft the step decodes next."""
        self._captions.extend(captions)
        if any(c.is_final for c in captions):
            self._final_due.set()

    def add(self, captions: list[Caption]) -> None:
        """Queue ``captions`` without the signal: whoever waits for it gives them out now."""
        self._captions.extend(captions)

    def refine_done(self) -> None:
        """A closed segment's refine finished: its final is due."""
        self._final_due.set()

    async def final_due(self) -> None:
        """Wait until a final is due; each signal is waited for once."""
        await self._final_due.wait()
        self._final_due.clear()

    def take(self) -> list[Caption]:
        """The captions ready to give out, taken from the queue."""
        ready, self._captions = self._captions, []
        return ready
