"""Foresight (engine/speech/foresight.py): an idle voice synthesises the lead of a sentence from
its translated drafts, and the final's first piece speaks it when it reads the same. Fake
voices that take wall-clock time, so the first audio's wait shows."""

from __future__ import annotations

import asyncio

from engine.events import Caption
from engine.speech.config import PaceConfig
from engine.speech.costs import SynthesisCosts
from engine.speech.speaker import LanguageSpeaker
from engine.speech.voice import LanguageVoices
from tests.engine.speech.test_speech import FakeVoice, Sink, _final, _run_in_thread

DRAFT = "Todos los sustantivos junto con la palabra Sie para usted"
FINAL = (
    "Todos los sustantivos junto con la palabra Sie para usted siempre empiezan con una "
    "letra mayúscula."
)
SLOW_S = 0.6
"""Each call of the voice takes this long: the wait a final's first piece would have."""


def _draft(segment: int, text: str) -> Caption:
    return Caption(segment, "es", False, "draft", text, 0.0, 1.0)


async def _speaker(voice: FakeVoice, sink: Sink, *, foresight: bool = True) -> LanguageSpeaker:
    async def source(lang: str) -> LanguageVoices:
        return LanguageVoices(voice)

    config = PaceConfig(
        lead_chars=16, min_lead_chars=16, chars_per_second=100.0, foresight=foresight
    )
    speaker = LanguageSpeaker(
        "es", source, _run_in_thread, sink.publish, config, costs=SynthesisCosts()
    )
    await asyncio.sleep(0.01)  # the speaker's task loads its voice
    return speaker


async def _said(speaker: LanguageSpeaker, final: Caption) -> None:
    speaker.say(final)
    await asyncio.wait_for(speaker.drain(), 20)
    await speaker.close()


async def test_a_final_speaks_the_lead_its_draft_synthesised_ahead_at_once() -> None:
    voice, sink = FakeVoice(delay=SLOW_S), Sink()
    speaker = await _speaker(voice, sink)
    speaker.foresee(_draft(0, DRAFT))
    speaker.foresee(_draft(0, DRAFT))  # the same lead again: no second call
    await asyncio.sleep(SLOW_S + 0.3)  # the speaker is still talking; the lead is ready
    assert [text for text, _ in voice.calls] == ["Todos los"]
    speaker.foresee(_draft(0, "Todas las sustantivas junto con"))  # one call a sentence
    await asyncio.sleep(0.05)
    assert [text for text, _ in voice.calls] == ["Todos los"]
    await _said(speaker, _final(0, FINAL))
    pieces = [a.text for a in sink.audio]
    assert pieces[0] == "Todos los"
    assert " ".join(pieces).split() == FINAL.split()
    assert [text for text, _ in voice.calls].count("Todos los") == 1
    assert speaker.stats.foreseen == speaker.stats.foreseen_spoken == 1
    assert speaker.stats.first_audio[0] < SLOW_S / 2  # not a call's wait


async def test_a_final_that_reads_otherwise_is_spoken_as_it_reads() -> None:
    voice, sink = FakeVoice(delay=0.05), Sink()
    speaker = await _speaker(voice, sink)
    speaker.foresee(_draft(0, "Todas las sustantivas junto con la palabra"))
    await asyncio.sleep(0.3)
    await _said(speaker, _final(0, FINAL))
    assert " ".join(a.text for a in sink.audio).split() == FINAL.split()
    assert speaker.stats.foreseen == 1 and speaker.stats.foreseen_spoken == 0


async def test_only_a_sentences_first_segment_with_more_than_a_lead_is_foreseen() -> None:
    voice, sink = FakeVoice(), Sink()
    speaker = await _speaker(voice, sink)
    speaker.foresee(_draft(0, "Todos los"))  # no lead cut off yet: it may still grow
    speaker.foresee(_draft(1, DRAFT))  # the sentence began in segment 0
    await asyncio.sleep(0.1)
    assert voice.calls == [] and speaker.stats.foreseen == 0
    speaker.say(_final(0, "Todos los sustantivos."))  # covers segment 0: 1 is a head now
    await asyncio.wait_for(speaker.drain(), 20)
    calls = len(voice.calls)
    speaker.foresee(_draft(1, DRAFT))
    await asyncio.sleep(0.1)
    assert len(voice.calls) == calls + 1 and speaker.stats.foreseen == 1
    await speaker.close()


async def test_a_busy_voice_foresees_nothing() -> None:
    voice, sink = FakeVoice(delay=0.2), Sink()
    speaker = await _speaker(voice, sink)
    speaker.say(_final(0, FINAL))
    await asyncio.sleep(0.05)  # speaking it
    speaker.foresee(_draft(1, DRAFT))
    await asyncio.wait_for(speaker.drain(), 20)
    await speaker.close()
    assert speaker.stats.foreseen == 0


async def test_foresight_can_be_turned_off() -> None:
    voice, sink = FakeVoice(), Sink()
    speaker = await _speaker(voice, sink, foresight=False)
    speaker.foresee(_draft(0, DRAFT))
    await asyncio.sleep(0.1)
    assert voice.calls == [] and speaker.stats.foreseen == 0
    await speaker.close()
