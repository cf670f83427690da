"""Settings come from the environment only when asked, typed by their parser; a bad value
is refused before the server starts, naming its variable."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.cli import main
from app.services import check_settings, pace_defaults, recognizer_defaults
from app.settings import Settings, SettingsError


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


def test_on_off_settings_take_the_usual_words_and_refuse_a_typo() -> None:
    for word, value in (("1", True), ("Yes", True), ("on", True), ("0", False), ("OFF", False)):
        assert Settings.from_env({"INTERP_SPEECH": word}).speech is value
    with pytest.raises(SettingsError, match="INTERP_SPEECH='of': expected 1 or 0"):
        Settings.from_env({"INTERP_SPEECH": "of"})


def test_a_bad_value_names_its_variable() -> None:
    with pytest.raises(SettingsError, match="INTERP_CPU_THREADS='two'"):
        Settings.from_env({"INTERP_CPU_THREADS": "two"})
    with pytest.raises(SettingsError, match="INTERP_ASR_WORKERS='0': expected a whole number"):
        Settings.from_env({"INTERP_ASR_WORKERS": "0"})


def test_recogniser_and_speech_overrides_are_typed_and_checked() -> None:
    settings = Settings.from_env(
        {
            "INTERP_RECOGNIZER": "min_silence_s=0.5,shed_when_crowded=false",
            "INTERP_PACE": "fallback_gap_s=2",
        }
    )
    check_settings(settings)
    config = recognizer_defaults(settings)
    assert config.min_silence_s == 0.5 and config.shed_when_crowded is False
    assert pace_defaults(settings).fallback_gap_s == 2.0
    refused = {
        "INTERP_RECOGNIZER": (
            ("min_silence=0.5", "unknown field 'min_silence'"),
            ("min_silence_s=half", "min_silence_s='half'"),
            ("shed_when_crowded=flase", "shed_when_crowded='flase': expected 1 or 0"),
            ("language=de", "unknown field 'language'"),
        ),
        "INTERP_PACE": (("fallback_gap_s=soon", "fallback_gap_s='soon'"),),
    }
    for variable, cases in refused.items():
        for value, message in cases:
            with pytest.raises(SettingsError, match=f"{variable}: {message}"):
                check_settings(Settings.from_env({variable: value}))


def test_serve_refuses_a_bad_setting_before_it_starts(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("INTERP_RECOGNIZER", "min_silence_s=half")
    assert main(["serve", "--port", "1"]) == 2
    assert "interp: INTERP_RECOGNIZER: min_silence_s='half'" in capsys.readouterr().err
    monkeypatch.delenv("INTERP_RECOGNIZER")
    monkeypatch.setenv("INTERP_MULTILINGUAL", "nope")
    assert main(["prepare"]) == 2
    assert "interp: INTERP_MULTILINGUAL='nope'" in capsys.readouterr().err
