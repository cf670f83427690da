"""The load bench's metrics (bench/load.py): each presenter's per-word latency in a round, the
audience's deliveries, latencies pooled over the rounds of a kind, and the loaded/quiet ratios
with bootstrap intervals over the pairs (docs/metrics.md, "Load")."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

import numpy as np

from bench.alignment import TimedWord
from bench.capacity import measure_presenter
from bench.deliveries import (
    check_finals,
    delay_stats,
    presenter_finals,
    window_deliveries,
)
from bench.format import mib
from bench.metrics import WordLatencies, distribution, word_latencies
from bench.recordings import Recording
from bench.replay import Replay

if TYPE_CHECKING:
    from bench.load import LoadRound


def presenter_latencies(reference: Sequence[TimedWord], recorded: Replay) -> WordLatencies:
    """The captions bench's per-word draft and final latency of one replay."""
    return word_latencies(reference, recorded.caption_updates(), recorded.schedule)


def audience_counts(recorded: Replay, start: float, end: float) -> dict[str, int | None]:
    """The ``listeners`` of the ``state`` events the presenter received: the last one
    stamped before ``start``, the smallest and largest stamped within ``[start, end]``,
    and the last one of all."""
    states = [
        (float(m["ts"]), int(m["listeners"]))
        for r in recorded.received
        if (m := r.message).get("type") == "state" and "listeners" in m and "ts" in m
    ]
    during = [n for ts, n in states if start <= ts <= end]
    before = [n for ts, n in states if ts < start]
    return {
        "before": before[-1] if before else None,
        "min_during": min(during, default=None),
        "max_during": max(during, default=None),
        "last": states[-1][1] if states else None,
    }


def _dist(values: Sequence[float | None]) -> dict[str, Any]:
    return asdict(distribution(values))


def round_latencies(
    run: LoadRound, references: Sequence[Sequence[TimedWord]]
) -> list[WordLatencies]:
    """Each presenter's per-word latencies in one round."""
    return [presenter_latencies(ref, rep) for ref, rep in zip(references, run.replays, strict=True)]


def round_json(
    run: LoadRound,
    recordings: Sequence[Recording],
    references: Sequence[Sequence[TimedWord]],
    latencies: Sequence[WordLatencies],
) -> dict[str, Any]:
    """One round (``latencies``: its :func:`round_latencies`): presenter latency and lag;
    for the loaded round the audience too."""
    presenters: list[dict[str, Any]] = []
    for recording, ref, rep, lat in zip(
        recordings, references, run.replays, latencies, strict=True
    ):
        lag = measure_presenter(recording, rep)
        presenters.append(
            {
                "recording": rep.recording,
                "session": rep.session_code,
                "audio_s": rep.schedule.audio_seconds,
                "reference_words": len(ref),
                "draft_latency_s": _dist(lat.shown),
                "final_latency_s": _dist(lat.final),
                "words_never_shown": lat.never_shown,
                "words_never_final": lat.never_final,
                "lag_s": asdict(lag.lag),
                "end_lag_s": lag.end_lag_s,
                "finals": len(presenter_finals(rep)),
            }
        )
    start, end = run.window
    cpu = run.cpu
    report: dict[str, Any] = {
        "round": run.name,
        "pair": run.pair,
        "listeners": len(run.records),
        "draft_latency_s": _dist([v for lat in latencies for v in lat.shown]),
        "final_latency_s": _dist([v for lat in latencies for v in lat.final]),
        "lag_max_s": max((p["lag_s"]["max"] or 0.0 for p in presenters), default=None),
        "per_presenter": presenters,
        "server": {
            "cpu_cores": cpu.server,
            "rss_start_mib": mib(run.rss_start_bytes),
            "rss_peak_mib": mib(run.rss_peak_bytes),
        },
        "clients_cpu_cores": cpu.clients_total,
        "bench_cpu_cores": cpu.bench,
        "machine": {
            "busy_cores": cpu.machine,
            "other_cores": cpu.other,
            "load_average_before": [round(x, 2) for x in run.load_average_before],
            "load_average_after": [round(x, 2) for x in run.load_average_after],
        },
        "wall_s": end - start,
        "join_s": run.join_s,
        "settled": run.settled,
    }
    if run.records:
        report["audience"] = audience_json(run)
    return report


