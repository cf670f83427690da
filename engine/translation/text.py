"""Pure text steps of translation: draft stabilisation and the glossary.

Both are free of I/O so they can be unit-tested with scripted strings.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from engine import languages


@dataclass(frozen=True, slots=True)
class Stabilised:
    """A draft translation as shown: ``text``, of which the first ``stable`` characters
    agreed with the previously shown draft of the same segment."""

    text: str
    stable: int


def stabilise(
    previous: str, translation: str, *, hold_back: int, final: bool = False
) -> Stabilised:
    """What to show for a new draft translation of a segment, given what was shown before.

    The words the new translation shares with the previous one, from the start, are stable
    (two consecutive translations agree on them, as LocalAgreement does for ASR). Of the rest,
    the last ``hold_back`` words are held back (they change most often) unless the segment is
    final; the shown text never shrinks below the stable prefix.
    """
    new = translation.split()
    old = previous.split()
    common = 0
    while common < min(len(old), len(new)) and old[common] == new[common]:
        common += 1
    visible = len(new) if final or hold_back <= 0 else max(common, len(new) - hold_back)
    text = " ".join(new[:visible])
    return Stabilised(text, min(len(" ".join(new[:common])), len(text)))


PLACEHOLDER_BASE = 0xE100
"""Glossary placeholders are private-use characters U+E100-U+E1FF. Apertium passes them through
unchanged as blanks (checked on eng-spa and the eng-spa+es-fr chain); U+E000 is avoided since
models.apertium_text uses it for carets."""
_MAX_PLACEHOLDERS = 256
_ANY_PLACEHOLDER = re.compile(f"[{chr(PLACEHOLDER_BASE)}-{chr(PLACEHOLDER_BASE + 255)}]")


@dataclass(frozen=True, slots=True)
class Terms:
    """The glossary of one target language: source terms and what they must become."""

    pairs: tuple[tuple[str, str], ...]
    pattern: re.Pattern[str]

    @classmethod
    def of(cls, mapping: Mapping[str, str]) -> Terms | None:
        pairs = tuple(
            sorted(
                ((s.strip(), t.strip()) for s, t in mapping.items() if s.strip() and t.strip()),
                key=lambda pair: -len(pair[0]),
            )
        )
        if not pairs:
            return None
        # Longest term first, whole words only (terms may hold punctuation: "C++").
        alternatives = "|".join(re.escape(source) for source, _ in pairs)
        return cls(pairs, re.compile(rf"(?<!\w)(?:{alternatives})(?!\w)", re.IGNORECASE))

    def target_for(self, found: str) -> str:
        folded = found.casefold()
        return next(t for s, t in self.pairs if s.casefold() == folded)

    def protect(self, text: str) -> tuple[str, tuple[str, ...]]:
        """``text`` with each source term replaced by a placeholder, and the target term of
        each placeholder in order (placeholder ``i`` is ``chr(PLACEHOLDER_BASE + i)``)."""
        slots: list[str] = []

        def swap(match: re.Match[str]) -> str:
            if len(slots) >= _MAX_PLACEHOLDERS:
                return match.group(0)
            slots.append(self.target_for(match.group(0)))
            return chr(PLACEHOLDER_BASE + len(slots) - 1)

        return self.pattern.sub(swap, _ANY_PLACEHOLDER.sub("", text)), tuple(slots)

    def restore(self, translated: str, slots: tuple[str, ...]) -> str:
        """Placeholders in a translation replaced by their target terms (stray ones dropped)."""

        def swap(match: re.Match[str]) -> str:
            index = ord(match.group(0)) - PLACEHOLDER_BASE
            return slots[index] if index < len(slots) else ""

        return " ".join(_ANY_PLACEHOLDER.sub(swap, translated).split())

    def substitute(self, text: str) -> str:
        """Source terms in ``text`` replaced by their target terms directly (for backends that
        cannot pass placeholders, and for names a backend left untranslated)."""
        return self.pattern.sub(lambda m: self.target_for(m.group(0)), text)

    def hint(self) -> str:
        """The target terms as a prompt hint (Whisper spells words it saw in its prompt)."""
        return ", ".join(dict.fromkeys(t for _, t in self.pairs))


class Glossary:
    """``{target_lang: {source_term: target_term}}``, applied to drafts and finals."""

    def __init__(self, terms: Mapping[str, Mapping[str, str]] | None = None) -> None:
        self._by_target: dict[str, Terms] = {}
        for lang, mapping in (terms or {}).items():
            built = Terms.of(mapping)
            if built is not None:
                self._by_target[languages.normalise(lang)] = built

    def for_target(self, lang: str) -> Terms | None:
        return self._by_target.get(lang)

    def __bool__(self) -> bool:
        return bool(self._by_target)
