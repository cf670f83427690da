"""The load benchmark: who listens where, the stalled listener, socket buffers and the
latency comparison on hand-made cases, and one short real run (2 presenters, a few seconds
of real recordings, a handful of listeners, 2 of them stalled, the real server)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.listener import ClientSpec, Listener
from bench.load import plan_audience, spread, stalled_indices
from bench.load_metrics import audience_counts, comparison, pair_intervals
from bench.load_sockets import SocketRow, buffers_json, parse_ss
from bench.metrics import SendSchedule, WordLatencies
from bench.replay import Received, Replay
from tests.data import ENGLISH, SONNET
from tests.support import ServerProcess, run_bench_against


def test_spread_deals_evenly_first_ones_larger() -> None:
    assert spread(1000, 2) == [500, 500]
    assert spread(7, 3) == [3, 2, 2]
    assert spread(1, 2) == [1, 0]


def test_stalled_indices_are_evenly_spaced() -> None:
    block = list(range(500, 1000))
    stuck = stalled_indices(block, 5)
    assert sorted(stuck) == [500, 600, 700, 800, 900]
    assert stalled_indices(block, 0) == frozenset()
    assert stalled_indices([1, 2], 5) == frozenset({1, 2})


def test_plan_audience_one_block_per_session_stalled_spread() -> None:
    audience = plan_audience("http://h:1", ["AAA", "BBB"], 1000, 10, 4)
    assert audience.sessions == (0, 0, 1, 1)
    assert [s.code for s in audience.specs] == ["AAA", "AAA", "BBB", "BBB"]
    indices = [i for spec in audience.specs for i in spec.indices]
    assert sorted(indices) == list(range(1000))
    first = {i for spec in audience.specs[:2] for i in spec.indices}
    assert first == set(range(500))
    stalled = [i for spec in audience.specs for i in spec.stalled]
    assert len(stalled) == 10
    assert all(set(spec.stalled) <= set(spec.indices) for spec in audience.specs)
    assert sum(i < 500 for i in stalled) == 5
    # Fewer processes than sessions: still one process per session.
    small = plan_audience("http://h:1", ["AAA", "BBB"], 5, 1, 1)
    assert small.sessions == (0, 1)
    assert [len(s.indices) for s in small.specs] == [3, 2]
    # The listener processes run at the nice value asked for (default: the server's).
    assert {s.nice for s in audience.specs} == {0}
    niced = plan_audience("http://h:1", ["AAA", "BBB"], 5, 1, 1, nice=10)
    assert {s.nice for s in niced.specs} == {10}


async def test_a_stalled_listener_settles_at_once_and_resumes_when_told_to_finish() -> None:
    spec = ClientSpec("http://127.0.0.1:1", "ABC234", (4, 5), stalled=frozenset({5}))
    healthy, stalled = Listener(4, spec), Listener(5, spec)
    assert not healthy.stalled and stalled.stalled
    healthy.expect_audience(3)
    stalled.expect_audience(3)
    assert stalled.settled.is_set() and not healthy.settled.is_set()
    assert not stalled._resume.is_set()
    stalled.expect_finals(frozenset({0}))
    assert stalled._resume.is_set()
    assert stalled.record().stalled and not healthy.record().stalled


SS_OUTPUT = """Recv-Q Send-Q Local Address:Port  Peer Address:Port Process
0      0          127.0.0.1:8000    127.0.0.1:50001
\t skmem:(r0,rb131072,t0,tb3939840,f0,w0,o0,bl0,d0) cubic bytes_sent:900 bytes_received:40
0      5120       127.0.0.1:8000    127.0.0.1:50002
\t skmem:(r0,rb131072,t0,tb3939840,f0,w8192,o0,bl0,d0) cubic bytes_received:40
2048   0          127.0.0.1:50002    127.0.0.1:8000
\t skmem:(r4096,rb131072,t0,tb2626560,f0,w0,o0,bl0,d0) cubic bytes_received:12000
0      0          127.0.0.1:50001    127.0.0.1:8000
\t skmem:(r0,rb131072,t0,tb2626560,f0,w0,o0,bl0,d0) cubic bytes_received:6000
"""


def test_parse_ss_and_buffers() -> None:
    rows = parse_ss(SS_OUTPUT)
    assert rows[1] == SocketRow(8000, 50002, 0, 5120, 131072, 3939840, 40)
    assert rows[2].recv_q == 2048 and rows[2].bytes_received == 12000
    buffers = buffers_json(rows, 8000, connected_s=60.0)
    assert buffers["server_sockets"] == 2
    assert buffers["server_sockets_with_unsent_bytes"] == 1
    assert buffers["unsent_bytes_max"] == buffers["unsent_bytes_total"] == 5120
    assert buffers["listener_sockets_with_unread_bytes"] == 1
    assert buffers["unread_bytes_max"] == 2048
    assert buffers["server_sndbuf_bytes_max"] == 3939840
    assert buffers["listener_bytes_per_second"] == pytest.approx(200.0)
    assert buffers["seconds_until_buffers_full_estimate"] == pytest.approx(
        (3939840 + 131072) / 200.0
    )
    assert buffers_json(None, 8000, 1.0) == {"available": False}
    # With the state column (no state filter), rows parse the same way.
    assert parse_ss("ESTAB 1 2 127.0.0.1:1 127.0.0.1:2\n\t skmem:(r0,rb10,t0,tb20)") == [
        SocketRow(1, 2, 1, 2, 10, 20, 0)
    ]


def test_comparison_is_loaded_over_quiet() -> None:
    quiet = {
        "draft_latency_s": {"p50": 0.2, "p95": 1.0},
        "final_latency_s": {"p50": 2.0, "p95": None},
    }
    loaded = {
        "draft_latency_s": {"p50": 0.22, "p95": 0.9},
        "final_latency_s": {"p50": 2.5, "p95": 4.0},
    }
    rows = comparison(quiet, loaded)
    assert [r["metric"] for r in rows] == [
        "draft latency p50",
        "draft latency p95",
        "final latency p50",
        "final latency p95",
    ]
    assert [r["ratio"] for r in rows[:3]] == pytest.approx([1.1, 0.9, 1.25])
    assert rows[3]["ratio"] is None


def _words(scale: float, offset: float = 0.0) -> list[WordLatencies]:
    """One presenter's words: drafts 0.1-1.0 s and finals 1-10 s, times ``scale``."""
    shown = tuple(scale * (0.1 * k + offset) for k in range(1, 11))
    final = tuple(scale * (1.0 * k + offset) for k in range(1, 11))
    return [WordLatencies(shown=(*shown, None), final=final)]


