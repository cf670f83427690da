"""The speech stage with fake voices: order, pieces, pace keeping, languages, failures."""

from __future__ import annotations

import asyncio
import time

import pytest

from engine.events import Caption, ErrorEvent, Event, Speaker, SpeechAudio
from engine.speech.config import PaceConfig
from engine.speech.pieces import speech_pieces
from engine.speech.speaker import LanguageSpeaker
from engine.speech.stage import SessionSpeaker
from engine.speech.voice import LanguageVoices, VoiceKind

RATE = 8000


class FakeVoice:
    """Speaks ``cps`` characters a second (faster at a higher rate); each call takes
    ``delay`` seconds of wall time, plus ``per_char`` a character."""

    sample_rate = RATE

    def __init__(
        self,
        cps: float = 100.0,
        delay: float = 0.0,
        fail: bool = False,
        name: str = "fake",
        kind: VoiceKind = "natural",
        per_char: float = 0.0,
    ) -> None:
        self.per_char = per_char
        self.name = name
        self.kind: VoiceKind = kind
        self.cps = cps
        self.delay = delay
        self.fail = fail
        self.calls: list[tuple[str, float]] = []
        self.variant_calls: list[tuple[str, int]] = []

    variants = 3

    def synthesize(self, text: str, rate: float = 1.0, variant: int = 0) -> bytes:
        self.calls.append((text, rate))
        self.variant_calls.append((text, variant % self.variants))
        if self.fail:
            raise RuntimeError("voice broke")
        if self.delay or self.per_char:
            time.sleep(self.delay + self.per_char * len(text))
        return b"\x01\x00" * int(RATE * len(text) / self.cps / rate)


async def _run_in_thread(fn, *args):  # type: ignore[no-untyped-def]
    return await asyncio.to_thread(fn, *args)


def _final(segment: int, text: str, lang: str = "es") -> Caption:
    return Caption(segment, lang, False, "final", text, 0.0, 1.0)


class Sink:
    def __init__(self) -> None:
        self.events: list[Event] = []

    async def publish(self, event: Event) -> Event:
        self.events.append(event)
        return event

    @property
    def audio(self) -> list[SpeechAudio]:
        return [e for e in self.events if isinstance(e, SpeechAudio)]


def test_pieces_split_sentences_and_long_sentences_at_clauses() -> None:
    assert speech_pieces("Hello there. How are you?") == [["Hello there."], ["How are you?"]]
    long = (
        "When forty winters shall besiege thy brow, and dig deep trenches in thy beauty's "
        "field, thy youth's proud livery so gazed on now will be a tattered weed."
    )
    [pieces] = speech_pieces(long, clause_chars=80)
    assert len(pieces) == 3
    assert " ".join(pieces) == long
    # Short clauses are joined, never spoken alone (after the first sentence).
    assert speech_pieces("Go. Yes, no, maybe, " + "x" * 90, clause_chars=80) == [
        ["Go."],
        ["Yes, no, maybe, " + "x" * 90],
    ]
    # The first piece is short, so that audio starts soon: cut at a word when no clause.
    first = speech_pieces("The quick brown fox jumps over the lazy dog and runs into the wood.")
    assert [len(p) <= 48 for p in first[0]] == [True, True]
    assert (
        " ".join(first[0]) == "The quick brown fox jumps over the lazy dog and runs into the wood."
    )
    assert speech_pieces("   ") == []
    # Nothing to say alone: a closing quote after a sentence's stop stays with its sentence.
    quoted = speech_pieces("Il a dit « bonjour. » Puis il est parti.")
    assert quoted == [["Il a dit « bonjour. »"], ["Puis il est parti."]]


async def test_every_final_is_spoken_in_order_with_its_last_piece_marked() -> None:
    voice = FakeVoice()
    sink = Sink()

    async def source(lang: str) -> LanguageVoices:
        return LanguageVoices(voice)

    config = PaceConfig(lead_s=5, chars_per_second=100.0)
    speaker = LanguageSpeaker("es", source, _run_in_thread, sink.publish, config)
    texts = ["Hola a todos.", "Esto es una prueba. Otra frase.", "Adiós."]
    for i, text in enumerate(texts):
        speaker.say(_final(i, text))
    await asyncio.wait_for(speaker.drain(), 5)
    await speaker.close()
    audio = sink.audio
    assert [a.text for a in audio] == [
        "Hola a todos.",
        "Esto es una prueba.",
        "Otra frase.",
        "Adiós.",
    ]
    assert [a.segment for a in audio] == [0, 1, 1, 2]
    assert [a.last for a in audio] == [True, False, True, True]
    assert all(a.lang == "es" and a.sample_rate == RATE and a.pcm for a in audio)
    assert all(a.skipped == 0 and a.rate == 1.0 and a.voice == "natural" for a in audio)
    assert speaker.stats.pieces == 4
    assert len(speaker.stats.first_audio) == 3


