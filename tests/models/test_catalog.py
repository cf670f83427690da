"""The model catalog: bundled models resolve offline and their checksums are enforced."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from models.catalog import (
    BASE,
    TINY_EN,
    ChecksumMismatch,
    ModelError,
    join_parts,
    resolve_whisper,
    sha256_file,
    silero_vad_path,
    verify_files,
    whisper_model_dir,
)


def test_tiny_en_resolves_from_its_package_and_verifies() -> None:
    directory = whisper_model_dir("tiny.en")
    assert (directory / "model.bin").is_file()
    resolved = resolve_whisper("tiny.en")
    assert resolved.model == str(directory) and not resolved.multilingual


def test_base_parts_are_joined_once_into_the_cache(tmp_path: Path) -> None:
    directory = whisper_model_dir("base", tmp_path)
    assert directory.parent == tmp_path
    assert sha256_file(directory / "model.bin") == BASE.files["model.bin"]
    stamp = (directory / "model.bin").stat().st_mtime_ns
    assert whisper_model_dir("base", tmp_path) == directory
    assert (directory / "model.bin").stat().st_mtime_ns == stamp, "joined only once"


def test_a_corrupt_joined_model_is_rebuilt_not_loaded(tmp_path: Path) -> None:
    directory = whisper_model_dir("base", tmp_path)
    with (directory / "model.bin").open("r+b") as handle:
        handle.seek(1000)
        handle.write(b"\x00" * 16)
    # The cache no longer matches: it is joined again from the verified parts.
    assert sha256_file(whisper_model_dir("base", tmp_path) / "model.bin") == BASE.files["model.bin"]


def test_parts_that_do_not_join_to_the_pinned_checksum_are_refused(tmp_path: Path) -> None:
    parts = [tmp_path / "a", tmp_path / "b"]
    parts[0].write_bytes(b"half ")
    parts[1].write_bytes(b"tampered")
    target = tmp_path / "cache" / "model.onnx"
    with pytest.raises(ChecksumMismatch, match="reinstall some-model-part"):
        join_parts(parts, target, "0" * 64, reinstall="some-model-part")
    assert list(target.parent.iterdir()) == []  # nothing half-written is left behind
    good = hashlib.sha256(b"half tampered").hexdigest()
    join_parts(parts, target, good, reinstall="some-model-part")
    assert target.read_bytes() == b"half tampered"


def test_a_tampered_weight_file_is_refused_with_its_name(tmp_path: Path) -> None:
    copy = tmp_path / "tiny"
    shutil.copytree(whisper_model_dir("tiny.en"), copy)
    with (copy / "model.bin").open("r+b") as handle:
        handle.seek(5000)
        handle.write(b"\xff" * 8)
    with pytest.raises(ChecksumMismatch, match=r"model\.bin"):
        verify_files(copy, TINY_EN.files)


def test_a_user_model_directory_is_checked_against_its_sha256sums(tmp_path: Path) -> None:
    copy = tmp_path / "my-whisper"
    shutil.copytree(whisper_model_dir("tiny.en"), copy)
    lines = [f"{sha256_file(copy / name)}  {name}" for name in ("model.bin", "config.json")]
    (copy / "SHA256SUMS").write_text("\n".join(lines) + "\n")
    assert resolve_whisper(str(copy)).model == str(copy)
    (copy / "config.json").write_text("{}")
    with pytest.raises(ChecksumMismatch):
        resolve_whisper(str(copy))


def test_a_path_without_a_model_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match=r"no model\.bin"):
        resolve_whisper(str(tmp_path))
    with pytest.raises(ModelError, match="no bundled Whisper model"):
        whisper_model_dir("large-v3")


def test_silero_vad_ships_inside_faster_whisper() -> None:
    path = silero_vad_path()
    assert path.name == "silero_vad_v6.onnx" and "faster_whisper" in str(path)
