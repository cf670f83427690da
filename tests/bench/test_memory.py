"""``python -m bench memory``: its settings, the wait for memory at rest and its report
(bench.memory; the one server it starts refuses its settings at once)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from bench.memory import (
    CONFIGS,
    ConfigRun,
    MemorySettings,
    measure_config,
    parse_config,
    report_json,
    report_markdown,
    rss_at_rest,
)
from bench.recordings import Recording

MIB = 2**20


def _settings(
    tmp_path: Path, still_mb: float = 2.0, still_s: float = 10.0, settle_timeout: float = 120.0
) -> MemorySettings:
    return MemorySettings(
        configs=CONFIGS,
        recording=tmp_path / "talk.wav",
        out=tmp_path,
        still_mb=still_mb,
        still_s=still_s,
        settle_timeout=settle_timeout,
    )


def test_a_configuration_is_a_name_and_its_settings() -> None:
    assert parse_config("lean=INTERP_SPEECH=0,INTERP_MULTILINGUAL=0") == (
        "lean",
        {"INTERP_SPEECH": "0", "INTERP_MULTILINGUAL": "0"},
    )
    assert parse_config("as shipped=") == ("as shipped", {})
    with pytest.raises(ValueError, match="NAME=VALUE"):
        parse_config("lean=speech off")
    with pytest.raises(ValueError, match="NAME=ENV"):
        parse_config("=INTERP_SPEECH=0")


def test_memory_at_rest_is_read_once_it_stops_moving(tmp_path: Path) -> None:
    settings = _settings(tmp_path, still_mb=10_000.0, still_s=1.0, settle_timeout=30.0)
    rss = asyncio.run(rss_at_rest(os.getpid(), settings))
    assert 10 * MIB < rss < 24 * 2**30


def test_memory_at_rest_gives_up_at_the_timeout(tmp_path: Path) -> None:
    # Nothing moves by less than a negative amount: the timeout decides.
    settings = _settings(tmp_path, still_mb=-1.0, still_s=1.0, settle_timeout=0.0)
    assert asyncio.run(rss_at_rest(os.getpid(), settings)) > 10 * MIB


def test_the_report_has_a_row_per_configuration_and_names_a_failure(tmp_path: Path) -> None:
    runs = [
        ConfigRun("defaults", {}, 600 * MIB, 670 * MIB, 980 * MIB, 950 * MIB, 9, 30, 4),
        ConfigRun(
            "English only",
            {"INTERP_MULTILINGUAL": "0"},
            300 * MIB,
            310 * MIB,
            None,
            None,
            0,
            0,
            0,
            error="ReplayError('refused')",
        ),
    ]
    report = report_json(runs, _settings(tmp_path), "python -m bench memory")
    assert [c["rest_mib"] for c in report["configs"]] == [670.0, 310.0]
    assert report["configs"][0]["audio_chunks"] == {"natural": 30, "fast": 4}
    markdown = report_markdown(report)
    assert "| defaults | none | 600 | 670 | 980 | 950 | 9 | 30 / 4 |" in markdown
    assert "| English only | `INTERP_MULTILINGUAL=0` | 300 | 310 | failed: ReplayError" in markdown
    assert "first 45 s of talk.wav" in markdown


def test_a_configuration_whose_server_refuses_to_start_is_reported_not_fatal(
    tmp_path: Path,
) -> None:
    silence = Recording("silence", tmp_path / "silence.wav", "", 16000, bytes(3200))
    run = asyncio.run(
        measure_config(
            "typo", {"INTERP_SPEECH": "of"}, silence, _settings(tmp_path, settle_timeout=5.0)
        )
    )
    assert run.error is not None and "exited with status 2" in run.error
    assert run.ready_bytes is None and run.live_peak_bytes is None
    assert "INTERP_SPEECH='of'" in (tmp_path / "server-memory-typo.log").read_text()
    row = report_markdown(report_json([run], _settings(tmp_path), "python -m bench memory"))
    assert "| typo | `INTERP_SPEECH=of` | – | – | failed: server exited with status 2" in row
