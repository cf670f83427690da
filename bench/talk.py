"""``python -m bench talk``: turn latency of a two-way conversation (traveller mode).

One session offering English and Spanish, as the /talk page makes it; two listener sockets
(``lang=en`` and ``lang=es``, audio on), as the phone opens. Turns alternate between English
and Spanish FLEURS clips (real recordings with human transcripts), each streamed in real time
as one presenter stream that stops when the clip ends (the speaker taps "done" as they stop).

Per turn, from the **end of speech** (the last voiced 30 ms frame of the clip, by energy, mapped
to when that audio was sent):

- *translation shown*: arrival of the turn's last final translation (the whole turn readable
  in the other language);
- *audio starts*: arrival of the first spoken-translation chunk of the turn's last segment (a
  long turn's earlier sentences may be spoken before the speaker stops: that would not be the
  answer to "when does the phone start speaking after I stop"). While the voice still speaks
  those earlier sentences, the last one waits for them, and may begin after the next turn
  has: the bench waits for it (``--late``) and counts it all the same, and the report says
  which turns the voice was already speaking when the speaker stopped.

Goals (issue 10): translation shown <= 1.5 s and audio starting <= 2.0 s after the speaker
stops (p50). ``--detect`` streams with ``"language": "auto"`` instead of the side's language.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import websockets

from bench.format import slashed, utc_now, write_report_files
from bench.metrics import distribution
from bench.recordings import EVAL_LONGFORM_EN
from bench.replay import Received
from bench.resources import machine_info
from bench.server import ServerProcess
from bench.translation_metrics import Heard, heard_captions, translated
from bench.translation_replay import create_translated_session

RESULTS = Path(__file__).resolve().parent / "results"
FLEURS = EVAL_LONGFORM_EN.parent.parent / "fleurs_st"
CHUNK_S = 0.1
GOALS = {"translation_shown_s": 1.5, "audio_start_s": 2.0}


def _clips(lang: str, count: int) -> list[Path]:
    rows = [json.loads(line) for line in (FLEURS / "manifest.jsonl").open(encoding="utf-8")]
    return [FLEURS / r["audio"] for r in rows if r["lang"] == lang][:count]


def _read(path: Path) -> tuple[bytes, int]:
    import wave

    with wave.open(str(path), "rb") as reader:
        return reader.readframes(reader.getnframes()), reader.getframerate()


def voiced_frames(
    audio: np.ndarray, rate: int = 16000, floor: float = 1e-4, relative: float = 0.1
) -> tuple[np.ndarray, int]:
    """(voiced mask of 30 ms frames, samples per frame) of a whole recording by energy: a
    frame is voiced when its RMS is over ``floor`` and over ``relative`` times the loudest
    frame's (FLEURS clips peak anywhere from -50 to -12 dBFS, so no absolute level works)."""
    frame = rate * 30 // 1000
    frames = len(audio) // frame
    if frames == 0:
        return np.zeros(0, dtype=bool), frame
    rms = np.sqrt(np.mean(audio[: frames * frame].reshape(frames, frame) ** 2, axis=1))
    return rms > max(floor, relative * float(rms.max())), frame


def speech_start(audio: np.ndarray, rate: int = 16000) -> tuple[int, float]:
    """(sample where speech starts, seconds of speech) of a whole recording."""
    voiced, frame = voiced_frames(audio, rate)
    if not voiced.any():
        return len(audio), 0.0
    return int(np.argmax(voiced)) * frame, float(voiced.sum()) * frame / rate


def speech_end(pcm: bytes, rate: int) -> float:
    """Seconds into the clip where its last voiced frame ends."""
    audio = np.frombuffer(pcm, "<i2").astype(np.float32) / 32768.0
    voiced, frame = voiced_frames(audio, rate)
    hits = np.nonzero(voiced)[0]
    return float((hits[-1] + 1) * frame / rate) if hits.size else len(audio) / rate


class Phone:
    """The two listener sockets of the /talk page, recording arrivals."""

    def __init__(self) -> None:
        self.finals: list[tuple[float, dict[str, Any]]] = []
        self.audio: list[tuple[float, dict[str, Any]]] = []
        self.spoke = asyncio.Event()
        """Set at each audio chunk's arrival."""

    async def listen(self, url: str, stop: asyncio.Event) -> None:
        async with websockets.connect(url, max_size=2**24) as ws:
            while not stop.is_set():
                try:
                    message = await asyncio.wait_for(ws.recv(), 0.25)
                except TimeoutError:
                    continue
                if isinstance(message, bytes):
                    continue
                now = time.monotonic()
                event = json.loads(message)
                if event.get("type") == "audio":
                    self.audio.append((now, event))
                    self.spoke.set()
                elif event.get("type") == "caption" and event.get("state") == "final":
                    self.finals.append((now, event))


