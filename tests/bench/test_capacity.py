"""The capacity benchmark: lag and capacity on hand-made cases, the report and plot from
hand-made rounds, and one short real round (one presenter, 10 s of a real recording)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench.capacity import (
    CapacityRound,
    CapacitySettings,
    LagSample,
    PresenterLag,
    capacity_of,
    caption_ends,
    lag_series,
    presenter_recordings,
    server_lag_max,
    server_lags,
    shed_share,
    write_report,
)
from bench.metrics import SendSchedule
from bench.recordings import Recording
from bench.replay import Received, Replay
from bench.resources import CpuUse
from tests.data import SONNET
from tests.support import ServerProcess, run_bench_against

# 100 ms chunks sent at 10.1, 10.2, ... (chunk k holds audio up to 0.1 * (k + 1) s).
SCHEDULE = SendSchedule(
    16000, tuple(1600 * (k + 1) for k in range(30)), tuple(10.1 + 0.1 * k for k in range(30))
)


def test_lag_is_audio_sent_minus_newest_caption_end() -> None:
    samples = lag_series(
        SCHEDULE,
        [
            (10.75, 0.2),  # 0.7 s sent by 10.75 (chunks sent up to 10.7), covered 0.2
            (11.55, 0.9),  # 1.5 s sent, covered 0.9
            (11.62, 0.4),  # a late final of an earlier segment: covered stays 0.9
            (12.95, 2.8),  # 2.9 s sent
        ],
    )
    assert [s.at for s in samples] == pytest.approx([0.65, 1.45, 1.52, 2.85])
    assert [s.sent for s in samples] == pytest.approx([0.7, 1.5, 1.6, 2.9])
    assert [s.covered for s in samples] == pytest.approx([0.2, 0.9, 0.9, 2.8])
    assert [s.lag for s in samples] == pytest.approx([0.5, 0.6, 0.7, 0.1])
    assert lag_series(SCHEDULE, []) == []


def message_replay(messages: list[dict[str, Any]]) -> Replay:
    return Replay(
        recording="hand-made",
        mode="realtime",
        session_code="ABC234",
        schedule=SCHEDULE,
        received=tuple(Received(10.5 + 0.1 * k, m) for k, m in enumerate(messages)),
        start_sent=10.0,
        ready_at=10.0,
        stop_sent=13.0,
        ended_at=13.5,
        binary_messages=0,
        server_cpu_seconds=None,
    )


def test_shed_share_is_the_time_the_shedding_events_said_a_level_above_zero() -> None:
    # Sent from 10.1 s, ended at 13.5 s; message k arrives at 10.5 + 0.1 k s.
    filler: dict[str, Any] = {"type": "caption", "source": True, "end": 0.0}
    messages = [filler] * 30
    messages[0] = {"type": "shedding", "level": 1, "shed": ["context"]}
    messages[10] = {"type": "shedding", "level": 0, "shed": []}
    messages[20] = {"type": "shedding", "level": 2, "shed": ["context", "refine beam"]}
    # Shed from 10.5 to 11.5 s and from 12.5 s to the end: 2 s of 3.4.
    assert shed_share(message_replay(messages)) == pytest.approx(2.0 / 3.4)
    assert shed_share(message_replay([filler] * 5)) == 0.0


def test_caption_ends_take_source_captions_only() -> None:
    source = {"type": "caption", "source": True, "state": "draft", "end": 0.3}
    recorded = message_replay(
        [
            {"type": "ready", "sample_rate": 16000},
            source,
            {**source, "source": False, "lang": "es", "end": 0.9},
            {"type": "lag", "seconds": 1.25},
            {**source, "state": "final", "end": 0.6},
            {"type": "lag", "seconds": 1.5},
            {"type": "lag", "seconds": 0.0},
            {"type": "ended"},
        ]
    )
    arrivals, ends = zip(*caption_ends(recorded), strict=True)
    assert arrivals == pytest.approx((10.6, 10.9))
    assert ends == (0.3, 0.6)
    assert server_lag_max(recorded) == 1.5
    assert server_lags(recorded) == [1.25, 1.5]  # the report of catching up is not counted
    assert server_lag_max(message_replay([source])) is None


def test_caption_ends_of_a_panel_take_one_speaker_only() -> None:
    caption = {"type": "caption", "source": True, "state": "final"}
    recorded = message_replay(
        [
            {**caption, "end": 0.4, "speaker": {"id": "presenter", "name": "Ada"}},
            {**caption, "end": 2.0, "speaker": {"id": "s2", "name": "Bo"}},
            {**caption, "end": 0.8, "speaker": {"id": "presenter", "name": "Ada"}},
        ]
    )
    assert [end for _, end in caption_ends(recorded, "presenter")] == [0.4, 0.8]
    assert [end for _, end in caption_ends(recorded, "s2")] == [2.0]
    assert [end for _, end in caption_ends(recorded)] == [0.4, 2.0, 0.8]


def presenter(lags: list[float], error: str | None = None) -> PresenterLag:
    samples = tuple(
        LagSample(at=float(k), sent=float(k) + lag, covered=float(k)) for k, lag in enumerate(lags)
    )
    return PresenterLag("rec", 10.0, samples, end_lag_s=0.5, error=error)


def cap_round(*presenters: PresenterLag) -> CapacityRound:
    return CapacityRound(
        presenters=presenters,
        cpu=CpuUse(10.0, 0.8, (), 0.01, 1.2),
        rss_start_bytes=300 * 2**20,
        rss_peak_bytes=320 * 2**20,
        load_average_before=(0.5, 0.5, 0.5),
        load_average_after=(0.6, 0.6, 0.6),
    )


def test_a_presenter_passes_only_under_the_limit_all_the_time() -> None:
    assert presenter([0.5, 1.9]).passed(2.0)
    assert not presenter([0.5, 2.0]).passed(2.0)  # strictly under
    assert not presenter([0.5, 2.5, 0.5]).passed(2.0)  # one excursion is enough
    assert not presenter([]).passed(2.0)  # never captioned
    assert not presenter([0.5], error="server closed the stream (1013)").passed(2.0)
    assert presenter([0.5, 1.5]).lag.max == pytest.approx(1.5)


def test_capacity_is_the_last_of_consecutive_passing_rounds() -> None:
    ok, slow = presenter([0.5, 1.0]), presenter([1.0, 3.0])
    assert capacity_of([cap_round(ok), cap_round(ok, ok), cap_round(ok, slow)], 2.0) == 2
    assert capacity_of([cap_round(slow)], 2.0) == 0
    assert capacity_of([cap_round(ok)], 2.0) == 1
    assert capacity_of([cap_round(ok), cap_round(ok, ok, ok)], 2.0) == 1  # round 2 missing
    assert capacity_of([], 2.0) == 0


def test_presenters_cycle_through_the_recordings() -> None:
    recordings = [Recording(name, Path(name), "", 16000, b"") for name in "abc"]
    assert [r.id for r in presenter_recordings(recordings, 4)] == ["a", "b", "c", "a"]


def test_report_and_plot_from_hand_made_rounds(tmp_path: Path) -> None:
    settings = CapacitySettings(max_presenters=2, wavs=(Path("a.wav"), Path("b.wav")), out=tmp_path)
    rounds = [cap_round(presenter([0.5, 1.0])), cap_round(presenter([0.8]), presenter([2.4]))]
    paths, markdown = write_report(rounds, settings, "python -m bench capacity --max 2")
    assert [p.name for p in paths] == ["capacity.json", "capacity.md", "capacity.png"]
    assert (tmp_path / "capacity.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    report = json.loads((tmp_path / "capacity.json").read_text())
    assert report["capacity"] == 1
    assert [r["passed"] for r in report["rounds"]] == [True, False]
    second = report["rounds"][1]
    assert second["lag_s"]["max"] == pytest.approx(2.4)
    assert [p["passed"] for p in second["per_presenter"]] == [True, False]
    assert second["per_presenter"][1]["series"] == [[0.0, 2.4, 0.0]]
    assert second["server"]["rss_peak_mib"] == 320.0
    assert "**Capacity: 1 presenter(s)**" in markdown
    assert markdown == (tmp_path / "capacity.md").read_text()


# --- a short real round -------------------------------------------------------------------

ROUND_KEYS = {"presenters", "passed", "lag_s", "server", "machine", "wall_s", "per_presenter"}
PRESENTER_KEYS = {
    "recording",
    "audio_s",
    "lag_s",
    "end_lag_s",
    "server_lag_max_s",
    "server_lag_reports",
    "passed",
    "error",
    "shed_share",
    "natural_chunks",
    "fast_chunks",
    "series",
}


@pytest.mark.model
def test_capacity_one_presenter_real_round(server: ServerProcess, tmp_path: Path) -> None:
    recording = SONNET.stem
    seconds = 11.0  # cut in the middle of a line (speech from 9.7 s to 13 s): Stop finalises it
    report = run_bench_against(
        server,
        tmp_path,
        "capacity",
        [
            "--max",
            "1",
            "--seconds",
            str(seconds),
            "--files",
            str(SONNET),
        ],
    )
    assert (tmp_path / "capacity.png").read_bytes()[:4] == b"\x89PNG"
    assert (tmp_path / "capacity.md").read_text().startswith("# Capacity benchmark")
    assert report["benchmark"] == "capacity" and report["recordings"] == [recording]
    (run,) = report["rounds"]
    assert set(run) == ROUND_KEYS
    (one,) = run["per_presenter"]
    assert set(one) == PRESENTER_KEYS
    assert one["recording"] == recording and one["audio_s"] == pytest.approx(seconds)
    assert one["error"] is None
    assert one["natural_chunks"] == one["fast_chunks"] == 0  # no --speech: nothing spoken
    assert 0.0 <= one["shed_share"] <= 1.0

    series = one["series"]
    assert len(series) == one["lag_s"]["count"] >= 2
    at, sent, covered = (list(column) for column in zip(*series, strict=True))
    assert at == sorted(at) and sent == sorted(sent) and covered == sorted(covered)
    assert all(0.0 <= s <= seconds for s in sent)
    assert all(0.0 <= c <= s + 0.5 for c, s in zip(covered, sent, strict=True))
    assert sent[-1] == pytest.approx(seconds)  # the stop's final comes after all audio
    lags = [s - c for s, c in zip(sent, covered, strict=True)]
    assert one["lag_s"]["max"] == pytest.approx(max(lags), abs=0.002)
    assert one["end_lag_s"] >= 0
    assert one["passed"] == (max(lags) < report["lag_limit_s"])
    assert run["passed"] == one["passed"]
    assert report["capacity"] == (1 if one["passed"] else 0)
    assert run["server"]["cpu_cores"] > 0
    assert run["server"]["rss_peak_mib"] >= run["server"]["rss_start_mib"] > 0


@pytest.mark.model
def test_capacity_panel_round_streams_two_speakers_of_one_session(
    server: ServerProcess, tmp_path: Path
) -> None:
    seconds = 8.0
    report = run_bench_against(
        server,
        tmp_path,
        "capacity",
        [
            "--panel",
            "--max",
            "2",
            "--lag-limit",
            "30",
            "--seconds",
            str(seconds),
            "--files",
            str(SONNET),
        ],
        report="capacity-panel",
    )
    assert (tmp_path / "capacity-panel.md").read_text().startswith("# Capacity benchmark")
    assert [len(r["per_presenter"]) for r in report["rounds"]] == [1, 2]
    two = report["rounds"][1]["per_presenter"]
    assert all(p["error"] is None and p["lag_s"]["count"] >= 1 for p in two), two
