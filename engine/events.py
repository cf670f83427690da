"""Typed events that flow from a session's pipeline to its log, hub and clients.

Every event a client sees is one of these frozen dataclasses. ``seq`` is assigned by the
session log when the event is numbered (session-wide, strictly increasing) and ``ts`` is the
server's wall-clock time (unix seconds) at that moment; an event built by a pipeline stage
carries ``seq=0`` until then.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from engine.terms import Term, parse_terms, terms_json

CaptionState = Literal["draft", "final"]
QuestionState = Literal["held", "accepted", "rejected"]
SessionState = Literal["waiting", "live", "paused", "ended"]
"""``waiting`` until the first stream, ``live`` while one streams, ``paused`` after it
stopped, ``ended`` for good."""


@dataclass(frozen=True, slots=True)
class Word:
    """One recognised word with its time span in seconds of session audio."""

    text: str
    start: float
    end: float
    probability: float = 1.0


@dataclass(frozen=True, slots=True)
class Speaker:
    """Who said a caption, in a session with several speakers (a panel)."""

    id: str
    name: str


@dataclass(frozen=True, slots=True)
class Caption:
    """Recognised speech (``source=True``) or its translation for one segment.

    Drafts of a segment are replaced by later drafts and by its final; a final changes only
    by a person's correction, which is a new final of the same segment with a higher
    ``rev``. ``stable`` is how many leading characters of a draft will not change any more.
    ``sources``: the source segments a translation covers (a translation final may cover a
    whole sentence of several segments; its ``segment`` is the first of them).
    """

    segment: int
    lang: str
    source: bool
    state: CaptionState
    text: str
    start: float
    end: float
    seq: int = 0
    stable: int = 0
    ts: float = 0.0
    sources: tuple[int, ...] = ()
    rev: int = 0
    speaker: Speaker | None = None
    type: Literal["caption"] = "caption"

    @property
    def is_final(self) -> bool:
        return self.state == "final"

    @property
    def covers(self) -> tuple[int, ...]:
        """The source segments this caption renders: ``sources``, or its own segment."""
        return self.sources or (self.segment,)

    def revised(self, text: str) -> Caption:
        """The next revision of this final with ``text`` (a person's correction, or its
        translation re-made): same segment, span and speaker, ``rev`` one higher, to be
        numbered anew."""
        return dataclasses.replace(
            self, text=text, stable=len(text), rev=self.rev + 1, seq=0, ts=0.0
        )


LanguageCounts = tuple[tuple[str, int], ...]
"""Listeners per language, ``(("en", 3), ("es", 2))``, sorted by language (hashable, so an
event that carries it can be cached)."""


@dataclass(frozen=True, slots=True)
class StateChange:
    """The session moved to ``state``; ``listeners`` is the current audience size and
    ``by_language`` how many of them follow each language."""

    state: SessionState
    listeners: int = 0
    by_language: LanguageCounts = ()
    seq: int = 0
    ts: float = 0.0
    type: Literal["state"] = "state"


@dataclass(frozen=True, slots=True)
class ErrorEvent:
    """A problem the audience should see; the session keeps going."""

    message: str
    seq: int = 0
    ts: float = 0.0
    type: Literal["error"] = "error"


@dataclass(frozen=True, slots=True)
class Shedding:
    """A presenter stream sheds work (engine/recognition/shedding.py): it fell behind, or
    the recognition pool has more streams than threads. ``level`` 0 (nothing shed) to 3,
    ``shed`` names what, in order. Published on a change; the console shows "reduced
    accuracy" while the level is above 0."""

    level: int
    shed: tuple[str, ...] = ()
    seq: int = 0
    ts: float = 0.0
    type: Literal["shedding"] = "shedding"


@dataclass(frozen=True, slots=True)
class Lag:
    """To the presenter only, never numbered or logged (engine/lag.py): how many seconds of
    the audio sent recognition has not reached yet."""

    seconds: float
    ts: float = 0.0
    type: Literal["lag"] = "lag"


@dataclass(frozen=True, slots=True)
class Question:
    """A question from the floor (engine/questions.py): ``text`` in ``lang`` as asked,
    ``translation`` into the session's language for the moderator. Only the presenter's own
    views receive it (never the audience); an accepted one is then said as a caption of the
    speaker "Audience"."""

    id: str
    lang: str
    text: str
    translation: str = ""
    state: QuestionState = "held"
    seq: int = 0
    ts: float = 0.0
    type: Literal["question"] = "question"


