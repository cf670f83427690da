"""LAAL for a ``translation.json`` written before the translation bench computed it, from the
talks' traces (no rerun): ``python -m bench.translation_laal [--results DIR]``.

For each real-time FLEURS lane that has no ``laal_s`` yet: the clips' spans are rebuilt from
the FLEURS files exactly as the bench built the talk (:func:`bench.translation.build_talk`),
the listener's messages are read back from ``traces/translation-<talk>.json``, and
:func:`bench.translation_metrics.clip_laal` is applied as the bench now does itself. The one
difference: the traces do not hold the chunk send times, so audio time 0 is taken as the
arrival of the presenter's ``ready`` (the real-time schedule starts right after it, chunk k
at that moment + (k + 1) × 0.1 s; a few milliseconds off at most). The report records this in
``laal_source``, and a LAAL table is appended to ``translation.md``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bench.metrics import distribution
from bench.paths import RESULTS
from bench.replay import Received
from bench.translation import FLEURS_DIR, build_talk, fleurs_clips
from bench.translation_metrics import clip_laal, heard_captions, translated

DEFAULT_RESULTS = RESULTS
NOTE = (
    "added from traces/translation-<talk>.json after the run (python -m bench.translation_laal); "
    "audio time 0 = arrival of the presenter's ready"
)


def lane_laal(
    lane: Mapping[str, Any],
    trace: Mapping[str, Any],
    spans: Sequence[Any],
) -> list[float | None]:
    """Per clip LAAL of one lane from its talk's trace."""
    origin = next(float(t) for t, m in trace["presenter"] if m.get("type") == "ready")
    received = [Received(float(t), m) for t, m in trace["listeners"][lane["target"]]]
    finals = [h for h in translated(heard_captions(received), lane["target"]) if h.state == "final"]
    references = [c["reference"] for c in lane["clips"]]
    return clip_laal(finals, spans, references, origin)


def backfill(results: Path, fleurs_dir: Path = FLEURS_DIR) -> dict[str, Any] | None:
    """Add LAAL to ``results/translation.json`` where it is missing; return the report, or
    ``None`` when there is no report."""
    path = results / "translation.json"
    if not path.is_file():
        return None
    report: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    clips = {c.id: c for c in fleurs_clips(fleurs_dir)}
    gap = float(report.get("settings", {}).get("clip_gap_s", 1.0))
    changed = False
    for lane in report.get("speech", []):
        if "laal_s" in lane or lane.get("mode") != "realtime" or not lane.get("clips"):
            continue
        trace_path = results / "traces" / f"translation-{lane['talk']}.json"
        if not trace_path.is_file():
            continue
        trace = json.loads(trace_path.read_text(encoding="utf-8"))
        _, spans = build_talk(lane["talk"], [clips[c["clip"]] for c in lane["clips"]], gap)
        values = lane_laal(lane, trace, spans)
        lane["laal_s"] = asdict(distribution(values))
        for clip, value in zip(lane["clips"], values, strict=True):
            clip["laal_s"] = value
        changed = True
    if not changed:
        return report
    overall = report.setdefault("overall", {})
    overall["laal_s"] = {
        kind: asdict(
            distribution(
                c.get("laal_s")
                for lane in report.get("speech", [])
                if str(lane.get("final_backend") or "").split(":", 1)[0] == kind
                for c in lane.get("clips", [])
            )
        )
        for kind in ("whisper", "apertium")
    }
    report["laal_source"] = NOTE
    path.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n", "utf-8")
    md = results / "translation.md"
    if md.is_file():
        md.write_text(md.read_text(encoding="utf-8").rstrip("\n") + "\n\n" + markdown(report))
    return report


def markdown(report: Mapping[str, Any]) -> str:
    """The LAAL table appended to ``translation.md``."""
    lines = [
        "## LAAL of the final translations (added from the traces after the run)",
        "",
        "Length-adaptive average lagging per FLEURS clip, computation-aware, in seconds since "
        "the clip's audio began; p50 / p95 / mean over clips (docs/metrics.md).",
        "",
        "| talk | route | final backend | clips | LAAL p50 / p95 s | mean s |",
        "|---|---|---|---|---|---|",
    ]
    for lane in report.get("speech", []):
        d = lane.get("laal_s") or {}
        if not d.get("count"):
            continue
        lines.append(
            f"| {lane['talk']} | {lane['source']}->{lane['target']} | {lane['final_backend']} "
            f"| {d['count']} | {d['p50']:.2f} / {d['p95']:.2f} | {d['mean']:.2f} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.translation_laal", description=__doc__)
    parser.add_argument("--results", type=Path, default=DEFAULT_RESULTS)
    parser.add_argument("--fleurs-dir", type=Path, default=FLEURS_DIR)
    args = parser.parse_args(list(argv))
    report = backfill(args.results, args.fleurs_dir)
    if report is None:
        print(f"no translation.json in {args.results}", file=sys.stderr)
        return 2
    print(json.dumps(report.get("overall", {}).get("laal_s"), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
