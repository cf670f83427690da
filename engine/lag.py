"""How far behind its audio a presenter's stream is, reported to the presenter
(:class:`LagReports`; docs/protocol.md, the ``lag`` event).

The lag is the audio the presenter has sent that recognition has not reached yet (the
recogniser's backlog): on a machine too slow for its streams, how long what was said takes
to appear. The presenter hears of it at most once every ``every_s`` while it is at least
``from_s``, and once more, as 0, when it falls back under ``from_s``; the console then shows
"captions N s behind", and clears it. Nothing is reported while the stream keeps up.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from engine.events import Lag

__all__ = ["LagReports", "LagRule"]


@dataclass(frozen=True, slots=True)
class LagRule:
    """When a stream's lag is reported (docs/protocol.md)."""

    from_s: float = 1.0
    """A lag shorter than this is the steps' own rhythm, not news (the console's threshold)."""
    every_s: float = 1.0
    """At most one report this often."""


class LagReports:
    """The reports of one stream's lag (module docstring)."""

    def __init__(self, rule: LagRule | None = None) -> None:
        self.rule = rule or LagRule()
        self._last: float | None = None
        """When the last report was made (None before any, and once caught up)."""

    def report(self, behind: float, now: float) -> Lag | None:
        """The report due now, for a stream ``behind`` seconds behind; None if none is."""
        if behind >= self.rule.from_s:
            if self._last is not None and now - self._last < self.rule.every_s:
                return None
            self._last = now
            return Lag(round(behind, 1), ts=round(time.time(), 3))
        if self._last is None:
            return None
        self._last = None  # caught up: said once
        return Lag(0.0, ts=round(time.time(), 3))
