"""Translation metrics: pure functions over texts and what a listener recorded (no I/O).

Definitions, as implemented here, are in ``docs/metrics.md`` ("Translation").
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from bench.metrics import CaptionUpdate, Erasure, erasure, laal
from bench.replay import Received


@dataclass(frozen=True, slots=True)
class TextScore:
    """Corpus BLEU and chrF (sacrebleu defaults: 13a tokens, cased) over ``segments``
    hypothesis/reference pairs."""

    bleu: float
    chrf: float
    segments: int


def text_score(hypotheses: Sequence[str], references: Sequence[str]) -> TextScore:
    """Corpus BLEU and chrF of ``hypotheses`` against one reference each."""
    if len(hypotheses) != len(references) or not hypotheses:
        raise ValueError("need one reference per hypothesis, at least one pair")
    import sacrebleu

    refs = [list(references)]
    return TextScore(
        bleu=float(sacrebleu.corpus_bleu(list(hypotheses), refs).score),
        chrf=float(sacrebleu.corpus_chrf(list(hypotheses), refs).score),
        segments=len(hypotheses),
    )


@dataclass(frozen=True, slots=True)
class Heard:
    """One caption event as one listener received it."""

    arrival: float
    """``time.monotonic()`` in the bench when the message was read."""
    ts: float
    """The server's wall clock when it numbered the event."""
    segment: int
    lang: str
    source: bool
    state: Literal["draft", "final"]
    text: str
    start: float
    end: float
    sources: tuple[int, ...] = ()
    """The source segments a translation covers (docs/protocol.md: a sentence final may cover
    several); ``(segment,)`` when the event names none."""

    @property
    def covers(self) -> tuple[int, ...]:
        return self.sources or (self.segment,)


def heard_captions(received: Iterable[Received]) -> list[Heard]:
    """The caption events among ``received``, in arrival order."""
    out: list[Heard] = []
    for item in received:
        m: dict[str, Any] = item.message
        if m.get("type") != "caption":
            continue
        out.append(
            Heard(
                arrival=item.arrival,
                ts=float(m.get("ts", 0.0)),
                segment=int(m["segment"]),
                lang=str(m["lang"]),
                source=bool(m.get("source", True)),
                state=m["state"],
                text=str(m["text"]),
                start=float(m.get("start", 0.0)),
                end=float(m.get("end", 0.0)),
                sources=tuple(int(x) for x in m.get("sources") or ()),
            )
        )
    return out


def translated(heard: Iterable[Heard], lang: str) -> list[Heard]:
    """The translations into ``lang`` (``source`` false), in arrival order."""
    return [h for h in heard if not h.source and h.lang == lang]


def sources(heard: Iterable[Heard]) -> list[Heard]:
    """The source-language captions, in arrival order."""
    return [h for h in heard if h.source]


def as_updates(heard: Iterable[Heard]) -> list[CaptionUpdate]:
    """The events as :class:`bench.metrics.CaptionUpdate` (for erasure), one caption per
    translated sentence, as a reader sees it.

    A translation final covering several source segments is one sentence: until it comes,
    the drafts of its segments show together, joined in segment order, on the view's drafts
    line (static/js/subtitle-state.js), and the final replaces that line. So each update is
    the sentence's whole shown text: a draft of one of its segments shows the newest drafts
    of all of them so far; the final shows its own text. Segments no final covers are
    sentences of their own."""
    items = list(heard)
    sentence_of: dict[int, int] = {}
    for h in items:
        if h.state == "final":
            for covered in h.covers:
                sentence_of.setdefault(covered, h.segment)
    drafts: dict[int, dict[int, str]] = {}
    updates: list[CaptionUpdate] = []
    for h in items:
        sentence = sentence_of.get(h.segment, h.segment)
        if h.state == "final":
            updates.append(CaptionUpdate(h.arrival, sentence, "final", h.text))
            continue
        shown = drafts.setdefault(sentence, {})
        shown[h.segment] = h.text
        text = " ".join(shown[segment] for segment in sorted(shown))
        updates.append(CaptionUpdate(h.arrival, sentence, "draft", text))
    return updates


def translation_erasure(heard: Iterable[Heard], lang: str) -> Erasure:
    """Normalised erasure of the translations into ``lang`` a listener was shown: the
    captions bench's definition (bench.metrics.erasure) applied to them."""
    return erasure(as_updates(translated(heard, lang)))


def source_erasure(heard: Iterable[Heard]) -> Erasure:
    """Normalised erasure of the source captions the same listener was shown (what the
    translation's erasure inherits from recognition)."""
    return erasure(as_updates(sources(heard)))


def first_finals(heard: Iterable[Heard]) -> dict[int, Heard]:
    """Each segment's first final among ``heard`` (a final never changes)."""
    finals: dict[int, Heard] = {}
    for h in heard:
        if h.state == "final":
            finals.setdefault(h.segment, h)
    return finals


def covering_events(heard: Iterable[Heard]) -> dict[int, Heard]:
    """Each segment's first event (draft or final) among ``heard``, by every segment an
    event covers (a translation final of a whole sentence covers each of its sources)."""
    first: dict[int, Heard] = {}
    for h in heard:
        for segment in h.covers:
            first.setdefault(segment, h)
    return first


