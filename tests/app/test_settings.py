"""Settings come from the environment only when asked, typed by their parser."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.settings import Settings


def test_defaults_without_environment() -> None:
    settings = Settings.from_env({})
    assert settings.host == "127.0.0.1" and settings.port == 8000
    assert dict(settings.asr_models) == {"en": "tiny.en", "*": "base"}


def test_environment_values_are_parsed() -> None:
    settings = Settings.from_env(
        {
            "HOST": "0.0.0.0",
            "PORT": "9000",
            "INTERP_DATA_DIR": "/tmp/x",
            "INTERP_ASR_MODELS": "en=tiny.en, de=/models/de",
            "INTERP_MULTILINGUAL": "0",
            "INTERP_ALLOWED_ORIGINS": "https://a.example, https://b.example",
            "INTERP_MAX_AUDIO_SPEED": "4",
            "INTERP_SESSION_RATE": "5",
        }
    )
    assert settings.host == "0.0.0.0" and settings.port == 9000
    assert settings.data_dir == Path("/tmp/x")
    assert dict(settings.asr_models) == {"en": "tiny.en", "de": "/models/de"}
    assert settings.load_multilingual is False
    assert settings.allowed_origins == ("https://a.example", "https://b.example")
    assert settings.limits.max_speed == 4.0
    assert settings.session_create_per_minute == 5


def test_overrides_win_and_bad_maps_are_refused() -> None:
    assert Settings.from_env({"PORT": "9000"}, port=7).port == 7
    with pytest.raises(ValueError, match="LANG=MODEL"):
        Settings.from_env({"INTERP_ASR_MODELS": "tiny.en"})


def test_asr_workers_are_read_and_must_be_at_least_one() -> None:
    assert Settings.from_env({}).asr_workers == 2
    assert Settings.from_env({"INTERP_ASR_WORKERS": "3"}).asr_workers == 3
    with pytest.raises(ValueError, match="at least 1"):
        Settings.from_env({"INTERP_ASR_WORKERS": "0"})
