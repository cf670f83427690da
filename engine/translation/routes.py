"""Which backend translates which language pair: the route table.

Computed once at start-up from what is installed and configured:

- Apertium directions (:func:`models.apertium_modes.available_routes`, pivot chains included);
- the user's CTranslate2 models, ``{"en-de": "/path"}`` for one direction or ``{"*": "/path"}``
  for an NLLB/M2M100 model that covers every pair of the languages it knows;
- speech translation into English by Whisper (``task="translate"``) for every source language
  the multilingual model knows, except en (nothing to do) and zh, ja (unusable: BLEU below 3).

Preference for finals: the best measured route of the pair (``python -m bench routes``,
shipped as models/route_quality.json), else a user CT2 model, else Whisper-translate for
X->en, else Apertium.
Preference for drafts (each update of a segment is translated, so speed wins): Apertium, else
a CT2 model (greedy), else none: a Whisper-translate route without a text route drafts from
speech, a greedy decode of the open sentence's audio so far (engine/translation/stage.py).
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


@dataclass(frozen=True, slots=True)
class Quality:
    """What a route measured (``python -m bench routes``): corpus BLEU and chrF over
    ``clips`` clips of ``set``."""

    bleu: float
    chrf: float
    clips: int
    set: str = ""


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
class Candidate:
    """A backend that could make a pair's finals, with what it measured (None: not
    measured here)."""

    backend: Backend
    quality: Quality | None = None

    def as_json(self, default: bool) -> dict[str, Any]:
        quality = self.quality
        return {
            **self.backend.as_json(),
            "bleu": None if quality is None else quality.bleu,
            "chrf": None if quality is None else quality.chrf,
            "clips": None if quality is None else quality.clips,
            "default": default,
        }


@dataclass(frozen=True, slots=True)
class TranslationRoute:
    """How ``source`` is translated into ``target``: drafts (fast; ``None``: not translated,
    the source draft shows until the final) and the final (the best measured candidate)."""

    source: str
    target: str
    draft_backend: Backend | None
    final_backend: Backend
    note: str
    candidates: tuple[Candidate, ...] = ()

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
            "candidates": [c.as_json(c.backend == self.final_backend) for c in self.candidates],
        }

    @property
    def final_quality(self) -> Quality | None:
        """What the default final route measured, if it was measured."""
        return next((c.quality for c in self.candidates if c.backend == self.final_backend), None)


_NAMES = {"apertium": "Apertium", "whisper": "Whisper", "ct2": "CTranslate2 model"}


def describe(candidate: Candidate) -> str:
    """A candidate and its measured quality, for people (``GET /api/routes``, the home page)."""
    backend = candidate.backend
    what = f"{_NAMES[backend.kind]} {backend.ref}"
    if backend.kind == "whisper":
        what += " speech translation"
    quality = candidate.quality
    if quality is None:
        return f"{what}: not measured here"
    return (
        f"{what}: BLEU {quality.bleu:.1f}, chrF {quality.chrf:.1f} ({quality.clips} FLEURS clips)"
    )


def choose_final(candidates: Iterable[Candidate]) -> Candidate:
    """The default final route: the best measured chrF when every candidate was measured;
    otherwise (a user's CTranslate2 model nobody measured, a pair without clips) the fixed
    order Whisper-translate, CTranslate2, Apertium."""
    ordered = sorted(candidates, key=lambda c: ("whisper", "ct2", "apertium").index(c.backend.kind))
    if all(c.quality is not None for c in ordered):
        return max(ordered, key=lambda c: c.quality.chrf if c.quality else 0.0)
    return ordered[0]


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
        measured: Mapping[tuple[str, str, str], Quality] | None = None,
    ) -> RouteTable:
        """The table for what is installed: ``apertium`` as
        :func:`models.apertium_modes.available_routes` returns it, ``ct2`` the user's models
        (``{"en-de": path}`` or ``{"*": path}``) with ``ct2_languages`` giving the languages
        of each model path, ``whisper_translate`` the multilingual Whisper model that
        translates speech into English (``"base"``; ``None``: off). ``problems``: configured
        models already found unusable (:func:`models.translators.installed_routes`).
        ``measured``: ``(source, target, backend kind) -> Quality`` (``bench routes``): each
        pair's default final route is its best measured one (:func:`choose_final`)."""
        measured = measured or {}
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
            found = dict(text.get((source, target), {}))
            draft = found.get("apertium") or found.get("ct2")
            if whisper_translate is not None and target == "en" and source in whisper_sources():
                found["whisper"] = Backend("whisper", whisper_translate)
            candidates = tuple(
                Candidate(backend, measured.get((source, target, kind)))
                for kind, backend in found.items()
            )
            final = choose_final(candidates)
            others = [describe(c) for c in candidates if c is not final]
            note = f"final: {describe(final)}; draft: " + (
                f"{_NAMES[draft.kind]} {draft.ref}" if draft else "from speech (greedy)"
            )
            if others:
                note += "; also measured: " + "; ".join(others)
            routes.append(TranslationRoute(source, target, draft, final.backend, note, candidates))
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
