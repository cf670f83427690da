"""The fuzz report: ``fuzz.json`` and ``fuzz.md`` (bench/fuzz.py)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.format import machine_line, utc_now, write_report_files
from bench.resources import machine_info

if TYPE_CHECKING:
    from bench.fuzz import FuzzRun


def report_json(run: FuzzRun, command: str) -> dict[str, Any]:
    parts = {
        name: {
            "sent": tally.sent,
            "failures": tally.failed,
            "outcomes": dict(sorted(tally.outcomes.items())),
            "failures_listed": tally.failures,
        }
        for name, tally in run.parts.items()
    }
    return {
        "created_utc": utc_now(),
        "command": command,
        "machine": machine_info(),
        "ready_at_end": run.ready_at_end,
        "server_errors": run.server_errors,
        "sent": sum(part["sent"] for part in parts.values()),
        "failures": sum(part["failures"] for part in parts.values()),
        "parts": parts,
    }


def report_markdown(report: dict[str, Any]) -> str:
    lines = [
        "# Malformed input (`python -m bench fuzz`)",
        "",
        f"`{report['command']}`, {report['created_utc']}; {machine_line(report['machine'])}.",
        "",
        "| part | sent | answers | failures |",
        "|---|---|---|---|",
    ]
    for name, part in report["parts"].items():
        answers = ", ".join(f"{outcome} {n}" for outcome, n in part["outcomes"].items())
        lines.append(f"| {name} | {part['sent']} | {answers} | {part['failures']} |")
    ready = "yes" if report["ready_at_end"] else "**no**"
    logged = report["server_errors"]
    logged_text = "not read (a server at --url)" if logged is None else str(logged)
    lines += [
        "",
        f"Failures: {report['failures']}. Unhandled exceptions in the server's log: "
        f"{logged_text}. Server ready at the end: {ready}.",
    ]
    for name, part in report["parts"].items():
        if part["failures_listed"]:
            lines += ["", f"## Failures: {name}", ""]
            lines += [f"- {what}" for what in part["failures_listed"]]
    return "\n".join(lines) + "\n"


def write_report(run: FuzzRun, command: str, out: Path) -> tuple[list[Path], str]:
    """Write ``fuzz.json`` and ``fuzz.md`` into ``out``."""
    report = report_json(run, command)
    markdown = report_markdown(report)
    json_path, md_path = write_report_files(out, "fuzz", report, markdown)
    return [json_path, md_path], markdown
