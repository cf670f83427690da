"""Which backend translates which language pair: the route table.

Computed once at start-up from what is installed and configured:

- Apertium directions (:func:`models.apertium.available_routes`, pivot chains included);
- the user's CTranslate2 models, ``{"en-de": "/path"}`` for one direction or ``{"*": "/path"}``
  for an NLLB/M2M100 model that covers every pair of the languages it knows;
- speech translation into English by Whisper (``task="translate"``) for every source language
  the multilingual model knows, except en (nothing to do) and zh, ja (unusable: BLEU below 3).

Preference for finals: Whisper-translate for X->en (about 6 BLEU better than
transcribe-then-Apertium for es->en, MODELS.md), else a user CT2 model, else Apertium.
Preference for drafts (each update of a segment is translated, so speed wins): Apertium, else
a CT2 model (greedy), else none: a Whisper-translate route without a text route shows the
source draft until the final.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from engine import languages

log = logging.getLogger(__name__)

BackendKind = Literal["apertium", "ct2", "whisper"]

WHISPER_TRANSLATE_EXCLUDED = frozenset({"en", "zh", "ja"})
"""Sources Whisper base cannot translate into English usefully (MODELS.md: BLEU below 3)."""

_APERTIUM_QUALITY = {
    ("en", "es"): "FLORES-200 devtest BLEU 12.1, chrF 44.1",
    ("es", "en"): "FLORES-200 devtest BLEU 11.9, chrF 46.5",
    ("en", "fr"): "FLORES-200 devtest BLEU 14.5, chrF 47.1",
    ("fr", "en"): "FLORES-200 devtest BLEU 15.2, chrF 49.1",
}
_WHISPER_QUALITY = {
    "de": "FLEURS BLEU 18.7",
    "fr": "FLEURS BLEU 7.4",
    "es": "FLEURS BLEU 13.1",
    "pt": "FLEURS BLEU 20.7",
}
_WHISPER_OVERALL = "FLEURS de/fr/es/pt->en: BLEU 15.2, chrF 44.8"


@dataclass(frozen=True, slots=True)
class Backend:
    """One translation engine: ``ref`` is the Apertium mode chain (``eng-spa+es-fr``), the
    CT2 model directory, or the Whisper model name."""

    kind: BackendKind
    ref: str

    @property
    def label(self) -> str:
        return f"{self.kind}:{self.ref}"

    def as_json(self) -> dict[str, str]:
        return {"kind": self.kind, "name": self.ref}


@dataclass(frozen=True, slots=True)
class TranslationRoute:
    """How ``source`` is translated into ``target``: drafts (fast; ``None``: not translated,
    the source draft shows until the final) and the final (best quality)."""

    source: str
    target: str
    draft_backend: Backend | None
    final_backend: Backend
    note: str

    @property
    def speech_final(self) -> bool:
        """The final comes from the segment's audio (Whisper-translate), not its text."""
        return self.final_backend.kind == "whisper"

    def as_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "target": self.target,
            "draft": self.draft_backend.as_json() if self.draft_backend else None,
            "final": self.final_backend.as_json(),
            "note": self.note,
        }


def quality_note(backend: Backend, source: str, target: str) -> str:
    """What is known about ``backend``'s quality for ``source -> target`` (MODELS.md)."""
    if backend.kind == "apertium":
        measured = _APERTIUM_QUALITY.get((source, target), "quality not measured here")
        return f"Apertium {backend.ref}: {measured}"
    if backend.kind == "whisper":
        measured = _WHISPER_QUALITY.get(source, _WHISPER_OVERALL)
        return f"Whisper {backend.ref} speech translation: {measured}"
    return f"CTranslate2 model {backend.ref}: the user's model, quality not measured here"


def _no_ct2_models(path: str) -> frozenset[str]:
    raise ValueError(f"no way to read the languages of {path} was given")


