"""The fan-out benchmark: its metrics on hand-made cases, its listener client on hand-made
messages, and one short real run (20 listeners, 15 s of a real recording, the real server)."""

from __future__ import annotations

import json
import resource
from pathlib import Path
from typing import Any

import pytest

from bench.clients import default_client_processes, split_listeners
from bench.deliveries import (
    Delivery,
    ListenerRecord,
    check_finals,
    delay_stats,
    presenter_finals,
    window_delays,
    window_deliveries,
)
from bench.fanout import Goals, Round
from bench.fanout_report import event_trace, round_json
from bench.listener import ClientSpec, Listener
from bench.metrics import SendSchedule
from bench.recordings import Recording
from bench.replay import Received, Replay, trimmed
from bench.resources import CpuSnapshot, CpuUse, cpu_use, raise_fd_limit
from tests.data import SONNET
from tests.support import ServerProcess, run_bench_against

# --- metrics ------------------------------------------------------------------------------


def test_delay_stats_percentiles_by_hand() -> None:
    values = [0.010 * k for k in range(1, 11)]  # 10 ms .. 100 ms
    stats = delay_stats(values)
    assert stats.count == 10
    assert stats.p50 == pytest.approx(0.055)  # halfway between 50 and 60 ms
    assert stats.p95 == pytest.approx(0.0955)  # position 8.55: 90 + 0.55 * 10 ms
    assert stats.p99 == pytest.approx(0.0991)
    assert stats.mean == pytest.approx(0.055)
    assert stats.min == pytest.approx(0.01)
    assert stats.max == pytest.approx(0.1)
    assert delay_stats([]).p99 is None and delay_stats([]).count == 0


def delivery(received: float, ts: float, seq: int = 1, live: bool = True) -> Delivery:
    return Delivery(received=received, ts=ts, seq=seq, kind="caption.draft", live=live)


def test_window_keeps_live_events_stamped_inside_it() -> None:
    record = ListenerRecord(
        index=0,
        deliveries=(
            delivery(100.02, 99.0, seq=1, live=False),  # backfilled: never counted
            delivery(100.05, 100.0, seq=2),  # at the window start: counted
            delivery(101.30, 101.0, seq=3),
            delivery(110.50, 110.4, seq=4),  # stamped after the window
        ),
        finals={},
    )
    inside = window_deliveries(record, 100.0, 110.0)
    assert [d.seq for d in inside] == [2, 3]
    assert window_delays([record, record], 100.0, 110.0) == pytest.approx([0.05, 0.3] * 2)
    assert [d.seq for d in window_deliveries(record, 100.0)] == [2, 3, 4]


def test_check_finals_missing_differing_extra() -> None:
    expected = {0: "Shall I compare thee", 1: "to a summer's day?", 2: "Thou art more lovely"}
    assert check_finals(expected, dict(expected)).exact
    check = check_finals(expected, {0: "Shall I compare thee", 1: "to a summers day", 7: "x"})
    assert (check.missing, check.differing, check.extra) == (2, 1, 1)
    assert not check.exact
    assert check_finals(expected, {}).missing == 3
    assert not check_finals({}, {3: "surplus"}).exact


def caption(seq: int, segment: int, state: str, text: str, ts: float) -> dict[str, Any]:
    return {
        "type": "caption",
        "seq": seq,
        "segment": segment,
        "lang": "en",
        "source": True,
        "state": state,
        "text": text,
        "start": 0.0,
        "end": 1.0,
        "ts": ts,
    }


def hand_made_replay(messages: list[dict[str, Any]]) -> Replay:
    """A presenter replay of 1 s of audio whose messages arrived 10 ms apart."""
    schedule = SendSchedule(16000, tuple(1600 * (k + 1) for k in range(10)), tuple(range(10)))
    return Replay(
        recording="hand-made",
        mode="realtime",
        session_code="ABC234",
        schedule=schedule,
        received=tuple(Received(5.0 + 0.01 * k, m) for k, m in enumerate(messages)),
        start_sent=0.0,
        ready_at=0.0,
        stop_sent=9.0,
        ended_at=10.0,
        binary_messages=0,
        server_cpu_seconds=None,
    )


