"""Whole sentences out of source finals: what a translation final is made from.

A source final is one pause-bounded segment, often half a sentence; translated alone it reads
as a fragment. :class:`SentenceAssembler` gathers a stream's source finals, in order, into the
open sentence and closes it at sentence-ending punctuation in the refined source (the
recogniser keeps it only where the speech paused: engine/recognition/punctuation.py; rules
for speech routes wait for a longer pause: ``close_at_mark``), at the length cap (a run-on
speaker still gets finals), and, through the translation stage's timer
(engine/translation/open_sentences.py), at a long pause (nothing of the speaker for
``pause_s`` after its last final, or the next speech beginning well after it) or the end of
the stream. Pure bookkeeping, no I/O.

The next speech may come before the final: with a slow refine (Whisper base), a draft of the
segment after it often arrives first, and the VAD has heard more still. The assembler
remembers where each later segment's speech began (:meth:`SentenceAssembler.hear`), and a
final that leaves the sentence open asks :meth:`SentenceAssembler.went_on` what followed it,
given what the VAD had heard when the final was made (``NextSpeech``): if a draft showed the
speaker went on, no timer is needed and the sentence waits for that segment's final; if the
silence after it, or the start of speech heard after it, is already later than
``resume_gap_s`` allows, the sentence closes with the final instead of at a timer later
(docs/metrics.md, "Speech heard before the final"). While the timer runs, the stage asks the
same question again each time the stream tells it what the VAD has heard since
(``SessionTranslator.on_silence``; docs/metrics.md, "Sentences closed by the silence").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from engine.events import Caption
from engine.recognition.vad import NextSpeech

SENTENCE_END = re.compile(r"[.?!…。！？][\"'”’»)\]]*\s*$")
"""Sentence-ending punctuation at the end of a text, closing quotes and brackets allowed."""


def ends_sentence(text: str) -> bool:
    return bool(SENTENCE_END.search(text))


@dataclass(frozen=True, slots=True)
class SentenceRules:
    max_words: int = 40
    """A sentence this long is closed whatever its punctuation."""
    max_seconds: float = 20.0
    """Likewise for its span of audio."""
    pause_s: float = 1.2
    """An open sentence closes when nothing of the speaker followed its last final for this
    long (wall clock): the speaker stopped mid-sentence, or ended it without punctuation. A
    draft of the next segment means the speaker went on: the sentence then waits for that
    segment's final, which may come later than this after its draft (docs/metrics.md,
    "Sentences the speaker had not finished")."""
    close_at_mark: bool = True
    """Whether a final that ends with sentence punctuation closes the sentence at once. The
    recogniser keeps a mark where the speech paused ``sentence_pause_s`` (0.4 s), and
    readers pause that long and longer inside a sentence (a German comma before the verb):
    without it only a pause (``pause_s``, ``resume_gap_s``) or the cap closes a sentence
    (docs/metrics.md, "Marks inside a sentence")."""
    resume_gap_s: float = 0.6
    """Unless that draft begins this long (audio time) after the sentence's last final ends:
    then the speaker paused long before going on, and the sentence closes at once. A segment
    begins a lead-in (0.3 s) before its speech, so the gap is the pause less the cut's delay
    and the lead-in: 0.6 s is a pause of about 1.1 s. FLEURS readers paused up to 1.09 s
    inside a sentence and at least 1.73 s between the clips of a talk (docs/metrics.md,
    "Marks inside a sentence")."""


@dataclass(frozen=True, slots=True)
class SourcePiece:
    """One source final and its audio (kept for speech translation)."""

    caption: Caption
    audio: np.ndarray | None = None


@dataclass(frozen=True, slots=True)
class Sentence:
    """The source finals a translation final is made from, and the text before them."""

    pieces: tuple[SourcePiece, ...]
    context: str = ""
    """The previous sentence's source text (for backends that use context)."""

    @property
    def segments(self) -> tuple[int, ...]:
        return tuple(p.caption.segment for p in self.pieces)

    @property
    def text(self) -> str:
        return " ".join(p.caption.text.strip() for p in self.pieces if p.caption.text.strip())

    @property
    def start(self) -> float:
        return self.pieces[0].caption.start

    @property
    def end(self) -> float:
        return self.pieces[-1].caption.end

    @property
    def first(self) -> Caption:
        return self.pieces[0].caption

    def audio(self) -> np.ndarray | None:
        """The sentence's audio, its segments joined (None if any segment's is missing)."""
        parts = [p.audio for p in self.pieces]
        if any(part is None for part in parts):
            return None
        return np.concatenate([p for p in parts if p is not None])


class SentenceAssembler:
    """The open sentence of one stream of source finals (module docstring)."""

    def __init__(self, rules: SentenceRules | None = None, context_chars: int = 200) -> None:
        self.rules = rules or SentenceRules()
        self._context_chars = context_chars
        self._open: list[SourcePiece] = []
        self._context = ""
        self._heard: dict[int, float] = {}
        """Segment -> where its speech began, for segments heard but not yet final."""
        self._last_final = -1

    @property
    def open(self) -> bool:
        return bool(self._open)

    @property
    def pieces(self) -> tuple[SourcePiece, ...]:
        """The finals of the open sentence so far."""
        return tuple(self._open)

    def ends_at(self, segment: int) -> bool:
        """Whether the open sentence's last final is ``segment``'s."""
        return bool(self._open) and self._open[-1].caption.segment == segment

    def goes_on(self, start: float) -> bool:
        """Whether speech that begins at ``start`` continues the open sentence: it begins
        within ``resume_gap_s`` of the end of the sentence's last final."""
        return bool(self._open) and start - self._open[-1].caption.end < self.rules.resume_gap_s

    def hear(self, draft: Caption) -> None:
        """A draft of a segment not final yet: the speaker's speech there began at its
        ``start`` (the first draft of a segment says it; later ones change nothing)."""
        if draft.segment > self._last_final:
            self._heard.setdefault(draft.segment, draft.start)

    def went_on(self, after: NextSpeech | None = None) -> bool | None:
        """After a final that left the sentence open: whether the speech after it continues
        the sentence (:meth:`goes_on`, for the first segment drafted after the final);
        without such a draft, False if what the VAD had heard when the final was made
        (``after``) already puts the next speech too late to go on, else None (not known
        yet: speech the VAD heard may still give no words, so only a draft says the
        speaker went on)."""
        if self._heard:
            return self.goes_on(self._heard[min(self._heard)])
        if after is not None and not self.goes_on(after.start):
            return False
        return None

    def add(self, piece: SourcePiece, *, whole: bool = False) -> Sentence | None:
        """Add the next source final; the sentence it closes, if it closes one. ``whole``:
        the final ends its sentence (a line said whole, such as an accepted question)."""
        self._last_final = max(self._last_final, piece.caption.segment)
        self._heard = {s: at for s, at in self._heard.items() if s > self._last_final}
        self._open.append(piece)
        text = " ".join(p.caption.text for p in self._open)
        span = piece.caption.end - self._open[0].caption.start
        if (
            whole
            or (self.rules.close_at_mark and ends_sentence(piece.caption.text))
            or len(text.split()) >= self.rules.max_words
            or span >= self.rules.max_seconds
        ):
            return self.close()
        return None

    def close(self) -> Sentence | None:
        """Close the open sentence now (a long pause, the end of the stream)."""
        if not self._open:
            return None
        sentence = Sentence(tuple(self._open), self._context)
        self._open = []
        if sentence.text:
            self._context = sentence.text[-self._context_chars :]
        return sentence
