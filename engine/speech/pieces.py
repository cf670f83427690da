"""How a final's text is cut into the pieces a voice synthesises one at a time.

A final is split into sentences, and a sentence longer than ``clause_chars`` at clauses (short
clauses are joined to the next). The first sentence also begins with a short *lead*: the
first audio a listener hears waits for the first piece to be synthesised, and synthesis time
grows with length. After the lead come pieces of at most about twice, four times, ... its
length, so that each piece is synthesised while the ones before it play (a slow voice, such
as Kokoro, would otherwise fall silent after its short first piece). A cut falls at a clause
when one is near, else at a word; the voice's pause there is the price of audio starting
sooner.
"""

from __future__ import annotations

import re

_SENTENCE_END = re.compile(r"(?<=[.!?…。！？])\s+")
_CLAUSE_END = re.compile(r"(?<=[,;:，；：、—])\s+")
_SPOKEN = re.compile(r"\w")
_MIN_CLAUSE = 24
_MIN_LEAD = 12
_CLAUSE_SLACK = 16
"""A clause end up to this many characters past the limit is preferred to a word cut."""


def speech_pieces(text: str, clause_chars: int = 80, lead_chars: int = 48) -> list[list[str]]:
    """Split ``text`` into sentences, each a list of pieces to synthesise one at a time
    (module docstring). ``lead_chars`` is about the longest first piece; pieces after it
    double in length until they reach ``clause_chars``."""
    sentences = _with_silent_joined(
        [s.strip() for s in _SENTENCE_END.split(text.strip()) if s.strip()]
    )
    result: list[list[str]] = []
    for index, sentence in enumerate(sentences):
        lead: list[str] = []
        if index == 0:
            lead, sentence = _growing_lead(sentence, lead_chars, clause_chars)
        if len(sentence) <= clause_chars:
            result.append([*lead, sentence] if sentence else lead)
            continue
        result.append([*lead, *_clauses(sentence)])
    return result


def _with_silent_joined(parts: list[str]) -> list[str]:
    """``parts`` with what has nothing to say (only punctuation: the "»" after « bonjour. »)
    joined to the part before it, alone or at the head of the next: a voice cannot speak it
    alone, and it belongs to the sentence it closes."""
    joined: list[str] = []
    for part in parts:
        head, _, rest = part.partition(" ")
        if joined and not _SPOKEN.search(head):  # "» Puis ...": the quote closes the last one
            joined[-1] = f"{joined[-1]} {head}"
            part = rest.strip()
        if not part:
            continue
        if joined and not _SPOKEN.search(part):
            joined[-1] = f"{joined[-1]} {part}"
        else:
            joined.append(part)
    return joined


def _clauses(sentence: str) -> list[str]:
    """A long sentence cut at its clauses, each piece at least ``_MIN_CLAUSE`` long."""
    pieces: list[str] = []
    pending = ""
    for clause in _CLAUSE_END.split(sentence):
        pending = f"{pending} {clause}".strip()
        if len(pending) >= _MIN_CLAUSE:
            pieces.append(pending)
            pending = ""
    if pending:
        if pieces and len(pending) < _MIN_CLAUSE:
            pieces[-1] = f"{pieces[-1]} {pending}"
        else:
            pieces.append(pending)
    return pieces


def _growing_lead(sentence: str, lead_chars: int, clause_chars: int) -> tuple[list[str], str]:
    """Cut pieces of at most about ``lead_chars``, then twice that, ... off the front of
    ``sentence`` while the limit is below ``clause_chars``; return them and the rest."""
    pieces: list[str] = []
    limit = lead_chars
    while len(sentence) > limit and limit < clause_chars:
        cut, rest = _split_lead(sentence, limit)
        if not cut:
            break
        pieces.append(cut)
        sentence = rest
        limit *= 2
    return pieces, sentence


def _split_lead(sentence: str, limit: int) -> tuple[str, str]:
    """Cut a piece of about ``limit`` characters off ``sentence``: at a clause end if one
    lies near, else at the last word boundary before ``limit`` ("" when there is none, or
    when the rest would be too short to speak alone)."""
    low = min(_MIN_LEAD, limit // 2)
    for match in _CLAUSE_END.finditer(sentence):
        if low <= match.start() <= limit + _CLAUSE_SLACK:
            return sentence[: match.start()], sentence[match.end() :]
        if match.start() > limit + _CLAUSE_SLACK:
            break
    cut = sentence.rfind(" ", low, limit)
    if cut < 0 or len(sentence) - cut < _MIN_LEAD:
        return "", sentence
    return sentence[:cut], sentence[cut + 1 :]