def covering_finals(heard: Iterable[Heard]) -> dict[int, Heard]:
    """:func:`covering_events` of the finals only."""
    return covering_events(h for h in heard if h.state == "final")


def first_events(heard: Iterable[Heard]) -> dict[int, Heard]:
    """Each segment's first event (draft or final) among ``heard``."""
    first: dict[int, Heard] = {}
    for h in heard:
        first.setdefault(h.segment, h)
    return first


@dataclass(frozen=True, slots=True)
class SegmentTiming:
    """When one segment's translation reached a listener, relative to its source captions
    on the same socket. ``None``: that event never arrived."""

    segment: int
    source_seconds: float
    """Audio length of the segment: ``end - start`` of its source final."""
    words: int
    """Words of the source final."""
    final_delay_s: float | None
    """Arrival of the translated final − arrival of the source final."""
    final_delay_server_s: float | None
    """The same on the server's clock: ``ts`` of the translated final − ``ts`` of the source
    final (excludes the socket and this client)."""
    first_shown_delay_s: float | None
    """Arrival of the first translated event (draft or final) − arrival of the first source
    event of the segment."""
    had_draft: bool
    """A translated draft arrived before the translated final."""
    completes_sentence: bool = True
    """The segment is the last source of the translated final that covers it: that final
    could not come before this segment's source final (an earlier segment of a sentence
    waits for the sentence's end, which says nothing of the translator's speed)."""


def segment_timings(heard: Sequence[Heard], lang: str) -> list[SegmentTiming]:
    """Per segment with a non-empty source final: the delays of :class:`SegmentTiming`, all
    measured on one listener's socket (which receives both the source and ``lang``)."""
    source_events = sources(heard)
    target_events = translated(heard, lang)
    source_finals = first_finals(source_events)
    source_first = first_events(source_events)
    target_finals = covering_finals(target_events)
    target_first = covering_events(target_events)
    out: list[SegmentTiming] = []
    for segment in sorted(source_finals):
        src = source_finals[segment]
        if not src.text.strip():
            continue
        final = target_finals.get(segment)
        first = target_first.get(segment)
        out.append(
            SegmentTiming(
                segment=segment,
                source_seconds=src.end - src.start,
                words=len(src.text.split()),
                final_delay_s=None if final is None else final.arrival - src.arrival,
                final_delay_server_s=None if final is None else final.ts - src.ts,
                first_shown_delay_s=(
                    None if first is None else first.arrival - source_first[segment].arrival
                ),
                had_draft=first is not None and first.state == "draft",
                completes_sentence=final is None or segment == max(final.covers),
            )
        )
    return out


@dataclass(frozen=True, slots=True)
class ClipSpan:
    """Where one clip lies in a talk made of several clips (seconds of talk audio)."""

    clip: str
    start: float
    end: float


def clip_of(span_start: float, span_end: float, clips: Sequence[ClipSpan]) -> int:
    """Index of the clip a caption covering ``[span_start, span_end]`` belongs to: the one
    containing its midpoint, else the nearest one."""
    if not clips:
        raise ValueError("no clips")
    middle = (span_start + span_end) / 2

    def distance(clip: ClipSpan) -> float:
        return max(clip.start - middle, 0.0, middle - clip.end)

    return min(range(len(clips)), key=lambda i: (distance(clips[i]), i))


def clip_texts(finals: Iterable[Heard], clips: Sequence[ClipSpan]) -> list[str]:
    """The text of each clip: the finals assigned to it (:func:`clip_of`), in segment
    order, joined by spaces (``""`` for a clip that got none)."""
    pieces: list[list[tuple[int, str]]] = [[] for _ in clips]
    for final in first_finals(finals).values():
        if final.text.strip():
            pieces[clip_of(final.start, final.end, clips)].append((final.segment, final.text))
    return [" ".join(text.strip() for _, text in sorted(p)) for p in pieces]


def clip_laal(
    finals: Iterable[Heard],
    clips: Sequence[ClipSpan],
    references: Sequence[str],
    audio_origin: float,
) -> list[float | None]:
    """Per clip, the length-adaptive average lagging (:func:`bench.metrics.laal`) of its
    translated finals, computation-aware: each final is given to a clip as in
    :func:`clip_texts`; every word of a final is emitted at the final's arrival, so its delay
    is that arrival − the moment the clip's audio began on the speaker's clock
    (``audio_origin`` + the clip's start, where ``audio_origin`` is when audio time 0 was
    spoken, on the arrivals' clock). Source length = the clip's duration; hypothesis and
    reference lengths in whitespace-separated words. ``None`` for a clip with no final."""
    if len(references) != len(clips):
        raise ValueError("need one reference per clip")
    assigned: list[list[Heard]] = [[] for _ in clips]
    for final in first_finals(finals).values():
        if final.text.strip():
            assigned[clip_of(final.start, final.end, clips)].append(final)
    out: list[float | None] = []
    for clip, reference, pieces in zip(clips, references, assigned, strict=True):
        began = audio_origin + clip.start
        delays = [
            final.arrival - began
            for final in sorted(pieces, key=lambda h: h.segment)
            for _ in final.text.split()
        ]
        out.append(laal(delays, clip.end - clip.start, len(reference.split())))
    return out
