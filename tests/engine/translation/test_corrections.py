"""The stage's bookkeeping of corrections (engine/translation/corrections.py), alone: what a
sentence's source text is once corrected, what a correction taught, and what a re-make is
made from."""

from __future__ import annotations

import numpy as np

from engine.events import Caption
from engine.revisions import Remake
from engine.translation.config import TranslationConfig
from engine.translation.corrections import Corrections
from engine.translation.sentences import Sentence, SourcePiece


def final(segment: int, text: str, start: float, end: float, *, lang: str = "de") -> Caption:
    return Caption(
        segment=segment,
        lang=lang,
        source=lang == "de",
        state="final",
        text=text,
        start=start,
        end=end,
    )


def sentence(*captions: Caption) -> Sentence:
    return Sentence(tuple(SourcePiece(c, np.zeros(1600, dtype=np.float32)) for c in captions))


def test_a_corrected_final_changes_its_sentence_source_text_and_teaches_its_words() -> None:
    corrections = Corrections(TranslationConfig(), keeps_audio=False)
    closed = sentence(final(0, "Wir treffen", 0.0, 1.0), final(1, "Herrn Maier.", 1.0, 2.0))
    assert corrections.source_text(closed) == "Wir treffen Herrn Maier."
    corrections.learn(final(1, "Herrn Meyer.", 1.0, 2.0))
    assert corrections.source_text(closed) == "Wir treffen Herrn Meyer."
    assert corrections.taught(closed.segments) == ("Herrn", "Meyer")
    corrections.learn(final(1, "Herrn Meyer heute.", 1.0, 2.0))  # again: only the new word
    assert corrections.taught([1]) == ("heute",)


def test_a_remake_is_taught_the_words_its_sentence_did_not_have() -> None:
    corrections = Corrections(TranslationConfig(), keeps_audio=True)
    closed = sentence(final(0, "Wir treffen Herrn Maier.", 0.0, 2.0))
    corrections.remember(closed)
    kept = corrections.recent(0)
    assert kept is not None and kept.audio() is not None
    line = final(0, "We meet Mr Maier.", 0.0, 2.0, lang="en")
    job = corrections.redo(Remake(line, "Wir treffen Herrn Meyer."), "Wir treffen Herrn Meyer.")
    assert job.line == line and job.source_text == "Wir treffen Herrn Meyer."
    assert job.taught == ("Meyer",)


def test_recent_sentences_are_kept_within_their_bounds() -> None:
    config = TranslationConfig(recent_audio_s=3.0, corrections_kept=2)
    text_only = Corrections(config, keeps_audio=False)
    text_only.remember(sentence(final(0, "Eins.", 0.0, 1.0)))
    kept = text_only.recent(0)
    assert kept is not None and kept.audio() is None  # no speech route: its text alone
    for segment in (1, 2):
        text_only.remember(sentence(final(segment, "Mehr.", segment, segment + 1.0)))
    assert text_only.recent(0) is None and text_only.recent(2) is not None  # the last two
    speech = Corrections(config, keeps_audio=True)
    speech.remember(sentence(final(0, "Lang.", 0.0, 2.5)))
    speech.remember(sentence(final(1, "Auch.", 2.5, 4.0)))
    assert speech.recent(0) is None and speech.recent(1) is not None  # within 3 s of audio
