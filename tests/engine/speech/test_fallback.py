"""The speech stage's rules for a slow (natural) voice, with fake voices: the first piece is
sized to the voice's measured cost, and a sentence falls back to the fast voice when the
natural one would leave the listener waiting."""

from __future__ import annotations

import asyncio

from engine.events import Caption, Event
from engine.speech.config import PaceConfig
from engine.speech.costs import SynthesisCosts
from engine.speech.speaker import LanguageSpeaker
from engine.speech.voice import LanguageVoices, Synthesizer
from tests.engine.speech.test_speech import FakeVoice, Sink, _final, _run_in_thread

LONG_FINAL = (
    "Todos los sustantivos junto con la palabra Sie para usted siempre empiezan con una "
    "letra mayúscula incluso en medio de una oración. Así lo quiere la gramática alemana."
)


def _config(**rules: float) -> PaceConfig:
    """The rules under test; no speed-up or skipping (the fake voice speaks 100 characters
    a second)."""
    return PaceConfig(
        bound_s=100.0,
        speedup_from_s=50.0,
        chars_per_second=100.0,
        **rules,  # type: ignore[arg-type]
    )


def _speaker(
    voices: LanguageVoices, sink: Sink, costs: SynthesisCosts, config: PaceConfig
) -> LanguageSpeaker:
    async def source(lang: str) -> LanguageVoices:
        return voices

    return LanguageSpeaker("es", source, _run_in_thread, sink.publish, config, costs=costs)


async def _spoken(speaker: LanguageSpeaker, *finals: Caption) -> None:
    await asyncio.sleep(0)  # the speaker's task loads its voices first
    for final in finals:
        speaker.say(final)
    await asyncio.wait_for(speaker.drain(), 20)
    await speaker.close()


async def test_the_first_piece_is_as_long_as_the_voice_synthesises_in_first_audio_s() -> None:
    config = _config(first_audio_s=0.5, min_lead_chars=16, lead_chars=48)
    slow, fast = FakeVoice(name="slow"), FakeVoice(name="fast")
    costs = SynthesisCosts()
    costs.learn("slow", 100, 2.0)  # 0.02 s a character: 25 characters in 0.5 s
    costs.learn("fast", 100, 0.01)
    for voice, longest in ((slow, 25), (fast, 48)):
        sink = Sink()
        await _spoken(_speaker(LanguageVoices(voice), sink, costs, config), _final(0, LONG_FINAL))
        pieces = [a.text for a in sink.audio]
        assert 12 <= len(pieces[0]) <= longest, pieces
        assert " ".join(pieces).split() == LONG_FINAL.split()
    # The slow voice's pieces grow after its short lead, so each is made while the one
    # before it plays.
    assert len(slow.calls) > len(fast.calls)
    assert len(slow.calls[0][0]) < len(slow.calls[1][0]) < len(slow.calls[2][0])


async def test_a_voice_that_would_keep_the_listener_waiting_falls_back_per_sentence() -> None:
    config = _config(fallback_gap_s=0.3, fallback_relax=0.5)
    natural = FakeVoice(name="kokoro")
    fast = FakeVoice(name="espeak", kind="fast")
    costs = SynthesisCosts()
    costs.learn("kokoro", 10, 1.0)  # 0.1 s a character: any sentence waits over 0.3 s
    sink = Sink()
    speaker = _speaker(LanguageVoices(natural, fast), sink, costs, config)
    await _spoken(speaker, _final(0, LONG_FINAL))
    audio = sink.audio
    assert len(audio) >= 3 and {a.voice for a in audio} == {"fast"}
    assert natural.calls == []
    assert speaker.stats.fallback_pieces == len(audio)
    # Each fallen-back sentence relaxed the natural voice's cost (0.1 -> 0.025).
    assert costs.per_char("kokoro", 0.0) == 0.1 * 0.5**2


