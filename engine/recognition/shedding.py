"""Graceful degradation: what a recogniser that falls behind stops doing, in a written order.

When the recognition worker cannot keep up (several presenters on two cores), a stream's
backlog grows. Each level sheds one more cost, cheapest loss of quality first, and the levels
come back, in reverse, once the backlog has fallen below half the level's threshold (so a
stream near a threshold does not flicker between levels):

1. ``CONTEXT``: finals decode in the short window and hear only the last few seconds of the
   finals before them, not Whisper's full 30 s window with 15 s of them. Also shed while the
   finals come out late though the backlog is small (two speakers of a panel, each stream's
   drafts keeping up while its refines wait for the cores), until a final comes out in half
   that time; and while the recognition pool is crowded (more streams than threads,
   :meth:`engine.workers.WorkerPool.crowded`), from the first step: by the time the backlog
   of a third presenter on two threads shows, its captions are already too late
   (docs/metrics.md, "Capacity / Context shed while the pool is crowded");
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
    late_final_s: float = 2.0
    """How late a final (audio heard after its cut by the time it came out) sheds context."""

    def threshold(self, level: Shed) -> float:
        return {Shed.CONTEXT: self.context_s, Shed.BEAM: self.beam_s, Shed.DRAFTS: self.drafts_s}[
            level
        ]


def next_level(
    current: Shed,
    backlog: float,
    rules: SheddingRules,
    final_lateness: float = 0.0,
    *,
    crowded: bool = False,
) -> Shed:
    """The level for a step that begins ``backlog`` seconds behind, from ``current``, when
    the last final came out ``final_lateness`` seconds after its cut; ``crowded``: the
    recognition pool has more streams than threads (context is shed while it has)."""
    level = current
    while level < Shed.DRAFTS and backlog > rules.threshold(Shed(level + 1)):
        level = Shed(level + 1)
    while level > Shed.NONE and backlog < rules.threshold(level) / 2:
        level = Shed(level - 1)
    late = final_lateness > rules.late_final_s
    still_late = current >= Shed.CONTEXT and final_lateness >= rules.late_final_s / 2
    if level < Shed.CONTEXT and (late or still_late or crowded):
        level = Shed.CONTEXT
    return level


def shed_names(level: Shed) -> tuple[str, ...]:
    """What is shed at ``level``, in order."""
    return tuple(SHED_NAMES[Shed(n)] for n in range(1, level + 1))
