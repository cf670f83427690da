"""``python -m bench voice-load``: do captions slow down while Kokoro speaks?

One server. A presenter replays a recording in real time into a session that offers
Spanish, with one Spanish listener, in two conditions that alternate, ``--rounds`` times:

- ``off``: the listener reads, audio off (translation runs, nothing is synthesised);
- ``on``: the listener has audio on, so Kokoro speaks every Spanish final (espeak-ng standing
  in per sentence when Kokoro falls behind: the chunks of each voice are counted).

Per condition, the captions bench's metrics (docs/metrics.md, "Live captions"): draft and
final word latency over every word of every round (p50, p95), WER. The goal: with Kokoro on,
draft and final p50 within 10% of the run without it (docs/metrics.md, "Natural voices under
load").
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shlex
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.captions import FileResult, measure_file
from bench.format import fixed, goal_lines, write_report_files
from bench.metrics import distribution
from bench.paths import RESULTS
from bench.recordings import EVAL_LONGFORM_EN, Recording, load_recording, resolve_wavs
from bench.reference import DecodeSettings, OfflineDecode, cached_decode, timed_reference
from bench.replay import present
from bench.resources import machine_info
from bench.server import ServerHandle, ServerProcess
from bench.speech import ListenerLog, record_listener
from bench.translation_replay import create_translated_session

DEFAULT_FILE = "librivox_shakespeare_sonnets_001-003_concat"
GOAL_RATIO = 1.10
CONDITIONS = ("off", "on")


@dataclass(frozen=True, slots=True)
class Run:
    """One replay in one condition."""

    condition: str
    round: int
    result: FileResult
    natural_chunks: int
    fast_chunks: int
    load_before: tuple[float, float, float]


async def replay_once(
    handle: ServerHandle,
    recording: Recording,
    reference: Any,
    offline: OfflineDecode,
    condition: str,
    lang: str,
    number: int,
) -> Run:
    """Replay ``recording`` with one ``lang`` listener, audio on or off."""
    load = os.getloadavg()
    session = await create_translated_session(handle.base_url, "voice load", "en", [lang])
    url = handle.base_url.replace("http://", "ws://") + f"/ws/listen/{session['code']}"
    audio = 1 if condition == "on" else 0
    log = ListenerLog(lang)
    stop = asyncio.Event()
    listener = asyncio.create_task(record_listener(f"{url}?lang={lang}&audio={audio}", log, stop))
    await asyncio.sleep(1.0)
    recorded = await present(handle.base_url, session, recording, mode="realtime")
    await asyncio.sleep(6.0)  # the last sentences are still being spoken
    stop.set()
    await listener
    kinds = [str(h.get("voice", "")) for _, h, _ in log.chunks]
    return Run(
        condition=condition,
        round=number,
        result=measure_file(recording, reference, offline, recorded),
        natural_chunks=kinds.count("natural"),
        fast_chunks=kinds.count("fast"),
        load_before=load,
    )


async def run_all(wav: Path, lang: str, rounds: int, out: Path, ready_timeout: float) -> list[Run]:
    recording = load_recording(wav)
    offline = cached_decode(recording, DecodeSettings(), out / "cache")
    reference = timed_reference(recording, offline)
    server = ServerProcess(out / "server-voice-load.log", env={"INTERP_SESSION_RATE": "0"})
    handle = await server.start(ready_timeout)
    runs: list[Run] = []
    try:
        for number in range(rounds):
            for condition in CONDITIONS if number % 2 == 0 else CONDITIONS[::-1]:
                runs.append(
                    await replay_once(
                        handle, recording, reference, offline, condition, lang, number
                    )
                )
    finally:
        await server.stop()
    return runs


def summary(runs: Sequence[Run]) -> dict[str, Any]:
    """Per condition: latency over every word of every round, and chunks by voice."""
    out: dict[str, Any] = {}
    for condition in CONDITIONS:
        mine = [r for r in runs if r.condition == condition]
        draft = distribution(v for r in mine for v in r.result.latencies.shown)
        final = distribution(v for r in mine for v in r.result.latencies.final)
        out[condition] = {
            "rounds": len(mine),
            "draft_latency_s": {"p50": draft.p50, "p95": draft.p95},
            "final_latency_s": {"p50": final.p50, "p95": final.p95},
            "wer": [round(r.result.errors.wer, 4) for r in mine],
            "natural_chunks": sum(r.natural_chunks for r in mine),
            "fast_chunks": sum(r.fast_chunks for r in mine),
            "load_average_before": [list(r.load_before) for r in mine],
        }
    return out


def goals(per: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kind in ("draft", "final"):
        off = per["off"][f"{kind}_latency_s"]["p50"]
        on = per["on"][f"{kind}_latency_s"]["p50"]
        ratio = None if not off or on is None else on / off
        out[f"{kind} latency p50, Kokoro on / off"] = {
            "value": None if ratio is None else round(ratio, 3),
            "goal": f"<= {GOAL_RATIO}",
            "met": ratio is not None and ratio <= GOAL_RATIO,
        }
    return out


def report_markdown(report: dict[str, Any]) -> str:
    lines = [
        "# Captions while Kokoro speaks",
        "",
        f"Command: `{report['command']}`",
        "",
        f"Recording `{report['recording']}` replayed in real time, {report['rounds']} round(s) "
        "per condition, alternating; one Spanish listener with audio off or on.",
        "",
        "| condition | rounds | draft latency p50 / p95 s | final latency p50 / p95 s | WER "
        "| chunks natural / fast | load average before each round |",
        "|---|---|---|---|---|---|---|",
    ]
    for condition, row in report["conditions"].items():
        draft, final = row["draft_latency_s"], row["final_latency_s"]
        loads = "; ".join(
            " / ".join(f"{x:.1f}" for x in load) for load in row["load_average_before"]
        )
        lines.append(
            f"| {condition} | {row['rounds']} | {fixed(draft['p50'])} / {fixed(draft['p95'])} | "
            f"{fixed(final['p50'])} / {fixed(final['p95'])} | {row['wer']} | "
            f"{row['natural_chunks']} / {row['fast_chunks']} | {loads} |"
        )
    lines += goal_lines(report["goals"])
    m = report["machine"]
    lines += [
        "",
        f"Machine: {m['cpu_model']}, {m['usable_cores']} usable cores, {m['memory_gib']} GiB; "
        f"load average at the end {m['load_average_1_5_15m']}.",
        "",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench voice-load", description=__doc__)
    parser.add_argument("--file", default=DEFAULT_FILE)
    parser.add_argument("--lang", default="es", help="the listener's language (a Kokoro voice)")
    parser.add_argument("--rounds", type=int, default=2, help="replays per condition")
    parser.add_argument("--eval-dir", type=Path, default=EVAL_LONGFORM_EN)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--ready-timeout", type=float, default=240.0)
    args = parser.parse_args(argv)
    (wav,) = resolve_wavs([args.file], args.eval_dir)
    runs = asyncio.run(run_all(wav, args.lang, args.rounds, args.out, args.ready_timeout))
    per = summary(runs)
    report = {
        "command": shlex.join(["python", "-m", "bench", "voice-load", *argv]),
        "recording": wav.stem,
        "lang": args.lang,
        "rounds": args.rounds,
        "conditions": per,
        "goals": goals(per),
        "machine": machine_info(),
    }
    markdown = report_markdown(report)
    json_path, md_path = write_report_files(args.out, "voice-load", report, markdown)
    print(markdown)
    print(f"wrote {json_path} and {md_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
