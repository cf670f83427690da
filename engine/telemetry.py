"""What the pipeline reports about itself, without knowing who listens (Prometheus in app/)."""

from __future__ import annotations

import contextvars
from typing import Protocol

from engine.events import Caption

session_code: contextvars.ContextVar[str] = contextvars.ContextVar("session_code", default="-")
"""The session a log line belongs to; worker threads inherit it (engine/workers.py)."""


class Observer(Protocol):
    """Receives measurements as they happen; every method must be cheap and never raise."""

    def caption(self, caption: Caption, latency: float | None) -> None:
        """A caption was published ``latency`` seconds after the audio (source) or the
        source caption (translation) it renders; ``None`` when unknown (backfill)."""
        ...

    def model_call(self, pool: str, seconds: float) -> None: ...

    def first_audio(self, lang: str, seconds: float) -> None:
        """A final translation's first spoken audio was published ``seconds`` after the
        final was handed to the speech stage."""
        ...

    def error(self, kind: str) -> None: ...


class NullObserver:
    def caption(self, caption: Caption, latency: float | None) -> None:
        pass

    def model_call(self, pool: str, seconds: float) -> None:
        pass

    def first_audio(self, lang: str, seconds: float) -> None:
        pass

    def error(self, kind: str) -> None:
        pass