def test_pair_intervals_collapse_when_every_pair_agrees() -> None:
    same = pair_intervals([(_words(1.0), _words(1.0))] * 3, samples=200)
    assert same is not None and same["worst"] == pytest.approx([1.0, 1.0])
    slower = pair_intervals([(_words(1.0), _words(1.2))] * 3, samples=200)
    assert slower is not None
    assert set(slower["ratios"]) == {
        "draft latency p50",
        "draft latency p95",
        "final latency p50",
        "final latency p95",
    }
    for span in [*slower["ratios"].values(), slower["worst"]]:
        assert span == pytest.approx([1.2, 1.2])


def test_pair_intervals_span_what_single_pairs_disagree_on() -> None:
    # One pair shows no effect, the other 40%: which pairs were run decides the ratio.
    spans = pair_intervals(
        [(_words(1.0), _words(1.0)), (_words(1.0), _words(1.4))], samples=500, seed=1
    )
    assert spans is not None
    low, high = spans["worst"]
    assert low == pytest.approx(1.0) and high == pytest.approx(1.4)
    assert pair_intervals([(_words(1.0), _words(1.4))]) is None  # one pair: nothing to resample


def test_audience_counts_from_the_presenters_state_events() -> None:
    messages = [
        {"type": "state", "listeners": 5, "ts": 99.0},
        {"type": "state", "listeners": 10, "ts": 99.5},
        {"type": "caption", "ts": 100.5},
        {"type": "state", "listeners": 8, "ts": 101.0},
        {"type": "state", "listeners": 10, "ts": 102.0},
        {"type": "state", "listeners": 0, "ts": 120.0},
    ]
    replay = Replay(
        recording="hand-made",
        mode="realtime",
        session_code="ABC234",
        schedule=SendSchedule(16000, (1600,), (0.0,)),
        received=tuple(Received(float(k), m) for k, m in enumerate(messages)),
        start_sent=0.0,
        ready_at=0.0,
        stop_sent=1.0,
        ended_at=2.0,
        binary_messages=0,
        server_cpu_seconds=None,
    )
    counts = audience_counts(replay, 100.0, 110.0)
    assert counts == {"before": 10, "min_during": 8, "max_during": 10, "last": 0}


