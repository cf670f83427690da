"""What a stream's next decodes hear of its recent finals: the prompt, and a refine's context.

Every decode is prompted with the recent final text (``prompt_chars`` of it). A full-window
refine decode also hears the finals that began up to ``refine_context_s`` before its segment
again, their text forced as the decode's prefix (engine/recognition/config.py,
``refine_context_s``; docs/metrics.md, "Refine context"). The recogniser
(engine/recognition/recognizer.py) records each final here as it makes it.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from engine.recognition.policy import guard_text

CONTEXT_WINDOW_S = 28.0
"""The most audio a refine decode with context reads: Whisper's 30 s window less room for a
stop's padding (a decode longer than one window cannot hear its context)."""


@dataclass(frozen=True, slots=True)
class Heard:
    """Where a final caption's segment began, and its text: context for the next refines."""

    start: float
    text: str


class RecentFinals:
    """A stream's recent final text, and the finals a refine may hear again."""

    def __init__(
        self, context: str, prompt_chars: int, context_s: float, context_below_s: float
    ) -> None:
        """``context``: final text heard before this stream (the session's last stream);
        ``prompt_chars``, ``context_s``, ``context_below_s``: the config's
        ``prompt_chars``, ``refine_context_s`` and ``refine_context_below_s``."""
        self._text = context
        self._prompt_chars = prompt_chars
        self._context_s = context_s
        self._context_below_s = context_below_s
        self._heard: deque[Heard] = deque()

    @property
    def text(self) -> str:
        """Recent final text, for the next stream of the same session."""
        return self._text

    def add(self, start: float, text: str) -> None:
        """A final was made of the segment that began at ``start``; ``text`` is empty when
        it held no words, and then the next segment does not follow on from the last final."""
        # The next decodes hear the text as decoded, its full stop too: forcing the shaped
        # text instead cost words (docs/metrics.md, "Sentence breaks").
        if text:
            context = f"{self._text} {text}".strip()
            self._text = context[-4 * self._prompt_chars :]
            self._heard.append(Heard(start, text))
        else:
            self._heard.clear()  # the next segment does not follow on from the last final

    def prompt(self, prefix: str = "") -> str | None:
        """Recent final text before ``prefix`` (the part of it the decode hears again)."""
        context = self._text
        if prefix and context.endswith(prefix):
            context = context[: -len(prefix)]
        text = guard_text(context, self._prompt_chars)
        return text or None

    def context_for(self, start: float, end: float, within: float) -> list[Heard]:
        """The recent finals a refine of the segment from ``start`` up to ``end`` hears
        again: those that began within ``within`` seconds of it and leave the decode inside
        one window."""
        if end - start >= self._context_below_s:
            return []
        earliest = max(start - within, end - CONTEXT_WINDOW_S)
        return [h for h in self._heard if h.start >= earliest]

    def trim(self, segment_start: float) -> float | None:
        """Forget the finals that the refine of the open segment (from ``segment_start``)
        cannot hear again; where the earliest one kept began (its audio must be kept), if
        any is."""
        oldest = segment_start - self._context_s
        while self._heard and self._heard[0].start < oldest:
            self._heard.popleft()
        return self._heard[0].start if self._heard else None
