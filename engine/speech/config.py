"""The speech stage's settings (:class:`PaceConfig`), its counters (:class:`SpeakerStats`) and
the ports it is built with (:data:`Publish`, :data:`Run`); the rules they set are in
engine/speech/speaker.py's docstring and the modules it points to."""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from engine.events import Event

__all__ = ["PaceConfig", "Publish", "Run", "SpeakerStats"]

Publish = Callable[[Event], Awaitable[object]]

Run = Callable[..., Awaitable[object]]
"""A worker pool's ``run``: where blocking synthesis happens."""


@dataclass(frozen=True, slots=True)
class PaceConfig:
    """The speech stage's rules (engine/speech/speaker.py's docstring); measurements behind
    the defaults are in docs/metrics.md, "Spoken translation" and "Natural voices"."""

    bound_s: float = 6.0
    """Skip to the newest sentence when the voice is further behind than this."""
    speedup_from_s: float = 3.0
    """Start speaking faster when the voice is further behind than this."""
    max_rate: float = 1.3
    """The fastest speed used (1.3 is still natural for every voice tried)."""
    lead_s: float = 1.0
    """Synthesise the next piece when less than this, plus the piece's expected synthesis
    time, is still waiting to play."""
    chars_per_second: float = 15.0
    """A voice's normal speed before it has spoken (then learnt from what it says), to
    estimate how long queued text takes to speak."""
    max_pieces: int = 64
    clause_chars: int = 80
    """Sentences longer than this are split at clauses."""
    lead_chars: int = 48
    """The longest first piece of a final (a fast voice's)."""
    min_lead_chars: int = 16
    """The shortest first piece, however slow the voice."""
    first_audio_s: float = 0.5
    """A final's first piece is cut to take about this long to synthesise (its length is
    this over the voice's learnt seconds per character, within the two bounds above)."""
    cost_prior_s: float = 0.05
    """Seconds of synthesis per character assumed for a voice that has not spoken yet:
    about a slow neural voice's, so that a first piece is never too long."""
    fallback_gap_s: float = 1.5
    """Speak a sentence with the fallback (fast) voice when the voice would leave the
    listener silent longer than this before the sentence (its expected synthesis time for
    the sentence's first piece minus the audio still waiting to play), and give up on a
    natural call once the listener has waited this long. docs/metrics.md, "Natural voices"
    ("Captions with a Kokoro listener")."""
    foresight: bool = True
    """Synthesise a sentence's lead from its translated drafts while the voice is idle
    (engine/speech/foresight.py): Kokoro's first audio after a final falls from about
    1.2 s to nearly nothing, for about 0.03 s more draft latency while it speaks
    (docs/metrics.md, "Natural voices / Foresight"). ``INTERP_PACE=foresight=0`` turns it
    off."""
    fallback_relax: float = 0.8
    """Each sentence the fallback speaks scales the voice's learnt cost by this, so that
    the voice is tried again once the machine is less busy."""


@dataclass(slots=True)
class SpeakerStats:
    pieces: int = 0
    audio_seconds: float = 0.0
    synth_seconds: float = 0.0
    skipped: int = 0
    failures: int = 0
    max_behind: float = 0.0
    fallback_pieces: int = 0
    """Pieces spoken by the fallback voice because the voice fell behind."""
    stalls: int = 0
    """Natural-voice calls given up on (the fallback spoke their piece)."""
    first_audio: deque[float] = field(default_factory=lambda: deque(maxlen=512))
    """Seconds from a final being handed over to its first audio being published."""
    foreseen: int = 0
    """Leads synthesised ahead from a translated draft (engine/speech/foresight.py)."""
    foreseen_spoken: int = 0
    """Of those, leads a final's first piece read the same and spoke."""
