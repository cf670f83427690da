"""The goal tables of docs/metrics.md (bench.summary) from small hand-made reports."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench.summary import (
    BEGIN,
    DEFAULT_RESULTS,
    END,
    SECTIONS,
    main,
    render,
    replace_block,
    sections,
)


def _dist(p50: float, p95: float, **more: float) -> dict[str, Any]:
    return {"count": 10, "p50": p50, "p95": p95, "mean": p50, "min": 0.0, "max": p95, **more}


def _write(folder: Path, name: str, report: dict[str, Any]) -> None:
    (folder / name).write_text(json.dumps(report), encoding="utf-8")


CAPTIONS = {
    "command": "python -m bench captions --mode realtime",
    "created_utc": "2026-11-30T12:00:00+00:00",
    "offline_baseline": {"model": "tiny.en"},
    "goals": {"draft_latency_p50_s": 1.0, "final_latency_p50_s": 2.5, "wer_ratio_max": 1.15},
    "goals_met": {"draft_latency_p50": True, "final_latency_p50": False, "wer_ratio": None},
    "overall": {
        "files": 2,
        "audio_s": 100.0,
        "wer": 0.1,
        "offline_wer": 0.08,
        "wer_ratio": 1.25,
        "draft_latency_s": _dist(0.25, 0.9),
        "final_latency_s": _dist(2.75, 6.5),
        "time_to_first_caption_s": _dist(0.5, 0.7),
        "end_lag_s": _dist(0.2, 0.4),
        "erasure": 0.5,
        "cpu_per_audio_s": 0.7,
    },
}

FANOUT = {
    "command": "python -m bench fanout",
    "goals": {"listeners": 1000, "delay_p99_s": 0.1},
    "rounds": [
        {
            "listeners": 100,
            "delay_s": _dist(0.004, 0.008, p99=0.011),
            "finals": {"listeners_exact": 100},
            "server": {"cpu_cores": 0.7, "rss_peak_mib": 494.0},
            "goal_met": True,
        },
        {
            "listeners": 1000,
            "delay_s": _dist(0.047, 0.114, p99=0.152),
            "finals": {"listeners_exact": 1000},
            "server": {"cpu_cores": 0.75, "rss_peak_mib": 514.0},
            "goal_met": False,
        },
    ],
}

LOAD = {  # a layout the summary does not know: its stated goals are listed
    "command": "python -m bench load",
    "goals": {
        "caption lag p95 with listeners": {"value": 1.2, "goal": "<= 2 s", "met": True},
        "stalled listeners dropped": {"value": "10 of 10", "goal": "all", "met": False},
    },
}


@pytest.fixture
def results(tmp_path: Path) -> Path:
    _write(tmp_path, "captions-realtime.json", CAPTIONS)
    _write(tmp_path, "fanout.json", FANOUT)
    _write(tmp_path, "load.json", LOAD)
    return tmp_path


def test_rows_of_the_reports_present(results: Path) -> None:
    block = render(sections(results))
    assert (
        "| draft latency (word first shown) | 0.25 / 0.90 s | p50 <= 1.0 s | met "
        "| [captions-realtime.json](../bench/results/captions-realtime.json) |" in block
    )
    assert "| final latency (word final) | 2.75 / 6.50 s | p50 <= 2.5 s | **not met** |" in block
    assert "0.100 (ratio 1.25) | ratio <= 1.15 | – |" in block  # not measured: no verdict
    assert "offline tiny.en beam 5 on the same files: 0.080" in block
    assert "2026-11-30; 2 English long-form recordings, 100 s" in block
    # fan-out: the goal applies to the 1000-listener round only
    assert (
        "| 100 listeners: delay from the event's server `ts` to receipt | 4 / 8 ms (p99 11 ms)"
        in (block)
    )
    assert "100 of 100 got every final; server 0.70 cores, 494 MiB | – | – |" in block
    assert "47 / 114 ms (p99 152 ms)" in block
    assert "| p99 <= 100 ms, every final everywhere | **not met** | [fanout.json]" in block
    # unknown layout: the goals it states
    assert "| caption lag p95 with listeners | 1.2 | <= 2 s | met | [load.json]" in block
    assert "| stalled listeners dropped | 10 of 10 | all | **not met** |" in block


def test_missing_reports_say_not_run(results: Path) -> None:
    listed = sections(results)
    assert [s.report for s in listed] == [name for name, _ in SECTIONS]
    missing = {s.report for s in listed if not s.ran}
    assert missing == {name for name, _ in SECTIONS} - {
        "captions-realtime.json",
        "fanout.json",
        "load.json",
    }
    block = render(listed)
    assert "**Soak** (`python -m bench soak`): not run (no `soak.json`)." in block
    assert "**Spoken translation** (`python -m bench speech`): not run (no `speech.json`)." in (
        block
    )


def test_empty_results_folder_gives_not_run_everywhere(tmp_path: Path) -> None:
    block = render(sections(tmp_path))
    assert block.count("not run") == len(SECTIONS)
    assert "| metric |" not in block


def test_replace_block_keeps_everything_outside_the_markers() -> None:
    text = f"# T\n\n## Measured\n\nprose before\n\n{BEGIN}\nold table\n{END}\n\nprose after\n"
    new = replace_block(text, "new table\n")
    assert (
        new == f"# T\n\n## Measured\n\nprose before\n\n{BEGIN}\nnew table\n{END}\n\nprose after\n"
    )
    assert replace_block(new, "new table\n") == new  # idempotent


def test_replace_block_leaves_prose_that_names_the_markers() -> None:
    text = f"The tables go between `{BEGIN}` and `{END}`.\n\n{BEGIN}\nold\n{END}\nafter\n"
    assert replace_block(text, "new") == (
        f"The tables go between `{BEGIN}` and `{END}`.\n\n{BEGIN}\nnew\n{END}\nafter\n"
    )


@pytest.mark.parametrize(
    "text", ["no markers", f"{END}\n{BEGIN}\n", f"{BEGIN} only", f"`{BEGIN}` and `{END}` in prose"]
)
def test_replace_block_needs_both_markers_in_order(text: str) -> None:
    with pytest.raises(ValueError, match="measured:begin"):
        replace_block(text, "x")


def test_command_rewrites_the_block_of_the_document(results: Path, tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n{BEGIN}\n{END}\nrest\n", encoding="utf-8")
    assert main(["--results", str(results), "--doc", str(readme)]) == 0
    text = readme.read_text(encoding="utf-8")
    assert text.startswith(f"intro\n{BEGIN}\n<!-- generated by `python -m bench summary`")
    assert text.endswith(f"{END}\nrest\n")
    assert "| draft latency (word first shown) |" in text
    bare = tmp_path / "BARE.md"
    bare.write_text("no markers\n", encoding="utf-8")
    assert main(["--results", str(results), "--doc", str(bare)]) == 2
    assert bare.read_text(encoding="utf-8") == "no markers\n"


def test_the_real_reports_all_give_rows() -> None:
    """Whatever is in bench/results/ now: every section renders (present ones with rows)."""
    for section in sections(DEFAULT_RESULTS):
        assert not section.ran or section.rows, section.report
    render(sections(DEFAULT_RESULTS))


def test_talk_rows_count_turns_and_judge_the_p50(tmp_path: Path) -> None:
    turns = [{"clip": f"c{i}"} for i in range(4)]
    _write(
        tmp_path,
        "talk-detect.json",
        {
            "turns": turns,
            "summary": {
                "translation_shown_s:all": {"count": 3, "p50": 1.2, "p95": 2.0},
                "audio_start_s:all": {"count": 2, "p50": 2.5, "p95": 3.0},
            },
            "detection": {"right": 3, "turns": 4},
            "detect": True,
        },
    )
    block = render(sections(tmp_path))
    assert (
        "| translation shown after the end of speech (3 of 4 turns) | 1.20 / 2.00 s "
        "| p50 <= 1.5 s | met |" in block
    )
    assert "(2 of 4 turns) | 2.50 / 3.00 s | p50 <= 2.0 s | **not met** |" in block
    assert "| turns recognised in the speaker's language | 3 of 4 |" in block
    assert "**Traveller mode, language given** (`python -m bench talk`): not run" in block


def test_fanout_nodes_rows_with_and_without_the_one_process_baseline(tmp_path: Path) -> None:
    """``bench fanout-nodes`` records the one-process round only where a ``fanout.json`` lies
    in its output folder; without one the round's ``single_process`` is null."""
    one_process = {"delay_s": _dist(0.031, 0.06, p99=0.074)}
    rounds = [
        {
            "listeners": 1000,
            "nodes": 2,
            "delay_s": _dist(0.026, 0.046, p99=0.056),
            "finals": {"listeners_exact": 1000},
            "server_cpu_cores": [0.65, 0.04],
            "redis_cpu_cores": 0.0,
            "single_process": single,
        }
        for single in (None, one_process)
    ]
    _write(tmp_path, "fanout-nodes.json", {"command": "x", "rounds": rounds})

    block = render(sections(tmp_path))

    without, with_baseline = [
        line for line in block.splitlines() if line.startswith("| 1000 listeners on 2 processes")
    ]
    assert "26 / 46 ms (p99 56 ms)" in without and "one process" not in without
    assert "(one process: 31 / 60 ms (p99 74 ms))" in with_baseline
