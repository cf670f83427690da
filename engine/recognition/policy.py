"""The streaming ASR policy: pure functions and state, no model, no I/O.

LocalAgreement-2 (Macháček et al., whisper_streaming): each step re-decodes the open
segment's audio; the longest common prefix of two consecutive hypotheses is committed, and
committed words never change inside the segment. A repetition guard cuts decoder loops out of
every hypothesis before it can be committed or fed back as a prompt.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher

from engine.events import Word

_PUNCT = re.compile(r"[^\w']+", re.UNICODE)
SENTENCE_END = (".", "?", "!", "…", "。", "？", "！")


def word_key(text: str) -> str:
    """How two hypotheses' words are compared: case and punctuation do not matter."""
    return _PUNCT.sub("", unicodedata.normalize("NFKC", text).casefold())


def join_words(words: Sequence[Word]) -> str:
    """Join word texts as Whisper emits them (each word carries its leading space)."""
    return "".join(w.text for w in words).strip()


def ends_sentence(word: Word) -> bool:
    return word.text.rstrip().endswith(SENTENCE_END)


def guard_repetitions(
    words: Sequence[Word],
    max_ngram: int = 8,
    *,
    spoken_copies: int = 4,
    recovery: int = 3,
    echo: int = 4,
    ended: bool = False,
) -> list[Word]:
    """Cut a decoder loop: keep one copy of an n-gram that repeats back to back.

    A loop is a word or word pair repeated three times in a row, or a phrase of three or
    more words repeated twice in a row. Everything from the second copy on is dropped, because
    a looping decoder rarely recovers within the same window. A run of at most
    ``spoken_copies`` copies that ``recovery`` other words follow is no loop: the speaker said
    it ("words, words, words, and that's all"), and the decoder went on past it. So is such
    a run at the very end of a decode that ``ended`` by itself (its end-of-text token, not its
    token budget: ``engine.recognition.asr.Decoded``): a loop runs on until the budget stops
    it, so "bye bye bye bye" that the decoder closed is what was said.

    A phrase of any length whose copies run on to the end of the decode, the last one cut
    short, is a loop too once they repeat ``echo`` words and more than half the phrase: the
    decoder went round until its token budget stopped it (a 24-word sentence, then its
    first 19 words again, in a short window without context; docs/metrics.md, "Capacity /
    Long decoder loops cut")."""
    keys = [word_key(w.text) for w in words]
    looped = _looped_to_end(keys, echo)
    if looped < len(keys):
        words, keys = words[:looped], keys[:looped]
    i = 0
    while i < len(keys):
        resume = i + 1
        for n in range(1, max_ngram + 1):
            copies = 3 if n < 3 else 2
            if i + n * copies > len(keys):
                break
            gram = keys[i : i + n]
            if not all(gram):
                continue
            run = 1
            while keys[i + run * n : i + (run + 1) * n] == gram:
                run += 1
            if run < copies:
                continue
            after = i + run * n
            said_to_end = ended and after == len(keys)
            if run <= spoken_copies and (len(keys) - after >= recovery or said_to_end):
                resume = max(resume, after)
                continue
            return list(words[: i + n])
        i = resume
    return list(words)


def _looped_to_end(keys: Sequence[str], echo: int) -> int:
    """How many words to keep: where the earliest run that repeats an earlier phrase up to
    the end of ``keys`` (``echo`` words or more, and over half the phrase) begins, else all
    of them. A shorter echo of a long phrase is a speaker starting it again at a pause."""
    end = len(keys)
    keep = end
    for period in range(1, (end - echo) + 1):
        start = end
        while start - period > 0 and keys[start - 1] == keys[start - 1 - period]:
            start -= 1
        # keys[start:] repeats the ``period`` words before it; a blank key (punctuation) is
        # no word to repeat.
        repeated = end - start
        if repeated >= echo and 2 * repeated > period and all(keys[start - period : start]):
            keep = min(keep, start)
    return keep


def guard_text(text: str, max_chars: int) -> str:
    """A prompt from recent final text: loops removed, at most ``max_chars`` characters
    cut at a word boundary."""
    fake = [Word(" " + t, 0.0, 0.0) for t in text.split()]
    cleaned = join_words(guard_repetitions(fake))
    if len(cleaned) <= max_chars:
        return cleaned
    cut = cleaned[-max_chars:]
    space = cut.find(" ")
    return cut[space + 1 :] if space >= 0 else cut


