"""A stream's draft captions: the open segment re-decoded greedily, through LocalAgreement-2.

A step drafts (engine/recognition/recognizer.py) if the VAD heard speech since the last
draft, the segment holds ``min_speech_s`` of speech and ``draft_interval_s`` of audio came
since: in a pause a draft would only decode the same words again, taking the worker from
another stream. The hypothesis feeds the segment's LocalAgreement-2, which yields the draft
(committed words, then the unstable tail). A stream that sheds drafts
(engine/recognition/shedding.py) skips them once its segment has shown one.
"""

from __future__ import annotations

from collections.abc import Callable

from engine.events import Caption
from engine.recognition.config import RecognizerConfig
from engine.recognition.decoding import Decoder
from engine.recognition.policy import join_words
from engine.recognition.segment import Segment
from engine.recognition.sentence_hold import SentenceHold
from engine.recognition.shedding import Shed

TRAILING_SLACK = 0.3
"""Seconds of audio after the VAD's last speech that a draft decode still reads."""


class Drafts:
    """Decodes the drafts of one stream's open segment, when they are due."""

    def __init__(
        self,
        decoder: Decoder,
        sentences: SentenceHold,
        config: RecognizerConfig,
        origin: float,
    ) -> None:
        """``sentences``: shapes a draft as a continuation of the last final's sentence;
        ``origin``: where the stream's audio begins."""
        self._decoder = decoder
        self._sentences = sentences
        self._config = config
        self._last_draft_end = origin
        self._drafted_speech_end = origin
        """The VAD's speech end when the last draft was decoded: until speech goes on past
        it, another draft would decode the same words again."""
        self.steps = 0
        self.skipped = 0

    def hold_back(self, speech_end: float) -> None:
        """No draft of the speech up to ``speech_end`` (an early decode of it runs) while the
        pause may still close the segment: it would hold the worker when the final is due."""
        self._drafted_speech_end = max(self._drafted_speech_end, speech_end)

    async def step(
        self,
        seg: Segment,
        span: tuple[float, float],
        now: float,
        shed: Shed,
        segment_id: Callable[[], int],
    ) -> list[Caption]:
        """The draft of the open segment ``seg``, whose speech spans ``span``, if one is due
        at ``now`` (module docstring), as the stream sheds at ``shed``. ``segment_id``: the
        segment's id, taken when the draft shows anything."""
        config = self._config
        if (
            span[1] - span[0] < config.min_speech_s
            or now - self._last_draft_end < config.draft_interval_s
            or span[1] <= self._drafted_speech_end
        ):
            return []  # too little speech yet, or nothing new heard since the last draft
        if shed >= Shed.DRAFTS and seg.drafted and now - seg.start < config.max_segment_s:
            self.skipped += 1
            return []
        return await self._draft(seg, now, span[1], segment_id)

    async def _draft(
        self, seg: Segment, now: float, speech_end: float, segment_id: Callable[[], int]
    ) -> list[Caption]:
        # Decode only up to shortly after the last speech: Whisper invents text ("Thank
        # you.") in trailing silence. Word timing is off by default: text agreement needs
        # none, and skipping the alignment pass saves a fifth of each step.
        end = min(now, speech_end + TRAILING_SLACK)
        words = await self._decoder.decode(
            seg.start, end, self._config.draft_beam, timestamps=self._config.draft_word_timestamps
        )
        self.steps += 1
        self._last_draft_end = now
        self._drafted_speech_end = speech_end
        seg.agreement.update(words)
        shown = seg.agreement.words()
        decoded = join_words(shown)
        text = self._sentences.shaped(decoded)
        if not text or text == seg.last_draft:
            return []
        seg.last_draft = text
        seg.drafted = True
        # shaped() (continuing()) changes only the head: what it dropped there was stable too.
        dropped = len(decoded) - len(text)
        stable = max(0, len(join_words(seg.agreement.committed)) - dropped)
        return [
            Caption(
                segment=segment_id(),
                lang=self._config.language,
                source=True,
                state="draft",
                text=text,
                start=shown[0].start if shown else seg.start,
                end=max(shown[-1].end if shown else now, seg.start),
                stable=stable,
            )
        ]
