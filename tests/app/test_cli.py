"""``interp prepare``: every configured model is resolved and checksum-verified, the split
ones joined once into the cache (Whisper base, Kokoro)."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.cli import main
from models import kokoro
from models.catalog import sha256_file

pytestmark = pytest.mark.model


def test_prepare_joins_and_verifies_kokoro(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("INTERP_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("INTERP_VOICES", "it=espeak:it")
    assert main(["prepare"]) == 0
    out = capsys.readouterr().out
    model = tmp_path / "kokoro" / kokoro.MODEL_NAME
    assert f"voice es, fr, hi, pt: Kokoro at {model}" in out  # it is pinned to espeak-ng
    assert sha256_file(model) == kokoro.MODEL_SHA256
    assert "asr *: base at " + str(tmp_path / "whisper-base") in out
