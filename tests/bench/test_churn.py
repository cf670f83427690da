"""The churn benchmark: its checkpoints, options and report on hand-made runs, and two short
real runs (a server the bench starts, five sessions each)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench.__main__ import main
from bench.churn import (
    Checkpoint,
    ChurnRun,
    ChurnSettings,
    Reading,
    SessionResult,
    checkpoint,
    parse_env,
    reading_counts,
    series_counts,
)
from bench.churn_report import report_json, report_markdown, write_report
from bench.resources import Footprint
from tests.data import ENGLISH

MB = 10**6


def test_series_every_twentieth_and_the_last() -> None:
    assert series_counts(2000) == frozenset(range(100, 2001, 100))
    assert series_counts(5) == frozenset({1, 2, 3, 4, 5})
    assert series_counts(45) == frozenset(range(2, 45, 2)) | {45}


def test_checkpoint_windows_end_at_the_warmup_and_the_last_session() -> None:
    settings = ChurnSettings(sessions=2000, warmup=200, clip=Path("c.wav"), out=Path("o"))
    warmup, end, read = reading_counts(settings)
    assert (warmup, end) == (range(181, 201), range(1981, 2001))
    assert read == frozenset(range(100, 2001, 100)) | set(warmup) | set(end)
    short = ChurnSettings(sessions=5, warmup=2, clip=Path("c.wav"), out=Path("o"))
    assert reading_counts(short)[:2] == (range(1, 3), range(3, 6))  # the end's: after warm-up


def test_a_checkpoint_is_the_floor_of_its_readings() -> None:
    readings = [_reading(1, 924.0, 21), _reading(2, 954.0, 20), _reading(3, 925.0, 22)]
    point = checkpoint(readings, range(1, 4))
    assert point is not None and point.sessions == 3
    assert point.floor == Footprint(924 * MB, 20, 20)
    assert point.rss_max_bytes == 954 * MB
    assert checkpoint(readings, range(2, 5)) is None  # the run stopped before session 4


def test_env_words_become_a_mapping() -> None:
    assert parse_env(["INTERP_ENDED_GRACE_S=1", "INTERP_X=a=b", "INTERP_EMPTY="]) == {
        "INTERP_ENDED_GRACE_S": "1",
        "INTERP_X": "a=b",
        "INTERP_EMPTY": "",
    }
    for bad in ("INTERP_ENDED_GRACE_S", "interp_x=1", "=1", "A B=1"):
        with pytest.raises(ValueError):
            parse_env([bad])


def test_env_overrides_the_benchs_own_settings() -> None:
    settings = ChurnSettings(
        sessions=10,
        warmup=2,
        clip=Path("clip.wav"),
        out=Path("out"),
        speed=10.0,
        env={"INTERP_SESSION_RATE": "5", "INTERP_ENDED_GRACE_S": "1"},
    )
    assert settings.server_env() == {
        "INTERP_MAX_AUDIO_SPEED": "10",
        "INTERP_SESSION_RATE": "5",
        "INTERP_ENDED_GRACE_S": "1",
    }


@pytest.mark.parametrize(
    "words",
    [
        ["--sessions", "5", "--warmup", "5"],
        ["--sessions", "5", "--warmup", "0"],
        ["--speed", "0"],
        ["--window", "0"],
        ["--env", "grace=1"],
    ],
)
def test_bad_options_exit_2_before_any_server_starts(words: list[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["churn", *words])
    assert exited.value.code == 2


def _ok(index: int, seconds: float = 1.0) -> SessionResult:
    return SessionResult(
        index=index,
        seconds=seconds,
        ended=True,
        end_status=200,
        listener_joined=True,
        listener_saw_end=True,
        finals=1,
        listener_missing_finals=0,
    )


def _reading(sessions: int, rss_mb: float, fds: int) -> Reading:
    return Reading(sessions, float(sessions), Footprint(int(rss_mb * MB), fds, 20))


def _run(end_rss_mb: float, end_fds: int, results: list[SessionResult] | None = None) -> ChurnRun:
    """Four sessions, warm-up 2, windows of two: the warm-up's floor is 900 MB and 30 files
    (its other reading is higher), the end's is ``end_rss_mb`` and ``end_fds``."""
    readings = (
        _reading(1, 930.0, 31),
        _reading(2, 900.0, 30),
        _reading(3, end_rss_mb + 30, end_fds),
        _reading(4, end_rss_mb, end_fds + 1),
    )
    return ChurnRun(
        results=tuple(results or [_ok(k) for k in range(4)]),
        readings=readings,
        warmup=Checkpoint(2, readings[:2]),
        end=Checkpoint(4, readings[2:]),
        start=Footprint(880 * MB, 25, 19),
        audio_s=2.99,
    )


SETTINGS = ChurnSettings(sessions=4, warmup=2, clip=Path("x/clip.wav"), out=Path("out"))


def test_goal_needs_growth_under_the_limit_and_no_more_files() -> None:
    report = report_json(_run(914.9, 30), SETTINGS, "python -m bench churn")
    assert report["growth"] == {"rss_mb": 14.9, "fds": 0, "threads": 0}
    assert report["goals_met"] == {"rss": True, "fds": True} and report["goal_met"] is True

    grew = report_json(_run(915.0, 30), SETTINGS, "c")
    assert grew["goals_met"] == {"rss": False, "fds": True} and grew["goal_met"] is False

    leaked = report_json(_run(899.0, 31), SETTINGS, "c")
    assert leaked["growth"]["rss_mb"] == -1.0
    assert leaked["goals_met"] == {"rss": True, "fds": False} and leaked["goal_met"] is False