class RouteTable:
    """Every translatable pair with its backends; immutable once built."""

    def __init__(self, routes: Iterable[TranslationRoute], problems: Iterable[str] = ()) -> None:
        self._routes = {(r.source, r.target): r for r in routes}
        self.problems = tuple(problems)
        """Configured models that could not be used (shown to the operator, not fatal)."""

    @classmethod
    def build(
        cls,
        *,
        apertium: Iterable[tuple[str, str, list[str]]] = (),
        ct2: Mapping[str, str] | None = None,
        whisper_translate: str | None = None,
        ct2_languages: Callable[[str], frozenset[str]] | Mapping[str, frozenset[str]] = (
            _no_ct2_models
        ),
        problems: Iterable[str] = (),
    ) -> RouteTable:
        """The table for what is installed: ``apertium`` as
        :func:`models.apertium.available_routes` returns it, ``ct2`` the user's models
        (``{"en-de": path}`` or ``{"*": path}``) with ``ct2_languages`` giving the languages
        of each model path, ``whisper_translate`` the multilingual Whisper model that
        translates speech into English (``"base"``; ``None``: off). ``problems``: configured
        models already found unusable (:func:`models.translators.installed_routes`)."""
        if isinstance(ct2_languages, Mapping):
            ct2_languages = ct2_languages.__getitem__
        text: dict[tuple[str, str], dict[str, Backend]] = {}
        problems = list(problems)
        for source, target, modes in apertium:
            text.setdefault((source, target), {})["apertium"] = Backend("apertium", "+".join(modes))
        for key, path in (ct2 or {}).items():
            try:
                pairs = _ct2_pairs(key, path, ct2_languages)
            except (ValueError, KeyError) as exc:
                log.warning("CTranslate2 model %s for %r not used: %s", path, key, exc)
                problems.append(f"{key}: {path}: {exc}")
                continue
            for pair in pairs:
                # A model for one pair wins over a multi-pair one listed for the same pair.
                if key != "*" or "ct2" not in text.get(pair, {}):
                    text.setdefault(pair, {})["ct2"] = Backend("ct2", path)
        wanted = set(text)
        if whisper_translate is not None:
            wanted |= {(code, "en") for code in whisper_sources()}
        routes = []
        for source, target in sorted(wanted):
            found = text.get((source, target), {})
            draft = found.get("apertium") or found.get("ct2")
            if whisper_translate is not None and target == "en" and source in whisper_sources():
                final = Backend("whisper", whisper_translate)
            else:
                final = found.get("ct2") or found["apertium"]
            note = f"final: {quality_note(final, source, target)}; draft: " + (
                quality_note(draft, source, target) if draft else "none (source shown)"
            )
            routes.append(TranslationRoute(source, target, draft, final, note))
        return cls(routes, problems)

    def lookup(self, source: str, target: str) -> TranslationRoute | None:
        """The route for a pair (codes in any form :func:`languages.normalise` accepts)."""
        try:
            key = (languages.normalise(source), languages.normalise(target))
        except languages.UnknownLanguage:
            return None
        return self._routes.get(key)

    def targets(self, source: str) -> list[str]:
        """Every language ``source`` can be translated into, sorted."""
        try:
            code = languages.normalise(source)
        except languages.UnknownLanguage:
            return []
        return sorted(t for s, t in self._routes if s == code)

    def sources(self) -> list[str]:
        return sorted({s for s, _ in self._routes})

    def as_json(self) -> dict[str, Any]:
        """The table for the API and the home page: routes with their quality notes."""
        return {
            "routes": [route.as_json() for route in self],
            "problems": list(self.problems),
        }

    def __iter__(self) -> Iterator[TranslationRoute]:
        return iter(sorted(self._routes.values(), key=lambda r: (r.source, r.target)))

    def __len__(self) -> int:
        return len(self._routes)


def whisper_sources() -> frozenset[str]:
    """Source languages Whisper-translate serves: every language of the table Whisper knows,
    except English and the excluded ones."""
    return frozenset(
        lang.code
        for lang in languages.all_languages()
        if lang.whisper is not None and lang.code not in WHISPER_TRANSLATE_EXCLUDED
    )


def _ct2_pairs(
    key: str, path: str, ct2_languages: Callable[[str], frozenset[str]]
) -> list[tuple[str, str]]:
    known = sorted(ct2_languages(path))  # also checks the directory holds a usable model
    if key.strip() == "*":
        if len(known) < 2:
            raise ValueError("a '*' model must be multilingual (NLLB or M2M100)")
        return [(s, t) for s in known for t in known if s != t]
    source, sep, target = key.partition("-")
    if not sep:
        raise ValueError(f"expected 'source-target' or '*', got {key!r}")
    pair = (languages.normalise(source), languages.normalise(target))
    if pair[0] == pair[1]:
        raise ValueError(f"{key!r} translates a language into itself")
    return [pair]
