"""Silero VAD v6 (ONNX), shipped inside the faster-whisper wheel: the default
:class:`engine.recognition.vad.VadModel`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np


class SileroModel:
    """The shared ONNX session; stateless, so every stream can use one instance."""

    def __init__(self, path: Path) -> None:
        import onnxruntime

        opts = onnxruntime.SessionOptions()
        opts.inter_op_num_threads = 1
        opts.intra_op_num_threads = 1
        opts.log_severity_level = 4
        self._session: Any = onnxruntime.InferenceSession(
            str(path), providers=["CPUExecutionProvider"], sess_options=opts
        )

    def run(
        self, windows: np.ndarray, h: np.ndarray, c: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        probs, h, c = self._session.run(None, {"input": windows, "h": h, "c": c})
        return np.asarray(probs).reshape(-1), h, c
