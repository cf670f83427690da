"""A session's term list: names, products and jargon given before or during the talk.

A term is a word or phrase as it must be written (``TeamViewer``), optionally with a fixed
translation per language. Terms do two things (docs/protocol.md, "Terms and corrections"):

- they bias recognition: the list, cut to a character budget, is given to Whisper as hint
  text (faster-whisper's hotwords, or the prompt where a decode forces a prefix, since
  faster-whisper drops hotwords then);
- terms with translations fix those translations: they join the session's glossary
  (engine/translation/text.py), and win over a glossary entry for the same source term.

Pure: parsing, limits and the derived glossary and hint, with no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from engine import languages

MAX_TERMS = 200
MAX_TERM_CHARS = 100
HINT_CHARS = 200
"""The most characters of terms given to Whisper as hint text: with the recogniser's own
prompt (``RecognizerConfig.prompt_chars``) it stays well inside the decoder's prompt budget
(half of Whisper's 448 tokens)."""


class TermError(ValueError):
    """A term list that cannot be taken; the message says why, to a person."""


@dataclass(frozen=True, slots=True)
class Term:
    """One term: ``text`` as it must be written, and its fixed translations as sorted
    ``(language, text)`` pairs (hashable, so an event that carries terms can be cached)."""

    text: str
    translations: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of(cls, text: str, translations: Mapping[str, str] | None = None) -> Term:
        return cls(text, tuple(sorted((translations or {}).items())))

    @property
    def translation_map(self) -> dict[str, str]:
        return dict(self.translations)

    def as_json(self) -> str | dict[str, Any]:
        """The wire form: the bare text, or ``{"text", "translations"}``."""
        if not self.translations:
            return self.text
        return {"text": self.text, "translations": self.translation_map}


def _text(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise TermError(f"{what} must be a string")
    text = " ".join(value.split())
    if not 0 < len(text) <= MAX_TERM_CHARS:
        raise TermError(f"{what} must have 1-{MAX_TERM_CHARS} characters")
    return text


def parse_term(value: object) -> Term:
    """``"TeamViewer"`` or ``{"text": "churn", "translations": {"es": "bajas"}}``."""
    if isinstance(value, str):
        return Term(_text(value, "a term"))
    if not isinstance(value, dict):
        raise TermError("a term is a string or an object with text and translations")
    unknown = set(value) - {"text", "translations"}
    if unknown:
        raise TermError(f"unknown term fields: {', '.join(sorted(unknown))}")
    text = _text(value.get("text"), "a term's text")
    raw = value.get("translations", {})
    if not isinstance(raw, dict):
        raise TermError("a term's translations map language codes to text")
    translations: dict[str, str] = {}
    for lang, target in raw.items():
        if not isinstance(lang, str) or not languages.is_known(lang):
            raise TermError(f"unknown language {lang!r} in the translations of {text!r}")
        translations[languages.normalise(lang)] = _text(target, f"the {lang} of {text!r}")
    return Term.of(text, translations)


def parse_terms(value: object) -> tuple[Term, ...]:
    """A term list from its JSON form (a list of terms); a term given twice (in any case)
    keeps its first place and its last translations. Raises :class:`TermError`."""
    if not isinstance(value, list):
        raise TermError("terms must be a list")
    if len(value) > MAX_TERMS:
        raise TermError(f"at most {MAX_TERMS} terms")
    by_key: dict[str, Term] = {}
    for item in value:
        term = parse_term(item)
        key = term.text.casefold()
        earlier = by_key.get(key)
        if earlier is not None:
            term = Term.of(earlier.text, {**earlier.translation_map, **term.translation_map})
        by_key[key] = term
    return tuple(by_key.values())


def parse_pasted(text: str) -> tuple[Term, ...]:
    """Terms from a pasted list, one a line or separated by commas or semicolons; a line
    ``churn = es: bajas, fr: attrition`` gives translations (the console's paste box)."""
    items: list[object] = []
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        if "=" in line:
            source, _, rest = line.partition("=")
            translations = {}
            for pair in rest.replace(";", ",").split(","):
                lang, colon, target = pair.partition(":")
                if colon and lang.strip() and target.strip():
                    translations[lang.strip()] = target.strip()
            items.append({"text": source, "translations": translations})
        else:
            items.extend(part for part in line.replace(";", ",").split(",") if part.strip())
    return parse_terms(items)


def terms_json(terms: Iterable[Term]) -> list[str | dict[str, Any]]:
    return [term.as_json() for term in terms]


def dumps(terms: Iterable[Term]) -> str:
    """How stores keep a term list (JSON)."""
    return json.dumps(terms_json(terms), ensure_ascii=False, separators=(",", ":"))


def loads(text: str | bytes | None) -> tuple[Term, ...]:
    """Inverse of :func:`dumps`; nothing stored is an empty list."""
    return () if not text else parse_terms(json.loads(text))


def with_term(terms: Sequence[Term], term: Term) -> tuple[Term, ...]:
    """``terms`` with ``term`` added at the end (or merged into the same term)."""
    return parse_terms([*terms_json(terms), term.as_json()])


def glossary_with(
    glossary: Mapping[str, Mapping[str, str]], terms: Iterable[Term]
) -> dict[str, dict[str, str]]:
    """The glossary a session translates with: ``glossary`` (``PUT .../glossary``) and the
    terms' fixed translations, which win over a glossary entry for the same term."""
    merged = {lang: dict(entries) for lang, entries in glossary.items()}
    for term in terms:
        for lang, target in term.translations:
            entries = merged.setdefault(lang, {})
            for source in [s for s in entries if s.casefold() == term.text.casefold()]:
                del entries[source]
            entries[term.text] = target
    return merged


def recognition_hint(terms: Iterable[Term], budget: int = HINT_CHARS) -> str:
    """The terms as Whisper hint text, ``"TeamViewer, churn."``: whole terms in list order,
    as many as fit in ``budget`` characters (the list's first terms matter most), closed by
    a full stop so that the decode starts a sentence of its own rather than going on with
    the list (without it, the first words of the earnings call came out garbled: "wheel.
    Gathered to review"; docs/metrics.md, "Terms")."""
    hint = ""
    for term in terms:
        candidate = f"{hint}, {term.text}" if hint else term.text
        if len(candidate) + 1 > budget:
            continue
        hint = candidate
    return f"{hint}." if hint and not hint.endswith((".", "!", "?")) else hint