def _covering(phone: Phone, segments: set[int], lang: str) -> list[Heard]:
    """The translation finals in ``lang`` that cover any of the source ``segments``.

    A translation final of a whole sentence covers each of its source segments
    (:attr:`bench.translation_metrics.Heard.covers`) and carries the first one's number, as
    its audio does."""
    heard = heard_captions(Received(at, event) for at, event in phone.finals)
    return [h for h in translated(heard, lang) if segments & set(h.covers)]


def _audio_of(phone: Phone, lang: str, finals: set[int]) -> list[float]:
    """Arrival times of the audio chunks in ``lang`` of the translation ``finals``."""
    return [at for at, a in phone.audio if a["lang"] == lang and a["segment"] in finals]


def turn_times(phone: Phone, segments: set[int], lang: str) -> tuple[float | None, float | None]:
    """When the turn of source ``segments`` was wholly shown in ``lang`` (the arrival of the
    last translation final covering one of them, once they are all covered) and when the
    audio of the translation covering the last of them began (``None`` when not yet)."""
    mine = _covering(phone, segments, lang)
    if not mine:
        return None, None
    covered = set().union(*(h.covers for h in mine))
    shown = max(h.arrival for h in mine) if segments <= covered else None
    audio = _audio_of(phone, lang, {h.segment for h in mine if max(segments) in h.covers})
    return shown, (min(audio) if audio else None)


def speaking_at(phone: Phone, segments: set[int], lang: str, at: float) -> bool:
    """Whether audio of the turn of source ``segments`` had begun before ``at`` (the end of
    its speech): the voice was already speaking the turn's earlier sentences, and its last
    one waits for them."""
    finals = {h.segment for h in _covering(phone, segments, lang)}
    return any(t < at for t in _audio_of(phone, lang, finals))


def _other(side: str) -> str:
    return "es" if side == "en" else "en"


async def _turn(
    base_url: str, session: dict[str, Any], wav: Path, language: str, seen: set[int]
) -> tuple[float, set[int], str | None]:
    """Stream one clip in real time, then stop; (speech end wall time, the turn's source
    segments, the language they were recognised in). The presenter socket first replays
    earlier turns' finals, whose segments are in ``seen``."""
    pcm, rate = _read(wav)
    end_offset = speech_end(pcm, rate)
    url = base_url.replace("http://", "ws://") + f"/ws/present/{session['code']}"
    step = int(rate * CHUNK_S) * 2
    segments: set[int] = set()
    langs: set[str] = set()
    async with websockets.connect(url) as ws:
        start = {
            "type": "start",
            "token": session["presenter_token"],
            "sample_rate": rate,
            "encoding": "pcm_s16le",
            "language": language,
            "finals": "fast",  # as the /talk page asks
        }
        await ws.send(json.dumps(start))
        assert json.loads(await ws.recv())["type"] == "ready"
        t0 = time.monotonic()
        for index, offset in enumerate(range(0, len(pcm), step)):
            delay = t0 + (index + 1) * CHUNK_S - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            await ws.send(pcm[offset : offset + step])
        await ws.send(json.dumps({"type": "stop"}))
        async for message in ws:
            event = json.loads(message)
            if event.get("type") != "caption" or not event.get("source"):
                continue
            segment = int(event["segment"])
            if event["state"] == "final" and segment not in seen and event["text"]:
                segments.add(segment)
                langs.add(event["lang"])
    seen.update(segments)
    return t0 + end_offset, segments, (langs.pop() if len(langs) == 1 else None)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    server = ServerProcess(args.out / "server-talk.log", env={"INTERP_SESSION_RATE": "0"})
    handle = await server.start(args.ready_timeout)
    turns: list[dict[str, Any]] = []
    try:
        session = await create_translated_session(handle.base_url, "talk bench", "en", ["es"])
        phone = Phone()
        stop = asyncio.Event()
        base = handle.base_url.replace("http://", "ws://") + f"/ws/listen/{session['code']}"
        tasks = [
            asyncio.create_task(phone.listen(f"{base}?lang={lang}&audio=1", stop))
            for lang in ("en", "es")
        ]
        await asyncio.sleep(1.0)
        english, spanish = _clips("en", args.turns), _clips("es", args.turns)
        plan = [clip for pair in zip(english, spanish, strict=False) for clip in pair]
        seen: set[int] = set()
        heard: list[tuple[Path, str, float, set[int], str | None]] = []
        for wav in plan:
            side = wav.parent.name
            spoken_at, segments, lang = await _turn(
                handle.base_url, session, wav, "auto" if args.detect else side, seen
            )
            heard.append((wav, side, spoken_at, segments, lang))
            await asyncio.sleep(args.gap)  # the partner reads and listens
        # A turn's last sentence waits while the voice still speaks the sentences before it:
        # its audio may come after the next turn has begun, and still counts.
        deadline = time.monotonic() + args.late
        while any(turn_times(phone, s, _other(side))[1] is None for _, side, _, s, _ in heard):
            phone.spoke.clear()
            try:
                await asyncio.wait_for(phone.spoke.wait(), deadline - time.monotonic())
            except TimeoutError:
                break
        for wav, side, spoken_at, segments, lang in heard:
            other = _other(side)
            shown, audio_starts = turn_times(phone, segments, other)
            turns.append(
                {
                    "clip": wav.stem,
                    "side": side,
                    "detected": lang,
                    "segments": len(segments),
                    "translation_shown_s": None if shown is None else round(shown - spoken_at, 3),
                    "audio_start_s": None
                    if audio_starts is None
                    else round(audio_starts - spoken_at, 3),
                    "speaking_at_end": speaking_at(phone, segments, other, spoken_at),
                }
            )
        stop.set()
        await asyncio.gather(*tasks)
    finally:
        await server.stop()
    summary: dict[str, Any] = {}
    for key in GOALS:
        for side in ("en", "es", "all"):
            values = [t[key] for t in turns if side in ("all", t["side"]) and t[key] is not None]
            d = distribution(values)
            summary[f"{key}:{side}"] = {
                "count": d.count,
                "p50": None if d.p50 is None else round(d.p50, 3),
                "p95": None if d.p95 is None else round(d.p95, 3),
            }
    detected_right = sum(1 for t in turns if t["detected"] == t["side"])
    return {
        "turns": turns,
        "summary": summary,
        "detection": {"right": detected_right, "turns": len(turns)},
        "detect": args.detect,
    }


