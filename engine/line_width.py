"""How wide text is on a subtitle line, and where it may break: the rules of the caption
pages (static/js/line-breaks.js) for the transcript's subtitle cues (engine/transcript.py).

- A character takes one column, or two where it is wide (a kanji, kana or hangul syllable:
  East Asian width W or F), as on screen, so a 42-column line holds about 21 of them.
- Japanese and Chinese put no spaces between words: their text may break between any two
  characters (there is no word dictionary here, unlike the pages), never before a closing
  mark or small kana nor after an opening mark. No space is put between two words where
  either side is such a character. Korean keeps its spaces.
- A word wider than a line (a URL) is cut into pieces of about equal width; a cut never
  separates a combining mark from the character it modifies.
"""

from __future__ import annotations

import unicodedata

# Scripts written without spaces: CJK ideographs, kana, and their punctuation and full-width
# forms (as code point ranges, inclusive).
_UNSPACED = (
    (0x3000, 0x30FF),  # CJK symbols and punctuation, hiragana, katakana
    (0x31F0, 0x31FF),  # katakana phonetic extensions
    (0x3400, 0x4DBF),  # CJK extension A
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
    (0xFF01, 0xFF9F),  # full-width forms, half-width katakana
    (0x20000, 0x3FFFF),  # CJK extensions B and later
)
# A line starts with none of these (they close what comes before) and ends with none of the
# openers.
_NO_LINE_START = frozenset(
    "、。，．・：；？！）」』】〕〉》”’ーぁぃぅぇぉっゃゅょゎァィゥェォッャュョヮヵヶ…‥.,;:!?)]}%"
)
_NO_LINE_END = frozenset("（「『【〔〈《“‘([{")


def unspaced(char: str) -> bool:
    """Whether ``char`` belongs to a script written without spaces between words."""
    code = ord(char)
    return any(low <= code <= high for low, high in _UNSPACED)


def width(text: str) -> int:
    """Columns ``text`` takes on a line."""
    return sum(2 if unicodedata.east_asian_width(char) in "WF" else 1 for char in text)


def spaced(before: str, after: str) -> bool:
    """Whether two words written one after the other take a space between them."""
    return not (before and unspaced(before[-1])) and not (after and unspaced(after[0]))


def join(words: list[str]) -> str:
    """``words`` as the text of one line."""
    text = ""
    for i, word in enumerate(words):
        text += f" {word}" if i > 0 and spaced(words[i - 1], word) else word
    return text


def words(text: str, max_columns: int) -> list[str]:
    """Words of ``text``, each at most ``max_columns`` wide: text without spaces is cut
    between its characters (keeping marks with their word), a wider word into pieces."""
    result: list[str] = []
    for piece in text.split():
        parts = _split_unspaced(piece) if any(map(unspaced, piece)) else [piece]
        for part in parts:
            result.extend(_cut(part, max_columns))
    return result


def _split_unspaced(piece: str) -> list[str]:
    parts: list[str] = []
    opening = ""
    for char in piece:
        if char in _NO_LINE_END:
            opening += char
        elif (
            parts
            and not opening
            and (char in _NO_LINE_START or not (unspaced(char) or unspaced(parts[-1][-1])))
        ):
            parts[-1] += char  # a closing mark, or a run of other characters goes on
        else:
            parts.append(opening + char)
            opening = ""
    if opening:
        if parts:
            parts[-1] += opening
        else:
            parts.append(opening)
    return parts


def _cut(word: str, max_columns: int) -> list[str]:
    pieces: list[str] = []
    while width(word) > max_columns:
        count = -(-width(word) // max_columns)
        goal = -(-width(word) // count)
        cut, used = 0, 0
        while cut < len(word) and used + width(word[cut]) <= goal:
            used += width(word[cut])
            cut += 1
        base = cut
        while base > 0 and unicodedata.combining(word[base]):
            base -= 1
        cut = base or max(cut, 1)
        pieces.append(word[:cut])
        word = word[cut:]
    pieces.append(word)
    return pieces
