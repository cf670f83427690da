"""Real voices: the bundled Piper voice and espeak-ng speak real translations that the
project's own recogniser transcribes back (the audio is speech, not noise or silence)."""

from __future__ import annotations

import shutil
from pathlib import Path

import jiwer
import numpy as np
import pytest

from bench.textnorm import normalise
from engine.audio import StreamResampler
from engine.recognition.asr import DecodeOptions
from models.catalog import ChecksumMismatch, ModelError, resolve_whisper
from models.voices import (
    JOE_FILES,
    EspeakSynthesizer,
    VoiceBank,
    joe_voice_path,
    load_voice,
    voice_plan,
)
from models.whisper import FasterWhisperTranscriber
from tests.data import voice_texts

pytestmark = pytest.mark.model

needs_espeak = pytest.mark.skipif(
    shutil.which("espeak-ng") is None, reason="Debian espeak-ng not installed"
)


def _round_trip(voice: object, texts: list[str], model: str, lang: str) -> float:
    recogniser = FasterWhisperTranscriber(resolve_whisper(model))
    hypotheses = []
    for text in texts:
        pcm = voice.synthesize(text)  # type: ignore[attr-defined]
        samples = np.frombuffer(pcm, "<i2").astype(np.float32) / 32768.0
        assert len(samples) / voice.sample_rate > 0.05 * len(text.split())  # type: ignore[attr-defined]
        audio = StreamResampler(voice.sample_rate, 16000).process(samples)  # type: ignore[attr-defined]
        decoded = recogniser.transcribe(audio, DecodeOptions(language=lang, beam_size=5))
        hypotheses.append(" ".join(w.text.strip() for w in decoded.words))
    return float(
        jiwer.wer([normalise(t, lang) for t in texts], [normalise(h, lang) for h in hypotheses])
    )


def test_bundled_english_voice_speaks_translations_that_transcribe_back() -> None:
    plan = voice_plan({}, espeak=False)
    assert plan["en"].backend == "piper"
    voice = load_voice(plan["en"])
    assert voice.sample_rate == 22050
    wer = _round_trip(voice, voice_texts("eng_Latn"), "tiny.en", "en")
    assert wer <= 0.15, wer


@needs_espeak
def test_espeak_spanish_fallback_speaks_recognisable_spanish() -> None:
    plan = voice_plan({}, natural=False)
    assert plan["es"].backend == "espeak"
    assert "zh" not in plan  # Debian 12's espeak-ng Mandarin is broken: no default voice
    voice = load_voice(plan["es"])
    wer = _round_trip(voice, voice_texts("spa_Latn"), "base", "es")
    assert wer <= 0.5, wer


@needs_espeak
def test_espeak_gives_each_speaker_of_a_panel_a_variant_unless_one_is_pinned() -> None:
    voice = EspeakSynthesizer("es")
    assert voice.variants == len(EspeakSynthesizer.VARIANTS)
    takes = {voice.synthesize("Buenos días.", 1.0, variant) for variant in range(voice.variants)}
    assert len(takes) == voice.variants  # each sounds different
    assert EspeakSynthesizer("es+m1").variants == 1


def test_faster_rate_gives_shorter_audio() -> None:
    voice = VoiceBank(voice_plan({}, espeak=False)).load("en")
    assert voice is not None
    text = "The quick brown fox jumps over the lazy dog."
    normal, fast = voice.synthesize(text, 1.0), voice.synthesize(text, 1.3)
    assert len(fast) < 0.9 * len(normal)


def test_a_corrupt_voice_file_is_refused(tmp_path: Path) -> None:
    source = joe_voice_path()
    for name in JOE_FILES:
        shutil.copy(source.parent / name, tmp_path / name)
    with (tmp_path / source.name).open("r+b") as handle:
        handle.seek(1000)
        handle.write(b"corrupt")
    plan = voice_plan({"en": str(tmp_path / source.name)}, espeak=False)
    with pytest.raises(ChecksumMismatch, match=r"en_US-joe-medium\.onnx"):
        load_voice(plan["en"])


def test_user_voices_by_path_and_espeak_name(tmp_path: Path) -> None:
    plan = voice_plan({"fr": "espeak:fr-fr", "de": str(tmp_path / "de.onnx")}, espeak=False)
    assert plan["fr"].backend == "espeak" and plan["fr"].model == "fr-fr"
    assert plan["de"].backend == "piper"
    with pytest.raises(ModelError, match=r"de\.onnx\.json"):
        load_voice(plan["de"])
