"""The recognition models a process has loaded, as one typed port for the session factory.

``transcribers`` maps a spoken language to its model; ``"*"`` stands for every other language
the multilingual model knows. The identifier (Whisper's language identification) is what
automatic language detection asks; without one, detection is refused.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from engine import languages
from engine.recognition.asr import LanguageIdentifier, Transcriber
from engine.recognition.config import RecognizerConfig
from engine.recognition.vad import VadModel
from engine.workers import WorkerPool


@dataclass(frozen=True, slots=True)
class Recognition:
    """Loaded, warmed recognition models and the one pool every call into them runs on."""

    transcribers: Mapping[str, Transcriber]
    vad: VadModel
    pool: WorkerPool
    config: Callable[[str], RecognizerConfig]
    """The recogniser's settings for a spoken language."""
    identifier: LanguageIdentifier | None = None

    def transcriber_for(self, language: str) -> Transcriber | None:
        """The model for ``language`` (a canonical code), or None if none can read it."""
        if not self.can_recognise(language):
            return None
        return self.transcribers.get(language) or self.transcribers.get("*")

    def can_recognise(self, code: str) -> bool:
        if code in self.transcribers:
            return True
        return (
            "*" in self.transcribers
            and languages.is_known(code)
            and bool(languages.get(code).whisper)
        )

    def languages(self) -> list[languages.Language]:
        """Languages a presenter may speak with these models."""
        if "*" in self.transcribers:
            return [lang for lang in languages.all_languages() if lang.whisper]
        return [languages.get(code) for code in self.transcribers if languages.is_known(code)]