def anchor_to_hint(
    refined: Sequence[Word], hint: Sequence[Word], room: Sequence[int] = ()
) -> list[Word]:
    """Keep a refined decode from inventing a tail the streaming hypotheses never heard.

    The refine pass may correct words, but text it adds after the last word it shares with
    the hint (the segment's streamed words) is often Whisper's trailing-silence invention
    ("Thank you for watching."). ``room[i]`` is how many words may have been spoken after
    hint word ``i`` (the caller sizes it to the speech after that word; one each by
    default). Refined words after the last shared word are kept up to the number of hint
    words after it plus the room after the hint's last word, or the room after the shared
    word where that is more: drafts that garbled a phrase into fewer words ("town of in the"
    for "town of Sintra and which was made famous") do not cut the words the refine read
    (docs/metrics.md, "Refine tails the drafts garbled"). With no hint the decode is kept
    as is.
    """
    if not hint or not refined:
        return list(refined)
    a = [word_key(w.text) for w in refined]
    b = [word_key(w.text) for w in hint]
    blocks = [m for m in SequenceMatcher(a=a, b=b, autojunk=False).get_matching_blocks() if m.size]
    if not blocks:
        return list(refined)
    room = room or [1] * len(hint)
    last = blocks[-1]
    refined_end = last.a + last.size
    shared = last.b + last.size - 1
    after = max(len(b) - 1 - shared + room[-1], room[shared])
    return list(refined[: refined_end + after])


@dataclass(slots=True)
class LocalAgreement:
    """LocalAgreement-2 for one segment.

    ``committed`` words are stable; ``tail`` is the newest hypothesis beyond them (a draft).
    Hypotheses are lists of words with absolute times covering the segment from its start.
    """

    committed: list[Word] = field(default_factory=list)
    tail: list[Word] = field(default_factory=list)
    _previous: list[Word] = field(default_factory=list)

    def _beyond_committed(self, hypothesis: Sequence[Word]) -> list[Word]:
        """The part of a whole-segment hypothesis that follows the committed words.

        The hypothesis normally repeats the committed words first; match them word by word.
        If it diverges inside the committed part, fall back to time: keep the words that end
        after the last committed word (less ~0.1 s of timestamp jitter), then drop an n-gram
        overlap with the committed end.
        """
        n = len(self.committed)
        keys = [word_key(w.text) for w in hypothesis]
        if keys[:n] == [word_key(w.text) for w in self.committed]:
            return list(hypothesis[n:])
        if not self.committed:
            return list(hypothesis)
        last_end = self.committed[-1].end
        rest = [w for w in hypothesis if w.end > last_end + 0.1 or w.start >= last_end - 0.05]
        committed_keys = [word_key(w.text) for w in self.committed]
        rest_keys = [word_key(w.text) for w in rest]
        for k in range(min(5, len(rest), len(committed_keys)), 0, -1):
            if committed_keys[-k:] == rest_keys[:k]:
                return rest[k:]
        return rest

    def update(self, hypothesis: Sequence[Word]) -> list[Word]:
        """Feed one hypothesis; return the words newly committed by agreement."""
        new = self._beyond_committed(guard_repetitions(hypothesis))
        agreed: list[Word] = []
        for old, fresh in zip(self._previous, new, strict=False):
            if word_key(old.text) != word_key(fresh.text) or not word_key(fresh.text):
                break
            agreed.append(fresh)
        self.committed.extend(agreed)
        self.tail = new[len(agreed) :]
        self._previous = self.tail
        return agreed

    def words(self) -> list[Word]:
        """Everything currently shown: committed words, then the unstable tail."""
        return [*self.committed, *self.tail]

    def last_sentence_end(self, min_end: float) -> int:
        """How many committed words end with the last sentence end at or after ``min_end``
        seconds (0 if none)."""
        for i in range(len(self.committed) - 1, -1, -1):
            word = self.committed[i]
            if word.end < min_end:
                break
            if ends_sentence(word):
                return i + 1
        return 0
