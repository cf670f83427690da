"""The fan-out report: ``fanout.json`` (every round's metrics), ``fanout.md`` (the table) and
one per-event trace per round. Definitions: docs/metrics.md, "Fan-out"."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.deliveries import (
    Delivery,
    check_finals,
    delay_stats,
    presenter_finals,
    window_deliveries,
)
from bench.format import (
    fixed,
    machine_line,
    mib,
    ms,
    slashed,
    utc_now,
    verdict,
    write_report_files,
    write_trace,
)
from bench.metrics import distribution
from bench.resources import machine_info

if TYPE_CHECKING:
    from bench.fanout import FanoutSettings, Goals, Round


def round_json(run: Round, goals: Goals) -> dict[str, Any]:
    """One round's metrics (see docs/metrics.md, "Fan-out")."""
    start, end = run.window
    expected = presenter_finals(run.presenter)
    checks = [check_finals(expected, r.finals) for r in run.records]
    in_window = [window_deliveries(r, start, end) for r in run.records]
    delays = [d.delay for ds in in_window for d in ds]
    join_delays = [d.delay for r in run.records for d in r.deliveries if d.live and d.ts < start]
    presenter_events = [
        m
        for r in run.presenter.received
        if (m := r.message).get("type") in ("caption", "state") and start <= m["ts"] <= end
    ]
    updates = run.presenter.caption_updates()
    stats = delay_stats(delays)
    exact = sum(c.exact for c in checks)
    cpu = run.cpu
    return {
        "listeners": run.listeners,
        "client_processes": run.client_processes,
        "connected": sum(r.error is None for r in run.records),
        "connect_failures": [f"{r.index}: {r.error}" for r in run.records if r.error][:10],
        "join_s": run.join_s,
        "settled": run.settled,
        "delay_s": asdict(stats),
        "delay_by_kind_s": {
            kind: asdict(delay_stats([d.delay for ds in in_window for d in ds if d.kind == kind]))
            for kind in sorted({d.kind for ds in in_window for d in ds})
        },
        "join_delay_s": asdict(delay_stats(join_delays)),
        "events_per_listener": asdict(distribution(len(ds) for ds in in_window)),
        "presenter_events": len(presenter_events),
        "presenter_captions": {
            "draft": sum(u.state == "draft" for u in updates),
            "final": sum(u.state == "final" for u in updates),
        },
        "finals": {
            "presenter": len(expected),
            "listeners_exact": exact,
            "missing_per_listener": asdict(distribution(c.missing for c in checks)),
            "missing_total": sum(c.missing for c in checks),
            "differing_total": sum(c.differing for c in checks),
            "extra_total": sum(c.extra for c in checks),
        },
        "reconnects": sum(r.reconnects for r in run.records),
        "closes": dict(Counter(c for r in run.records for c in r.closes).most_common(10)),
        "server": {
            "cpu_cores": cpu.server,
            "rss_start_mib": mib(run.rss_start_bytes),
            "rss_peak_mib": mib(run.rss_peak_bytes),
        },
        "clients": {"cpu_cores": cpu.clients_total, "cpu_cores_per_process": list(cpu.clients)},
        "bench_cpu_cores": cpu.bench,
        "machine": {
            "busy_cores": cpu.machine,
            "other_cores": cpu.other,
            "load_average_before": [round(x, 2) for x in run.load_average_before],
            "load_average_after": [round(x, 2) for x in run.load_average_after],
        },
        "replay": {
            "recording": run.presenter.recording,
            "audio_s": run.presenter.schedule.audio_seconds,
            "wall_s": end - start,
            "end_lag_s": run.presenter.ended_at - run.presenter.schedule.send_times[-1],
        },
        "close_s": run.close_s,
        "goal_met": (
            stats.p99 is not None and stats.p99 <= goals.delay_p99_s and exact == run.listeners
        ),
    }


def report_json(rounds: Sequence[Round], settings: FanoutSettings, command: str) -> dict[str, Any]:
    """The whole report as JSON-ready data."""
    goals = settings.goals
    by_n = [round_json(r, goals) for r in rounds]
    at_goal = [r for r in by_n if r["listeners"] == goals.listeners]
    return {
        "benchmark": "fanout",
        "command": command,
        "created_utc": utc_now(),
        "machine": machine_info(),
        "server": {
            "url": settings.url,
            "started_by_bench": settings.url is None,
            "fresh_per_round": settings.url is None,
        },
        "recording": str(settings.recording),
        "trimmed_to_s": settings.seconds,
        "listener_ping_s": settings.ping_s,
        "goals": asdict(goals),
        "goal_met": at_goal[0]["goal_met"] if at_goal else None,
        "rounds": by_n,
    }


