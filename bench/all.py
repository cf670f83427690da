"""``python -m bench all``: every benchmark, one after another, then the plots and the goal
tables of docs/metrics.md.

Each benchmark runs as its own ``python -m bench <name>`` process (a fresh interpreter, so one
benchmark's memory and threads never weigh on the next) and writes its own reports as when run
alone. A step that fails is reported and the others still run (``--stop-on-failure`` to stop);
the exit status is 1 if any step failed. Plots and the summary are regenerated from whatever
reports are in ``--out`` at the end, so a skipped benchmark keeps its previous report.
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.paths import REPO, RESULTS

DEFAULT_OUT = RESULTS
DOC = REPO / "docs" / "metrics.md"


@dataclass(frozen=True, slots=True)
class Step:
    """One benchmark: its name (for ``--skip`` and ``--only``) and its arguments after
    ``python -m bench``."""

    name: str
    argv: tuple[str, ...]
    about: str


STEPS: tuple[Step, ...] = (
    Step(
        "captions",
        ("captions", "--mode", "realtime", "--classes", "all"),
        "live captions, real time, every speech class",
    ),
    Step(
        "detect",
        ("detect", "--out", "bench/results/detect.md"),
        "language detection loses no words",
    ),
    Step("routes", ("routes",), "every candidate translation route, offline"),
    Step("translation", ("translation",), "Apertium text, FLEURS speech, translation latency"),
    Step(
        "sentence-floor",
        ("sentence-floor",),
        "FLEURS pauses and the LAAL whole sentences can reach",
    ),
    Step(
        "sentence-ends",
        ("sentence-ends",),
        "words that end written sentences; the offline decode's sentence breaks",
    ),
    Step("speech", ("speech",), "spoken translation: voices, first audio, lag"),
    Step("voices", ("voices",), "round-trip WER of every voice and Kokoro style"),
    Step("voice-load", ("voice-load",), "captions with a Kokoro listener on against none"),
    Step("talk", ("talk",), "traveller mode, languages given"),
    Step("talk-detect", ("talk", "--detect"), "traveller mode, language detection"),
    Step("fanout", ("fanout",), "100, 500, 1000 listeners on one process"),
    Step("fanout-nodes", ("fanout-nodes",), "1000 listeners on two processes and Redis"),
    Step("capacity", ("capacity",), "simultaneous real-time presenters"),
    Step(
        "capacity-speech",
        ("capacity", "--speech", "es"),
        "simultaneous presenters, one with a Kokoro listener",
    ),
    Step("capacity-panel", ("capacity", "--panel"), "the speakers of one panel at once"),
    Step("panel", ("panel",), "two speakers in two languages, and a question"),
    Step("churn", ("churn",), "2,000 short sessions, memory flat"),
    Step("memory", ("memory",), "server memory with each set of models, at rest and live"),
    Step("fuzz", ("fuzz",), "malformed input on every route, socket and offer: no 500s"),
    Step("webrtc", ("webrtc",), "WebRTC versus WebSocket"),
    Step("screen", ("screen",), "the venue screen's subtitles; listeners with a slow push"),
    Step("latejoin", ("latejoin",), "listeners joining an hour in, all at once"),
    Step("latejoin-pages", ("latejoin-pages",), "late joiners' pages drawing hours of lines"),
    Step("peer", ("peer",), "side by side with WhisperLiveKit (needs .venv-peer)"),
    Step("load", ("load",), "presenters with and without 1000 listeners, some stalled"),
)
OPTIONAL_STEPS: tuple[Step, ...] = (Step("soak", ("soak",), "a 30-minute session (--with soak)"),)
"""Run only when named in ``--with`` or ``--only`` (long)."""


def build_parser() -> argparse.ArgumentParser:
    names = [s.name for s in STEPS + OPTIONAL_STEPS]
    parser = argparse.ArgumentParser(
        prog="python -m bench all",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="steps, in order: "
        + "; ".join(f"{s.name} ({s.about})" for s in STEPS + OPTIONAL_STEPS),
    )
    parser.add_argument("--skip", nargs="+", default=[], choices=names, metavar="STEP")
    parser.add_argument(
        "--only", nargs="+", choices=names, metavar="STEP", help="run just these, in order"
    )
    parser.add_argument(
        "--with",
        dest="extra",
        nargs="+",
        default=[],
        choices=[s.name for s in OPTIONAL_STEPS],
        metavar="STEP",
        help="also run these optional steps (soak: 30 minutes), after the others",
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--doc", type=Path, default=DOC)
    parser.add_argument("--dry-run", action="store_true", help="print the commands, run nothing")
    parser.add_argument("--stop-on-failure", action="store_true")
    parser.add_argument("--no-summary", action="store_true", help="skip plots and the summary")
    return parser


def chosen_steps(
    skip: Sequence[str], only: Sequence[str] | None, extra: Sequence[str] = ()
) -> list[Step]:
    """The steps to run, in their fixed order."""
    known = STEPS + OPTIONAL_STEPS
    if only:
        picked = [s for s in known if s.name in only or s.name in extra]
    else:
        picked = [s for s in known if s in STEPS or s.name in extra]
    return [s for s in picked if s.name not in skip]


def commands(args: argparse.Namespace) -> list[tuple[str, list[str]]]:
    """``(name, command line)`` of every step, then plots and summary."""
    python = sys.executable
    out = ["--out", str(args.out)] if args.out != DEFAULT_OUT else []
    lines = [
        (step.name, [python, "-m", "bench", *step.argv, *out])
        for step in chosen_steps(args.skip, args.only, args.extra)
    ]
    if not args.no_summary:
        results = ["--results", str(args.out)] if args.out != DEFAULT_OUT else []
        lines.append(("plots", [python, "-m", "bench", "plots", *results]))
        doc = ["--doc", str(args.doc)] if args.doc != DOC else []
        lines.append(("summary", [python, "-m", "bench", "summary", *results, *doc]))
    return lines


Runner = Callable[[list[str]], int]


def _run(command: list[str]) -> int:
    return subprocess.call(command, cwd=REPO)


def main(argv: Sequence[str], runner: Runner = _run) -> int:
    args = build_parser().parse_args(list(argv))
    plan = commands(args)
    if args.dry_run:
        for name, command in plan:
            print(f"{name}: {shlex.join(command)}")
        return 0
    failed: list[str] = []
    for name, command in plan:
        print(f"== {name}: {shlex.join(command)}", flush=True)
        began = time.monotonic()
        status = runner(command)
        took = time.monotonic() - began
        print(f"== {name}: exit {status} after {took:.0f} s", flush=True)
        if status != 0:
            failed.append(name)
            if args.stop_on_failure:
                break
    if failed:
        print("failed: " + ", ".join(failed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
