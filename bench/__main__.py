"""Command line: ``python -m bench captions|fanout|capacity|translation|peer [options]``
(see docs/metrics.md); ``python -m bench all`` runs them all, ``plots`` and ``summary``
regenerate the PNG plots and README.md's "Measured" tables from the reports."""

from __future__ import annotations

import argparse
import asyncio
import shlex
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from bench import capacity, fanout, translation
from bench.captions import Goals, RunSettings, run_captions
from bench.recordings import EVAL_LONGFORM_EN, default_wavs, load_recording, resolve_wavs
from bench.reference import DecodeSettings
from bench.report import write_report

DEFAULT_OUT = Path(__file__).resolve().parent / "results"


def _server_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--url",
        help="base URL of a running server (default: start `python -m app.cli serve` on a free "
        "loopback port and stop it afterwards)",
    )
    parser.add_argument(
        "--server-pid",
        type=int,
        help="with --url: process id of that server, to measure its CPU time",
    )
    parser.add_argument("--ready-timeout", type=float, default=120.0)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    captions = commands.add_parser(
        "captions",
        help="replay recordings to the presenter socket; report caption latency, WER, erasure",
    )
    _server_arguments(captions)
    captions.add_argument("--mode", choices=("realtime", "fast"), default="realtime")
    captions.add_argument(
        "--files",
        nargs="+",
        metavar="FILE",
        help="WAV paths or recording ids in --eval-dir (default: every English long-form "
        "recording except *_SILVER and the *_concat file)",
    )
    captions.add_argument("--eval-dir", type=Path, default=EVAL_LONGFORM_EN)
    captions.add_argument("--out", type=Path, default=DEFAULT_OUT)
    captions.add_argument(
        "--model", default="tiny.en", help="model of the offline baseline and reference times"
    )

    commands.add_parser(
        "peer", help="side by side with WhisperLiveKit (python -m bench peer --help)"
    )
    commands.add_parser(
        "steps", help="compute-unaware replay in process: exact WER of recogniser settings"
    )
    commands.add_parser(
        "threads", help="Whisper encode and decode times by CTranslate2 thread count"
    )
    commands.add_parser(
        "webrtc", help="caption latency and WER over WebRTC versus the WebSocket, side by side"
    )
    commands.add_parser(
        "speech", help="spoken translation: voice speed, first audio, lag behind the speaker"
    )
    commands.add_parser("talk", help="traveller mode: turn latency, language detection")
    commands.add_parser(
        "all", help="every benchmark in turn, then plots and summary (python -m bench all --help)"
    )
    commands.add_parser("plots", help="PNG plots from bench/results/*.json (no rerun)")
    commands.add_parser(
        "summary", help='README.md\'s "Measured" tables from bench/results/*.json (no rerun)'
    )
    commands.add_parser(
        "load",
        help="2 real-time presenters and 1000 listeners (10 stalled) against the same run "
        "without listeners (python -m bench load --help)",
    )
    commands.add_parser(
        "soak",
        help="a 30-minute real-time session: caption lag, memory growth, CPU over time "
        "(python -m bench soak --help)",
    )
    commands.add_parser(
        "fanout-nodes",
        help="fan-out across server processes sharing Redis (python -m bench fanout-nodes --help)",
    )
    spread = commands.add_parser(
        "fanout",
        help="one presenter in real time, N listeners: event delay, finals, server CPU and memory",
    )
    _server_arguments(spread)
    spread.add_argument(
        "--listeners",
        type=int,
        nargs="+",
        default=list(fanout.DEFAULT_LISTENERS),
        metavar="N",
        help="one round per listener count (default: %(default)s)",
    )
    spread.add_argument(
        "--file",
        default=fanout.DEFAULT_RECORDING,
        help="WAV path or recording id in --eval-dir (default: %(default)s)",
    )
    spread.add_argument(
        "--seconds", type=float, help="replay only the first SECONDS of the recording"
    )
    spread.add_argument(
        "--client-processes",
        type=int,
        help="processes the listeners are spread over (default: one per "
        f"{fanout.LISTENERS_PER_CLIENT_PROCESS} listeners, at most "
        f"{fanout.MAX_CLIENT_PROCESSES})",
    )
    spread.add_argument("--eval-dir", type=Path, default=EVAL_LONGFORM_EN)
    spread.add_argument("--out", type=Path, default=DEFAULT_OUT)

    load = commands.add_parser(
        "capacity",
        help="simultaneous real-time presenters whose caption lag stays under the limit",
    )
    _server_arguments(load)
    load.add_argument(
        "--max",
        type=int,
        default=capacity.DEFAULT_MAX,
        help="most presenters to try; rounds go 1, 2, ... and stop at the first that fails "
        "(default: %(default)s, the server's max_live_streams)",
    )
    load.add_argument(
        "--files",
        nargs="+",
        metavar="FILE",
        help="recordings the presenters replay, presenter k the k-th (cycling); default: "
        "every English long-form recording except *_SILVER and the *_concat file",
    )
    load.add_argument(
        "--seconds", type=float, help="replay only the first SECONDS of each recording"
    )
    load.add_argument(
        "--lag-limit",
        type=float,
        default=capacity.LAG_LIMIT_S,
        help="a round passes when every presenter's lag stays under this (default: %(default)s)",
    )
    load.add_argument("--eval-dir", type=Path, default=EVAL_LONGFORM_EN)
    load.add_argument("--out", type=Path, default=DEFAULT_OUT)

    mt = commands.add_parser(
        "translation",
        help="Apertium text quality on FLORES-200; FLEURS speech-to-translation quality and "
        "translation latency through the real server",
    )
    _server_arguments(mt)
    mt.add_argument(
        "--sentences",
        type=int,
        default=300,
        help="FLORES-200 devtest sentences per text route (default: %(default)s)",
    )
    mt.add_argument(
        "--routes",
        nargs="*",
        metavar="SRC-TGT",
        default=[f"{s}-{t}" for s, t in translation.TEXT_ROUTES],
        help="Apertium directions of the text part; none to skip it (default: %(default)s)",
    )
    mt.add_argument(
        "--speech",
        nargs="*",
        metavar="LANG",
        default=list(translation.SPEECH_LANGUAGES),
        help="FLEURS languages to speak, one talk each (X->en; en->--english-targets); none "
        "to skip (default: %(default)s)",
    )
    mt.add_argument(
        "--english-targets",
        nargs="+",
        metavar="LANG",
        default=list(translation.ENGLISH_TARGETS),
        help="targets of the English FLEURS talk (default: %(default)s)",
    )
    mt.add_argument("--clips", type=int, help="at most this many clips per FLEURS language")
    mt.add_argument(
        "--latency-file",
        default=translation.LATENCY_RECORDING,
        help="English long-form recording (id in --eval-dir or WAV path) replayed in real time "
        "for latency, or 'none' (default: %(default)s)",
    )
    mt.add_argument(
        "--mode",
        choices=("realtime", "fast"),
        default="realtime",
        help="replay of the FLEURS talks; fast skips the Whisper-translate latency goal",
    )
    mt.add_argument("--eval-dir", type=Path, default=EVAL_LONGFORM_EN)
    mt.add_argument("--out", type=Path, default=DEFAULT_OUT)
    return parser