def test_a_run_that_stopped_before_the_warmup_has_no_verdict() -> None:
    failed = SessionResult(index=0, seconds=0.1, error="ReplayError: 429")
    run = ChurnRun(
        results=(failed,) * 5,
        readings=(),
        warmup=None,
        end=None,
        start=Footprint(880 * MB, 25, 19),
        audio_s=2.99,
        stopped="5 sessions in a row failed; the last: ReplayError: 429",
    )
    report = report_json(run, SETTINGS, "c")
    assert report["growth"] is None and report["goal_met"] is None
    assert report["sessions"]["failed"] == 5 and report["sessions"]["ok"] == 0
    assert report["sessions"]["first_problems"][0] == "0: ReplayError: 429"
    markdown = report_markdown(report)
    assert "files flat, from session 2 to the end: not measured" in markdown
    assert "**Stopped early**: 5 sessions in a row failed" in markdown


def test_report_counts_outcomes_and_rates(tmp_path: Path) -> None:
    results = [_ok(0, 2.0), _ok(1, 2.0), _ok(2, 0.5), _ok(3, 0.5)]
    results[3] = SessionResult(index=3, seconds=0.5, ended=True, end_status=200, finals=2)
    settings = ChurnSettings(sessions=4, warmup=2, clip=Path("x/clip.wav"), out=tmp_path)
    paths, markdown = write_report(_run(905.0, 30, results), settings, "python -m bench churn")
    assert [p.name for p in paths] == ["churn.json", "churn.md"]
    report = json.loads((tmp_path / "churn.json").read_text())
    assert markdown == (tmp_path / "churn.md").read_text()
    counts = report["sessions"]
    assert counts["run"] == 4 and counts["ended"] == 4 and counts["end_answered_200"] == 4
    assert counts["listeners_saw_end"] == 3 and counts["listeners_with_every_final"] == 3
    assert counts["ok"] == 3 and counts["failed"] == 1
    assert counts["first_problems"] == ["3: the listener did not see the session end"]
    assert report["sessions_per_s"]["all"] == pytest.approx(4 / 5.0)
    assert report["sessions_per_s"]["after_warmup"] == pytest.approx(2 / 1.0)
    assert report["series"][-1] == [4, 4.0, 905.0, 31, 20]
    assert report["end"] == {
        "sessions": 4,
        "window": [3, 4],
        "rss_mb": 905.0,
        "fds": 30,
        "threads": 20,
        "rss_max_mb": 935.0,
    }
    assert "| sessions (readings of the window) | 0 | 2 (1-2) | 4 (3-4) | |" in markdown
    assert "| resident memory (MB) | 880.0 | 900.0 | 905.0 | 5.0 |" in markdown
    assert "| open files | 25 | 30 | 30 | 0 |" in markdown
    assert "| resident memory, highest reading (MB) | | 930.0 | 935.0 | |" in markdown


# --- real runs --------------------------------------------------------------------------------


def _churn(tmp_path: Path, *words: str) -> dict[str, Any]:
    args = ["--sessions", "5", "--warmup", "2", "--settle", "0.5", "--file", str(ENGLISH), *words]
    assert main(["churn", *args, "--out", str(tmp_path)]) == 0
    report: dict[str, Any] = json.loads((tmp_path / "churn.json").read_text())
    assert report["command"] == f"python -m bench churn {' '.join(args)} --out {tmp_path}"
    assert (tmp_path / "churn.md").read_text().startswith("# Churn benchmark")
    return report


@pytest.mark.model
def test_churn_five_real_sessions(tmp_path: Path) -> None:
    report = _churn(tmp_path, "--env", "INTERP_ENDED_GRACE_S=1")
    assert report["server"]["env"] == {
        "INTERP_MAX_AUDIO_SPEED": "10",
        "INTERP_SESSION_RATE": "0",
        "INTERP_ENDED_GRACE_S": "1",
    }
    assert report["stopped"] is None
    counts = report["sessions"]
    assert counts["run"] == 5 and counts["failed"] == 0, counts["first_problems"]
    assert counts["ended"] == 5  # every stop was answered with 'ended'
    assert counts["end_answered_200"] == 5 and counts["listeners_saw_end"] == 5
    assert counts["listeners_with_every_final"] == 5 and counts["ok"] == 5
    assert counts["finals_per_session"]["min"] >= 1  # 3 s of speech: at least one final

    warmup, end, growth = report["after_warmup"], report["end"], report["growth"]
    assert warmup["window"] == [1, 2] and end["window"] == [3, 5]
    for point in (report["start"], warmup, end):
        assert point["rss_mb"] > 50 and point["fds"] > 3 and point["threads"] >= 1
    assert growth["fds"] == end["fds"] - warmup["fds"]
    assert growth["rss_mb"] == pytest.approx(end["rss_mb"] - warmup["rss_mb"], abs=0.11)
    assert report["goal_met"] is (growth["rss_mb"] < 15 and growth["fds"] <= 0)
    assert 0 < report["session_s"]["p50"] < 30
    assert report["sessions_per_s"]["all"] > 0 and report["sessions_per_s"]["after_warmup"] > 0
    assert [row[0] for row in report["series"]] == [1, 2, 3, 4, 5]


@pytest.mark.model
def test_churn_env_reaches_the_server(tmp_path: Path) -> None:
    # Two sessions a minute: the server refuses the third creation (429), and the bench
    # records the failures instead of stopping (fewer than five in a row).
    report = _churn(tmp_path, "--env", "INTERP_SESSION_RATE=2")
    counts = report["sessions"]
    assert counts["run"] == 5 and counts["ok"] == 2 and counts["ended"] == 2
    assert counts["failed"] == 3
    assert all("429" in e for e in counts["first_problems"]), counts["first_problems"]