def report_markdown(report: dict[str, Any]) -> str:
    """The report's table in Markdown."""
    machine, goals = report["machine"], report["goals"]
    lines = [
        "# Fan-out benchmark: one presenter, N listeners",
        "",
        f"- Command: `{report['command']}`",
        f"- Machine: {machine_line(machine)}; server, listeners and presenter all on this "
        "machine (loopback)",
        f"- Date (UTC): {report['created_utc']}",
        f"- Presenter: `{Path(report['recording']).stem}` replayed in real time"
        + (f", first {report['trimmed_to_s']} s" if report["trimmed_to_s"] else ""),
        "- Listeners ping their socket "
        + (
            f"every {report['listener_ping_s']:g} s, as the page does"
            if report.get("listener_ping_s")
            else "never"
        ),
        f"- Goal: {goals['listeners']} listeners with p99 delay <= "
        f"{1000 * goals['delay_p99_s']:.0f} ms and every final at every listener: "
        f"{verdict(report['goal_met'])}",
        "",
        "| listeners | client procs | delay p50 / p95 / p99 / max ms | events per listener "
        "min / median | all finals | missing finals max | reconnects | server CPU cores "
        "| server RSS start / peak MiB | client CPU cores | other load cores | join s "
        "| close s | goal |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in report["rounds"]:
        d, ev, fin = r["delay_s"], r["events_per_listener"], r["finals"]
        lines.append(
            f"| {r['listeners']} | {r['client_processes']} "
            f"| {ms(d['p50'])} / {ms(d['p95'])} / {ms(d['p99'])} / {ms(d['max'])} "
            f"| {fixed(ev['min'], 0)} / {fixed(ev['p50'], 0)} "
            f"(presenter {r['presenter_events']}) "
            f"| {fin['listeners_exact']} / {r['listeners']} "
            f"| {fixed(fin['missing_per_listener']['max'], 0)} | {r['reconnects']} "
            f"| {fixed(r['server']['cpu_cores'])} "
            f"| {fixed(r['server']['rss_start_mib'], 0)} "
            f"/ {fixed(r['server']['rss_peak_mib'], 0)} "
            f"| {fixed(r['clients']['cpu_cores'])} | {fixed(r['machine']['other_cores'])} "
            f"| {fixed(r['join_s'], 1)} | {fixed(r['close_s'], 1)} "
            f"| {'yes' if r['goal_met'] else '**no**'} |"
        )
    lines += [
        "",
        "Delay = receipt wall time at the listener − the event's `ts`, over every live event "
        "stamped during the replay at every listener. CPU in cores = CPU seconds per wall "
        "second during the replay (this machine has "
        f'{machine["usable_cores"]}); "other load" is busy CPU not used by the server, the '
        "listeners or the bench (other work on the machine). Load average (1/5/15 min) "
        "before each round: "
        + "; ".join(
            f"N={r['listeners']}: {slashed(r['machine']['load_average_before'])}"
            for r in report["rounds"]
        )
        + ".",
        "",
    ]
    return "\n".join(lines)


def event_trace(run: Round) -> list[dict[str, Any]]:
    """Per event stamped during the replay: its seq, kind, ``ts`` (seconds since the replay
    began), how many listeners got it live, and their delay statistics."""
    start, end = run.window
    by_seq: dict[int, list[Delivery]] = {}
    for record in run.records:
        for delivery in window_deliveries(record, start, end):
            by_seq.setdefault(delivery.seq, []).append(delivery)
    trace = []
    for seq in sorted(by_seq):
        deliveries = by_seq[seq]
        stats = delay_stats([d.delay for d in deliveries])
        trace.append(
            {
                "seq": seq,
                "kind": deliveries[0].kind,
                "at_s": round(deliveries[0].ts - start, 3),
                "listeners": len(deliveries),
                "delay_s": {k: v if v is None else round(v, 4) for k, v in asdict(stats).items()},
            }
        )
    return trace


def write_report(
    rounds: Sequence[Round], settings: FanoutSettings, command: str
) -> tuple[Path, Path, str]:
    """Write ``fanout.json`` and ``fanout.md`` into ``settings.out``, and one per-event
    trace per round into ``traces/fanout-<N>.json``."""
    report = report_json(rounds, settings, command)
    markdown = report_markdown(report)
    json_path, md_path = write_report_files(settings.out, "fanout", report, markdown)
    for run in rounds:
        write_trace(settings.out, f"fanout-{run.listeners}", event_trace(run))
    return json_path, md_path, markdown
