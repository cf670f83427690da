"""The recordings and references the tests use, in the repository (3.7 MB), so that a clone
tests green with nothing beside it.

``eval/`` is a small subset of the evaluation set ``../shared/eval`` in the same layout, so a
benchmark can be pointed at it (``INTERP_SHARED_DIR=tests/data``). Every file is named in
``SOURCES`` with its upstream repository, commit and licence, and what was cut. The
benchmarks keep reading the whole set from ``../shared/eval``; no test reads it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent
EVAL = DATA / "eval"

SONNET = EVAL / "longform" / "en" / "librivox_shakespeare_sonnet_002.wav"
"""LibriVox, Shakespeare's Sonnet 2 read whole by one reader: 52.9 s, the spoken number and
14 verse lines, with a pause after most lines. The human reference is the ``.txt`` beside
it, one verse line a line."""

SONNET_OCTAVE_S = 30.2
"""The end of the sonnet's octave (the number and the first eight lines, ending "thriftless
praise."): inside the 29.97-30.42 s pause before "How much more praise" (frame energy below
-41 dBFS there), so a cut there cuts no word."""

SONNET_OCTAVE_LINES = 9
"""Reference lines of the octave: the spoken number and eight verse lines."""

ENGLISH = EVAL / "asr_short" / "en" / "librispeech_test-clean_1089-134686-0001.wav"
"""One English sentence, 6.6 s (LibriSpeech test-clean), its reference beside it."""

FLEURS = EVAL / "fleurs_st"
"""FLEURS test sentences, one short clip each, with human translations (``manifest.jsonl``:
``source_text`` and ``translations`` by FLORES-200 code), in manifest order: English, German
(two), French, Spanish (two)."""

ENGLISH_FLEURS_ID = "fleurs-en-004"
ENGLISH_FLEURS = FLEURS / "audio" / "en" / f"{ENGLISH_FLEURS_ID}.wav"
"""One English sentence, 4.3 s."""
SPANISH_ID = "fleurs-es-002"
SPANISH = FLEURS / "audio" / "es" / f"{SPANISH_ID}.wav"
"""One Spanish sentence, 9.7 s (speech from 2.4 s)."""

SPEECH_BY_LANGUAGE = {
    "en": ENGLISH,
    "es": SPANISH,
    "de": FLEURS / "audio" / "de" / "fleurs-de-003.wav",
    "fr": FLEURS / "audio" / "fr" / "fleurs-fr-005.wav",
}
"""A clip of speech in each language, at least 3 s of it (FLEURS clips open with up to 2.4 s
of silence)."""

FLORES = EVAL / "mt_text" / "flores200_devtest"
"""The first lines of the FLORES-200 devtest: 100 in English and Spanish, 20 in French."""

VOICE_TEXTS = DATA / "voice_texts"
"""What the voice tests speak, one sentence a line: human translations (FLORES-200 devtest
sentences) into English and into Spanish of FLEURS sentences spoken in other languages."""


def reference(wav: Path) -> str:
    """The human reference beside a recording."""
    return wav.with_suffix(".txt").read_text(encoding="utf-8")


def fleurs_clips(lang: str | None = None) -> list[dict[str, Any]]:
    """The FLEURS clips' manifest rows (all, or those in ``lang``), in manifest order."""
    with (FLEURS / "manifest.jsonl").open(encoding="utf-8") as manifest:
        rows = [json.loads(line) for line in manifest]
    return [row for row in rows if lang is None or row["lang"] == lang]


def fleurs_clip(clip_id: str) -> dict[str, Any]:
    """The manifest row of one FLEURS clip."""
    return next(row for row in fleurs_clips() if row["id"] == clip_id)


def fleurs_audio(clip: dict[str, Any]) -> Path:
    """The WAV of a FLEURS clip's manifest row."""
    return FLEURS / str(clip["audio"])


def voice_texts(code: str) -> list[str]:
    """The sentences a voice for ``code`` (``eng_Latn``, ``spa_Latn``) is tested on."""
    return (VOICE_TEXTS / f"{code}.txt").read_text(encoding="utf-8").splitlines()


def flores_lines(code: str, count: int) -> list[str]:
    """The first ``count`` FLORES-200 devtest sentences in ``code`` (``eng_Latn``, ...); more
    than the excerpt holds is an error, not a shorter list."""
    lines = (FLORES / f"{code}.devtest").read_text(encoding="utf-8").splitlines()
    if count > len(lines):
        raise ValueError(f"tests/data holds {len(lines)} {code} FLORES lines, not {count}")
    return lines[:count]