def test_presenter_finals_keep_the_first_final_of_each_segment() -> None:
    recorded = hand_made_replay(
        [
            {"type": "ready", "sample_rate": 16000},
            caption(1, 0, "draft", "shall i", 100.0),
            caption(2, 0, "final", "Shall I compare", 100.5),
            {**caption(3, 0, "final", "Comparar", 100.6), "source": False, "lang": "es"},
            caption(4, 1, "final", "thee", 101.0),
            {"type": "ended"},
        ]
    )
    assert presenter_finals(recorded) == {0: "Shall I compare", 1: "thee"}


def test_trimmed_keeps_the_first_seconds() -> None:
    recording = Recording("r", Path("r.wav"), "ref", 16000, bytes(2 * 16000 * 3))
    assert trimmed(recording, 1.5).samples == 24000
    assert trimmed(recording, 1.5).reference_text == "ref"
    assert trimmed(recording, None) is recording
    assert trimmed(recording, 10.0) is recording


def test_listeners_are_dealt_round_robin() -> None:
    assert split_listeners(5, 2) == [(0, 2, 4), (1, 3)]
    assert split_listeners(2, 4) == [(0,), (1,)]
    assert sorted(i for part in split_listeners(1000, 4) for i in part) == list(range(1000))
    assert [default_client_processes(n) for n in (20, 250, 251, 500, 1000, 5000)] == [
        1,
        1,
        2,
        2,
        4,
        4,
    ]


def test_cpu_use_in_cores_and_other_load() -> None:
    before = CpuSnapshot(wall=10.0, server=5.0, clients=(1.0, 2.0), bench=0.5, machine=100.0)
    after = CpuSnapshot(wall=12.0, server=6.2, clients=(1.2, 2.4), bench=0.6, machine=103.6)
    use = cpu_use(before, after)
    assert use.wall_s == pytest.approx(2.0)
    assert use.server == pytest.approx(0.6)
    assert use.clients == pytest.approx((0.1, 0.2))
    assert use.bench == pytest.approx(0.05)
    assert use.machine == pytest.approx(1.8)
    assert use.other == pytest.approx(1.8 - 0.6 - 0.3 - 0.05)
    no_server = CpuSnapshot(10.0, None, (), 0.0, 0.0)
    assert cpu_use(no_server, CpuSnapshot(11.0, None, (), 0.0, 1.0)).server is None
    with pytest.raises(ValueError):
        cpu_use(after, before)


def test_raise_fd_limit_only_raises() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert raise_fd_limit(16) == soft  # never lowered
    wanted = soft + 10 if hard == resource.RLIM_INFINITY else min(soft + 10, hard)
    assert raise_fd_limit(wanted) == wanted
    assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] == wanted


# --- the listener client ------------------------------------------------------------------


async def test_listener_records_live_and_backfilled_events_and_finals() -> None:
    listener = Listener(3, ClientSpec("http://127.0.0.1:1", "ABC234", (3,)))
    opened = 1000.0
    messages = [
        caption(1, 0, "final", "Shall I compare thee", 999.5),  # backfill (before opening)
        {"type": "state", "seq": 2, "state": "live", "listeners": 1, "ts": 1000.2},
        caption(3, 1, "draft", "to a", 1000.4),
        {**caption(4, 1, "final", "A summer's day", 1000.8), "source": False, "lang": "es"},
        caption(5, 1, "final", "to a summer's day", 1000.9),
        caption(6, 1, "final", "changed text", 1001.0),  # a final never changes: ignored
    ]
    listener.expect_audience(2)
    listener.expect_finals(frozenset({0, 1}))
    for k, message in enumerate(messages):
        listener.on_message(opened + 0.5 + 0.1 * k, json.dumps(message), opened)
        if k == 1:
            assert not listener.settled.is_set()  # audience 1 < 2
    listener.on_message(1001.8, json.dumps({**messages[1], "seq": 7, "listeners": 2}), opened)

    record = listener.record()
    assert [d.live for d in record.deliveries] == [False] + [True] * 6
    assert [d.kind for d in record.deliveries][:3] == ["caption.final", "state", "caption.draft"]
    assert record.deliveries[2].delay == pytest.approx(1000.7 - 1000.4)
    assert record.finals == {0: "Shall I compare thee", 1: "to a summer's day"}
    assert listener.last_seq == 7
    assert listener.complete.is_set() and listener.settled.is_set()


