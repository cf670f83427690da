"""How Whisper's encoder and decoder times change with CTranslate2's threads on this machine.

One window of a real recording (the first 30 s of ``--file``) is encoded and then decoded at
beam 5 and greedily, each ``--repeat`` times, for every thread count of ``--threads`` and
every window length of ``--windows``; the report gives the median encode time and the median
decode time per generated token. The app's defaults (``cpu_threads`` for decodes,
``encoder_threads`` for the encoder, app/settings.py) come from this table.

``python -m bench threads [--model tiny.en] [--threads 1 2] [--windows 30 20 10]``
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench.recordings import EVAL_LONGFORM_EN, load_recording
from bench.resources import machine_info
from engine.audio import SAMPLE_RATE, decode_pcm16
from models.catalog import resolve_whisper
from models.whisper import FRAMES_PER_SECOND, FULL_WINDOW

DEFAULT_FILE = EVAL_LONGFORM_EN / "earnings22_1_4482311_3_62.wav"


def _median_seconds(call: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    times = []
    result = None
    for _ in range(repeat):
        began = time.perf_counter()
        result = call()
        times.append(time.perf_counter() - began)
    return statistics.median(times), result


def _window_cells(model: Any, prompt: list[int], window: np.ndarray, repeat: int) -> list[str]:
    """Encode time, then ms per token at beam 5 and greedily, for one window."""
    encode_s, encoded = _median_seconds(lambda: model.encode(window), repeat)
    cells = [f"{encode_s:.3f}"]
    for beam in (5, 1):

        def generate(beam: int = beam) -> Any:
            return model.model.generate(encoded, [prompt], beam_size=beam, max_length=120)

        seconds, result = _median_seconds(generate, repeat)
        tokens = max(1, len(result[0].sequences_ids[0]))
        cells.append(f"{seconds * 1000 / tokens:.1f} ({tokens} tokens)")
    return cells


def measure(
    model_spec: str, threads: int, windows_s: Sequence[float], audio: np.ndarray, repeat: int
) -> list[str]:
    """Report rows for one thread count, a row a window: encode time and ms per token at
    beam 5 and greedy (the model loaded and the audio's features computed once)."""
    from faster_whisper import WhisperModel
    from faster_whisper.tokenizer import Tokenizer

    model = WhisperModel(
        resolve_whisper(model_spec).model, device="cpu", compute_type="int8", cpu_threads=threads
    )
    multilingual = model.model.is_multilingual
    tokenizer = Tokenizer(
        model.hf_tokenizer, multilingual, task="transcribe", language="en" if multilingual else None
    )
    prompt = model.get_prompt(tokenizer, [], without_timestamps=True)
    features = model.feature_extractor(audio)
    rows = []
    for window_s in windows_s:
        frames = min(int(window_s * FRAMES_PER_SECOND), FULL_WINDOW)
        window = np.zeros((features.shape[0], frames), dtype=np.float32)
        used = min(frames, features.shape[1])
        window[:, :used] = features[:, :used]
        cells = _window_cells(model, prompt, window, repeat)
        rows.append(f"| {threads} | {window_s:g} | " + " | ".join(cells) + " |")
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench threads", description=__doc__)
    parser.add_argument("--model", default="tiny.en")
    parser.add_argument("--file", default=str(DEFAULT_FILE), help="a 16 kHz WAV")
    parser.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    parser.add_argument("--windows", nargs="+", type=float, default=[30.0, 20.0, 10.0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    recording = load_recording(Path(args.file))
    if recording.sample_rate != SAMPLE_RATE:
        raise SystemExit(f"{args.file}: {recording.sample_rate} Hz, the bench takes 16 kHz")
    audio = decode_pcm16(recording.pcm)[: 30 * SAMPLE_RATE]
    machine = machine_info()
    print(
        f"Whisper {args.model} (int8) on {machine['cpu_model']}, {machine['usable_cores']} "
        f"usable cores; first 30 s of {recording.id}, median of {args.repeat}\n\n"
        "| threads | window s | encode s | beam 5, ms a token | greedy, ms a token |\n"
        "|---|---|---|---|---|"
    )
    for threads in args.threads:
        for row in measure(args.model, threads, args.windows, audio, args.repeat):
            print(row, flush=True)
    return 0
