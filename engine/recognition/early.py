"""Early finals: a segment's refine decode made as soon as its speech pauses (``early_finals``).

The pause may not be long enough yet to close the segment; the decode starts anyway. If the
pause then closes the segment with only silence after the decoded audio, the final needs no
decode of its own and follows the pause at once; if the speaker goes on, the decode was
spent for nothing (engine/recognition/recognizer.py, module docstring).
"""

from __future__ import annotations

import asyncio

from engine.recognition.bounds import SegmentBounds
from engine.recognition.config import RecognizerConfig
from engine.recognition.decoding import Refined
from engine.recognition.segment import Closing, EarlyDecode, Segment, retrieved
from engine.recognition.vad import SpeechTimeline


class EarlyDecodes:
    """When a stream's open segment gets its early decode, and whether that serves its final."""

    def __init__(
        self, speech: SpeechTimeline, bounds: SegmentBounds, config: RecognizerConfig
    ) -> None:
        self._speech = speech
        self._bounds = bounds
        self._config = config
        self.decodes = 0
        self.finals = 0
        """Finals that used their early decode (the rest of ``decodes`` were spent)."""

    def due(
        self,
        seg: Segment,
        span: tuple[float, float],
        now: float,
        backlog: float,
        closing: Closing | None,
    ) -> bool:
        """Whether the open segment ``seg``'s speech (``span``) has paused for as long as a
        cut would follow it, but has no early decode for this pause yet, and the segment
        closed before it (``closing``) has its final: the early decode hears that final as
        context, and waiting for its refine would hold this segment's drafts (a later step,
        still in the pause, starts it)."""
        config = self._config
        return (
            config.early_finals
            and config.refine
            and (closing is None or closing.refine is None or closing.refine.done())
            and span[1] - span[0] >= config.min_speech_s
            and self._speech.end >= span[1] + self._bounds.cut_delay(seg, now)
            and (
                seg.early is None or (seg.early.speech_end != span[1] and seg.early.refined.done())
            )
            and backlog <= config.max_backlog_s
        )

    def started(self, seg: Segment, speech_end: float, refined: asyncio.Future[Refined]) -> None:
        """The early decode of ``seg``, whose speech paused at ``speech_end``, started."""
        refined.add_done_callback(retrieved)  # one the speaker went on past is dropped
        seg.early = EarlyDecode(speech_end, refined)
        self.decodes += 1

    def serving(self, seg: Segment, cut: float) -> asyncio.Future[Refined] | None:
        """The early decode of ``seg`` if it covers the segment up to ``cut``: only silence
        lies between the speech it heard and the cut."""
        early = seg.early
        if early is None or cut < early.speech_end:
            return None
        after = self._speech.speech_span(early.speech_end)
        if after is not None and after[0] < cut:
            return None
        self.finals += 1
        return early.refined
