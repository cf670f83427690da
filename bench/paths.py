"""Where the evaluation data lives: ``../shared/eval`` beside the checkout, or
``$INTERP_SHARED_DIR/eval``."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("INTERP_SHARED_DIR", REPO.parent / "shared"))
EVAL = SHARED / "eval"
RESULTS = Path(__file__).resolve().parent / "results"
"""Where the benchmarks write their reports (and ``cache/``, the offline reference decodes)."""
