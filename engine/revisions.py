"""Revision bookkeeping of a session's finals: what a correction replaces and what it re-makes.

A final changes only by a person's correction, which is a new final of the same ``segment``
and ``lang`` with the next ``rev`` (docs/protocol.md). Of the revisions of one line the
newest is the one with the highest ``rev``, and of equal ones (two nodes corrected at once)
the later ``seq``: the last write wins. A translation final may cover several source segments
(``sources``): correcting any of them re-makes it from the sentence's source text with the
correction in it. Pure: built from stored finals, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from engine.events import Caption

_WORD = re.compile(r"[\w'’-]+")


def newer(a: Caption, b: Caption) -> bool:
    """Whether ``a`` is a newer revision of its line than ``b``."""
    return (a.rev, a.seq) > (b.rev, b.seq)


@dataclass(frozen=True, slots=True)
class Remake:
    """A translation final to make again: its newest revision, and the sentence's source
    text with the correction in it."""

    line: Caption
    source_text: str

    @property
    def rev(self) -> int:
        """The revision the re-made final gets."""
        return self.line.rev + 1


class RevisionBook:
    """The newest revision of every final line of a session (source and translations)."""

    def __init__(self, finals: Iterable[Caption] = ()) -> None:
        self._lines: dict[tuple[int, str, bool], Caption] = {}
        for caption in finals:
            self.add(caption)

    def add(self, caption: Caption) -> None:
        if not caption.is_final:
            return
        key = (caption.segment, caption.lang, caption.source)
        current = self._lines.get(key)
        if current is None or newer(caption, current):
            self._lines[key] = caption

    def source(self, segment: int) -> Caption | None:
        """The newest source final of ``segment`` (in whatever language it was spoken)."""
        found = [c for (s, _, source), c in self._lines.items() if s == segment and source]
        return max(found, key=lambda c: (c.rev, c.seq)) if found else None

    def translations_covering(self, segment: int) -> list[Caption]:
        """The newest translation final of each language that covers source ``segment``."""
        return [
            caption
            for (_, _, source), caption in self._lines.items()
            if not source and segment in caption.covers
        ]

    def sentence_text(self, line: Caption, corrected: Mapping[int, str] = {}) -> str:
        """The source text a translation final was made from, in the newest revision of
        each of its source segments (``corrected`` wins: a correction not stored yet)."""
        parts: list[str] = []
        for segment in line.covers:
            text = corrected.get(segment)
            if text is None:
                source = self.source(segment)
                text = "" if source is None else source.text
            if text.strip():
                parts.append(text.strip())
        return " ".join(parts)

    def remakes(self, corrected: Caption) -> list[Remake]:
        """The translation finals a correction of a source final re-makes, one per
        language, each with its sentence's corrected source text."""
        fixed = {corrected.segment: corrected.text}
        return [
            Remake(line, self.sentence_text(line, fixed))
            for line in self.translations_covering(corrected.segment)
            if line.lang != corrected.lang
        ]


def changed_words(before: str, after: str) -> list[str]:
    """The words of ``after`` that ``before`` did not have (case-sensitive: a fixed capital
    counts), in order, each once: what a correction taught, as terms for a re-decode and as
    the editor's offer to add a term."""
    old = set(_WORD.findall(before))
    seen: dict[str, None] = {}
    for word in _WORD.findall(after):
        if word not in old:
            seen.setdefault(word, None)
    return list(seen)
