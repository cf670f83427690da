"""Transcript exports: the final captions of one language as TXT, SRT, WebVTT or JSON.

Subtitle cues follow broadcast conventions: at most :data:`MAX_LINE_CHARS` columns a line (a
kanji or kana takes two; engine/line_width.py says where Japanese and Chinese break) and two
lines a cue; a longer segment becomes several cues sharing its time in proportion to
their characters. Cue times never go backwards, never overlap, and every cue lasts at least
:data:`MIN_CUE_MS`, whatever timings the captions carry.

A segment corrected by a person has several finals (``rev`` 0, 1, ...; docs/protocol.md): a
transcript holds each segment once, where it was first said, in its newest revision; the JSON
export also keeps the earlier ones (``history``). Who said a line (``speaker``, a panel) is a
WebVTT voice span (``<v Name>``) on every cue, a ``Name: `` prefix in SRT and TXT where the
speaker changes (as subtitles mark a change of speaker), and a field in JSON.
"""

from __future__ import annotations

import json
import math
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, get_args

from engine import line_width
from engine.events import Caption

Format = Literal["txt", "srt", "vtt", "json"]
FORMATS: tuple[Format, ...] = get_args(Format)
MEDIA_TYPES: dict[Format, str] = {
    "txt": "text/plain; charset=utf-8",
    "srt": "application/x-subrip; charset=utf-8",
    "vtt": "text/vtt; charset=utf-8",
    "json": "application/json",
}
MAX_LINE_CHARS = 42
MAX_CUE_LINES = 2
MIN_CUE_MS = 200


@dataclass(frozen=True, slots=True)
class Cue:
    """One subtitle cue: 1 or 2 lines shown from ``start_ms`` to ``end_ms`` (milliseconds),
    said by ``speaker`` (a name) when the session names its speakers."""

    segment: int
    start_ms: int
    end_ms: int
    lines: tuple[str, ...]
    speaker: str | None = None


@dataclass(frozen=True, slots=True)
class Line:
    """One line of a transcript: a segment's newest revision and the revisions before it
    (oldest first)."""

    caption: Caption
    history: tuple[Caption, ...] = ()


def lines_of(finals: Sequence[Caption]) -> list[Line]:
    """Each segment once, at the place of its first final, in its newest revision (the
    highest ``rev``; of equal ones, the later)."""
    revisions: dict[int, list[Caption]] = {}
    for caption in finals:
        revisions.setdefault(caption.segment, []).append(caption)
    result: list[Line] = []
    for captions in revisions.values():
        ordered = sorted(captions, key=lambda c: (c.rev, c.seq))
        result.append(Line(ordered[-1], tuple(ordered[:-1])))
    return result


def _speaker_name(caption: Caption) -> str | None:
    return clean_text(caption.speaker.name) or None if caption.speaker is not None else None


def _labelled(finals: Sequence[Caption]) -> list[tuple[Caption, str]]:
    """Each line's newest caption and its text, ``Name: `` before it where the speaker
    changes."""
    labelled: list[tuple[Caption, str]] = []
    previous: str | None = None
    for line in lines_of(finals):
        caption = line.caption
        text = clean_text(caption.text)
        if not text:
            continue
        name = _speaker_name(caption)
        if name is not None and name != previous:
            text = f"{name}: {text}"
        previous = name
        labelled.append((caption, text))
    return labelled


def render(finals: Sequence[Caption], fmt: str) -> tuple[str, str]:
    """The transcript of ``finals`` in format ``fmt`` and its media type.

    ``finals`` are final captions of one language in transcript order (the store's ``seq``
    order). Raises ``ValueError`` for an unknown format, drafts, or mixed languages.
    """
    if fmt not in FORMATS:
        raise ValueError(f"unknown transcript format {fmt!r}; expected one of {FORMATS}")
    _check(finals)
    renderers = {"txt": to_txt, "srt": to_srt, "vtt": to_vtt, "json": to_json}
    return renderers[fmt](finals), MEDIA_TYPES[fmt]