async def test_listener_is_complete_only_with_every_expected_final() -> None:
    listener = Listener(0, ClientSpec("http://127.0.0.1:1", "ABC234", (0,)))
    listener.on_message(10.0, json.dumps(caption(1, 0, "final", "one", 9.9)), 0.0)
    listener.expect_finals(frozenset({0, 1}))
    assert not listener.complete.is_set()
    listener.on_message(10.5, json.dumps(caption(2, 1, "final", "two", 10.4)), 0.0)
    assert listener.complete.is_set()


# --- the report, from a hand-made round ---------------------------------------------------


def hand_made_round(finals: list[dict[int, str]], delays: list[float]) -> Round:
    """A round with one listener per entry of ``finals``; each got one draft per delay."""
    start = 100.0
    presenter = hand_made_replay(
        [
            {"type": "ready"},
            caption(1, 0, "draft", "shall", start + 1),
            caption(2, 0, "final", "Shall I", start + 2),
            {"type": "ended"},
        ]
    )
    records = tuple(
        ListenerRecord(
            index=i,
            deliveries=tuple(delivery(start + 1 + d, start + 1, seq=1) for d in delays),
            finals=f,
        )
        for i, f in enumerate(finals)
    )
    return Round(
        listeners=len(finals),
        client_processes=1,
        records=records,
        presenter=presenter,
        window=(start, start + 10),
        join_s=0.5,
        settled=True,
        close_s=0.1,
        cpu=CpuUse(10.0, 0.5, (0.1,), 0.01, 1.5),
        rss_start_bytes=100 * 2**20,
        rss_peak_bytes=120 * 2**20,
        load_average_before=(1.0, 1.0, 1.0),
        load_average_after=(1.0, 1.0, 1.0),
    )


def test_round_json_goal_needs_low_p99_and_every_final() -> None:
    goals = Goals(listeners=2, delay_p99_s=0.1)
    good = round_json(hand_made_round([{0: "Shall I"}] * 2, [0.02, 0.05]), goals)
    assert good["goal_met"] is True
    assert good["delay_s"]["count"] == 4
    assert good["delay_s"]["max"] == pytest.approx(0.05)
    assert good["finals"]["listeners_exact"] == 2 and good["finals"]["presenter"] == 1
    assert good["server"] == {"cpu_cores": 0.5, "rss_start_mib": 100.0, "rss_peak_mib": 120.0}
    assert good["machine"]["other_cores"] == pytest.approx(1.5 - 0.5 - 0.1 - 0.01)

    missing = round_json(hand_made_round([{0: "Shall I"}, {}], [0.02]), goals)
    assert missing["goal_met"] is False
    assert missing["finals"]["missing_total"] == 1
    slow = round_json(hand_made_round([{0: "Shall I"}] * 2, [0.02, 0.3]), goals)
    assert slow["goal_met"] is False


def test_event_trace_groups_deliveries_by_seq() -> None:
    trace = event_trace(hand_made_round([{0: "Shall I"}] * 3, [0.02]))
    assert len(trace) == 1
    (event,) = trace
    assert event["seq"] == 1 and event["listeners"] == 3 and event["at_s"] == pytest.approx(1.0)
    assert event["delay_s"]["p50"] == pytest.approx(0.02)