def _captions(args: argparse.Namespace, command: str) -> int:
    wavs = resolve_wavs(args.files, args.eval_dir) if args.files else default_wavs(args.eval_dir)
    if not wavs:
        print(f"no recordings found in {args.eval_dir}", file=sys.stderr)
        return 2
    settings = RunSettings(
        wavs=tuple(wavs),
        mode=args.mode,
        out=args.out,
        url=args.url,
        server_pid=args.server_pid,
        ready_timeout=args.ready_timeout,
        decode=DecodeSettings(model=args.model),
    )
    run = asyncio.run(run_captions(settings))
    json_path, md_path, markdown = write_report(run, settings, Goals(), command)
    print(markdown)
    print(f"wrote {json_path} and {md_path}")
    return 0


def _fanout(args: argparse.Namespace, command: str) -> int:
    (wav,) = resolve_wavs([args.file], args.eval_dir)
    settings = fanout.FanoutSettings(
        listeners=tuple(args.listeners),
        recording=wav,
        out=args.out,
        seconds=args.seconds,
        url=args.url,
        server_pid=args.server_pid,
        client_processes=args.client_processes,
        ready_timeout=args.ready_timeout,
    )
    recording = fanout.trimmed(load_recording(wav), args.seconds)
    rounds = asyncio.run(fanout.run_fanout(settings, recording))
    json_path, md_path, markdown = fanout.write_report(rounds, settings, command)
    print(markdown)
    print(f"wrote {json_path} and {md_path}")
    return 0


