"""Graceful degradation: what a recogniser that falls behind stops doing, in a written order.

When the recognition worker cannot keep up (several presenters on two cores), a stream's
backlog grows. Each level sheds one more cost, cheapest loss of quality first, and the levels
come back, in reverse, once the backlog has fallen below half the level's threshold (so a
stream near a threshold does not flicker between levels):

1. ``CONTEXT``: finals no longer hear the finals before them (their forced prefix costs a
   decoder step a token);
2. ``BEAM``: finals decode greedily instead of with the refine beam;
3. ``DRAFTS``: drafts are skipped while behind (finals never are).

The speech stage's own fallback to the fast voice (engine/speech/) follows the same idea with
its own measure. Thresholds in :class:`SheddingRules`; docs/metrics.md, "Degradation",
measured what each level saves.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Shed(enum.IntEnum):
    NONE = 0
    CONTEXT = 1
    BEAM = 2
    DRAFTS = 3


SHED_NAMES = {Shed.CONTEXT: "context", Shed.BEAM: "refine beam", Shed.DRAFTS: "drafts"}


@dataclass(frozen=True, slots=True)
class SheddingRules:
    context_s: float = 1.0
    """Backlog (seconds of audio not yet processed when a step begins) that sheds context."""
    beam_s: float = 1.5
    drafts_s: float = 2.0

    def threshold(self, level: Shed) -> float:
        return {Shed.CONTEXT: self.context_s, Shed.BEAM: self.beam_s, Shed.DRAFTS: self.drafts_s}[
            level
        ]


def next_level(current: Shed, backlog: float, rules: SheddingRules) -> Shed:
    """The level for a step that begins ``backlog`` seconds behind, from ``current``."""
    level = current
    while level < Shed.DRAFTS and backlog > rules.threshold(Shed(level + 1)):
        level = Shed(level + 1)
    while level > Shed.NONE and backlog < rules.threshold(level) / 2:
        level = Shed(level - 1)
    return level


def shed_names(level: Shed) -> tuple[str, ...]:
    """What is shed at ``level``, in order."""
    return tuple(SHED_NAMES[Shed(n)] for n in range(1, level + 1))
