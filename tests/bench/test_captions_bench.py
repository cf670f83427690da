"""End to end: ``python -m bench captions --mode fast`` against the real server and model."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.textnorm import normalise_words
from tests.data import SONNET, reference

REPO_ROOT = Path(__file__).resolve().parents[2]

DISTRIBUTION_KEYS = {"count", "p50", "p95", "mean", "min", "max"}
ERROR_KEYS = {"substitutions", "deletions", "insertions", "hits"}
COMMON_KEYS = {
    "audio_s",
    "reference_words",
    "wer",
    "errors",
    "offline_wer",
    "offline_errors",
    "wer_ratio",
    "draft_latency_s",
    "final_latency_s",
    "words_never_shown",
    "words_never_final",
    "time_to_first_caption_s",
    "end_lag_s",
    "erasure",
    "retracted_words",
    "final_words",
    "wall_s",
    "real_time_factor",
    "server_cpu_s",
    "cpu_per_audio_s",
}


@pytest.mark.model
def test_fast_replay_report_has_every_field(tmp_path: Path) -> None:
    command = ["captions", "--mode", "fast", "--files", str(SONNET), "--out", str(tmp_path)]
    completed = subprocess.run(
        [sys.executable, "-m", "bench", *command],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=500,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert "| **overall** |" in completed.stdout

    report = json.loads((tmp_path / "captions-fast.json").read_text())
    assert (tmp_path / "captions-fast.md").read_text().startswith("# Live captions benchmark")
    assert (tmp_path / "traces" / f"captions-fast-{SONNET.stem}.json").is_file()
    assert report["mode"] == "fast"
    assert report["command"].startswith("python -m bench captions --mode fast")
    assert {"cpu_model", "logical_cores", "usable_cores"} <= report["machine"].keys()
    assert report["server"]["started_by_bench"] is True
    assert set(report["goals_met"]) == {"draft_latency_p50", "final_latency_p50", "wer_ratio"}

    (file,) = report["files"]
    overall = report["overall"]
    assert COMMON_KEYS <= file.keys() and COMMON_KEYS <= overall.keys()
    for section in (file, overall):
        assert set(section["errors"]) == ERROR_KEYS == set(section["offline_errors"])
        assert set(section["draft_latency_s"]) == DISTRIBUTION_KEYS
        assert set(section["final_latency_s"]) == DISTRIBUTION_KEYS

    reference_words = len(normalise_words(reference(SONNET)))
    assert file["recording"] == SONNET.stem
    assert file["reference_words"] == reference_words
    assert len(file["words"]) == reference_words
    # A working recogniser on clean read speech: most words recognised and finalised.
    assert 0.0 <= file["wer"] < 0.5
    assert 0.0 <= file["offline_wer"] < 0.3
    assert file["final_latency_s"]["count"] > reference_words // 2
    assert file["caption_events"]["final"] >= 1
    assert file["time_to_first_caption_s"] > 0
    assert file["end_lag_s"] >= 0
    assert file["server_cpu_s"] > 0
    assert 0 < file["real_time_factor"] < 2.0
    assert overall["wer"] == pytest.approx(file["wer"])