def _check(finals: Sequence[Caption]) -> None:
    langs = {caption.lang for caption in finals}
    if len(langs) > 1:
        raise ValueError(f"a transcript holds one language, got {sorted(langs)}")
    if any(not caption.is_final for caption in finals):
        raise ValueError("a transcript holds final captions only")


def clean_text(text: str) -> str:
    """``text`` on one line: whitespace runs (newlines too) become one space, controls go."""
    kept = "".join(ch for ch in text if ch.isspace() or unicodedata.category(ch) != "Cc")
    return " ".join(kept.split())


def to_txt(finals: Sequence[Caption]) -> str:
    """One line per segment (``Name: `` where the speaker changes)."""
    return "".join(text + "\n" for _, text in _labelled(finals))


def to_json(finals: Sequence[Caption]) -> str:
    """A JSON list of ``{segment, start, end, text}``, times in seconds: each segment in its
    newest revision; ``rev``, ``sources``, ``speaker`` ({id, name}) and ``history`` (the
    earlier revisions, ``[{rev, text}]``, oldest first) where there are any."""
    items: list[dict[str, object]] = []
    for line in lines_of(finals):
        c = line.caption
        item: dict[str, object] = {
            "segment": c.segment,
            "start": _json_time(c.start),
            "end": _json_time(c.end),
            "text": c.text,
            **({"sources": list(c.sources)} if c.sources else {}),
        }
        if c.rev:
            item["rev"] = c.rev
        if c.sources:
            item["sources"] = list(c.sources)
        if c.speaker is not None:
            item["speaker"] = {"id": c.speaker.id, "name": c.speaker.name}
        if line.history:
            item["history"] = [{"rev": old.rev, "text": old.text} for old in line.history]
        items.append(item)
    return json.dumps(items, ensure_ascii=False, allow_nan=False, indent=1)


def _json_time(seconds: float) -> float | None:
    return round(seconds, 3) if math.isfinite(seconds) else None


def to_srt(finals: Sequence[Caption]) -> str:
    """SubRip: numbered cues, ``HH:MM:SS,mmm`` times, a blank line after each cue."""
    blocks = [
        f"{n}\n{_timestamp(cue.start_ms, ',')} --> {_timestamp(cue.end_ms, ',')}\n"
        + "\n".join(cue.lines)
        + "\n"
        for n, cue in enumerate(cues(finals, label_speakers=True), start=1)
    ]
    return "\n".join(blocks)


def to_vtt(finals: Sequence[Caption]) -> str:
    """WebVTT: ``HH:MM:SS.mmm`` times; ``&``, ``<`` and ``>`` escaped (so ``-->`` cannot occur)."""
    blocks = ["WEBVTT\n"]
    for cue in cues(finals):
        text = "\n".join(_vtt_escape(line) for line in cue.lines)
        if cue.speaker is not None:
            text = f"<v {_vtt_escape(cue.speaker)}>{text}"
        blocks.append(
            f"{_timestamp(cue.start_ms, '.')} --> {_timestamp(cue.end_ms, '.')}\n{text}\n"
        )
    return "\n".join(blocks)


