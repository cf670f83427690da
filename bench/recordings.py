"""The evaluation recordings the benchmarks replay: a WAV with a human reference beside it."""

from __future__ import annotations

import wave
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.paths import EVAL

EVAL_LONGFORM_EN = EVAL / "longform" / "en"

EXCLUDED_BY_DEFAULT = ("_SILVER", "_concat")
"""Name parts of files left out unless named: ``*_SILVER`` has a machine-made reference and
the ``*_concat`` file repeats the three sonnets."""


@dataclass(frozen=True, slots=True)
class Recording:
    """One WAV file (16-bit mono PCM) and its reference transcript."""

    id: str
    wav: Path
    reference_text: str
    sample_rate: int
    pcm: bytes

    @property
    def samples(self) -> int:
        return len(self.pcm) // 2

    @property
    def duration(self) -> float:
        return self.samples / self.sample_rate


class RecordingError(ValueError):
    """A recording is missing, has no reference, or is not 16-bit mono PCM."""


def load_recording(wav: Path) -> Recording:
    """Read ``wav`` and the ``.txt`` reference next to it."""
    reference = wav.with_suffix(".txt")
    if not wav.is_file():
        raise RecordingError(f"no such recording: {wav}")
    if not reference.is_file():
        raise RecordingError(f"recording {wav} has no reference {reference.name}")
    with wave.open(str(wav), "rb") as reader:
        if reader.getsampwidth() != 2 or reader.getnchannels() != 1:
            raise RecordingError(f"{wav} is not 16-bit mono PCM")
        rate = reader.getframerate()
        pcm = reader.readframes(reader.getnframes())
    return Recording(
        id=wav.stem,
        wav=wav,
        reference_text=reference.read_text(encoding="utf-8"),
        sample_rate=rate,
        pcm=pcm,
    )


def default_wavs(directory: Path = EVAL_LONGFORM_EN) -> list[Path]:
    """Every WAV in ``directory`` except those excluded by default, sorted by name."""
    return sorted(
        p
        for p in directory.glob("*.wav")
        if not any(part in p.stem for part in EXCLUDED_BY_DEFAULT)
    )


def resolve_wavs(names: Sequence[str], directory: Path = EVAL_LONGFORM_EN) -> list[Path]:
    """Turn each name (a path to a WAV, or a recording id in ``directory``) into a path."""
    out: list[Path] = []
    for name in names:
        path = Path(name)
        if path.suffix != ".wav":
            path = directory / f"{name}.wav"
        if not path.is_file():
            raise RecordingError(f"no such recording: {name} (looked for {path})")
        out.append(path)
    return out
