"""Each speaker's open sentence and the pause that closes it (engine/translation/
open_sentences.py), alone: captions in, closed sentences out."""

from __future__ import annotations

import asyncio

import numpy as np

from engine.events import Caption, Speaker
from engine.recognition.vad import NextSpeech
from engine.translation.open_sentences import OpenSentences
from engine.translation.sentences import Sentence, SentenceRules

PAUSE_S = 0.05
RULES = SentenceRules(pause_s=PAUSE_S, resume_gap_s=0.6)


def caption(
    segment: int,
    text: str,
    start: float,
    end: float,
    *,
    final: bool = True,
    speaker: Speaker | None = None,
) -> Caption:
    return Caption(
        segment=segment,
        lang="en",
        source=True,
        state="final" if final else "draft",
        text=text,
        start=start,
        end=end,
        speaker=speaker,
    )


def open_sentences() -> tuple[OpenSentences, list[Sentence]]:
    closed: list[Sentence] = []
    return OpenSentences(RULES, 200, closed.append), closed


async def test_a_final_with_a_mark_closes_its_sentence_at_once() -> None:
    sentences, closed = open_sentences()
    audio = np.zeros(160, dtype=np.float32)
    assert sentences.add(caption(0, "We begin", 0.0, 1.0), audio) is True
    assert sentences.add(caption(1, "today.", 1.1, 2.0), audio) is False
    assert [s.segments for s in closed] == [(0, 1)]
    assert closed[0].audio() is not None
    assert not sentences.by_speaker[""].open


async def test_an_open_sentence_closes_after_the_pause() -> None:
    sentences, closed = open_sentences()
    assert sentences.add(caption(0, "We begin", 0.0, 1.0)) is True
    await asyncio.sleep(PAUSE_S * 4)
    assert [s.segments for s in closed] == [(0,)]


async def test_speech_going_on_keeps_the_sentence_open_past_the_pause() -> None:
    sentences, closed = open_sentences()
    sentences.add(caption(0, "We begin", 0.0, 1.0))
    sentences.hear(caption(1, "with", 1.2, 1.5, final=False))  # within resume_gap_s
    await asyncio.sleep(PAUSE_S * 4)
    assert closed == []
    sentences.close_all()  # the stream stopped
    assert [s.segments for s in closed] == [(0,)]


async def test_speech_after_a_long_pause_closes_the_sentence_first() -> None:
    sentences, closed = open_sentences()
    sentences.add(caption(0, "We begin", 0.0, 1.0))
    sentences.hear(caption(1, "Next", 3.0, 3.5, final=False))
    assert [s.segments for s in closed] == [(0,)]


async def test_a_silence_too_long_closes_the_sentence_before_the_timer() -> None:
    sentences, closed = open_sentences()
    final = caption(0, "We begin", 0.0, 1.0)
    sentences.add(final)
    assert sentences.on_silence(final, NextSpeech(1.2, heard=False)) is True  # still timed
    assert closed == []
    assert sentences.on_silence(final, NextSpeech(2.0, heard=False)) is False
    assert [s.segments for s in closed] == [(0,)]
    assert sentences.on_silence(final, NextSpeech(3.0, heard=False)) is False  # nothing timed


async def test_each_speaker_has_a_sentence_of_their_own() -> None:
    sentences, closed = open_sentences()
    ana, ben = Speaker("a", "Ana"), Speaker("b", "Ben")
    sentences.add(caption(0, "I think", 0.0, 1.0, speaker=ana))
    sentences.add(caption(1, "Yes.", 0.5, 1.0, speaker=ben))
    assert [s.segments for s in closed] == [(1,)]
    sentences.add(caption(2, "so.", 1.2, 1.6, speaker=ana))
    assert [s.segments for s in closed] == [(1,), (0, 2)]
    sentences.stop()
