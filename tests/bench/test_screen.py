"""The subtitle bench's arithmetic (bench/screen_report.py) on hand-made runs."""

from __future__ import annotations

from bench.deliveries import Delivery, ListenerRecord
from bench.replay import Received, Replay, SendSchedule
from bench.screen import final_ends
from bench.screen_report import RunResult, build_report, lags, render_markdown

MACHINE = {
    "cpu_model": "test cpu",
    "logical_cores": 2,
    "usable_cores": 2,
    "memory_gib": 8.0,
    "platform": "linux",
    "python": "3.11",
    "load_average_1_5_15m": [1.0, 1.0, 1.0],
}


def run(push: bool, delay: float, draw: list[float], changed: int = 0) -> RunResult:
    """Two listeners; finals 1 and 2 (speech ending at 1.0 and 3.0 s) arrive ``delay`` after
    their ``ts``, which is 0.5 s after the speech ended."""
    start = 1000.0
    finals = [
        Delivery(start + end + 0.5 + delay, start + end + 0.5, seq, "caption.final", True)
        for seq, end in ((1, 1.0), (2, 3.0))
    ]
    draft = Delivery(start + 0.3 + delay, start + 0.3, 3, "caption.draft", True)
    deliveries = (*finals, draft)
    records = tuple(ListenerRecord(i, deliveries, {}) for i in range(2))
    screen = {
        "finals": 2,
        "drafts": 5,
        "changedAfterScroll": changed,
        "longestLine": 40,
        "longestText": "x" * 40,
        "drawMs": draw,
        "domMs": [d / 2 for d in draw],
    }
    targets = ({"service": "zoom", "host": "127.0.0.1", "sent": 0, "failed": 1, "dropped": 0,
                "last_error": "no answer within 10 s"},) if push else ()  # fmt: skip
    return RunResult(push, screen, records, {1: 1.0, 2: 3.0}, start, targets, 158.0)


def test_lags_are_arrival_minus_the_end_of_speech() -> None:
    assert [round(x, 6) for x in lags([run(False, 0.01, [])])] == [0.51] * 4


def test_report_pools_each_condition_and_checks_the_goals() -> None:
    runs = [run(False, 0.010, [10.0, 20.0, 30.0]), run(True, 0.012, [15.0, 25.0, 200.0])]
    report = build_report(runs, "concat", 2, MACHINE)
    assert report["met"] == {
        "unchanged_lines": True,
        "line_length": True,
        "draw_p95": False,  # one draw of 200 ms
        "latency_unchanged_with_push": True,
    }
    assert report["without_push"]["listeners"]["final_delay_s"]["p50"] == 0.01
    assert report["with_push"]["listeners"]["final_delay_s"]["count"] == 4
    assert report["with_push"]["push_targets"][0]["failed"] == 1
    assert report["screen"]["draw_ms"]["count"] == 6
    slower = build_report([run(False, 0.01, [1.0]), run(True, 0.2, [1.0], 2)], "c", 2, MACHINE)
    assert slower["met"]["latency_unchanged_with_push"] is False
    assert slower["met"]["unchanged_lines"] is False
    text = render_markdown(report)
    assert "| lines changed after they moved up | 0 | 0 | yes |" in text
    assert "| zoom (127.0.0.1) | 0 | 1 | 0 | no answer within 10 s |" in text


def test_final_ends_come_from_the_presenters_source_finals() -> None:
    received = (
        Received(1.0, {"type": "caption", "seq": 4, "state": "final", "source": True, "end": 2.5}),
        Received(1.1, {"type": "caption", "seq": 5, "state": "final", "source": False, "end": 2.5}),
        Received(1.2, {"type": "caption", "seq": 6, "state": "draft", "source": True, "end": 3.0}),
    )
    replay = Replay(
        recording="r",
        mode="realtime",
        session_code="ABC",
        schedule=SendSchedule(16000, (1600,), (0.0,)),
        received=received,
        start_sent=0.0,
        ready_at=0.0,
        stop_sent=2.0,
        ended_at=3.0,
        binary_messages=1,
        server_cpu_seconds=None,
    )
    assert final_ends(replay) == {4: 2.5}