def audience_json(run: LoadRound) -> dict[str, Any]:
    """Healthy listeners: delays and finals; stalled listeners: what became of them."""
    start, end = run.window
    expected = [presenter_finals(r) for r in run.replays]
    healthy = [
        (r, s) for r, s in zip(run.records, run.record_sessions, strict=True) if not r.stalled
    ]
    stalled = [(r, s) for r, s in zip(run.records, run.record_sessions, strict=True) if r.stalled]
    checks = [check_finals(expected[s], r.finals) for r, s in healthy]
    in_window = [window_deliveries(r, start, end) for r, _ in healthy]
    delays = [d.delay for ds in in_window for d in ds]
    kinds = sorted({d.kind for ds in in_window for d in ds})
    stats = delay_stats(delays)
    stalled_rows = []
    for record, session in stalled:
        check = check_finals(expected[session], record.finals)
        stalled_rows.append(
            {
                "index": record.index,
                "session": session,
                "closes": list(record.closes),
                "reconnects": record.reconnects,
                "messages": len(record.deliveries),
                "finals_missing_at_end": check.missing,
                "error": record.error,
            }
        )
    close_codes = Counter(c.split(" ", 1)[0] for r, _ in stalled for c in r.closes[:1])
    return {
        "socket_buffers_at_end": run.buffers,
        "healthy": len(healthy),
        "stalled": len(stalled),
        "connect_failures": [f"{r.index}: {r.error}" for r, _ in healthy if r.error][:10],
        "delay_s": asdict(stats),
        "delay_by_kind_s": {
            kind: asdict(delay_stats([d.delay for ds in in_window for d in ds if d.kind == kind]))
            for kind in kinds
        },
        "events_per_listener": _dist([len(ds) for ds in in_window]),
        "finals": {
            "presenters": [len(e) for e in expected],
            "healthy_exact": sum(c.exact for c in checks),
            "missing_total": sum(c.missing for c in checks),
            "differing_total": sum(c.differing for c in checks),
            "extra_total": sum(c.extra for c in checks),
        },
        "healthy_reconnects": sum(r.reconnects for r, _ in healthy),
        "healthy_closes": dict(Counter(c for r, _ in healthy for c in r.closes).most_common(10)),
        "stalled_outcome": {
            "closed_by_server": sum(bool(r.closes) for r, _ in stalled),
            "first_close_codes": dict(close_codes),
            "still_open_at_end": sum(not r.closes and r.error is None for r, _ in stalled),
            "reconnects": sum(r.reconnects for r, _ in stalled),
            "with_every_final_at_end": sum(
                row["finals_missing_at_end"] == 0 for row in stalled_rows
            ),
            "per_listener": stalled_rows,
        },
        "server_audience_count": [audience_counts(rep, start, end) for rep in run.replays],
    }


LATENCY_KEYS = (
    ("draft_latency_s", "p50"),
    ("draft_latency_s", "p95"),
    ("final_latency_s", "p50"),
    ("final_latency_s", "p95"),
)


def pooled_latencies(rounds: Sequence[Sequence[WordLatencies]]) -> dict[str, Any]:
    """Draft and final latency over every word of every presenter of ``rounds`` (each
    round's :func:`round_latencies`)."""
    words = [lat for latencies in rounds for lat in latencies]
    return {
        "rounds": len(rounds),
        "draft_latency_s": _dist([v for lat in words for v in lat.shown]),
        "final_latency_s": _dist([v for lat in words for v in lat.final]),
    }


BOOTSTRAP_SAMPLES = 2000
BOOTSTRAP_SEED = 0


def pair_intervals(
    pairs: Sequence[tuple[Sequence[WordLatencies], Sequence[WordLatencies]]],
    samples: int = BOOTSTRAP_SAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> dict[str, Any] | None:
    """How far the pooled loaded / quiet ratios move with which rounds happened to be run.

    ``pairs``: each pair's (quiet, loaded) :func:`round_latencies`. The pairs are resampled
    with replacement ``samples`` times (a fixed seed, so a report is reproducible); each
    sample pools its rounds' words as the report does and takes the four ratios of
    :data:`LATENCY_KEYS` and their worst. Returns the central 95% of each; None for fewer
    than two pairs. The rounds are where the noise lives: each fresh server's real-time
    steps fall differently, and the segmentation with them.
    """
    if len(pairs) < 2:
        return None

    def values(latencies: Sequence[WordLatencies], kind: str) -> np.ndarray:
        return np.array(
            [v for lat in latencies for v in getattr(lat, kind) if v is not None], dtype=float
        )

    kinds = {"draft_latency_s": "shown", "final_latency_s": "final"}
    per_pair = [
        {m: (values(quiet, k), values(loaded, k)) for m, k in kinds.items()}
        for quiet, loaded in pairs
    ]
    rng = np.random.default_rng(seed)
    columns = {key: col for col, key in enumerate(LATENCY_KEYS)}
    ratios = np.full((samples, len(LATENCY_KEYS)), np.nan)
    for i in range(samples):
        chosen = [per_pair[j] for j in rng.integers(0, len(pairs), len(pairs))]
        for metric in kinds:
            quiet = np.concatenate([c[metric][0] for c in chosen])
            loaded = np.concatenate([c[metric][1] for c in chosen])
            if not (quiet.size and loaded.size):
                continue
            base, value = np.percentile(quiet, [50, 95]), np.percentile(loaded, [50, 95])
            for stat, b, v in zip(("p50", "p95"), base, value, strict=True):
                if b > 0:
                    ratios[i, columns[(metric, stat)]] = v / b
    worst = np.nanmax(ratios, axis=1)

    def central(column: np.ndarray) -> list[float] | None:
        kept = column[~np.isnan(column)]
        return None if kept.size == 0 else [float(x) for x in np.percentile(kept, [2.5, 97.5])]

    return {
        "samples": samples,
        "seed": seed,
        "ratios": {
            metric_name(metric, stat): central(ratios[:, col])
            for col, (metric, stat) in enumerate(LATENCY_KEYS)
        },
        "worst": central(worst),
    }


def worst_ratio(rows: Sequence[dict[str, Any]]) -> float | None:
    return max((r["ratio"] for r in rows if r["ratio"] is not None), default=None)


def metric_name(metric: str, stat: str) -> str:
    """``("draft_latency_s", "p50")`` -> ``"draft latency p50"``."""
    return f"{metric.removesuffix('_s').replace('_', ' ')} {stat}"


def comparison(quiet: dict[str, Any], loaded: dict[str, Any]) -> list[dict[str, Any]]:
    """Loaded / quiet for each latency statistic."""
    rows = []
    for metric, stat in LATENCY_KEYS:
        a, b = quiet[metric][stat], loaded[metric][stat]
        rows.append(
            {
                "metric": metric_name(metric, stat),
                "quiet_s": a,
                "loaded_s": b,
                "ratio": None if a is None or b is None or a <= 0 else b / a,
            }
        )
    return rows
