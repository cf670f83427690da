"""The development set by class: which evaluation recordings look like which kind of speech.

A change is judged per class, on every recording of the class, never on one file; a bench's
headline is its worst class (docs/metrics.md, "Classes"). Classes:

- ``read``: an audiobook reader (LibriVox verse);
- ``spontaneous``: one speaker talking freely, pausing inside phrases (an earnings call, a
  demo monologue, a disfluent clip);
- ``conversational``: two people taking turns on the phone (SpokenWOZ);
- ``parliamentary``: speeches in a chamber (no recording of it in ``../shared/eval``; the
  held-out set has one);
- ``noisy``: very noisy radio (Apollo 11 air-to-ground).

A ``silver`` reference was made by a machine or carries recognition-style errors: such a
recording counts for streaming-versus-offline ratios, never for an absolute WER claim.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from bench.paths import EVAL

SpeechClass = Literal["read", "spontaneous", "conversational", "parliamentary", "noisy"]
CLASSES: tuple[SpeechClass, ...] = (
    "read",
    "spontaneous",
    "conversational",
    "parliamentary",
    "noisy",
)


@dataclass(frozen=True, slots=True)
class Tagged:
    """One recording of the development set: where it is, its class and its reference."""

    path: str
    """Relative to the evaluation directory (``../shared/eval``)."""
    speech: SpeechClass
    reference: Literal["human", "silver"] = "human"
    punctuated: bool = False
    """Its reference marks sentence ends (so spurious sentence breaks can be counted)."""

    def wav(self, eval_dir: Path = EVAL) -> Path:
        return eval_dir / self.path

    @property
    def id(self) -> str:
        return Path(self.path).stem


DEVELOPMENT: tuple[Tagged, ...] = (
    Tagged("longform/en/librivox_shakespeare_sonnet_001.wav", "read", punctuated=True),
    Tagged("longform/en/librivox_shakespeare_sonnet_002.wav", "read", punctuated=True),
    Tagged("longform/en/librivox_shakespeare_sonnet_003.wav", "read", punctuated=True),
    Tagged("longform/en/earnings22_1_4482311_3_62.wav", "spontaneous", punctuated=True),
    Tagged(
        "longform/en/realtimestt_demo_monologue_SILVER.wav",
        "spontaneous",
        "silver",
        punctuated=True,
    ),
    Tagged("asr_short/en/mfa_spontaneous_acoustic_corpus.wav", "spontaneous"),
    Tagged("longform/en_conversational/SNG0072.wav", "conversational", "silver"),
    Tagged("longform/en_conversational/SNG0480.wav", "conversational", "silver"),
    Tagged("longform/en_conversational/SNG1263.wav", "conversational", "silver"),
    Tagged("longform/en_conversational/SNG1640.wav", "conversational", "silver"),
    Tagged("longform/en_noisy/apollo11_eva_stowage.wav", "noisy"),
)
"""Every English recording of ``../shared/eval`` long enough to stream, by class."""


def of_classes(names: Iterable[str], tagged: Sequence[Tagged] = DEVELOPMENT) -> list[Tagged]:
    """The recordings of the named classes (all when ``names`` holds ``all``)."""
    wanted = set(names)
    unknown = wanted - {*CLASSES, "all"}
    if unknown:
        raise ValueError(f"unknown classes {sorted(unknown)}; known: {', '.join(CLASSES)}")
    return [t for t in tagged if "all" in wanted or t.speech in wanted]


def class_of(recording_id: str, tagged: Sequence[Tagged] = DEVELOPMENT) -> SpeechClass | None:
    """The class of a recording by id (None if it is not in the development set)."""
    return next((t.speech for t in tagged if t.id == recording_id), None)
