"""``python -m bench plots``: PNG plots from the reports already in ``bench/results/`` (no
benchmark is rerun).

- ``captions-latency-cdf.png``: cumulative distribution of the per-word draft and final latency
  of ``captions-realtime.json`` (every word of every file), goals dashed.
- ``captions-lag.png``: lag over time of each recording of the captions run, from its trace
  (``traces/captions-realtime-<id>.json``), with the capacity bench's definition (audio sent −
  largest caption ``end`` received; docs/metrics.md, "Capacity").
- ``peer-latency-cdf.png``: draft and final latency CDFs of ours and WhisperLiveKit
  (``peer.json``).
- ``webrtc-latency-cdf.png``: the same for WebRTC and WebSocket (``webrtc.json``).
- ``speech-first-audio-cdf.png`` and ``speech-lag.png``: only when ``speech.json`` holds the
  values themselves (per listener ``first_audio_values_s``: list of seconds;
  ``lag_series``: ``[[seconds since the replay began, lag], ...]``), not only percentiles.

A plot whose report (or data) is missing is skipped and the reason printed.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bench.capacity import lag_series
from bench.format import pyplot, save_figure
from bench.metrics import SendSchedule
from bench.paths import RESULTS

DEFAULT_RESULTS = RESULTS


def _load(path: Path) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def word_latencies(files: Sequence[Mapping[str, Any]], key: str) -> list[float]:
    """Every word's ``key`` (``draft_latency_s`` or ``final_latency_s``) over the files of a
    captions-style report, words never shown or never final left out."""
    return [float(w[key]) for f in files for w in f.get("words", []) if w.get(key) is not None]


def cdf_plot(
    series: Mapping[str, Sequence[float]],
    path: Path,
    title: str,
    xlabel: str,
    goals: Mapping[str, float] | None = None,
) -> Path | None:
    """Empirical CDFs, one line per non-empty series; vertical dashed lines at ``goals``.
    ``None`` (nothing written) when every series is empty."""
    present = {label: sorted(values) for label, values in series.items() if values}
    if not present:
        return None
    plt = pyplot()
    figure, ax = plt.subplots(figsize=(8, 4.5))
    for label, values in present.items():
        n = len(values)
        ax.step(values, [(i + 1) / n for i in range(n)], where="post", label=f"{label} (n={n})")
    for label, x in (goals or {}).items():
        ax.axvline(x, color="grey", linestyle="--", linewidth=1)
        ax.annotate(label, (x, 0.02), rotation=90, fontsize=7, color="grey", ha="right")
    ax.axhline(0.5, color="lightgrey", linewidth=0.8)
    ax.axhline(0.95, color="lightgrey", linewidth=0.8)
    ax.set_ylim(0, 1.01)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("fraction at or below")
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    return save_figure(figure, path)


def lines_plot(
    series: Mapping[str, Sequence[tuple[float, float]]],
    path: Path,
    title: str,
    xlabel: str,
    ylabel: str,
    limit: float | None = None,
) -> Path | None:
    """One line per non-empty series of ``(x, y)`` points; ``None`` when all are empty."""
    present = {label: points for label, points in series.items() if points}
    if not present:
        return None
    plt = pyplot()
    figure, ax = plt.subplots(figsize=(9, 4))
    for label, points in present.items():
        ax.plot([p[0] for p in points], [p[1] for p in points], label=label, linewidth=1.1)
    if limit is not None:
        ax.axhline(limit, color="red", linestyle="--", linewidth=1)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper left")
    return save_figure(figure, path)


def trace_lag(trace: Mapping[str, Any]) -> list[tuple[float, float]]:
    """``(seconds since the first chunk was sent, lag)`` at every source caption of one
    captions trace (``traces/captions-<mode>-<id>.json``)."""
    chunks = trace.get("chunks") or []
    if not chunks:
        return []
    schedule = SendSchedule(
        sample_rate=int(trace["sample_rate"]),
        chunk_end_samples=tuple(int(end) for end, _ in chunks),
        send_times=tuple(float(sent) for _, sent in chunks),
    )
    captions = [
        (float(arrival), float(m["end"]))
        for arrival, m in trace.get("received", [])
        if m.get("type") == "caption" and m.get("source", True) and "end" in m
    ]
    return [(s.at, s.lag) for s in lag_series(schedule, captions)]


def _captions(results: Path, out: Path, notes: list[str]) -> list[Path]:
    report = _load(results / "captions-realtime.json")
    if report is None:
        notes.append("captions-realtime.json missing: no caption latency CDF, no caption lag")
        return []
    written: list[Path] = []
    goals = report.get("goals", {})
    marks = {}
    if "draft_latency_p50_s" in goals:
        marks[f"draft p50 goal {goals['draft_latency_p50_s']} s"] = goals["draft_latency_p50_s"]
    if "final_latency_p50_s" in goals:
        marks[f"final p50 goal {goals['final_latency_p50_s']} s"] = goals["final_latency_p50_s"]
    files = report.get("files", [])
    path = cdf_plot(
        {
            "draft (word first shown)": word_latencies(files, "draft_latency_s"),
            "final (word final)": word_latencies(files, "final_latency_s"),
        },
        out / "captions-latency-cdf.png",
        f"Live captions, per-word latency ({len(files)} recordings, real time; "
        f"{report.get('created_utc', '')[:10]})",
        "seconds after the word's end was sent",
        marks,
    )
    if path is None:
        notes.append("captions-realtime.json has no per-word latencies")
    else:
        written.append(path)
    lag: dict[str, list[tuple[float, float]]] = {}
    for f in files:
        trace = _load(results / "traces" / f"captions-realtime-{f['recording']}.json")
        if trace is not None:
            lag[f["recording"]] = trace_lag(trace)
    path = lines_plot(
        lag,
        out / "captions-lag.png",
        "Live captions: lag over time (audio sent − audio covered by captions)",
        "seconds since the first audio chunk",
        "lag (s)",
    )
    if path is None:
        notes.append("no captions-realtime traces: no caption lag plot")
    else:
        written.append(path)
    return written


def _side_by_side(
    results: Path,
    out: Path,
    notes: list[str],
    name: str,
    systems: Mapping[str, Sequence[Mapping[str, Any]]],
    title: str,
) -> list[Path]:
    series = {}
    for label, files in systems.items():
        series[f"{label} draft"] = word_latencies(files, "draft_latency_s")
        series[f"{label} final"] = word_latencies(files, "final_latency_s")
    path = cdf_plot(series, out / f"{name}-latency-cdf.png", title, "seconds after the word's end")
    if path is None:
        notes.append(f"{name}.json has no per-word latencies")
        return []
    return [path]


def _peer(results: Path, out: Path, notes: list[str]) -> list[Path]:
    report = _load(results / "peer.json")
    if report is None:
        notes.append("peer.json missing: no peer latency CDF")
        return []
    systems = report.get("systems", {})
    peer_name = report.get("peer", {}).get("name", "peer")
    return _side_by_side(
        results,
        out,
        notes,
        "peer",
        {
            "ours": systems.get("ours", {}).get("files", []),
            peer_name: systems.get("peer", {}).get("files", []),
        },
        f"Ours and {peer_name}, per-word latency (same recordings, real time)",
    )


def _webrtc(results: Path, out: Path, notes: list[str]) -> list[Path]:
    report = _load(results / "webrtc.json")
    if report is None:
        notes.append("webrtc.json missing: no WebRTC latency CDF")
        return []
    return _side_by_side(
        results,
        out,
        notes,
        "webrtc",
        {t["transport"]: t.get("files", []) for t in report.get("transports", [])},
        "Presenter audio over WebRTC and WebSocket, per-word caption latency",
    )


def _speech(results: Path, out: Path, notes: list[str]) -> list[Path]:
    report = _load(results / "speech.json")
    if report is None:
        notes.append("speech.json missing: no speech plots")
        return []
    first: dict[str, list[float]] = {}
    lag: dict[str, list[tuple[float, float]]] = {}
    for run in report.get("server", []):
        for listener in run.get("listeners", []):
            label = f"{run.get('source')}->{listener.get('lang')}"
            first[label] = [float(v) for v in listener.get("first_audio_values_s") or []]
            lag[label] = [(float(t), float(v)) for t, v in listener.get("lag_series") or []]
    written: list[Path] = []
    path = cdf_plot(
        first,
        out / "speech-first-audio-cdf.png",
        "Spoken translation: first audio after the final caption",
        "seconds",
    )
    if path is None:
        notes.append(
            "speech.json holds percentiles only (no first_audio_values_s): no first-audio CDF"
        )
    else:
        written.append(path)
    path = lines_plot(
        lag,
        out / "speech-lag.png",
        "Spoken translation: lag behind the speaker over time",
        "seconds since the replay began",
        "lag (s)",
    )
    if path is None:
        notes.append("speech.json holds percentiles only (no lag_series): no speech lag plot")
    else:
        written.append(path)
    return written


def write_plots(results: Path, out: Path | None = None) -> tuple[list[Path], list[str]]:
    """Every plot the reports in ``results`` allow, written to ``out`` (default: the same
    folder); returns the files written and a note for each plot skipped."""
    out = results if out is None else out
    out.mkdir(parents=True, exist_ok=True)
    notes: list[str] = []
    written: list[Path] = []
    for make in (_captions, _peer, _webrtc, _speech):
        written += make(results, out, notes)
    return written, notes


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench plots", description=__doc__)
    parser.add_argument("--results", type=Path, default=DEFAULT_RESULTS)
    parser.add_argument("--out", type=Path, help="where to write (default: --results)")
    args = parser.parse_args(list(argv))
    written, notes = write_plots(args.results, args.out)
    for path in written:
        print(f"wrote {path}")
    for note in notes:
        print(f"skipped: {note}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
