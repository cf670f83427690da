"""The soak benchmark: the looped stream, the time series and memory growth on hand-made
cases, and one short real run (0.3 minutes, a few listeners, the real server)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.capacity import LagSample
from bench.recordings import Recording
from bench.replay import CHUNK_SECONDS
from bench.resources import CpuSnapshot
from bench.soak import (
    MB,
    Point,
    ResourceSample,
    growth_start_s,
    looped,
    memory_growth,
    time_series,
)
from tests.data import SONNET
from tests.support import ServerProcess, run_bench_against


def recording(name: str, seconds: float, value: int) -> Recording:
    samples = round(seconds * 16000)
    return Recording(name, Path(f"{name}.wav"), "", 16000, value.to_bytes(2, "little") * samples)


def test_looped_repeats_the_recordings_with_silence_between_and_cuts() -> None:
    one, two = recording("a", 1.0, 1), recording("b", 0.5, 2)
    loop = looped([one, two], 5.0, gap_s=0.25)
    assert loop.duration == pytest.approx(5.0)
    # a (1 s), gap, b (0.5 s), gap, a, gap, b, gap, a (cut)
    pcm = loop.pcm
    at = [0.0, 1.0, 1.25, 1.75, 2.0, 3.0, 3.25, 3.75, 4.0, 4.5]
    values = [1, 0, 2, 0, 1, 0, 2, 0, 1, 1]
    for t, v in zip(at, values, strict=True):
        k = 2 * round(t * 16000 + 10)
        assert int.from_bytes(pcm[k : k + 2], "little") == v, t
    assert looped([one], 0.5).duration == pytest.approx(0.5)
    with pytest.raises(ValueError):
        looped([], 1.0)


def sample(wall: float, server_cpu: float, rss_mb: float, busy: float) -> ResourceSample:
    return ResourceSample(
        cpu=CpuSnapshot(wall=wall, server=server_cpu, clients=(0.0,), bench=0.0, machine=busy),
        rss_bytes=round(rss_mb * MB),
        fds=20,
        threads=10,
        load_1m=1.5,
    )


def test_time_series_intervals_cpu_and_lag() -> None:
    first_chunk = 100.0
    samples = [
        sample(99.0, 10.0, 500.0, 50.0),
        sample(109.0, 15.0, 510.0, 62.0),  # server 0.5 cores, machine 1.2: other 0.7
        sample(119.0, 21.0, 515.0, 70.0),
    ]
    lags = [
        LagSample(at=2.0, sent=2.0, covered=1.0),  # lag 1.0 in the first interval
        LagSample(at=5.0, sent=5.0, covered=4.5),  # lag 0.5
        LagSample(at=12.0, sent=12.0, covered=10.5),  # lag 1.5 in the second interval
    ]
    points = time_series(samples, lags, first_chunk)
    assert [p.at_s for p in points] == pytest.approx([-1.0, 9.0, 19.0])
    assert points[0].server_cores is None and points[0].lag_max_s is None
    assert points[1].server_cores == pytest.approx(0.5)
    assert points[1].other_cores == pytest.approx(0.7)
    assert points[1].lag_max_s == pytest.approx(1.0) and points[1].captions == 2
    assert points[1].lag_last_s == pytest.approx(0.5)
    assert points[2].lag_max_s == pytest.approx(1.5) and points[2].captions == 1
    assert points[2].server_cores == pytest.approx(0.6)
    assert points[2].other_cores == pytest.approx(0.2)
    assert points[2].rss_mb == pytest.approx(515.0)


def point(at: float, rss: float) -> Point:
    return Point(at, rss, 0.0, 20, 10, 0.5, 0.1, 1.0, 0.5, 0.5, 3)


def test_memory_growth_from_minute_five_to_the_end() -> None:
    points = [point(60.0 * k, 500.0 + k) for k in range(31)]  # +1 MB a minute
    growth = memory_growth(points, growth_start_s(1800.0), 1800.0)
    assert growth is not None
    assert (growth.from_s, growth.to_s) == (300.0, 1800.0)
    assert growth.rss_from_mb == 505.0 and growth.rss_to_mb == 530.0
    assert growth.growth_mb == pytest.approx(25.0)
    assert growth.slope_mb_per_hour == pytest.approx(60.0)
    assert growth_start_s(60.0) == 10.0  # a short run: a sixth of it
    assert memory_growth(points[:1], 0.0, 10.0) is None


SOAK_KEYS = {
    "benchmark",
    "command",
    "created_utc",
    "machine",
    "server",
    "recordings",
    "gap_s",
    "minutes",
    "audio_s",
    "stream_s",
    "end_lag_s",
    "interval_s",
    "listeners",
    "limits",
    "goals",
    "lag_s",
    "server_lag_max_s",
    "lag_goal_met",
    "memory",
    "growth_goal_met",
    "goal_met",
    "cpu",
    "captions",
    "audience",
    "load_average_before",
    "load_average_after",
    "load_1m",
    "other_cores",
    "series_columns",
    "series",
    "lag_samples",
}


@pytest.mark.model
def test_soak_short_real_run(server: ServerProcess, tmp_path: Path) -> None:
    assert server.process is not None
    report = run_bench_against(
        server,
        tmp_path,
        "soak",
        [
            "--minutes",
            "0.3",
            "--listeners",
            "3",
            "--interval",
            "3",
            "--files",
            str(SONNET),
        ],
    )
    assert (tmp_path / "soak.png").read_bytes()[:4] == b"\x89PNG"
    assert (tmp_path / "soak.md").read_text().startswith("# Soak benchmark")
    assert set(report) == SOAK_KEYS
    assert report["command"] == (
        f"python -m bench soak --minutes 0.3 --listeners 3 --interval 3 --files {SONNET} "
        f"--url {server.url} --server-pid {server.process.pid} --out {tmp_path}"
    )
    assert report["audio_s"] == pytest.approx(18.0)
    # Timed from the first chunk's send, which comes once its 0.1 s of audio has passed;
    # the stream then ends within the end lag of the last chunk.
    assert 18.0 - CHUNK_SECONDS <= report["stream_s"] < 40.0
    assert report["lag_s"]["count"] >= 2 and report["lag_s"]["max"] is not None
    assert report["lag_goal_met"] == (report["lag_s"]["max"] < 2.0)
    memory = report["memory"]
    assert memory["rss_start_mb"] > 0 and memory["growth_mb"] is not None
    # The first sample at or after a sixth of the stream (samples every 3 s).
    assert report["stream_s"] / 6 - 0.1 <= memory["growth_from_s"] <= report["stream_s"] / 6 + 3.5
    assert report["growth_goal_met"] == (memory["growth_mb"] < 50.0)
    assert set(report["goals"]) == {
        "caption lag max (p95), s",
        "RSS growth from minute 5 to the end, MB",
    }
    assert report["cpu"]["server_cores_mean"] > 0
    assert report["captions"]["finals"] >= 1
    assert report["audience"]["listeners_exact"] == 3
    assert report["audience"]["delay_s"]["count"] > 0
    columns = report["series_columns"]
    assert len(report["series"]) >= 6  # every 3 s over 18 s, and one at each end
    assert all(len(row) == len(columns) for row in report["series"])
    at = [row[columns.index("at_s")] for row in report["series"]]
    assert at == sorted(at) and at[0] <= 0.5 and at[-1] >= 17.0
    assert all(row[columns.index("rss_mb")] > 0 for row in report["series"])
