"""How the bench reports are written: table cells, header lines, files and figures.

One place for what every report shares, so that the same number reads the same everywhere:
a value that was not measured is an en dash (``–``); seconds shown as milliseconds are
rounded to whole ones; a goal is ``yes``, ``**no**`` or, not measured, ``–`` (or ``not
measured`` where a report says so in words). What the numbers mean: docs/metrics.md.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

MISSING = "–"
"""The cell of a value that was not measured."""
MIB = 2**20


# --- table cells ----------------------------------------------------------------------------


def fixed(value: float | None, digits: int = 2) -> str:
    """``value`` with ``digits`` decimals, or :data:`MISSING`."""
    return MISSING if value is None else f"{value:.{digits}f}"


def ms(seconds: float | None) -> str:
    """Seconds as whole milliseconds, or :data:`MISSING`."""
    return MISSING if seconds is None else f"{1000 * seconds:.0f}"


def mark(met: bool | None) -> str:
    """A goal in a table: ``yes``, ``**no**``, or :data:`MISSING` when not measured."""
    return {True: "yes", False: "**no**", None: MISSING}[met]


def verdict(met: bool | None) -> str:
    """A goal in a sentence: ``yes``, ``**no**`` or ``not measured``."""
    return {True: "yes", False: "**no**", None: "not measured"}[met]


def slashed(values: Iterable[object]) -> str:
    """``a / b / c``: a load average (1/5/15 min) or another short series."""
    return " / ".join(str(x) for x in values)


def goal_lines(goals: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """A report's "## Goals" section: each goal's value, what it had to be, and whether it
    was met (``goals``: name -> ``{"value", "goal", "met"}``)."""
    lines = ["", "## Goals", ""]
    for name, goal in goals.items():
        lines.append(
            f"- {name}: {goal['value']} (goal {goal['goal']}) — "
            f"{'met' if goal['met'] else 'NOT met'}"
        )
    return lines


def mib(size: int | None) -> float | None:
    """Bytes as MiB with one decimal, for the JSON reports (``None`` stays ``None``)."""
    return None if size is None else round(size / MIB, 1)


# --- report headers -------------------------------------------------------------------------


def utc_now() -> str:
    """The report's ``created_utc``: now, in UTC, to the second (ISO 8601)."""
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


def machine_line(machine: Mapping[str, Any]) -> str:
    """CPU, usable cores, memory and Python of ``machine`` (``resources.machine_info``)."""
    return (
        f"{machine['cpu_model']}, {machine['usable_cores']} usable cores, "
        f"{machine['memory_gib']} GiB, Python {machine['python']}"
    )


def machine_detail(machine: Mapping[str, Any]) -> str:
    """:func:`machine_line` with the logical cores, the platform and the load average at the
    end of the run."""
    return (
        f"{machine['cpu_model']}, {machine['usable_cores']} usable cores "
        f"({machine['logical_cores']} logical), {machine['memory_gib']} GiB, "
        f"{machine['platform']}, Python {machine['python']}; load average at the end "
        f"(1/5/15 min): {slashed(machine['load_average_1_5_15m'])}"
    )


# --- files ----------------------------------------------------------------------------------


def write_json(path: Path, data: Any, *, indent: int | None = 1, ensure_ascii: bool = True) -> Path:
    """Write ``data`` as JSON and a newline (UTF-8) to ``path``; return ``path``."""
    text = json.dumps(data, indent=indent, ensure_ascii=ensure_ascii)
    path.write_text(text + "\n", encoding="utf-8")
    return path


def write_report_files(
    out: Path, name: str, report: Any, markdown: str, *, ensure_ascii: bool = True
) -> tuple[Path, Path]:
    """Write ``<name>.json`` (one-space indent) and ``<name>.md`` into ``out`` (made if
    missing); return both paths."""
    out.mkdir(parents=True, exist_ok=True)
    json_path = write_json(out / f"{name}.json", report, ensure_ascii=ensure_ascii)
    md_path = out / f"{name}.md"
    md_path.write_text(markdown, encoding="utf-8")
    return json_path, md_path


def write_trace(out: Path, name: str, data: Any, *, ensure_ascii: bool = True) -> Path:
    """Write one compact JSON trace to ``out/traces/<name>.json``; return its path."""
    traces = out / "traces"
    traces.mkdir(parents=True, exist_ok=True)
    return write_json(traces / f"{name}.json", data, indent=None, ensure_ascii=ensure_ascii)


# --- figures --------------------------------------------------------------------------------


def pyplot() -> Any:
    """matplotlib's pyplot on the file-only Agg backend (benches run without a display)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(figure: Any, path: Path) -> Path:
    """Lay out ``figure``, write it to ``path`` (PNG, 110 dpi) and close it."""
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    pyplot().close(figure)
    return path