async def test_a_slow_voice_keeps_pace_by_speeding_up_then_skipping() -> None:
    """Finals arrive much faster than they can be spoken: the text queue stays bounded,
    speech gets faster, and skips are announced in the audio headers."""
    voice = FakeVoice(cps=60.0, delay=0.05)  # each 60-char final takes ~1 s to speak
    sink = Sink()

    async def source(lang: str) -> LanguageVoices:
        return LanguageVoices(voice)

    config = PaceConfig(
        bound_s=1.5,
        speedup_from_s=0.5,
        max_rate=1.3,
        lead_s=0.1,
        chars_per_second=60.0,
        max_pieces=8,
    )
    speaker = LanguageSpeaker("es", source, _run_in_thread, sink.publish, config)
    deepest = 0
    sentence = "Una frase bastante larga que dura casi un segundo entero."
    for i in range(40):
        speaker.say(_final(i, sentence))
        deepest = max(deepest, speaker.queued)
        assert speaker.behind() < config.bound_s + 2 * len(sentence) / 60.0 + 8
        await asyncio.sleep(0.1)
    await asyncio.wait_for(speaker.drain(), 10)
    await speaker.close()
    audio = sink.audio
    assert deepest <= config.max_pieces
    assert speaker.stats.skipped > 0
    assert sum(a.skipped for a in audio) == speaker.stats.skipped
    assert any(a.skipped > 0 for a in audio)
    assert max(a.rate for a in audio) > 1.0
    assert max(a.rate for a in audio) <= config.max_rate
    assert len(audio) < 40
    # The newest final is always spoken: skipping drops the old, never the new.
    assert audio[-1].segment == 39
    # Spoken audio never runs far ahead of the clock: about real time plus the bound.
    spoken = sum(a.duration for a in audio)
    assert spoken < 4.0 + config.bound_s + 2, spoken


async def test_a_long_final_is_never_cut_in_the_middle_when_behind() -> None:
    voice = FakeVoice()
    sink = Sink()

    async def source(lang: str) -> LanguageVoices:
        return LanguageVoices(voice)

    # One translation final of a whole sentence holds more speech than bound_s: behind at
    # once, but there is no older final to skip to.
    speaker = LanguageSpeaker(
        "es", source, _run_in_thread, sink.publish, PaceConfig(bound_s=0.5, speedup_from_s=0.2)
    )
    text = "Fue tanta la gente que no todos pudieron entrar al funeral. En la plaza de San Pedro."
    speaker.say(_final(0, text))
    await asyncio.wait_for(speaker.drain(), 5)
    assert " ".join(a.text for a in sink.audio) == text
    assert all(not a.skipped for a in sink.audio)
    await speaker.close()


async def test_session_speaker_speaks_only_languages_with_voices_and_listeners() -> None:
    voice = FakeVoice()
    sink = Sink()
    asked: list[str] = []

    async def source(lang: str) -> LanguageVoices:
        asked.append(lang)
        return LanguageVoices(voice)

    speaker = SessionSpeaker(source, _run_in_thread, sink.publish, spoken={"es", "en"})
    speaker.on_final(_final(0, "Nadie escucha."))
    speaker.set_languages(frozenset({"es", "fr"}))  # fr has no voice
    assert set(speaker.speakers) == {"es"}
    speaker.on_final(_final(1, "Hola."))
    speaker.on_final(_final(1, "Hello.", lang="en"))  # nobody hears English
    speaker.on_final(Caption(2, "es", False, "draft", "Borrador", 0, 1))  # drafts never
    await asyncio.wait_for(speaker.drain(), 5)
    assert [(a.lang, a.text) for a in sink.audio] == [("es", "Hola.")]
    speaker.set_languages(frozenset())
    await asyncio.sleep(0.05)
    assert speaker.speakers == {}
    assert speaker.stats["es"].pieces == 1
    assert asked == ["es"]
    await speaker.close()


