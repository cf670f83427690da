"""The load bench's report (bench/load.py): ``load.json`` (every round's metrics and the
comparison) and ``load.md`` (the tables and the verdicts)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.format import fixed, machine_line, ms, slashed, utc_now, verdict, write_report_files
from bench.load_metrics import (
    comparison,
    pair_intervals,
    pooled_latencies,
    round_json,
    round_latencies,
    worst_ratio,
)
from bench.load_sockets import buffers_line
from bench.resources import machine_info

if TYPE_CHECKING:
    from bench.load import LoadRun, LoadSettings


def report_json(run: LoadRun, settings: LoadSettings, command: str) -> dict[str, Any]:
    """The whole report as JSON-ready data."""
    goals = settings.goals
    latencies = [round_latencies(r, run.references) for r in run.rounds]
    rounds = [
        round_json(r, run.recordings, run.references, lat)
        for r, lat in zip(run.rounds, latencies, strict=True)
    ]
    pooled = {
        kind: pooled_latencies(
            [lat for r, lat in zip(run.rounds, latencies, strict=True) if r.name == kind]
        )
        for kind in ("quiet", "loaded")
    }
    rows = comparison(pooled["quiet"], pooled["loaded"])
    by_pair = {(r.pair, r.name): lat for r, lat in zip(run.rounds, latencies, strict=True)}
    pairs = sorted({pair for pair, _ in by_pair})
    intervals = pair_intervals([(by_pair[(p, "quiet")], by_pair[(p, "loaded")]) for p in pairs])
    ratios = [r["ratio"] for r in rows]
    latency_ok = all(r is not None and r <= goals.latency_ratio_max for r in ratios)
    per_pair = []
    for pair in pairs:
        quiet, loaded = (
            next(r for r in rounds if r["pair"] == pair and r["round"] == kind)
            for kind in ("quiet", "loaded")
        )
        pair_rows = comparison(quiet, loaded)
        per_pair.append({"pair": pair, "rows": pair_rows, "worst_ratio": worst_ratio(pair_rows)})
    audiences = [r["audience"] for r in rounds if r.get("audience")]
    p99s = [a["delay_s"]["p99"] for a in audiences]
    p99 = None if not p99s or None in p99s else max(p99s)
    delay_ok = p99 is not None and p99 <= goals.delay_p99_s
    healthy = sum(a["healthy"] for a in audiences)
    exact = sum(a["finals"]["healthy_exact"] for a in audiences)
    finals_ok = bool(audiences) and exact == healthy
    worst = worst_ratio(rows)
    return {
        "benchmark": "load",
        "command": command,
        "created_utc": utc_now(),
        "machine": machine_info(),
        "server": {
            "url": settings.url,
            "started_by_bench": settings.url is None,
            "fresh_per_round": settings.url is None,
        },
        "recordings": [r.id for r in run.recordings],
        "trimmed_to_s": settings.seconds,
        "presenters": settings.presenters,
        "listeners": settings.listeners,
        "stalled": settings.stalled,
        "client_nice": settings.client_nice,
        "pairs": settings.pairs,
        "limits": asdict(goals),
        "goals": {
            "presenter latency, loaded / quiet rounds pooled (worst of draft and final p50 "
            "and p95)": {
                "value": "–" if worst is None else f"{worst:.2f}",
                "goal": f"<= {goals.latency_ratio_max:g}",
                "met": latency_ok,
            },
            "p99 delay to healthy listeners (worst loaded round), ms": {
                "value": "–" if p99 is None else f"{1000 * p99:.0f}",
                "goal": f"<= {1000 * goals.delay_p99_s:.0f}",
                "met": delay_ok,
            },
            "healthy listeners with every final of their session (all loaded rounds)": {
                "value": f"{exact} / {healthy}" if audiences else "–",
                "goal": "all",
                "met": finals_ok,
            },
        },
        "goal_met": latency_ok and delay_ok and finals_ok,
        "latency_comparison": rows,
        "latency_intervals": intervals,
        "pooled": pooled,
        "latency_by_pair": per_pair,
        "rounds": rounds,
    }


def _span(span: Sequence[float] | None) -> str:
    return "–" if span is None else f"{span[0]:.2f}-{span[1]:.2f}"


def report_markdown(report: dict[str, Any]) -> str:
    """The report's tables in Markdown."""
    machine, limits = report["machine"], report["limits"]
    rounds = report["rounds"]
    lines = [
        "# Load benchmark: real-time presenters, a large audience, some of it stalled",
        "",
        f"- Command: `{report['command']}`",
        f"- Machine: {machine_line(machine)}; server, listeners and presenters all on this "
        "machine (loopback); the listener processes at nice "
        f"{report['client_nice']}, so that they take only CPU the server leaves",
        f"- Date (UTC): {report['created_utc']}",
        f"- {report['presenters']} presenters in real time, each its own session: "
        + ", ".join(f"`{r}`" for r in report["recordings"])
        + (f" (first {report['trimmed_to_s']} s)" if report["trimmed_to_s"] else "")
        + f"; loaded round: {report['listeners']} listeners spread over the sessions, "
        f"{report['stalled']} of them stalled (connect, then read nothing until the end); "
        f"{report['pairs']} pairs of rounds, quiet then loaded, each on a fresh server",
        "- Load average (1 / 5 / 15 min) before the first round: "
        + slashed(rounds[0]["machine"]["load_average_before"])
        + "; after the last: "
        + slashed(rounds[-1]["machine"]["load_average_after"]),
        "",
        "| goal | measured | target | met |",
        "|---|---|---|---|",
    ]
    for name, goal in report["goals"].items():
        lines.append(f"| {name} | {goal['value']} | {goal['goal']} | {verdict(goal['met'])} |")
    lines += [
        "",
        "## Presenter caption latency (all words of all presenters, rounds of a kind pooled)",
        "",
        "| metric | quiet s | loaded s | loaded / quiet |",
        "|---|---|---|---|",
    ]
    intervals = report["latency_intervals"]
    for row in report["latency_comparison"]:
        lines.append(
            f"| {row['metric']} | {fixed(row['quiet_s'])} | {fixed(row['loaded_s'])} "
            f"| {fixed(row['ratio'])} |"
        )
    if intervals is not None:
        lines += [
            "",
            f"With the pairs resampled ({intervals['samples']} times, seed {intervals['seed']}),"
            " the central 95% of each ratio (how much it owes to which rounds were run):",
            "",
            "| metric | 95% interval |",
            "|---|---|",
        ]
        for name, span in [*intervals["ratios"].items(), ("worst of the four", intervals["worst"])]:
            lines.append(f"| {name} | {_span(span)} |")
    lines += [
        "",
        "Pair by pair, loaded / quiet (how much one pair alone moves):",
        "",
        "| pair | draft p50 | draft p95 | final p50 | final p95 | worst |",
        "|---|---|---|---|---|---|",
    ]
    for pair in report["latency_by_pair"]:
        cells = " | ".join(fixed(r["ratio"]) for r in pair["rows"])
        lines.append(f"| {pair['pair']} | {cells} | {fixed(pair['worst_ratio'])} |")
    lines += [
        "",
        "| round | pair | listeners | lag max s | server CPU cores | server RSS start / peak MiB "
        "| listener processes CPU cores | other load cores | wall s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rounds:
        lines.append(
            f"| {r['round']} | {r['pair']} | {r['listeners']} | {fixed(r['lag_max_s'])} "
            f"| {fixed(r['server']['cpu_cores'])} | {fixed(r['server']['rss_start_mib'], 0)} / "
            f"{fixed(r['server']['rss_peak_mib'], 0)} | {fixed(r['clients_cpu_cores'])} "
            f"| {fixed(r['machine']['other_cores'])} | {fixed(r['wall_s'], 1)} |"
        )
    lines += [
        "",
        "| round | pair | recording | draft p50 / p95 s | final p50 / p95 s | lag p95 / max s "
        "| finals |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rounds:
        for p in r["per_presenter"]:
            d, f, g = p["draft_latency_s"], p["final_latency_s"], p["lag_s"]
            lines.append(
                f"| {r['round']} | {r['pair']} | {p['recording']} "
                f"| {fixed(d['p50'])} / {fixed(d['p95'])} "
                f"| {fixed(f['p50'])} / {fixed(f['p95'])} | {fixed(g['p95'])} / {fixed(g['max'])} "
                f"| {p['finals']} |"
            )
    for r in rounds:
        audience = r.get("audience")
        if not audience:
            continue
        d, fin, st = audience["delay_s"], audience["finals"], audience["stalled_outcome"]
        closes = ", ".join(f"{code}: {n}" for code, n in st["first_close_codes"].items()) or "none"
        reasons = sorted({c for row in st["per_listener"] for c in row["closes"]})
        lines += [
            "",
            f"## Audience (loaded round, pair {r['pair']})",
            "",
            f"- Healthy listeners: {audience['healthy']}; event delay p50 / p95 / p99 / max "
            f"{ms(d['p50'])} / {ms(d['p95'])} / {ms(d['p99'])} / {ms(d['max'])} ms "
            f"over {d['count']} deliveries (goal p99 <= {1000 * limits['delay_p99_s']:.0f} ms)",
            f"- Finals: {fin['healthy_exact']} / {audience['healthy']} healthy listeners hold "
            f"every final of their session (presenters' finals: {fin['presenters']}; missing "
            f"{fin['missing_total']}, differing {fin['differing_total']}, extra "
            f"{fin['extra_total']}); healthy reconnects {audience['healthy_reconnects']}",
            f"- Stalled listeners: {audience['stalled']}; closed by the server: "
            f"{st['closed_by_server']} (first close codes: {closes}"
            + (f"; reasons: {'; '.join(reasons)}" if reasons else "")
            + f"); still open at the end: {st['still_open_at_end']}; after reading again "
            f"(and reconnecting, {st['reconnects']}), {st['with_every_final_at_end']} held "
            "every final",
            buffers_line(audience["socket_buffers_at_end"]),
            "- Audience count the server announced to each presenter (before the replay; "
            "min / max during it; last): "
            + "; ".join(
                f"{c['before']}; {c['min_during']} / {c['max_during']}; {c['last']}"
                for c in audience["server_audience_count"]
            ),
        ]
    lines += [
        "",
        "Latency per reference word as in the captions bench (docs/metrics.md); lag as in the "
        "capacity bench; delay = receipt at the listener − the event's `ts`, over every live "
        "event stamped during the replays at every healthy listener. CPU in cores over the "
        "replays; other load = busy CPU of the machine not used by the server, the listener "
        "processes or the bench.",
        "",
    ]
    return "\n".join(lines)


def write_report(run: LoadRun, settings: LoadSettings, command: str) -> tuple[list[Path], str]:
    """Write ``load.json`` and ``load.md`` into ``settings.out``."""
    report = report_json(run, settings, command)
    markdown = report_markdown(report)
    json_path, md_path = write_report_files(settings.out, "load", report, markdown)
    return [json_path, md_path], markdown
