"""What each translation route measured (``python -m bench routes --install``): the file the
server reads to choose each pair's default final route and to show its quality.

The measurements ship with the package (``models/route_quality.json``), made on the FLEURS
clips of the evaluation set (docs/metrics.md, "Translation routes"). A route that was not
measured (a user's CTranslate2 model, a pair without FLEURS clips) has no numbers and keeps
the built-in order of preference.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

from engine.translation.routes import Quality

QUALITY_FILE = Path(__file__).resolve().parent / "route_quality.json"


@functools.cache
def measured_quality(path: Path = QUALITY_FILE) -> dict[tuple[str, str, str], Quality]:
    """``(source, target, backend kind) -> Quality`` of every measured route ({} if none)."""
    if not path.is_file():
        return {}
    report = json.loads(path.read_text(encoding="utf-8"))
    where = report.get("set", "")
    return {
        (row["source"], row["target"], row["backend"]): Quality(
            bleu=float(row["bleu"]), chrf=float(row["chrf"]), clips=int(row["clips"]), set=where
        )
        for row in report.get("routes", [])
    }
