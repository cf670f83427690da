"""Peer comparison: ``python -m bench.peer [--files ...] [--out DIR]``.

Replays the same recordings in real time, with the same model, to our server and then to
WhisperLiveKit (faster-whisper, LocalAgreement), never both at once, and prints every caption
metric of both side by side with the ratio ours / peer (``bench.peer_run``,
``bench.peer_report``). Definitions and set-up: docs/metrics.md, "Peer comparison".
"""

from __future__ import annotations

import argparse
import asyncio
import shlex
import subprocess
import sys
from collections.abc import Sequence
from importlib.util import find_spec
from pathlib import Path

from bench.paths import RESULTS
from bench.peer_report import write_peer_report
from bench.peer_run import PeerRunSettings, run_comparison
from bench.peer_server import PEER_VENV
from bench.recordings import EVAL_LONGFORM_EN, default_wavs, resolve_wavs

DEFAULT_OUT = RESULTS


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bench.peer", description=__doc__)
    parser.add_argument(
        "--files",
        nargs="+",
        metavar="FILE",
        help="WAV paths or recording ids in --eval-dir (default: every English long-form "
        "recording except *_SILVER and the *_concat file)",
    )
    parser.add_argument("--eval-dir", type=Path, default=EVAL_LONGFORM_EN)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--model", default="tiny.en", help="model of both systems (and baseline)")
    parser.add_argument(
        "--peer-venv",
        type=Path,
        default=PEER_VENV,
        help="virtual environment with whisperlivekit installed",
    )
    parser.add_argument("--ready-timeout", type=float, default=180.0)
    parser.add_argument(
        "--end-timeout",
        type=float,
        default=300.0,
        help="seconds after a recording's audio ended that a system may take to finish it; a "
        "peer that takes longer is reported as never caught up (default: %(default)s)",
    )
    return parser


def missing_dependencies(peer_venv: Path) -> list[str]:
    """What this comparison needs and does not find: the dev extra in this environment
    (``pip install -e '.[dev]'``, as ./scripts/test does) and WhisperLiveKit in its own
    (docs/metrics.md, "Installing the peer")."""
    missing = [name for name in ("jiwer", "psutil", "sacrebleu") if find_spec(name) is None]
    python = peer_venv / "bin" / "python"
    if not python.is_file():
        missing.append(f"{python} (a virtual environment with whisperlivekit installed)")
    elif (
        subprocess.run(
            [str(python), "-c", "import whisperlivekit"], capture_output=True, check=False
        ).returncode
        != 0
    ):
        missing.append(f"whisperlivekit in {peer_venv}")
    return missing


def main(argv: Sequence[str] | None = None) -> int:
    """Run the comparison; print the Markdown report; write ``peer.json`` and ``peer.md``."""
    args = build_parser().parse_args(argv)
    wavs = resolve_wavs(args.files, args.eval_dir) if args.files else default_wavs(args.eval_dir)
    if not wavs:
        print(f"no recordings found in {args.eval_dir}", file=sys.stderr)
        return 2
    missing = missing_dependencies(args.peer_venv)
    if missing:
        print(
            "bench.peer needs: " + "; ".join(missing) + '. See docs/metrics.md, "Installing '
            'the peer".',
            file=sys.stderr,
        )
        return 2
    settings = PeerRunSettings(
        wavs=tuple(wavs),
        out=args.out,
        model=args.model,
        peer_venv=args.peer_venv,
        ready_timeout=args.ready_timeout,
        end_timeout=args.end_timeout,
    )
    command = shlex.join(["python", "-m", "bench.peer", *(sys.argv[1:] if argv is None else argv)])
    ours, peer = asyncio.run(run_comparison(settings))
    json_path, md_path, markdown = write_peer_report(ours, peer, settings, command)
    print(markdown)
    print(f"wrote {json_path} and {md_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
