"""The faster-whisper adapter behind :class:`engine.asr.Transcriber`."""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

from engine.asr import DecodeOptions
from engine.audio import Samples
from engine.events import Word
from models.catalog import ModelError, ResolvedWhisper

log = logging.getLogger(__name__)


class FasterWhisperTranscriber:
    """A CTranslate2 Whisper model loaded once and shared by every session."""

    def __init__(
        self, resolved: ResolvedWhisper, *, cpu_threads: int = 2, compute_type: str = "int8"
    ) -> None:
        try:
            from faster_whisper import WhisperModel
        except ImportError as exc:  # pragma: no cover - a dependency of the project
            raise ModelError("faster-whisper is not installed: pip install faster-whisper") from exc
        self.name = resolved.label
        self.multilingual = resolved.multilingual
        self._model: Any = WhisperModel(
            resolved.model, device="cpu", compute_type=compute_type, cpu_threads=cpu_threads
        )

    def transcribe(self, audio: Samples, options: DecodeOptions) -> list[Word]:
        segments, _info = self._model.transcribe(
            audio,
            language=options.language if self.multilingual else None,
            task=options.task,
            beam_size=options.beam_size,
            best_of=1,
            temperature=0.0,
            initial_prompt=options.prompt or None,
            condition_on_previous_text=False,
            word_timestamps=options.word_timestamps,
            vad_filter=False,
            max_new_tokens=options.max_new_tokens,
            without_timestamps=not options.word_timestamps,
            # A segment of silence or noise should come back empty, not hallucinated.
            no_speech_threshold=0.6,
            log_prob_threshold=-1.0,
            compression_ratio_threshold=None,
        )
        words: list[Word] = []
        for segment in segments:
            if segment.words:
                words.extend(
                    Word(w.word, float(w.start), float(w.end), float(w.probability))
                    for w in segment.words
                )
            elif segment.text.strip():
                pieces = segment.text.split()
                span = (segment.end - segment.start) / max(1, len(pieces))
                words.extend(
                    Word(" " + p, segment.start + i * span, segment.start + (i + 1) * span)
                    for i, p in enumerate(pieces)
                )
        return words

    def warm(self) -> None:
        """Run one decode so the first real request does not pay for lazy initialisation."""
        rng = np.random.default_rng(0)
        noise = (rng.standard_normal(16_000) * 0.01).astype(np.float32)
        self.transcribe(noise, DecodeOptions(beam_size=1, language="en"))
