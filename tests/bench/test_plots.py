"""PNG plots (bench.plots) from small hand-made reports."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.plots import main, trace_lag, word_latencies, write_plots

PNG = b"\x89PNG\r\n\x1a\n"


def _write(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")


def _file(recording: str) -> dict[str, Any]:
    return {
        "recording": recording,
        "words": [
            {"word": "a", "draft_latency_s": 0.2, "final_latency_s": 2.0},
            {"word": "b", "draft_latency_s": 0.4, "final_latency_s": None},
            {"word": "c", "draft_latency_s": None, "final_latency_s": None},
        ],
    }


TRACE = {
    "sample_rate": 10,
    "chunks": [[1, 0.1], [2, 0.2], [3, 0.3]],  # 0.1 s of audio sent every 0.1 s
    "received": [
        [0.05, {"type": "ready"}],
        [0.25, {"type": "caption", "source": True, "end": 0.1}],
        [0.35, {"type": "caption", "source": False, "end": 0.3}],  # translation: ignored
        [0.35, {"type": "caption", "source": True, "end": 0.05}],  # never moves back
    ],
}


def test_trace_lag_is_audio_sent_minus_audio_covered() -> None:
    lag = trace_lag(TRACE)
    # at 0.25: 0.2 s sent, 0.1 covered; at 0.35: 0.3 sent, still 0.1 covered; times since
    # the first chunk (0.1)
    assert [round(t, 3) for t, _ in lag] == [0.15, 0.25]
    assert [round(v, 3) for _, v in lag] == [0.1, 0.2]


def test_word_latencies_leave_out_missing_words() -> None:
    files = [_file("x"), _file("y")]
    assert word_latencies(files, "draft_latency_s") == [0.2, 0.4, 0.2, 0.4]
    assert word_latencies(files, "final_latency_s") == [2.0, 2.0]


def test_every_plot_from_small_reports(tmp_path: Path) -> None:
    _write(
        tmp_path / "captions-realtime.json",
        {"goals": {"draft_latency_p50_s": 1.0, "final_latency_p50_s": 2.5}, "files": [_file("x")]},
    )
    _write(tmp_path / "traces" / "captions-realtime-x.json", TRACE)
    _write(
        tmp_path / "peer.json",
        {
            "peer": {"name": "WhisperLiveKit"},
            "systems": {"ours": {"files": [_file("x")]}, "peer": {"files": [_file("x")]}},
        },
    )
    _write(
        tmp_path / "webrtc.json",
        {"transports": [{"transport": "webrtc", "files": [_file("x")]}]},
    )
    _write(
        tmp_path / "speech.json",
        {
            "server": [
                {
                    "source": "en",
                    "listeners": [
                        {
                            "lang": "es",
                            "first_audio_values_s": [0.1, 0.3, 0.2],
                            "lag_series": [[1.0, 3.0], [2.0, 4.0]],
                        }
                    ],
                }
            ]
        },
    )
    written, notes = write_plots(tmp_path)
    assert sorted(p.name for p in written) == [
        "captions-lag.png",
        "captions-latency-cdf.png",
        "peer-latency-cdf.png",
        "speech-first-audio-cdf.png",
        "speech-lag.png",
        "webrtc-latency-cdf.png",
    ]
    assert notes == []
    for path in written:
        assert path.read_bytes()[:8] == PNG


def test_missing_reports_and_percentile_only_data_are_skipped_with_a_reason(
    tmp_path: Path, capsys: Any
) -> None:
    _write(tmp_path / "speech.json", {"server": [{"source": "en", "listeners": [{"lang": "es"}]}]})
    assert main(["--results", str(tmp_path), "--out", str(tmp_path / "png")]) == 0
    assert not list((tmp_path / "png").glob("*.png"))
    out = capsys.readouterr().out
    assert "skipped: captions-realtime.json missing" in out
    assert "skipped: peer.json missing" in out
    assert "no first-audio CDF" in out
    assert "no speech lag plot" in out
