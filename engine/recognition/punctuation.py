"""Which segment ends are sentence ends, and how a segment that continues a sentence begins.

Whisper decodes each segment as if it were a whole utterance: a segment cut at a breath still
ends with a full stop, and the next one starts with a capital ("Further. More of financial
profile"). Two rules undo that where the speaker only paused:

- A segment's final keeps its trailing sentence punctuation only if it ends a sentence: its
  last word is not a word that cannot end one (an article, a preposition, a conjunction, a
  subject pronoun, an auxiliary: ``CONTINUATIONS``), and the pause after it agrees: the
  recogniser holds such a final until the pause has lasted ``sentence_pause_s`` (the
  sentence ended) or the speaker goes on (it did not). Otherwise the mark is dropped (a
  question mark too, with the "¿" that opened the segment's question: ``running_on``).
- A final that continues a sentence begins in lower case, unless its first word needs a
  capital (``I``, a word with capitals inside). Whisper's own capital says nothing there:
  its decode heard the text before it as decoded, false full stop included (shaping what
  the decoder hears cost words: docs/metrics.md, "Sentence breaks"). Spanish opens a
  question or an exclamation with "¿" or "¡", and one that begins inside a sentence begins
  in lower case after its mark ("Si vienes, ¿qué haremos?"); a continuation that opens one
  and never closes it ("se concentró" + "¿Qué no todos pudieron entrar.") was decoded as a
  question only because Whisper heard it alone, so the mark goes too.

Pure text rules; the recogniser applies them when it closes a segment, holding each final
for its pause (engine/recognition/sentence_hold.py). docs/metrics.md, "Sentence breaks",
measured them.
"""

from __future__ import annotations

import re

from engine.recognition.policy import SENTENCE_END

CONTINUATIONS: dict[str, frozenset[str]] = {
    "en": frozenset(
        """a an the and or but nor because although if unless whether which whom whose
        while than of at in on to for from by with into onto about between during across
        among our my your their its we i they he she very every per via is are was were be
        been being am have has had do does did will would shall should can could may might
        must""".split()
    ),
    "es": frozenset(
        """el la los las un una unos unas y o pero ni que de del a al en con por para sin
        sobre entre hasta desde hacia según como cuando donde si porque aunque mientras mi
        mis tu tus su sus nuestro nuestra nuestros nuestras muy ha han he hemos""".split()
    ),
    "fr": frozenset(
        """le la les l un une des du de d et ou mais ni que qu à au aux en dans avec pour par
        sans sur sous entre vers chez comme quand si parce lorsque mon ma mes ton ta tes son
        sa ses notre nos votre vos leur leurs ce cet cette ces très""".split()
    ),
    "de": frozenset(
        """der die das den dem des ein eine einen einem einer und oder aber denn dass weil
        wenn als ob von zu zur zum in im an am auf aus bei mit nach über unter vor für durch
        gegen ohne um mein meine dein deine seine unser unsere sehr""".split()
    ),
    "pt": frozenset(
        """o a os as um uma uns umas e ou mas nem que de do da dos das em no na nos nas com
        por para pelo pela sem sobre entre até como quando onde se porque embora meu minha
        seu sua nosso nossa muito""".split()
    ),
    "it": frozenset(
        """il lo la i gli le un uno una e o ma né che di del della dei delle a al alla da
        dal in nel nella con per su tra fra come quando dove se perché mio mia suo sua
        nostro nostra molto""".split()
    ),
}
"""Words after which, in these languages, a sentence (almost) never ends: articles,
prepositions, conjunctions, possessives, subject pronouns, English auxiliaries. Words that
often end one ("here", "it", "you", "that", "not", "more", a German verb) are not here: for
them the pause alone decides. Of the prepositions that are also adverbs, only those that end
at most 1% of the sentences of a written English corpus are here ("in", "on", "about"; not
"out", "up", "over", "before"): docs/metrics.md, "Sentence breaks"."""

_TRAILING_END = re.compile(r"\s*[" + re.escape("".join(SENTENCE_END)) + r"]+[\"'”’»)\]]*\s*$")
_WORD = re.compile(r"[\w'’-]+", re.UNICODE)
_KEEPS_CAPITAL = frozenset({"i", "i'm", "i've", "i'll", "i'd", "i’m", "i’ve", "i’ll", "i’d"})
_CLOSES = {"¿": "?", "¡": "!"}
"""Spanish opening marks and the mark that closes each."""
_UNMARKED = {
    word: word.translate(str.maketrans("áéíóú", "aeiou"))
    for word in """qué quién quiénes cuál cuáles cuánto cuánta cuántos cuántas cómo dónde
    adónde cuándo""".split()
}
"""Spanish interrogatives and exclamatives, and the same words where they are neither (the
accent goes with the question or exclamation)."""


def ends_sentence(text: str) -> bool:
    return bool(_TRAILING_END.search(text))


def last_word(text: str) -> str:
    words = _WORD.findall(text)
    return words[-1].lower() if words else ""


def cannot_end_sentence(text: str, language: str | None) -> bool:
    """Whether ``text`` ends with a word after which no sentence ends (``CONTINUATIONS``)."""
    return last_word(text) in CONTINUATIONS.get(language or "", frozenset())


def without_sentence_end(text: str) -> str:
    """``text`` without its trailing sentence punctuation (an ellipsis included)."""
    return _TRAILING_END.sub("", text).rstrip()


def running_on(text: str) -> str:
    """``text`` as a piece of a sentence the speaker went on with: without its trailing
    sentence mark, and without an opening "¿" or "¡" at its start that the mark closed
    (Whisper, hearing the piece alone, made a question or an exclamation of it)."""
    kept = without_sentence_end(text)
    body = kept.lstrip()
    if _opens_unclosed(body) and _CLOSES[body[0]] in text[len(kept) :]:
        return kept[: len(kept) - len(body)] + _unopened(body)
    return kept


def _opens_unclosed(body: str) -> bool:
    """Whether ``body`` opens with "¿" or "¡" and never closes it."""
    closing = _CLOSES.get(body[:1])
    return closing is not None and closing not in body


def _unopened(body: str) -> str:
    """``body``, which opens with "¿" or "¡", as no question or exclamation: without the
    mark, its first word without the accent the mark gave it ("¿Qué no" -> "Que no")."""
    rest = body[1:].lstrip()
    match = _WORD.match(rest)
    if match is None:
        return rest
    word = match.group(0)
    plain = _UNMARKED.get(word.lower())
    if plain is None:
        return rest
    return (plain.capitalize() if word[0].isupper() else plain) + rest[len(word) :]


def continuing(text: str) -> str:
    """``text`` as the continuation of a sentence: its first word in lower case unless it
    needs a capital (``I``, a word with capitals inside); an opening "¿" or "¡" it never
    closes dropped. Only its head changes: what it loses is lost from its start."""
    stripped = text.lstrip()
    head = text[: len(text) - len(stripped)]
    if _opens_unclosed(stripped):
        stripped = _unopened(stripped)
    elif stripped[:1] in _CLOSES:  # a question begun here: lower case after its mark
        head, stripped = head + stripped[0], stripped[1:]
    match = _WORD.match(stripped)
    if match is None:
        return head + stripped
    word = match.group(0)
    needs_capital = word.lower() in _KEEPS_CAPITAL or any(c.isupper() for c in word[1:])
    if needs_capital or not word[0].isupper():
        return head + stripped
    return head + word[0].lower() + stripped[1:]
