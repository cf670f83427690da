"""``python -m bench webrtc``: caption latency and WER over WebRTC versus the WebSocket, side
by side, on the same recordings and the same server.

Each recording is replayed in real time twice, one transport after the other (never at once,
so they do not compete for the CPU): over the presenter WebSocket (:func:`bench.replay.replay`,
100 ms PCM messages) and over WebRTC (:func:`bench.webrtc_replay.present_webrtc`, 20 ms frames
Opus-encoded by aiortc, captions back on the data channel). Both results are measured by
:func:`bench.captions.measure_file` against the same timed references, so every number means
what docs/metrics.md says for the captions benchmark. Latency starts when the audio is handed
to the transport: the WebRTC figures include Opus encoding, RTP, the server's jitter buffer and
decoding.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shlex
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from bench.captions import FileResult, Overall, measure_file, overall
from bench.format import fixed, slashed, utc_now
from bench.paths import RESULTS
from bench.recordings import EVAL_LONGFORM_EN, load_recording, resolve_wavs
from bench.reference import DecodeSettings, cached_decode, timed_reference
from bench.replay import create_session, replay
from bench.report import file_json, overall_json
from bench.resources import machine_info
from bench.server import ServerHandle, ServerProcess, cpu_seconds
from bench.webrtc_replay import TAIL_SILENCE_S, present_webrtc

DEFAULT_OUT = RESULTS
DEFAULT_FILES = ("librivox_shakespeare_sonnet_001", "earnings22_1_4482311_3_62")
TRANSPORTS = ("websocket", "webrtc")


@dataclass(frozen=True, slots=True)
class TransportRun:
    transport: str
    results: tuple[FileResult, ...]

    @property
    def summary(self) -> Overall:
        return overall(self.results)


async def run(
    wavs: Sequence[Path], out: Path, url: str | None, ready_timeout: float
) -> tuple[list[TransportRun], ServerHandle, Path | None]:
    """Decode references (cached), then replay every recording over both transports."""
    recordings = [load_recording(w) for w in wavs]
    decode = DecodeSettings()
    offline = [cached_decode(r, decode, out / "cache") for r in recordings]
    references = [timed_reference(r, o) for r, o in zip(recordings, offline, strict=True)]
    server: ServerProcess | None = None
    log_path: Path | None = None
    if url is None:
        log_path = out / "server-webrtc.log"
        server = ServerProcess(log_path)
        handle = await server.start(ready_timeout)
    else:
        handle = ServerHandle(url.rstrip("/"), None)
    results: dict[str, list[FileResult]] = {t: [] for t in TRANSPORTS}
    try:
        clock = partial(cpu_seconds, handle.pid) if handle.pid is not None else None
        for rec, ref, off in zip(recordings, references, offline, strict=True):
            for transport in TRANSPORTS:
                if transport == "websocket":
                    recorded = await replay(handle.base_url, rec, "realtime", clock)
                else:
                    session = await create_session(handle.base_url, f"bench webrtc {rec.id}")
                    recorded = await present_webrtc(handle.base_url, session, rec, cpu_clock=clock)
                results[transport].append(measure_file(rec, ref, off, recorded))
                print(f"{rec.id} over {transport}: done", file=sys.stderr)
    finally:
        if server is not None:
            await server.stop()
    runs = [TransportRun(t, tuple(results[t])) for t in TRANSPORTS]
    return runs, handle, log_path


def markdown(report: dict[str, Any]) -> str:
    machine = report["machine"]
    rows = {r["transport"]: r["overall"] for r in report["transports"]}
    ws, rtc = rows["websocket"], rows["webrtc"]

    def line(name: str, key: str, sub: str | None = None, digits: int = 2) -> str:
        def pick(data: dict[str, Any]) -> float | None:
            value = data[key]
            return value[sub] if sub is not None and value is not None else value

        return f"| {name} | {fixed(pick(ws), digits)} | {fixed(pick(rtc), digits)} |"

    lines = [
        "# Captions over WebRTC versus WebSocket",
        "",
        f"- Command: `{report['command']}`",
        f"- Machine: {machine['cpu_model']}, {machine['usable_cores']} usable cores, "
        f"{machine['memory_gib']} GiB; load average at the end (1/5/15 min): "
        f"{slashed(machine['load_average_1_5_15m'])}",
        f"- Date (UTC): {report['created_utc']}",
        f"- Recordings ({len(report['recordings'])}, each replayed in real time once per "
        f"transport, one after the other): {', '.join(report['recordings'])}",
        "- WebSocket: 100 ms PCM messages at 16 kHz. WebRTC: aiortc client, 20 ms frames, "
        "Opus over RTP between host candidates on this machine's own LAN address (aiortc "
        "gathers none on 127.0.0.1), captions back on the data channel.",
        "- Latency per reference word from the end of the word in the audio (docs/metrics.md). "
        f"The WebRTC end lag includes the {TAIL_SILENCE_S} s of silence sent after the "
        "recording before `stop` (so its last packets are decoded first).",
        "- One run per transport on a shared machine: differences of a few hundredths of WER "
        "or a tenth of a second are within run-to-run noise (docs/metrics.md, "
        "'Results before the 2026-12 wave').",
        "",
        "| metric | WebSocket | WebRTC |",
        "|---|---|---|",
        line("draft latency p50 (s)", "draft_latency_s", "p50"),
        line("draft latency p95 (s)", "draft_latency_s", "p95"),
        line("final latency p50 (s)", "final_latency_s", "p50"),
        line("final latency p95 (s)", "final_latency_s", "p95"),
        line("WER of the finals", "wer", digits=3),
        line("WER, offline tiny.en beam 5 (same files)", "offline_wer", digits=3),
        line("time to first caption, median (s)", "time_to_first_caption_s", "p50"),
        line("lag at the end of the stream, median (s)", "end_lag_s", "p50"),
        line("erasure", "erasure", digits=3),
        line("server CPU s per audio s", "cpu_per_audio_s"),
        "",
        "## Per recording",
        "",
        "| recording | transport | WER | draft p50 / p95 (s) | final p50 / p95 (s) |",
        "|---|---|---|---|---|",
    ]
    for entry in report["transports"]:
        for f in entry["files"]:
            draft, final = f["draft_latency_s"], f["final_latency_s"]
            lines.append(
                f"| {f['recording']} | {entry['transport']} | {fixed(f['wer'], 3)} | "
                f"{fixed(draft['p50'])} / {fixed(draft['p95'])} | "
                f"{fixed(final['p50'])} / {fixed(final['p95'])} |"
            )
    return "\n".join(lines) + "\n"


def rewrite_markdown(out: Path = DEFAULT_OUT) -> str:
    """Regenerate ``webrtc.md`` from ``webrtc.json`` (after a change to the tables)."""
    text = markdown(json.loads((out / "webrtc.json").read_text()))
    (out / "webrtc.md").write_text(text)
    return text


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench webrtc", description=__doc__)
    parser.add_argument("--files", nargs="+", default=list(DEFAULT_FILES), metavar="FILE")
    parser.add_argument("--eval-dir", type=Path, default=EVAL_LONGFORM_EN)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--url", help="a running server (default: start one on loopback)")
    parser.add_argument("--ready-timeout", type=float, default=120.0)
    args = parser.parse_args(argv)
    wavs = resolve_wavs(args.files, args.eval_dir)
    runs, handle, log_path = asyncio.run(run(wavs, args.out, args.url, args.ready_timeout))
    report = {
        "benchmark": "webrtc",
        "command": shlex.join(["python", "-m", "bench", "webrtc", *argv]),
        "created_utc": utc_now(),
        "machine": machine_info(),
        "server": {"url": handle.base_url, "log": str(log_path) if log_path else None},
        "recordings": [w.stem for w in wavs],
        "transports": [
            {
                "transport": r.transport,
                "overall": overall_json(r.summary, len(r.results)),
                "files": [file_json(f) for f in r.results],
            }
            for r in runs
        ],
    }
    args.out.mkdir(parents=True, exist_ok=True)
    json_path, md_path = args.out / "webrtc.json", args.out / "webrtc.md"
    json_path.write_text(json.dumps(report, indent=2) + "\n")
    text = markdown(report)
    md_path.write_text(text)
    print(text)
    print(f"wrote {json_path} and {md_path}")
    return 0