# --- a short real run ---------------------------------------------------------------------

ROUND_KEYS = {
    "listeners",
    "client_processes",
    "connected",
    "connect_failures",
    "join_s",
    "settled",
    "delay_s",
    "delay_by_kind_s",
    "join_delay_s",
    "events_per_listener",
    "presenter_events",
    "presenter_captions",
    "finals",
    "reconnects",
    "closes",
    "server",
    "clients",
    "bench_cpu_cores",
    "machine",
    "replay",
    "close_s",
    "goal_met",
}
DELAY_KEYS = {"count", "p50", "p95", "p99", "mean", "min", "max"}


@pytest.mark.model
def test_fanout_20_listeners_every_final_everywhere(server: ServerProcess, tmp_path: Path) -> None:
    report = run_bench_against(
        server,
        tmp_path,
        "fanout",
        [
            "--listeners",
            "20",
            "--file",
            str(SONNET),
            "--seconds",
            "15",
            "--client-processes",
            "2",
        ],
    )
    assert (tmp_path / "fanout.md").read_text().startswith("# Fan-out benchmark")
    assert report["benchmark"] == "fanout"
    assert report["command"].startswith("python -m bench fanout --listeners 20")
    assert report["trimmed_to_s"] == 15.0
    assert report["goal_met"] is None  # no 1000-listener round
    (run,) = report["rounds"]
    assert set(run) == ROUND_KEYS

    assert run["listeners"] == run["connected"] == 20
    assert run["client_processes"] == 2
    assert run["settled"] is True and run["connect_failures"] == []
    assert run["reconnects"] == 0 and run["closes"] == {}
    # Every listener holds exactly the presenter's finals.
    finals = run["finals"]
    assert finals["presenter"] >= 1
    assert finals["listeners_exact"] == 20
    assert finals["missing_total"] == finals["differing_total"] == finals["extra_total"] == 0
    assert run["presenter_captions"]["final"] == finals["presenter"]

    delay = run["delay_s"]
    assert set(delay) == DELAY_KEYS == set(run["join_delay_s"])
    events = run["events_per_listener"]
    assert delay["count"] == pytest.approx(events["mean"] * 20)
    # A listener may skip a draft that a newer draft or the final replaced in its queue.
    assert 1 <= events["min"] <= events["max"]
    assert run["presenter_events"] >= finals["presenter"] + 1  # the finals and "live"
    assert -0.001 < delay["min"] <= delay["p50"] <= delay["p99"] <= delay["max"] < 10.0
    assert {"caption.draft", "caption.final", "state"} <= set(run["delay_by_kind_s"])
    assert run["delay_by_kind_s"]["caption.final"]["count"] == 20 * finals["presenter"]

    assert run["server"]["cpu_cores"] > 0
    assert 0 < run["server"]["rss_start_mib"] <= run["server"]["rss_peak_mib"]
    assert len(run["clients"]["cpu_cores_per_process"]) == 2
    assert run["clients"]["cpu_cores"] >= 0
    assert run["machine"]["busy_cores"] > 0
    assert len(run["machine"]["load_average_before"]) == 3
    assert 14.0 < run["replay"]["wall_s"] < 60.0
    assert run["replay"]["audio_s"] == pytest.approx(15.0)
    assert run["goal_met"] == (delay["p99"] <= 0.1)

    trace = json.loads((tmp_path / "traces" / "fanout-20.json").read_text())
    assert [e["seq"] for e in trace] == sorted({e["seq"] for e in trace})
    assert all(1 <= event["listeners"] <= 20 for event in trace)
    final_events = [e for e in trace if e["kind"] == "caption.final"]
    assert len(final_events) == finals["presenter"]
    assert all(e["listeners"] == 20 for e in final_events)  # finals are never dropped
