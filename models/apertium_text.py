"""Text to and from Apertium's stream format, and the shaping of what comes back.

A request is one line: whitespace and control characters collapse to spaces, and the
characters the format reserves travel backslash-escaped (:func:`escape`, :func:`unescape`).
What a chain gives back is tidied for the target language's typography, cleared of
unknown-word marks and given the source's initial capital; Spanish gets the opening
``¿``/``¡`` Apertium leaves out. Long text goes in requests of whole sentences
(:func:`pack_requests`).
"""

from __future__ import annotations

import re

# Longest text sent in one request; longer sentences are cut at a space. Keeps every request's
# memory and time bounded (Apertium needs about 1 ms per 20 characters here).
MAX_REQUEST_CHARS = 2000

# Characters that Apertium's stream format reserves; each is sent backslash-escaped.
_RESERVED = frozenset("\\^$/@[]<>{}")
_UNKNOWN_MARKS = "*#@"
# lrx-proc (lexical selection) reads an escaped caret as the start of a word and looks for its
# closing "$": a "\\^" with no word after it swallows the request's NUL and the chain hangs.
# Carets therefore travel as a private-use character, which every stage passes as a blank.
_CARET_STAND_IN = "\ue000"


def flatten(text: str) -> str:
    """``text`` on one line: control characters and runs of whitespace become single spaces."""
    return " ".join("".join(" " if _is_control(ch) else ch for ch in text).split())


def escape(text: str) -> str:
    """``text`` as one request line of Apertium's stream format: whitespace and control
    characters collapsed to single spaces, reserved characters backslash-escaped, ``~`` kept
    as a superblank (Apertium has no escape for it), ``^`` sent as a stand-in character."""
    flat = flatten(text)
    out: list[str] = []
    for ch in flat:
        if ch == "^":
            out.append(_CARET_STAND_IN)
        elif ch == _CARET_STAND_IN:
            continue
        elif ch == "~":
            out.append("[~]")
        elif ch in _RESERVED:
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)


def _is_control(ch: str) -> bool:
    code = ord(ch)
    return code < 0x20 or 0x7F <= code < 0xA0 or ch in "\u2028\u2029"


def unescape(stream: str) -> str:
    """Plain text from a chain's output: unescaped ``[`` and ``]`` (superblank brackets)
    dropped, backslash escapes resolved, carets restored."""
    out: list[str] = []
    chars = iter(stream)
    for ch in chars:
        if ch == "\\":
            out.append(next(chars, ""))
        elif ch == _CARET_STAND_IN:
            out.append("^")
        elif ch not in "[]":
            out.append(ch)
    return "".join(out)


_SPACE_BEFORE = re.compile(r"\s+([,.;:!?%…)\]}»”])")
_SPACE_AFTER = re.compile(r"([(\[{¿¡«“])\s+")
# French typography keeps a space before ; : ! ? » and after «.
_SPACE_BEFORE_FR = re.compile(r"\s+([,.%…)\]}”])")
_SPACE_AFTER_FR = re.compile(r"([(\[{“])\s+")


def tidy(text: str, target: str) -> str:
    """Collapse repeated spaces and remove spaces before closing punctuation (and after
    opening punctuation), keeping French spacing for ``target == "fr"``."""
    text = " ".join(text.split())
    if target == "fr":
        return _SPACE_AFTER_FR.sub(r"\1", _SPACE_BEFORE_FR.sub(r"\1", text))
    return _SPACE_AFTER.sub(r"\1", _SPACE_BEFORE.sub(r"\1", text))


def drop_unknown_marks(output: str, source: str) -> str:
    """Remove Apertium's unknown-word marks (``*``, ``#``, ``@`` before a word).

    The chains run with ``-n`` so marks should not appear; a mark character that also occurs
    in the source text is kept, since there it is more likely the speaker's own."""
    for mark in _UNKNOWN_MARKS:
        if mark not in source and mark in output:
            output = re.sub(rf"(?<!\w){re.escape(mark)}(?=\w)", "", output)
    return output


def match_initial_case(output: str, source: str) -> str:
    """Upper-case the first letter of ``output`` when the source's first letter is upper-case
    (Apertium sometimes moves the capital: ``She doesn't`` -> ``no Le gusta``)."""
    first_src = next((ch for ch in source if ch.isalpha()), "")
    for index, ch in enumerate(output):
        if ch.isalpha():
            if first_src.isupper() and ch.islower():
                return output[:index] + ch.upper() + output[index + 1 :]
            return output
    return output


_SENTENCE_END = re.compile(r"(?<=[.!?…。！？])[\"'”’»)\]]*\s+")
_OPENING = "\"'“‘«([—-– "


def split_sentences(text: str) -> list[str]:
    """``text`` cut after sentence-final punctuation (and any closing quotes) and a space."""
    pieces: list[str] = []
    start = 0
    for match in _SENTENCE_END.finditer(text):
        pieces.append(text[start : match.end()].strip())
        start = match.end()
    pieces.append(text[start:].strip())
    return [piece for piece in pieces if piece]


def pack_requests(text: str, max_chars: int = MAX_REQUEST_CHARS) -> list[str]:
    """``text`` as few request lines of at most ``max_chars`` as whole sentences allow; a
    sentence longer than that is cut at its last space before the limit (or at the limit).

    Whole lines are faster than one request per sentence (one round trip instead of several)
    and translate identically on FLORES-200, since Apertium's own stages work sentence by
    sentence; the limit keeps each request's time and memory bounded."""
    requests: list[str] = []
    current = ""
    for sentence in split_sentences(text):
        while len(sentence) > max_chars:
            cut = sentence.rfind(" ", 0, max_chars + 1)
            cut = cut if cut > 0 else max_chars
            head, sentence = sentence[:cut].strip(), sentence[cut:].strip()
            if current:
                requests.append(current)
                current = ""
            requests.append(head)
        if current and len(current) + 1 + len(sentence) > max_chars:
            requests.append(current)
            current = ""
        current = f"{current} {sentence}" if current else sentence
    if current:
        requests.append(current)
    return requests


def restore_inverted_marks(text: str) -> str:
    """Spanish: put the opening ``¿``/``¡`` Apertium leaves out at the start of each sentence
    that ends with ``?``/``!`` and has none."""
    out: list[str] = []
    for sentence in split_sentences(text):
        end = sentence.rstrip("\"'”’»)]")
        for closing, opening in (("?", "¿"), ("!", "¡")):
            if end.endswith(closing) and opening not in sentence:
                lead = len(sentence) - len(sentence.lstrip(_OPENING))
                sentence = sentence[:lead] + opening + sentence[lead:]
        out.append(sentence)
    return " ".join(out)
