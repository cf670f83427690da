"""Command line: ``python -m bench captions [--url URL] [--mode realtime|fast] [--files ...]``."""

from __future__ import annotations

import argparse
import asyncio
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

from bench.captions import Goals, RunSettings, run_captions
from bench.recordings import EVAL_LONGFORM_EN, default_wavs, resolve_wavs
from bench.reference import DecodeSettings
from bench.report import write_report

DEFAULT_OUT = Path(__file__).resolve().parent / "results"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    captions = commands.add_parser(
        "captions",
        help="replay recordings to the presenter socket; report caption latency, WER, erasure",
    )
    captions.add_argument(
        "--url",
        help="base URL of a running server (default: start `python -m app.cli serve` on a free "
        "loopback port and stop it afterwards)",
    )
    captions.add_argument(
        "--server-pid",
        type=int,
        help="with --url: process id of that server, to measure its CPU time",
    )
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
    captions.add_argument("--ready-timeout", type=float, default=120.0)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark named on the command line; print its Markdown report."""
    args = build_parser().parse_args(argv)
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
    command = shlex.join(["python", "-m", "bench", *(sys.argv[1:] if argv is None else argv)])
    run = asyncio.run(run_captions(settings))
    json_path, md_path, markdown = write_report(run, settings, Goals(), command)
    print(markdown)
    print(f"wrote {json_path} and {md_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
