"""Fan-out across server processes sharing one Redis: ``python -m bench fanout-nodes``.

Like ``python -m bench fanout`` (same listeners, client processes, presenter replay and
metrics: bench/listener.py, clients.py, deliveries.py), but with ``--nodes`` server
processes (default 2) started with ``REDIS_URL`` pointing at a local ``redis-server`` the
bench starts. The presenter streams into the first process; the listeners are split evenly
over all of them (each client process follows one server). Reported: delay p50/p95/p99
overall and per process, every final at every listener, CPU per server process and of
Redis, next to the single-process round of the same size in ``bench/results/fanout.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import redis

from bench import fanout
from bench.clients import ClientPool, default_client_processes, split_listeners
from bench.deliveries import (
    ListenerRecord,
    check_finals,
    delay_stats,
    presenter_finals,
    window_delays,
)
from bench.format import machine_line, ms, slashed, utc_now, write_report_files
from bench.listener import ClientSpec
from bench.paths import RESULTS
from bench.recordings import EVAL_LONGFORM_EN, Recording, load_recording, resolve_wavs
from bench.replay import Replay, create_session, present, trimmed
from bench.resources import CpuUse, cpu_snapshot, cpu_use, machine_info, raise_fd_limit
from bench.server import ServerHandle, ServerProcess, cpu_seconds, free_port

REDIS_SERVER = os.environ.get("INTERP_REDIS_SERVER", "/usr/bin/redis-server")


@asynccontextmanager
async def local_redis(data_dir: Path) -> AsyncIterator[tuple[str, int]]:
    """A ``redis-server`` on a free loopback port (no persistence: a bench needs none);
    yields its URL and process id."""
    port = free_port()
    command = [REDIS_SERVER, "--port", str(port), "--bind", "127.0.0.1", "--save", ""]
    command += ["--appendonly", "no", "--dir", str(data_dir)]
    process = await asyncio.create_subprocess_exec(*command, stdout=subprocess.DEVNULL)
    client = redis.Redis(port=port, socket_connect_timeout=0.5)
    try:
        for _ in range(100):
            with contextlib.suppress(redis.ConnectionError):
                if client.ping():
                    break
            await asyncio.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0", process.pid
    finally:
        client.close()
        process.terminate()
        await process.wait()


@asynccontextmanager
async def server_nodes(
    count: int, redis_url: str, out: Path, ready_timeout: float
) -> AsyncIterator[list[ServerHandle]]:
    """``count`` fresh ``app.cli serve`` processes sharing ``redis_url``."""
    servers: list[ServerProcess] = []
    with tempfile.TemporaryDirectory(prefix="bench-nodes-") as data_dir:
        env = {"INTERP_DATA_DIR": data_dir, "REDIS_URL": redis_url, "INTERP_SPEECH": "0"}
        try:
            handles = []
            for k in range(count):
                server = ServerProcess(out / f"server-fanout-nodes-{k}.log", env=env)
                servers.append(server)
                handles.append(await server.start(ready_timeout))
            yield handles
        finally:
            for server in servers:
                await server.stop()


@dataclass(frozen=True, slots=True)
class NodesRound:
    listeners: int
    nodes: int
    records: tuple[ListenerRecord, ...]
    node_of: dict[int, int]
    """Listener index -> the server it followed."""
    presenter: Replay
    window: tuple[float, float]
    join_s: float
    settled: bool
    cpu_cores: tuple[float, ...]
    """Per server process, during the replay."""
    redis_cpu_cores: float
    machine: CpuUse
    load_average_before: tuple[float, float, float]


async def run_round(
    listeners: int,
    recording: Recording,
    servers: Sequence[ServerHandle],
    redis_pid: int,
    settings: fanout.FanoutSettings,
) -> NodesRound:
    """Join the listeners across ``servers``, replay into the first, drain, close."""
    processes = max(len(servers), settings.client_processes or 0)
    processes = max(processes, default_client_processes(listeners))
    processes -= processes % len(servers)  # the same number of client processes per server
    session = await create_session(servers[0].base_url, f"bench fanout-nodes {listeners}")
    specs = [
        ClientSpec(servers[k % len(servers)].base_url, str(session["code"]), indices)
        for k, indices in enumerate(split_listeners(listeners, processes))
    ]
    node_of = {i: k % len(servers) for k, spec in enumerate(specs) for i in spec.indices}
    pids = [s.pid for s in servers if s.pid is not None]
    load_before = os.getloadavg()
    async with ClientPool(specs) as pool:
        started = time.monotonic()
        _, settled = await pool.join(settings.settle_timeout)
        join_s = time.monotonic() - started

        before = [cpu_seconds(pid) for pid in [*pids, redis_pid]]
        machine_before = cpu_snapshot(None, pool.pids)
        window_start = time.time()
        replay = await present(servers[0].base_url, session, recording)
        window_end = time.time()
        machine = cpu_use(machine_before, cpu_snapshot(None, pool.pids))
        wall = machine.wall_s
        used = [
            (cpu_seconds(pid) - b) / wall for pid, b in zip([*pids, redis_pid], before, strict=True)
        ]

        finals = frozenset(presenter_finals(replay))
        records, _ = await pool.finish(finals, settings.drain_timeout)
    return NodesRound(
        listeners=listeners,
        nodes=len(servers),
        records=tuple(records),
        node_of=node_of,
        presenter=replay,
        window=(window_start, window_end),
        join_s=join_s,
        settled=settled,
        cpu_cores=tuple(used[:-1]),
        redis_cpu_cores=used[-1],
        machine=machine,
        load_average_before=load_before,
    )


def round_json(run: NodesRound) -> dict[str, Any]:
    start, end = run.window
    expected = presenter_finals(run.presenter)
    checks = [check_finals(expected, r.finals) for r in run.records]
    per_node = {}
    for k in range(run.nodes):
        mine = [r for r in run.records if run.node_of[r.index] == k]
        per_node[k] = asdict(delay_stats(window_delays(mine, start, end)))
    return {
        "listeners": run.listeners,
        "nodes": run.nodes,
        "connected": sum(r.error is None for r in run.records),
        "settled": run.settled,
        "join_s": run.join_s,
        "delay_s": asdict(delay_stats(window_delays(run.records, start, end))),
        "delay_by_node_s": per_node,
        "finals": {
            "presenter": len(expected),
            "listeners_exact": sum(c.exact for c in checks),
            "missing_total": sum(c.missing for c in checks),
        },
        "reconnects": sum(r.reconnects for r in run.records),
        "server_cpu_cores": list(run.cpu_cores),
        "redis_cpu_cores": run.redis_cpu_cores,
        "clients_cpu_cores": run.machine.clients_total,
        "machine_busy_cores": run.machine.machine,
        "load_average_before": [round(x, 2) for x in run.load_average_before],
        "replay_wall_s": end - start,
    }


def single_process_baseline(out: Path, listeners: int) -> dict[str, Any] | None:
    """The round of ``python -m bench fanout`` with the same listener count, if recorded."""
    path = out / "fanout.json"
    if not path.exists():
        return None
    report = json.loads(path.read_text())
    rounds = [r for r in report.get("rounds", []) if r.get("listeners") == listeners]
    if not rounds:
        return None
    r = rounds[0]
    return {
        "delay_s": r["delay_s"],
        "server_cpu_cores": r["server"]["cpu_cores"],
        "listeners_exact": r["finals"]["listeners_exact"],
        "created_utc": report.get("created_utc"),
        "load_average_before": r["machine"]["load_average_before"],
    }


def report_markdown(report: dict[str, Any]) -> str:
    machine = report["machine"]
    lines = [
        "# Fan-out across server processes sharing Redis",
        "",
        f"- Command: `{report['command']}`",
        f"- Machine: {machine_line(machine)}; Redis {report['redis_version']}, every server, "
        "Redis, the listeners and the presenter on this machine (loopback)",
        f"- Date (UTC): {report['created_utc']}",
        f"- Presenter: `{Path(report['recording']).stem}` replayed in real time into server 0"
        + (f", first {report['trimmed_to_s']} s" if report["trimmed_to_s"] else ""),
        "",
        "| setup | listeners | delay p50 / p95 / p99 / max ms | all finals | server CPU cores "
        "| Redis CPU cores | clients CPU cores | load before (1/5/15 min) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in report["rounds"]:
        d = r["delay_s"]
        cpu = " + ".join(f"{c:.2f}" for c in r["server_cpu_cores"])
        lines.append(
            f"| {r['nodes']} processes + Redis | {r['listeners']} "
            f"| {ms(d['p50'])} / {ms(d['p95'])} / {ms(d['p99'])} / {ms(d['max'])} "
            f"| {r['finals']['listeners_exact']} / {r['listeners']} | {cpu} "
            f"| {r['redis_cpu_cores']:.2f} | {r['clients_cpu_cores']:.2f} "
            f"| {slashed(r['load_average_before'])} |"
        )
        base = r.get("single_process")
        if base:
            b = base["delay_s"]
            lines.append(
                f"| 1 process (fanout.json, {base['created_utc']}) | {r['listeners']} "
                f"| {ms(b['p50'])} / {ms(b['p95'])} / {ms(b['p99'])} / {ms(b['max'])} "
                f"| {base['listeners_exact']} / {r['listeners']} "
                f"| {base['server_cpu_cores']:.2f} | – | – "
                f"| {slashed(base['load_average_before'])} |"
            )
    lines += ["", "Delay per process (listeners of that process only), p50 / p99 ms:", ""]
    for r in report["rounds"]:
        for node, d in r["delay_by_node_s"].items():
            role = "presenter's process" if str(node) == "0" else "listeners only"
            lines.append(
                f"- N={r['listeners']}, server {node} ({role}): {ms(d['p50'])} / {ms(d['p99'])}"
            )
    lines += [
        "",
        "Delay = receipt wall time at the listener − the event's `ts` (stamped by the "
        "presenter's process when it numbers the event, before the Redis round trip), over "
        "every live event stamped during the replay. Server CPU: each process's CPU seconds "
        "per wall second during the replay; server 0 also runs recognition. Everything shares "
        "the machine's cores, so per-process CPU is what moving a process to its own machine "
        "would take with it.",
        "",
    ]
    return "\n".join(lines)


async def run(args: argparse.Namespace, command: str) -> dict[str, Any]:
    (wav,) = resolve_wavs([args.file], args.eval_dir)
    recording = trimmed(load_recording(wav), args.seconds)
    settings = fanout.FanoutSettings(
        listeners=tuple(args.listeners),
        recording=wav,
        out=args.out,
        seconds=args.seconds,
        client_processes=args.client_processes,
        ready_timeout=args.ready_timeout,
    )
    raise_fd_limit(max(settings.listeners) + 256)
    rounds = []
    for count in settings.listeners:
        with tempfile.TemporaryDirectory(prefix="bench-redis-") as redis_dir:
            async with local_redis(Path(redis_dir)) as (url, redis_pid):
                version = redis.Redis.from_url(url).info("server")["redis_version"]
                async with server_nodes(args.nodes, url, args.out, args.ready_timeout) as nodes:
                    result = await run_round(count, recording, nodes, redis_pid, settings)
        data = round_json(result)
        data["single_process"] = single_process_baseline(args.out, count)
        rounds.append(data)
    return {
        "benchmark": "fanout-nodes",
        "command": command,
        "created_utc": utc_now(),
        "machine": machine_info(),
        "redis_version": version,
        "recording": str(wav),
        "trimmed_to_s": args.seconds,
        "rounds": rounds,
    }


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench fanout-nodes", description=__doc__)
    parser.add_argument("--nodes", type=int, default=2, help="server processes (default 2)")
    parser.add_argument("--listeners", type=int, nargs="+", default=[1000], metavar="N")
    parser.add_argument("--file", default=fanout.DEFAULT_RECORDING)
    parser.add_argument("--seconds", type=float, help="replay only the first SECONDS")
    parser.add_argument("--client-processes", type=int)
    parser.add_argument("--eval-dir", type=Path, default=EVAL_LONGFORM_EN)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--ready-timeout", type=float, default=180.0)
    args = parser.parse_args(list(argv))
    command = shlex.join(["python", "-m", "bench", "fanout-nodes", *argv])
    report = asyncio.run(run(args, command))
    markdown = report_markdown(report)
    json_path, md_path = write_report_files(args.out, "fanout-nodes", report, markdown)
    print(markdown)
    print(f"wrote {json_path} and {md_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
