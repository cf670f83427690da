"""One translation call of the stage: a text through a backend, or speech through Whisper.

Both apply the presenter's glossary (engine/translation/text.py): a text backend that passes
placeholders through gets the terms protected, any other has them substituted before and
after; a speech decode is given the terms as hint text, with the words a person's correction
brought, and the previous translation as its prompt (engine/translation/prompted.py). The
stage's drafts (engine/translation/drafts.py), finals (engine/translation/finals.py) and
re-makes (engine/translation/corrections.py) call them alike.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np

from engine.translation.backends import PooledTranslator, WhisperTranslate
from engine.translation.config import TranslationConfig, TranslationStats
from engine.translation.lane import Lane
from engine.translation.prompted import Misled, translate_prompted
from engine.translation.text import Glossary, Terms


class TranslationCalls:
    """The stage's ways to translate, with the glossary in force."""

    def __init__(
        self,
        config: TranslationConfig,
        stats: TranslationStats,
        *,
        whisper: WhisperTranslate | None = None,
        whisper_drafts: WhisperTranslate | None = None,
        glossary: Glossary | Mapping[str, Mapping[str, str]] | None = None,
    ) -> None:
        self._config = config
        self._stats = stats
        self._whisper = whisper
        self._whisper_drafts = whisper_drafts
        self._glossary = glossary if isinstance(glossary, Glossary) else Glossary(glossary)

    @property
    def speech(self) -> bool:
        """Whether speech can be translated for a final."""
        return self._whisper is not None

    @property
    def speech_drafts(self) -> bool:
        """Whether speech can be translated for a draft (a fast decode)."""
        return self._whisper_drafts is not None

    def set_glossary(self, glossary: Mapping[str, Mapping[str, str]]) -> None:
        """Replace the presenter's glossary; applies to every call from now on."""
        self._glossary = Glossary(glossary)

    async def translate_speech(
        self,
        lane: Lane,
        audio: np.ndarray,
        taught: Iterable[str] = (),
        *,
        draft: bool = False,
        prefix: str = "",
    ) -> str:
        """``audio`` translated by Whisper (its fast decode for a ``draft``), beginning with
        ``prefix``, after the lane's previous translation; ``taught``: words a person's
        correction brought (names, numbers), given as hint text with the glossary's."""
        whisper = self._whisper_drafts if draft else self._whisper
        if whisper is None:
            raise RuntimeError(f"no Whisper decode for speech into {lane.target}")
        terms = self._glossary.for_target(lane.target)
        hints = ", ".join([*(taught or ()), *([terms.hint()] if terms else [])])
        made = await translate_prompted(
            whisper,
            audio,
            hints=hints,
            previous=lane.previous_translation,
            prefix=prefix,
            rules=self._config.prompt,
            weigh=not draft,
        )
        if made.misled is Misled.ECHO and not draft:
            self._stats.finals_echoed += 1
        if made.misled is Misled.UNSURE:
            self._stats.finals_unprompted += 1
        text = made.text
        return terms.substitute(text) if terms else text

    async def translate_text(
        self, backend: PooledTranslator, target: str, text: str, context: str | None = None
    ) -> str:
        """``text`` translated into ``target`` by ``backend``, after ``context`` where the
        backend uses it."""
        terms: Terms | None = self._glossary.for_target(target)
        if terms is None:
            return await backend.translate(text, context)
        if backend.translator.passes_placeholders:
            protected, slots = terms.protect(text)
            return terms.restore(await backend.translate(protected, context), slots)
        return terms.substitute(await backend.translate(terms.substitute(text), context))
