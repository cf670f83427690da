"""The offline decode's cache (bench/reference.py) serves only the kind of machine that made
it: a decode from another processor or CTranslate2 is made again; and every report names the
releases it was measured with (bench/resources.py)."""

from __future__ import annotations

import json
from importlib import metadata
from pathlib import Path

import pytest

from bench import reference
from bench.alignment import TimedWord
from bench.recordings import Recording
from bench.reference import DecodeSettings, OfflineDecode, cached_decode
from bench.resources import machine_info


def _recording() -> Recording:
    return Recording(
        id="clip",
        wav=Path("clip.wav"),
        pcm=b"\0\0" * 16000,
        sample_rate=16000,
        reference_text="said",
    )


def test_a_decode_cached_on_another_machine_is_made_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[str] = []

    def decode(recording: Recording, settings: DecodeSettings) -> OfflineDecode:
        made.append(recording.id)
        return OfflineDecode(
            recording.id, settings, f"said {len(made)}", (TimedWord("said", 0.0, 0.5),), 0.1
        )

    host = {"ctranslate2": "4.8.5", "cpu": "AuthenticAMD 25 17", "isa": "avx512f"}
    monkeypatch.setattr(reference, "decode", decode)
    monkeypatch.setattr(reference, "decode_host", lambda: dict(host))
    settings = DecodeSettings()
    assert cached_decode(_recording(), settings, tmp_path).text == "said 1"
    assert cached_decode(_recording(), settings, tmp_path).text == "said 1"  # from the cache
    (path,) = tmp_path.glob("*.json")
    assert json.loads(path.read_text())["host"] == host

    host["isa"] = "avx2"  # the same settings on a processor without AVX-512
    assert cached_decode(_recording(), settings, tmp_path).text == "said 2"
    assert made == ["clip", "clip"]

    older = json.loads(path.read_text())
    del older["host"]  # a cache written before machines were recorded
    path.write_text(json.dumps(older))
    assert cached_decode(_recording(), settings, tmp_path).text == "said 3"


def test_the_host_names_the_processor_and_ctranslate2() -> None:
    host = reference.decode_host()
    assert set(host) == {"ctranslate2", "cpu", "isa"}
    assert host["ctranslate2"][0].isdigit()


def test_every_report_names_the_releases_that_decoded_it() -> None:
    """A fresh machine installs the newest release each pin allows: a report says which."""
    packages = machine_info()["packages"]
    assert {"ctranslate2", "faster-whisper", "onnxruntime"} <= set(packages)
    assert packages["faster-whisper"] == metadata.version("faster-whisper")