async def test_the_speakers_of_a_panel_get_different_voices_in_the_order_they_spoke() -> None:
    voice = FakeVoice()
    fast = FakeVoice(name="fast", kind="fast")
    sink = Sink()

    async def source(lang: str) -> LanguageVoices:
        return LanguageVoices(voice, fast)

    speaker = SessionSpeaker(
        source, _run_in_thread, sink.publish, spoken={"es"}, run_fast=_run_in_thread
    )
    speaker.set_languages(frozenset({"es"}))
    ada, bo, audience = Speaker("s1", "Ada"), Speaker("s2", "Bo"), Speaker("audience", "Audience")
    lines = [(ada, "Hola a todos."), (bo, "Gracias, Ada."), (ada, "Sigamos."), (audience, "¿Y?")]
    for segment, (who, text) in enumerate(lines):
        caption = Caption(segment, "es", False, "final", text, segment, segment + 1, speaker=who)
        speaker.on_final(caption)
    await asyncio.wait_for(speaker.drain(), 5)
    assert [a.text for a in sink.audio] == [text for _, text in lines]  # the order they spoke
    spoken = voice.variant_calls + fast.variant_calls
    assert sorted(spoken, key=lambda call: [t for _, t in lines].index(call[0])) == [
        ("Hola a todos.", 0),
        ("Gracias, Ada.", 1),
        ("Sigamos.", 0),
        ("¿Y?", 2),
    ]
    await speaker.close()


async def test_a_failing_voice_publishes_one_error_and_keeps_the_session() -> None:
    voice = FakeVoice(fail=True)
    sink = Sink()

    async def source(lang: str) -> LanguageVoices:
        return LanguageVoices(voice)

    speaker = LanguageSpeaker("es", source, _run_in_thread, sink.publish, PaceConfig())
    for i in range(3):
        speaker.say(_final(i, f"Frase {i}."))
    await asyncio.wait_for(speaker.drain(), 5)
    errors = [e for e in sink.events if isinstance(e, ErrorEvent)]
    assert len(errors) == 1 and "es" in errors[0].message
    assert speaker.stats.failures == 3
    voice.fail = False
    speaker.say(_final(3, "Ya funciona."))
    await asyncio.wait_for(speaker.drain(), 5)
    assert [a.text for a in sink.audio] == ["Ya funciona."]
    await speaker.close()


@pytest.mark.parametrize("lang", ["xx"])
async def test_no_voice_means_captions_only(lang: str) -> None:
    sink = Sink()

    async def source(code: str) -> None:
        return None

    speaker = LanguageSpeaker(lang, source, _run_in_thread, sink.publish, PaceConfig())
    speaker.say(_final(0, "Hello.", lang=lang))
    await asyncio.wait_for(speaker.drain(), 5)
    assert sink.events == []
    await speaker.close()


async def test_a_correction_is_spoken_corrected_before_its_line_and_never_after() -> None:
    voice = FakeVoice(delay=0.2)
    sink = Sink()

    async def source(lang: str) -> LanguageVoices:
        return LanguageVoices(voice)

    speaker = LanguageSpeaker("es", source, _run_in_thread, sink.publish, PaceConfig(lead_s=5))
    speaker.say(_final(0, "Hola a todos."))
    speaker.say(_final(1, "Usamos equipo visor."))
    await asyncio.sleep(0.05)  # segment 0 is being synthesised; segment 1 waits
    assert not speaker.correct(Caption(0, "es", False, "final", "Hola, amigos.", 0, 1, rev=1))
    assert speaker.correct(Caption(1, "es", False, "final", "Usamos TeamViewer.", 0, 1, rev=1))
    await asyncio.wait_for(speaker.drain(), 5)
    assert [a.text for a in sink.audio] == ["Hola a todos.", "Usamos TeamViewer."]
    assert [a.last for a in sink.audio] == [True, True]
    # Once spoken, a line is not spoken again, however it is corrected.
    assert not speaker.correct(Caption(1, "es", False, "final", "Usamos Zoom.", 0, 1, rev=2))
    await speaker.close()
