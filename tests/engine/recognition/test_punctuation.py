"""Real sentence ends only (engine/recognition/punctuation.py and the recogniser's use of it).

The recogniser test speaks a scripted talk whose speaker pauses inside phrases: Whisper (the
fake) ends every segment it hears alone with a full stop and starts the next with a capital,
as tiny.en does on an earnings call ("Further. More of financial profile")."""

from __future__ import annotations

import numpy as np

from engine.audio import SAMPLE_RATE
from engine.events import Caption, Word
from engine.recognition.asr import Decoded, DecodeOptions
from engine.recognition.punctuation import (
    cannot_end_sentence,
    continuing,
    ends_sentence,
    running_on,
    without_sentence_end,
)
from tests.engine.recognition.test_recognizer import recognizer_on


def test_sentence_marks_and_words_that_cannot_end_one() -> None:
    assert ends_sentence("It grew.") and ends_sentence("Really?”") and not ends_sentence("and,")
    assert without_sentence_end("In the previous.") == "In the previous"
    assert without_sentence_end("Wait...") == "Wait"
    assert cannot_end_sentence("remains the.", "en") and cannot_end_sentence("a review of.", "en")
    assert cannot_end_sentence("and then we.", "en") and cannot_end_sentence("We are.", "en")
    # The commonest prepositions, which end under 1% of written English sentences.
    assert cannot_end_sentence("be able to work in.", "en")
    assert cannot_end_sentence("we are on.", "en") and cannot_end_sentence("talk about.", "en")
    # Words that often end a sentence leave it to the pause.
    for text in (
        "remains strong.",
        "The cat is here.",
        "Thank you.",
        "Why not?",
        "I know that.",
    ):
        assert not cannot_end_sentence(text, "en"), text
    assert cannot_end_sentence("hemos visto a los.", "es")
    assert not cannot_end_sentence("Gathered to.", "ja")  # no list for the language: no rule


def test_a_continuation_starts_in_lower_case_unless_the_word_needs_a_capital() -> None:
    assert continuing("More of our profile") == "more of our profile"
    assert continuing(" Gathered to review") == " gathered to review"
    assert continuing("I hope so") == "I hope so"
    assert continuing("TeamViewer grew") == "TeamViewer grew"


def test_a_continuation_closes_the_question_it_opens_or_loses_the_mark() -> None:
    # Whisper base heard "que no todos pudieron acceder al funeral" alone, after a pause in
    # the middle of the sentence, as a question it never closed (/talk, e2e/test_talk.py).
    # The accent went with the question: "que", a conjunction here.
    assert continuing("¿Qué no todos pudieron acceder al funeral.") == (
        "que no todos pudieron acceder al funeral."
    )
    assert continuing(" ¡ Ya llegamos") == " ya llegamos"
    # A question or an exclamation that begins inside a sentence keeps its marks.
    assert continuing("¿Qué haremos?") == "¿qué haremos?"
    assert continuing("¡Qué bien!") == "¡qué bien!"
    assert continuing("¿") == ""


def test_a_piece_the_speaker_went_on_from_loses_the_question_it_closed() -> None:
    # e2e/test_talk.py: "se concentró" | "¿Qué no todos pudieron acceder al funeral?" |
    # "en la Plaza de San Pedro." The middle piece was no question: its "?" goes, and so
    # does the "¿" that opened it.
    assert running_on("¿Qué no todos pudieron acceder al funeral?") == (
        "Que no todos pudieron acceder al funeral"
    )
    assert running_on("¿Cuándo llegó?") == "Cuando llegó"
    assert running_on("¡Ya llegamos!") == "Ya llegamos"
    assert running_on("In the previous.") == "In the previous"
    # A question begun inside the piece, or closed inside it, keeps its marks.
    assert running_on("Si vienes, ¿qué haremos?") == "Si vienes, ¿qué haremos"
    assert running_on("¿Qué? Ya voy.") == "¿Qué? Ya voy"
    assert running_on("¿Vienes? Pues vamos.") == "¿Vienes? Pues vamos"


# (word, start, end): "We are" | 0.3 s pause | "gathered to" | 1.0 s pause | "review the
# results." | 0.2 s pause | "revenue grew." | 1.2 s pause
TALK = [
    ("We", 0.2, 0.5),
    ("are", 0.6, 1.0),
    ("gathered", 1.3, 1.8),
    ("to", 1.9, 2.1),
    ("review", 3.1, 3.6),
    ("the", 3.7, 3.8),
    ("results.", 3.9, 4.6),
    ("revenue", 4.8, 5.4),
    ("grew.", 5.5, 6.2),
]
SPEECH = [(0.2, 1.0), (1.3, 2.1), (3.1, 4.6), (4.8, 6.2)]


class EveryPieceASentence:
    """Reads the scripted words inside the audio; like Whisper on a piece heard alone, it
    ends the last with a full stop, and capitalises the first unless it heard a sentence
    that goes on before it (its prefix)."""

    name = "fake"
    multilingual = False

    def transcribe(self, audio: np.ndarray, options: DecodeOptions) -> Decoded:
        start = abs(float(audio[0])) * 1000.0
        end = start + len(audio) / SAMPLE_RATE
        words = [(w, s - start, e - start) for w, s, e in TALK if s >= start - 0.05 and e <= end]
        if options.prefix:
            words = words[len(options.prefix.split()) :]
        out = [Word(f" {w}", s, e) for w, s, e in words]
        if out and options.beam_size > 1:
            first, last = out[0], out[-1]
            if not options.prefix or options.prefix.endswith("."):  # a sentence begins
                out[0] = Word(" " + first.text.strip().capitalize(), first.start, first.end)
            if not last.text.endswith("."):
                out[-1] = Word(out[-1].text + ".", last.start, last.end)
        return Decoded(tuple(out))


def talk_audio(duration: float) -> np.ndarray:
    t = np.arange(int(duration * SAMPLE_RATE), dtype=np.float64) / SAMPLE_RATE
    audio = -(t / 1000.0) - 1e-6
    for lo, hi in SPEECH:
        mask = (t >= lo) & (t < hi)
        audio[mask] = t[mask] / 1000.0
    return audio.astype(np.float32)


async def test_only_real_sentence_ends_close_a_sentence() -> None:
    recognizer = recognizer_on(
        EveryPieceASentence(), short_pause_s=0.15, min_silence_s=0.25, min_close_speech_s=0.0
    )
    audio = talk_audio(7.5)
    events: list[Caption] = []
    for i in range(0, len(audio), 1600):
        recognizer.push(audio[i : i + 1600])
        events.extend(await recognizer.step())
    events.extend(await recognizer.finish())
    finals = [e.text for e in events if e.is_final]
    # "are" and "to" cannot end a sentence; after "results." the speaker went on within
    # 0.2 s; "grew." is followed by the end of the talk.
    assert finals == ["We are", "gathered to", "review the results", "revenue grew."]