def markdown(report: dict[str, Any], command: str) -> str:
    lines = [
        "# Traveller mode: turn latency",
        "",
        f"Command: `{command}` ({report['created_utc']}). From the end of speech to the "
        "turn's translation shown and to the first audio of its last segment (bench/talk.py "
        "docstring). Turns alternate English "
        "and Spanish FLEURS clips, streamed in real time; "
        + ("language detected (`auto`)." if report["detect"] else "language given per side."),
        "",
        "| turns | translation shown p50 / p95 s | audio starts p50 / p95 s |",
        "|---|---|---|",
    ]
    s = report["summary"]
    for side, label in (("en", "English -> Spanish"), ("es", "Spanish -> English"), ("all", "all")):
        t, a = s[f"translation_shown_s:{side}"], s[f"audio_start_s:{side}"]
        lines.append(
            f"| {label} (n={t['count']}) | {t['p50']} / {t['p95']} | {a['p50']} / {a['p95']} |"
        )
    d = report["detection"]
    lines += [
        "",
        f"Language {'detection' if report['detect'] else 'given'}: {d['right']} of {d['turns']} "
        "turns recognised in the speaker's language.",
        "",
        "| clip | side | detected | segments | translation shown s | audio starts s "
        "| voice already speaking the turn at its end |",
        "|---|---|---|---|---|---|---|",
    ]
    for t in report["turns"]:
        lines.append(
            f"| {t['clip']} | {t['side']} | {t['detected']} | {t['segments']} | "
            f"{t['translation_shown_s']} | {t['audio_start_s']} | "
            f"{'yes' if t['speaking_at_end'] else 'no'} |"
        )
    lines += ["", "## Goals", ""]
    for key, goal in GOALS.items():
        p50 = s[f"{key}:all"]["p50"]
        met = p50 is not None and p50 <= goal
        lines.append(f"- {key} p50 {p50} s (goal <= {goal} s): {'met' if met else 'NOT met'}")
    m = report["machine"]
    lines += [
        "",
        f"Machine: {m['cpu_model']}, {m['usable_cores']} usable cores, {m['memory_gib']} GiB; "
        f"load average at the end: {slashed(m['load_average_1_5_15m'])}.",
    ]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench talk", description=__doc__)
    parser.add_argument("--turns", type=int, default=5, help="clips per language")
    parser.add_argument("--detect", action="store_true", help='stream with "language": "auto"')
    parser.add_argument("--gap", type=float, default=3.0, help="seconds between turns")
    parser.add_argument(
        "--late",
        type=float,
        default=20.0,
        help="seconds to wait after the last turn for audio still to come",
    )
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--ready-timeout", type=float, default=180.0)
    args = parser.parse_args(argv)
    words = list(argv if argv is not None else sys.argv[2:])
    command = " ".join(["python -m bench talk", *words])
    args.out.mkdir(parents=True, exist_ok=True)
    report = asyncio.run(run(args))
    report["created_utc"] = utc_now()
    report["machine"] = machine_info()
    name = "talk-detect" if args.detect else "talk"
    text = markdown(report, command)
    write_report_files(args.out, name, report, text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
