"""Command line: ``python -m bench <command> [options]``; ``python -m bench <command> --help``
for a command's options. Metric definitions: docs/metrics.md. ``python -m bench all`` runs
every benchmark; ``plots`` and ``summary`` regenerate the PNG plots and docs/metrics.md's goal
tables from the reports.

Benches run from a checkout (they are not part of the installed package): each command is a
module of ``bench`` with a ``main(argv)`` that parses its own options, imported only when run.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Command:
    """One ``python -m bench`` command: the module whose ``main(argv)`` runs it."""

    module: str
    help: str


COMMANDS: dict[str, Command] = {
    "captions": Command(
        "bench.captions",
        "replay recordings to the presenter socket; report caption latency, WER, erasure",
    ),
    "fanout": Command(
        "bench.fanout",
        "one presenter in real time, N listeners: event delay, finals, server CPU and memory",
    ),
    "fanout-nodes": Command("bench.fanout_nodes", "fan-out across server processes sharing Redis"),
    "capacity": Command(
        "bench.capacity",
        "simultaneous real-time presenters whose caption lag stays under the limit",
    ),
    "load": Command(
        "bench.load",
        "2 real-time presenters and 1000 listeners (10 stalled) against the same run "
        "without listeners",
    ),
    "soak": Command(
        "bench.soak", "a 30-minute real-time session: caption lag, memory growth, CPU over time"
    ),
    "memory": Command(
        "bench.memory",
        "server memory with each set of models: ready, at rest, live with a listener, after",
    ),
    "latejoin": Command(
        "bench.latejoin",
        "a session an hour in, N listeners joining at once: backfill time, delay for the rest",
    ),
    "latejoin-pages": Command(
        "bench.latejoin_pages",
        "a session hours in, opened in Chromium: time until the phone, screen, console draw it",
    ),
    "churn": Command(
        "bench.churn",
        "many short sessions one after another: server memory and open files, start to end",
    ),
    "fuzz": Command(
        "bench.fuzz",
        "malformed bodies, queries, socket messages, audio and WebRTC offers: no 500s, no "
        "dropped sockets, the server up",
    ),
    "translation": Command(
        "bench.translation",
        "Apertium text quality on FLORES-200; FLEURS speech-to-translation quality and "
        "translation latency through the real server",
    ),
    "speech": Command(
        "bench.speech", "spoken translation: voice speed, first audio, lag behind the speaker"
    ),
    "voices": Command(
        "bench.voices", "round-trip WER of every voice and Kokoro style against human speech"
    ),
    "background": Command(
        "bench.background",
        "Whisper decodes alone and beside Kokoro at nice and under SCHED_IDLE",
    ),
    "voice-load": Command(
        "bench.voice_load", "caption latency with a Kokoro listener on against none"
    ),
    "talk": Command("bench.talk", "traveller mode: turn latency, language detection"),
    "screen": Command(
        "bench.screen",
        "the venue screen in Chromium follows a real-time replay: lines changed after moving "
        "up, longest line, draw time; listeners' latency with a push endpoint slow or dead",
    ),
    "webrtc": Command(
        "bench.webrtc", "caption latency and WER over WebRTC versus the WebSocket, side by side"
    ),
    "peer": Command("bench.peer", "side by side with WhisperLiveKit"),
    "detect": Command(
        "bench.detect",
        "automatic language detection against the language given, on FLEURS clips (WER)",
    ),
    "panel": Command(
        "bench.panel",
        "two speakers in two languages at once: labels, WER together against alone, lag",
    ),
    "routes": Command(
        "bench.routes",
        "every translation route of every pair on FLEURS clips, offline (BLEU, chrF)",
    ),
    "translation-regroup": Command(
        "bench.translation_regroup",
        "a translation run's X->en sentences decoded again offline, as live, grouped as the "
        "clips and as whole clips",
    ),
    "sentence-floor": Command(
        "bench.sentence_floor",
        "FLEURS clips' pauses and the LAAL whole-sentence translations can reach (no server)",
    ),
    "sentence-ends": Command(
        "bench.sentence_ends",
        "how often each word ends a written English sentence; the offline decode's "
        "spurious sentence breaks per class (no server)",
    ),
    "steps": Command(
        "bench.steps", "compute-unaware replay in process: exact WER of recogniser settings"
    ),
    "terms": Command(
        "bench.terms", "recall of the references' terms with and without the term list, and WER"
    ),
    "corrections": Command(
        "bench.corrections",
        "a correction's time from PUT to a listener in another language; its cost in events",
    ),
    "threads": Command("bench.threads", "Whisper encode and decode times by CTranslate2 threads"),
    "all": Command("bench.all", "every benchmark in turn, then plots and summary"),
    "plots": Command("bench.plots", "PNG plots from bench/results/*.json (no rerun)"),
    "summary": Command(
        "bench.summary", "the goal tables of docs/metrics.md from bench/results/*.json (no rerun)"
    ),
}
"""Every command, in the order ``--help`` lists them."""


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser: it only names the commands (each parses its own options)."""
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, command in COMMANDS.items():
        commands.add_parser(name, help=command.help, add_help=False)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command named first in ``argv`` (default: the process's arguments) with the
    rest; its exit status."""
    words = list(sys.argv[1:] if argv is None else argv)
    command = COMMANDS.get(words[0]) if words else None
    if command is None:
        build_parser().parse_args(words)  # --help, or a usage error; both exit
        return 2
    module = importlib.import_module(command.module)
    status: int = module.main(words[1:])
    return status


if __name__ == "__main__":
    sys.exit(main())