@dataclass(frozen=True, slots=True)
class SpeechAudio:
    """Spoken translation: one chunk of synthesised speech for a segment's final in ``lang``.

    On the wire it is a text header (every field but ``pcm``) followed by one binary message
    holding ``pcm`` (``encoding`` at ``sample_rate``, mono). A segment's speech comes as one
    or more chunks in order; ``last`` marks its final chunk. ``skipped`` counts the sentences
    dropped just before this one because the voice fell too far behind the speaker, and
    ``rate`` is the speaking speed used (1.0 normal, higher is faster). ``voice`` is the kind
    of voice that spoke it: ``natural`` (Piper, Kokoro) or ``fast`` (espeak-ng, also when it
    stands in for a natural voice that fell behind). Audio is live only: it is not kept in
    the session log and never backfilled.
    """

    segment: int
    lang: str
    sample_rate: int
    pcm: bytes = field(repr=False, compare=False, hash=False)
    text: str = ""
    last: bool = True
    skipped: int = 0
    rate: float = 1.0
    voice: str = ""
    encoding: Literal["pcm_s16le"] = "pcm_s16le"
    seq: int = 0
    ts: float = 0.0
    type: Literal["audio"] = "audio"

    @property
    def duration(self) -> float:
        return len(self.pcm) / 2 / self.sample_rate


@dataclass(frozen=True, slots=True)
class TermsChanged:
    """The session's term list changed (engine/terms.py): editors show it, and every node
    that holds the session's stages applies it. Listeners may ignore it."""

    terms: tuple[Term, ...]
    seq: int = 0
    ts: float = 0.0
    type: Literal["terms"] = "terms"


Event = Caption | StateChange | ErrorEvent | Shedding | Question | SpeechAudio | TermsChanged

PresenterEvent = Event | Lag
"""What a presenter's transport sends: the session's events and its own stream's lag."""


def language_counts(counts: Mapping[str, int]) -> LanguageCounts:
    """``counts`` as :data:`LanguageCounts`: sorted, languages with nobody left out."""
    return tuple(sorted((str(lang), int(n)) for lang, n in counts.items() if int(n) > 0))


def with_seq(event: Event, seq: int, ts: float = 0.0) -> Event:
    """Return ``event`` numbered with ``seq`` and stamped with ``ts``."""
    return dataclasses.replace(event, seq=seq, ts=ts)


def to_dict(event: PresenterEvent) -> dict[str, Any]:
    """The wire form of an event (see docs/protocol.md); for :class:`SpeechAudio`, the text
    header (its ``pcm`` travels as the binary message after it)."""
    if isinstance(event, SpeechAudio):
        data = {f.name: getattr(event, f.name) for f in dataclasses.fields(event)}
        del data["pcm"]
        data["rate"] = round(event.rate, 3)
    elif isinstance(event, TermsChanged):
        data = {"type": event.type, "seq": event.seq, "terms": terms_json(event.terms)}
    else:
        data = dataclasses.asdict(event)
    if isinstance(event, Caption):
        data["start"] = round(event.start, 3)
        data["end"] = round(event.end, 3)
        # Optional fields travel only when they say something (docs/protocol.md).
        if event.sources:
            data["sources"] = list(event.sources)
        else:
            del data["sources"]
        if not event.rev:
            del data["rev"]
        if event.speaker is None:
            del data["speaker"]
    if isinstance(event, StateChange):
        if event.by_language:
            data["by_language"] = dict(event.by_language)
        else:
            del data["by_language"]
    data["ts"] = round(event.ts, 3)
    return data


def to_json(event: PresenterEvent) -> str:
    """The wire text of an event; cached, since one event goes to every listener (audio
    headers are not cached: the cache would keep their PCM alive)."""
    if isinstance(event, SpeechAudio):
        return _dumps(event)
    return _cached_json(event)


def _dumps(event: PresenterEvent) -> str:
    return json.dumps(to_dict(event), ensure_ascii=False, separators=(",", ":"))


_cached_json = functools.lru_cache(maxsize=4096)(_dumps)


def from_dict(data: dict[str, Any]) -> Event:
    """Inverse of :func:`to_dict` (used by stores and the Redis hub)."""
    kind = data.get("type")
    fields = {k: v for k, v in data.items() if k != "type"}
    if kind == "caption":
        speaker = fields.pop("speaker", None)
        sources = fields.pop("sources", ())
        return Caption(
            **fields,
            sources=tuple(int(s) for s in sources),
            speaker=None if speaker is None else Speaker(str(speaker["id"]), str(speaker["name"])),
        )
    if kind == "state":
        counts = fields.pop("by_language", {})
        return StateChange(**fields, by_language=language_counts(counts))
    if kind == "error":
        return ErrorEvent(**fields)
    if kind == "question":
        return Question(**fields)
    if kind == "shedding":
        return Shedding(
            int(fields["level"]),
            tuple(fields.get("shed", ())),
            **{k: v for k, v in fields.items() if k in ("seq", "ts")},
        )
    if kind == "audio":
        return SpeechAudio(**{"pcm": b"", **fields})
    if kind == "terms":
        return TermsChanged(
            parse_terms(fields.get("terms", [])),
            **{k: v for k, v in fields.items() if k in ("seq", "ts")},
        )
    raise ValueError(f"unknown event type {kind!r}")
