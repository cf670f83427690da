"""One target language's translation state within a session's stage (a *lane*), and the
drafts, sources and jobs it holds (engine/translation/stage.py, module docstring)."""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from engine.events import Caption
from engine.translation.backends import TargetPlan
from engine.translation.sentences import Sentence

log = logging.getLogger(__name__)

COVERED_KEPT = 512
"""Covered source segments a lane remembers; older ones count as covered."""


@dataclass(frozen=True, slots=True)
class PendingDraft:
    """A source caption waiting in a lane to be translated as a draft."""

    caption: Caption
    arrived: float
    refined: bool = False
    """Made from a source final (of a sentence still open): its source will not change."""
    audio: np.ndarray | None = None
    """A source draft's segment audio so far, where a route drafts from speech."""


@dataclass(frozen=True, slots=True)
class DraftSource:
    """What a translated draft is made from for one open segment: the stable part of its
    newest source draft, or its final while its sentence is open."""

    draft: PendingDraft
    text: str
    settled: bool
    """Its words will not change (a final, or a draft wholly stable where whole drafts are
    translated): no words of it are held back."""

    @property
    def caption(self) -> Caption:
        return self.draft.caption

    @property
    def who(self) -> str:
        return speaker_key(self.caption)


def speaker_key(caption: Caption) -> str:
    return caption.speaker.id if caption.speaker is not None else ""


@dataclass(frozen=True, slots=True)
class ClosedSentence:
    """A sentence queued for its translation final, and when it closed (the final delay's
    start)."""

    sentence: Sentence
    closed: float


@dataclass(frozen=True, slots=True)
class Redo:
    """A published translation final to make again (a correction of one of its sources)."""

    line: Caption
    """Its newest revision."""
    source_text: str
    taught: tuple[str, ...]
    """Words the correction brought (hint text for a speech decode)."""


class Lane:
    """The translation state of one target language."""

    def __init__(self, target: str, plan: TargetPlan) -> None:
        self.target = target
        self.plan = plan
        self.reading = False
        """Someone reads this language now: drafts, and the route's best final backend."""
        self.pending: OrderedDict[int, PendingDraft] = OrderedDict()
        """The newest untranslated draft of each open segment, oldest segment first."""
        self.wake = asyncio.Event()
        self.finals: asyncio.Queue[ClosedSentence | Redo | None] = asyncio.Queue()
        self.covered: OrderedDict[int, None] = OrderedDict()
        """Source segments a queued sentence covers (the newest ``COVERED_KEPT``): their
        drafts are never shown again. A set, not a high-water mark: in a panel, speakers'
        sentences close out of segment order."""
        self.shown: dict[int, str] = {}
        """The translated draft shown under each open segment (a sentence's first)."""
        self.draft_source: dict[int, str] = {}
        """The source text each shown draft was made from."""
        self.speech_heard: dict[int, float] = {}
        """Seconds of its sentence's audio the last speech draft under a segment heard; 0
        when it heard less than ``speech_draft_every_s`` (not kept by the next)."""
        self.sources: dict[int, DraftSource] = {}
        """The newest source text of each open segment a draft brought."""
        self.shown_under: dict[int, int] = {}
        """Open segment -> the segment whose translated draft shows its words."""
        self.held: dict[int, int] = {}
        """Open segment -> the closed sentence (its first segment) whose draft showed its
        words: it is drafted again once that sentence's final is out, not before (its
        words would show twice meanwhile)."""
        self.previous_translation = ""
        self.failing = False
        self.gap = False
        """Some sentence was left untranslated while nobody read this language."""
        self.lock = asyncio.Lock()
        self.tasks: list[asyncio.Task[None]] = []
        self.redoing: asyncio.Task[None] | None = None
        """The newest re-make of a corrected line; each waits for the one before it."""

    def cover(self, segments: Iterable[int]) -> int:
        """A sentence final covers ``segments``: drop their drafts' state; how many pending
        drafts were dropped. Open segments whose words a covered segment's draft showed (the
        speaker went on before the sentence closed) are drafted again under their own."""
        dropped = 0
        covered = set(segments)
        for segment in covered:
            self.covered[segment] = None
            dropped += self.pending.pop(segment, None) is not None
            self.shown.pop(segment, None)
            self.draft_source.pop(segment, None)
            self.speech_heard.pop(segment, None)
            self.sources.pop(segment, None)
            self.shown_under.pop(segment, None)
            self.held.pop(segment, None)
        for segment, under in list(self.shown_under.items()):
            if under in covered:
                del self.shown_under[segment]
                self.held[segment] = under
        while len(self.covered) > COVERED_KEPT:
            self.covered.popitem(last=False)
        return dropped

    def release(self, sentence: Iterable[int]) -> None:
        """The final of the sentence of these segments is out: draft the segments it held
        again, under their own."""
        covered = set(sentence)
        for segment, under in list(self.held.items()):
            if under not in covered:
                continue
            del self.held[segment]
            source = self.sources.get(segment)
            if source is not None and self.reading and segment not in self.pending:
                self.pending[segment] = source.draft
                self.wake.set()

    def is_covered(self, segment: int) -> bool:
        if segment in self.covered:
            return True
        return len(self.covered) >= COVERED_KEPT and segment < next(iter(self.covered))


def log_crash(task: asyncio.Future[None]) -> None:
    """Done callback of a lane's tasks (its drafts, finals, re-makes, gap notice): a crash
    is logged."""
    if not task.cancelled() and task.exception() is not None:
        log.error("translation task crashed", exc_info=task.exception())