def _capacity(args: argparse.Namespace, command: str) -> int:
    wavs = resolve_wavs(args.files, args.eval_dir) if args.files else default_wavs(args.eval_dir)
    if not wavs:
        print(f"no recordings found in {args.eval_dir}", file=sys.stderr)
        return 2
    settings = capacity.CapacitySettings(
        max_presenters=args.max,
        wavs=tuple(wavs),
        out=args.out,
        seconds=args.seconds,
        lag_limit_s=args.lag_limit,
        url=args.url,
        server_pid=args.server_pid,
        ready_timeout=args.ready_timeout,
    )
    rounds = asyncio.run(capacity.run_capacity(settings))
    paths, markdown = capacity.write_report(rounds, settings, command)
    print(markdown)
    print("wrote " + ", ".join(str(p) for p in paths))
    return 0


def _translation(args: argparse.Namespace, command: str) -> int:
    routes = []
    for pair in args.routes:
        source, sep, target = pair.partition("-")
        if not sep or not source or not target:
            print(f"--routes: expected SRC-TGT, got {pair!r}", file=sys.stderr)
            return 2
        routes.append((source, target))
    latency = None
    if args.latency_file.lower() != "none":
        (latency,) = resolve_wavs([args.latency_file], args.eval_dir)
    settings = translation.TranslationSettings(
        out=args.out,
        sentences=args.sentences,
        text_routes=tuple(routes),
        speech_languages=tuple(args.speech),
        english_targets=tuple(args.english_targets),
        clips_per_language=args.clips,
        latency_recording=latency,
        mode=args.mode,
        url=args.url,
        server_pid=args.server_pid,
        ready_timeout=args.ready_timeout,
    )
    from bench.translation_report import write_report as write_translation_report

    run = asyncio.run(translation.run_translation(settings))
    json_path, md_path, markdown = write_translation_report(
        run, settings, translation.Goals(), command
    )
    print(markdown)
    print(f"wrote {json_path} and {md_path}")
    return 0


COMMANDS: dict[str, Callable[[argparse.Namespace, str], int]] = {
    "captions": _captions,
    "fanout": _fanout,
    "capacity": _capacity,
    "translation": _translation,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark named on the command line; print its Markdown report."""
    words = list(sys.argv[1:] if argv is None else argv)
    if words[:1] == ["peer"]:  # its own parser: python -m bench peer --help
        from bench import peer

        return peer.main(words[1:])
    if words[:1] == ["steps"]:
        from bench import steps

        return steps.main(words[1:])
    if words[:1] == ["threads"]:
        from bench import threads

        return threads.main(words[1:])
    if words[:1] == ["webrtc"]:
        from bench import webrtc

        return webrtc.main(words[1:])
    if words[:1] == ["speech"]:
        from bench import speech

        return speech.main(words[1:])
    if words[:1] == ["talk"]:
        from bench import talk

        return talk.main(words[1:])
    if words[:1] == ["load"]:
        from bench import load

        return load.main(words[1:])
    if words[:1] == ["soak"]:
        from bench import soak

        return soak.main(words[1:])
    if words[:1] == ["fanout-nodes"]:
        from bench import fanout_nodes

        return fanout_nodes.main(words[1:])
    if words[:1] == ["all"]:
        from bench import all as run_all

        return run_all.main(words[1:])
    if words[:1] == ["plots"]:
        from bench import plots

        return plots.main(words[1:])
    if words[:1] == ["summary"]:
        from bench import summary

        return summary.main(words[1:])
    args = build_parser().parse_args(words)
    command = shlex.join(["python", "-m", "bench", *(sys.argv[1:] if argv is None else argv)])
    return COMMANDS[args.command](args, command)


if __name__ == "__main__":
    sys.exit(main())