def _vtt_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _timestamp(ms: int, decimal_mark: str) -> str:
    hours, rest = divmod(ms, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    seconds, millis = divmod(rest, 1000)
    return f"{hours:02d}:{minutes:02d}:{seconds:02d}{decimal_mark}{millis:03d}"


def cues(finals: Sequence[Caption], *, label_speakers: bool = False) -> list[Cue]:
    """Subtitle cues for ``finals`` (each segment once, in its newest revision), in order,
    each lasting at least :data:`MIN_CUE_MS`; ``label_speakers``: the text starts with
    ``Name: `` where the speaker changes.

    A cue starts no earlier than the previous cue ends: captions whose times overlap, go
    backwards, or are not finite are moved later, never earlier.
    """
    result: list[Cue] = []
    previous_end = 0
    for caption, labelled in _labelled(finals):
        text = labelled if label_speakers else clean_text(caption.text)
        speaker = _speaker_name(caption)
        chunks = _cue_chunks(text)
        start = max(_ms(caption.start, previous_end), previous_end)
        end = max(_ms(caption.end, start), start + MIN_CUE_MS * len(chunks))
        for chunk, (chunk_start, chunk_end) in zip(
            chunks, _share_time(start, end, [sum(map(len, c)) for c in chunks]), strict=True
        ):
            result.append(Cue(caption.segment, chunk_start, chunk_end, chunk, speaker))
        previous_end = end
    return result


def _ms(seconds: float, fallback: int) -> int:
    ms = seconds * 1000
    if not math.isfinite(ms):
        return fallback
    return max(0, round(ms))


def _share_time(start: int, end: int, weights: list[int]) -> list[tuple[int, int]]:
    """Split ``[start, end]`` into consecutive spans, each ``MIN_CUE_MS`` plus a share of the
    rest in proportion to its weight. Needs ``end - start >= MIN_CUE_MS * len(weights)``."""
    spare = end - start - MIN_CUE_MS * len(weights)
    total = sum(weights) or 1
    spans: list[tuple[int, int]] = []
    cumulative = 0
    span_start = start
    for i, weight in enumerate(weights):
        cumulative += weight
        share = spare * cumulative // total
        span_end = end if i == len(weights) - 1 else start + MIN_CUE_MS * (i + 1) + share
        spans.append((span_start, span_end))
        span_start = span_end
    return spans


def _cue_chunks(text: str) -> list[tuple[str, ...]]:
    """``text`` (non-empty, one line) as cues of at most 2 lines of at most 42 columns.

    As few cues as greedy filling needs, with the words spread evenly over them (so a long
    segment does not end in a short leftover cue).
    """
    words = line_width.words(text, MAX_LINE_CHARS)
    chunks = _fill(words, limit=None)
    if len(chunks) > 1:
        # The smallest per-cue character limit that still needs no more cues than greedy
        # filling: fewer cues can only come from a larger limit, so bisect.
        low, high = line_width.width(text) // len(chunks), line_width.width(text)
        while low < high:
            middle = (low + high) // 2
            if len(_fill(words, limit=middle)) <= len(chunks):
                high = middle
            else:
                low = middle + 1
        chunks = _fill(words, limit=low)
    return [_balance(chunk) for chunk in chunks]


def _fill(words: list[str], limit: int | None) -> list[list[str]]:
    """Consecutive groups of ``words``, each fitting in one cue; with ``limit``, a group also
    closes before it would grow past ``limit`` characters."""
    chunks: list[list[str]] = []
    current: list[str] = []
    for word in words:
        candidate = [*current, word]
        too_long = limit is not None and line_width.width(line_width.join(candidate)) > limit
        if current and (too_long or len(_wrap(candidate)) > MAX_CUE_LINES):
            chunks.append(current)
            candidate = [word]
        current = candidate
    chunks.append(current)
    return chunks


def _wrap(words: list[str]) -> list[str]:
    """Greedy word wrap at :data:`MAX_LINE_CHARS` (every word fits in a line)."""
    lines: list[str] = []
    current = ""
    for word in words:
        if not current:
            current = word
        elif line_width.width(joined := line_width.join([current, word])) <= MAX_LINE_CHARS:
            current = joined
        else:
            lines.append(current)
            current = word
    if current:
        lines.append(current)
    return lines


def _balance(words: list[str]) -> tuple[str, ...]:
    """One line if the words fit in one, else two lines as even in length as possible."""
    whole = line_width.join(words)
    if line_width.width(whole) <= MAX_LINE_CHARS or len(words) == 1:
        return (whole,)
    best: tuple[str, str] | None = None
    for k in range(1, len(words)):
        first, second = line_width.join(words[:k]), line_width.join(words[k:])
        longer = max(line_width.width(first), line_width.width(second))
        if longer > MAX_LINE_CHARS:
            continue
        if best is None or longer < max(map(line_width.width, best)):
            best = (first, second)
    if best is None:  # unreachable: _fill only makes groups that wrap into two lines
        raise AssertionError(f"cannot fit {whole!r} in two lines")
    return best