async def test_the_natural_voice_is_tried_again_and_kept_once_it_is_fast() -> None:
    config = _config(fallback_gap_s=0.3, fallback_relax=0.5)
    natural = FakeVoice(name="kokoro")  # fast now: a busy spell is over
    fast = FakeVoice(name="espeak", kind="fast")
    costs = SynthesisCosts()
    costs.learn("kokoro", 10, 0.5)  # measured while busy: 0.05 s a character
    sink = Sink()
    speaker = _speaker(LanguageVoices(natural, fast), sink, costs, config)
    sentences = [f"Frase número {n}, que dice algo nuevo." for n in range(8)]
    await _spoken(speaker, *(_final(n, s) for n, s in enumerate(sentences)))
    kinds = [a.voice for a in sink.audio if a.text.endswith(".")]
    assert kinds[0] == "fast" and kinds[-1] == "natural", kinds
    first_natural = kinds.index("natural")
    assert set(kinds[first_natural:]) == {"natural"}, kinds


async def test_the_voice_is_chosen_once_per_sentence() -> None:
    """Another session measures the natural voice as slow while this one is in the middle
    of a sentence: the sentence ends in the natural voice, the next one falls back."""
    config = _config(fallback_gap_s=0.5, lead_chars=16, min_lead_chars=16)
    natural = FakeVoice(name="kokoro", cps=20.0)
    fast = FakeVoice(name="espeak", kind="fast", cps=20.0)
    costs = SynthesisCosts(weight=1.0)
    costs.learn("kokoro", 100, 0.01)  # measured fast

    class MeasuredSlowElsewhere(Sink):
        async def publish(self, event: Event) -> Event:
            costs.learn("kokoro", 10, 100.0)  # 10 s a character, measured elsewhere
            return await super().publish(event)

    sink = MeasuredSlowElsewhere()
    speaker = _speaker(LanguageVoices(natural, fast), sink, costs, config)
    await _spoken(speaker, _final(0, LONG_FINAL))
    first, second = LONG_FINAL.split(". ")
    in_first = [a.voice for a in sink.audio if a.text in first + "."]
    assert len(in_first) >= 3 and set(in_first) == {"natural"}, in_first
    assert [a.voice for a in sink.audio if a.text in second] == ["fast"]
    assert speaker.stats.stalls == 0


async def test_a_natural_call_that_stalls_is_given_up_for_the_fallback() -> None:
    """The natural voice was fast, then hangs (a sudden load): the listener waits about
    ``fallback_gap_s``, not the whole call, and the rest of the sentence is fast too."""
    config = _config(fallback_gap_s=0.3)
    natural = FakeVoice(name="kokoro", delay=3.0)
    fast = FakeVoice(name="espeak", kind="fast")
    costs = SynthesisCosts()
    costs.learn("kokoro", 100, 0.01)
    sink = Sink()
    speaker = _speaker(LanguageVoices(natural, fast), sink, costs, config)
    sentence = LONG_FINAL.split(". ")[0] + "."
    await asyncio.sleep(0)
    speaker.say(_final(0, sentence))
    await asyncio.wait_for(speaker.drain(), 5)
    # The call given up on still runs: the next sentence does not queue behind it.
    speaker.say(_final(1, "Otra frase."))
    await _spoken(speaker)
    audio = sink.audio
    assert {a.voice for a in audio} == {"fast"} and len(natural.calls) == 1
    assert audio[-1].text == "Otra frase."
    assert speaker.stats.stalls == 1 and speaker.stats.fallback_pieces == len(audio)
    assert speaker.stats.first_audio[0] < 1.5  # not the natural call's 3 s
    assert " ".join(a.text for a in audio[:-1]).split() == sentence.split()
    # What the listener waited is learnt: the next sentences choose by it.
    assert costs.per_char("kokoro", 0.0) > 10 * 0.01 / 100  # ten times what it was


async def test_the_fast_voice_speaks_until_the_natural_one_has_loaded() -> None:
    config = _config()
    natural = FakeVoice(name="kokoro")
    fast = FakeVoice(name="espeak", kind="fast")
    loading: asyncio.Future[Synthesizer | None] = asyncio.get_running_loop().create_future()
    sink = Sink()
    speaker = _speaker(LanguageVoices(fast, loading=loading), sink, SynthesisCosts(), config)
    await asyncio.sleep(0)
    speaker.say(_final(0, "Primera frase."))
    await asyncio.wait_for(speaker.drain(), 5)
    loading.set_result(natural)
    speaker.say(_final(1, "Segunda frase."))
    await _spoken(speaker)
    assert [(a.segment, a.voice) for a in sink.audio] == [(0, "fast"), (1, "natural")]
    assert speaker.stats.fallback_pieces == 1