ROUND_KEYS = {
    "round",
    "pair",
    "listeners",
    "draft_latency_s",
    "final_latency_s",
    "lag_max_s",
    "per_presenter",
    "server",
    "clients_cpu_cores",
    "bench_cpu_cores",
    "machine",
    "wall_s",
    "join_s",
    "settled",
}
PRESENTER_KEYS = {
    "recording",
    "session",
    "audio_s",
    "reference_words",
    "draft_latency_s",
    "final_latency_s",
    "words_never_shown",
    "words_never_final",
    "lag_s",
    "end_lag_s",
    "finals",
}
AUDIENCE_KEYS = {
    "socket_buffers_at_end",
    "healthy",
    "stalled",
    "connect_failures",
    "delay_s",
    "delay_by_kind_s",
    "events_per_listener",
    "finals",
    "healthy_reconnects",
    "healthy_closes",
    "stalled_outcome",
    "server_audience_count",
}


@pytest.mark.model
def test_load_two_presenters_small_audience_real_run(server: ServerProcess, tmp_path: Path) -> None:
    report = run_bench_against(
        server,
        tmp_path,
        "load",
        [
            "--listeners",
            "8",
            "--stalled",
            "2",
            "--pairs",
            "2",
            "--seconds",
            "6",
            "--client-processes",
            "2",
            "--files",
            str(SONNET),
            str(ENGLISH),
        ],
    )
    assert (tmp_path / "load.md").read_text().startswith("# Load benchmark")
    assert report["benchmark"] == "load"
    assert report["command"].startswith("python -m bench load --listeners 8")
    assert report["presenters"] == 2 and len(report["recordings"]) == 2
    assert {"cpu_model", "usable_cores", "load_average_1_5_15m"} <= set(report["machine"])
    assert len(report["goals"]) == 3
    assert all({"value", "goal", "met"} == set(g) for g in report["goals"].values())
    assert report["goal_met"] == all(g["met"] for g in report["goals"].values())
    assert len(report["latency_comparison"]) == 4
    intervals = report["latency_intervals"]  # two pairs: resampled
    assert set(intervals["ratios"]) == {r["metric"] for r in report["latency_comparison"]}
    assert intervals["samples"] > 0 and "95% interval" in (tmp_path / "load.md").read_text()

    assert report["pairs"] == 2
    assert [(r["round"], r["pair"]) for r in report["rounds"]] == [
        ("quiet", 1),
        ("loaded", 1),
        ("quiet", 2),
        ("loaded", 2),
    ]
    # The goal compares the rounds of each kind pooled: twice each round's words.
    pooled = report["pooled"]
    assert pooled["quiet"]["rounds"] == pooled["loaded"]["rounds"] == 2
    assert pooled["quiet"]["draft_latency_s"]["count"] == sum(
        r["draft_latency_s"]["count"] for r in report["rounds"] if r["round"] == "quiet"
    )
    assert [p["pair"] for p in report["latency_by_pair"]] == [1, 2]
    assert all(len(p["rows"]) == 4 for p in report["latency_by_pair"])
    assert "Pair by pair" in (tmp_path / "load.md").read_text()
    quiet, loaded = report["rounds"][2:]
    assert quiet["round"] == "quiet" and loaded["round"] == "loaded"
    assert set(quiet) == ROUND_KEYS and set(loaded) == ROUND_KEYS | {"audience"}
    assert quiet["listeners"] == 0 and loaded["listeners"] == 8
    for run in (quiet, loaded):
        assert len(run["per_presenter"]) == 2
        for presenter in run["per_presenter"]:
            assert set(presenter) == PRESENTER_KEYS
            assert presenter["audio_s"] == pytest.approx(6.0)
            assert presenter["reference_words"] > 0
        assert run["draft_latency_s"]["count"] > 0
        assert len(run["machine"]["load_average_before"]) == 3
        assert run["server"]["cpu_cores"] > 0

    audience = loaded["audience"]
    assert set(audience) == AUDIENCE_KEYS
    assert audience["healthy"] == 6 and audience["stalled"] == 2
    assert audience["connect_failures"] == []
    finals = audience["finals"]
    assert finals["healthy_exact"] == 6 and finals["missing_total"] == 0
    assert audience["delay_s"]["count"] > 0 and audience["delay_s"]["p99"] < 10.0
    outcome = audience["stalled_outcome"]
    assert len(outcome["per_listener"]) == 2
    assert outcome["closed_by_server"] + outcome["still_open_at_end"] == 2
    assert outcome["with_every_final_at_end"] == 2  # they read everything once resumed
    buffers = audience["socket_buffers_at_end"]
    if buffers["available"]:
        assert buffers["server_sockets"] >= 8  # the listeners' (and any other test's)
        assert buffers["listener_bytes_per_second"] > 0
    assert len(audience["server_audience_count"]) == 2
    assert all(c["max_during"] == 4 for c in audience["server_audience_count"])
