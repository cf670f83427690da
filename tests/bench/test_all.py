"""``python -m bench all``: the commands it runs, in order (bench.all; nothing is run)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from bench.__main__ import main as bench_main
from bench.all import STEPS, main


def _names(out: str) -> list[str]:
    return [line.split(":", 1)[0] for line in out.splitlines()]


def test_dry_run_lists_every_benchmark_then_plots_and_summary(capsys: Any) -> None:
    assert bench_main(["all", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert _names(out) == [s.name for s in STEPS] + ["plots", "summary"]
    assert f"captions: {sys.executable} -m bench captions --mode realtime --classes all\n" in out
    assert f"talk-detect: {sys.executable} -m bench talk --detect\n" in out
    assert f"summary: {sys.executable} -m bench summary\n" in out
    assert {"captions", "translation", "speech", "talk", "fanout", "capacity", "webrtc"} <= set(
        _names(out)
    )
    assert "soak" not in _names(out)  # 30 minutes: only with --with soak


def test_dry_run_skip_with_only_and_out(capsys: Any, tmp_path: Path) -> None:
    assert main(["--dry-run", "--skip", "fanout", "capacity", "--with", "soak"]) == 0
    names = _names(capsys.readouterr().out)
    assert "fanout" not in names and "capacity" not in names
    assert names[-4:] == ["load", "soak", "plots", "summary"]

    assert main(["--dry-run", "--only", "webrtc", "captions", "--out", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert _names("\n".join(lines)) == ["captions", "webrtc", "plots", "summary"]
    assert lines[0].endswith(f"bench captions --mode realtime --classes all --out {tmp_path}")
    assert lines[2].endswith(f"bench plots --results {tmp_path}")

    assert main(["--dry-run", "--only", "speech", "--no-summary"]) == 0
    assert _names(capsys.readouterr().out) == ["speech"]


def test_a_failed_step_does_not_stop_the_others_unless_asked(capsys: Any) -> None:
    ran: list[list[str]] = []

    def runner(command: list[str]) -> int:
        ran.append(command)
        return 3 if command[3] == "speech" else 0

    assert main(["--only", "captions", "speech", "webrtc"], runner=runner) == 1
    assert [c[3] for c in ran] == ["captions", "speech", "webrtc", "plots", "summary"]
    assert "failed: speech" in capsys.readouterr().err

    ran.clear()
    assert main(["--only", "captions", "speech", "webrtc", "--stop-on-failure"], runner) == 1
    assert [c[3] for c in ran] == ["captions", "speech"]
