"""What the kernel held in the load bench's sockets when its replays ended (``ss -tnmi``), and
that in words for the report (bench/load.py; docs/metrics.md, "Load")."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

_SS_ROW = re.compile(r"^(?:[A-Z][A-Z-]*\s+)?(\d+)\s+(\d+)\s+\S+:(\d+)\s+\S+:(\d+)")
_SS_MEM = re.compile(r"skmem:\(r\d+,rb(\d+),t\d+,tb(\d+)")
_SS_RECEIVED = re.compile(r"\bbytes_received:(\d+)")


@dataclass(frozen=True, slots=True)
class SocketRow:
    """One TCP socket as ``ss -tnm`` shows it."""

    local_port: int
    peer_port: int
    recv_q: int
    """Bytes received by the kernel, not yet read by the process."""
    send_q: int
    """Bytes written by the process, not yet acknowledged by the peer."""
    rcvbuf: int
    sndbuf: int
    bytes_received: int = 0
    """Bytes the kernel received on this socket so far (read or not)."""


def parse_ss(text: str) -> list[SocketRow]:
    """The established sockets of ``ss -tnmi`` output (a row, then its ``skmem`` and
    ``tcp_info`` line)."""
    rows: list[SocketRow] = []
    pending: tuple[int, int, int, int] | None = None
    for line in text.splitlines():
        if (row := _SS_ROW.match(line)) is not None:
            recv_q, send_q, local, peer = (int(g) for g in row.groups())
            pending = (local, peer, recv_q, send_q)
        elif pending is not None and (mem := _SS_MEM.search(line)) is not None:
            received = _SS_RECEIVED.search(line)
            rows.append(
                SocketRow(
                    *pending,
                    rcvbuf=int(mem[1]),
                    sndbuf=int(mem[2]),
                    bytes_received=int(received[1]) if received else 0,
                )
            )
            pending = None
    return rows


def socket_snapshot(port: int) -> list[SocketRow] | None:
    """Every established loopback TCP socket to or from ``port`` (``None`` without ``ss``)."""
    try:
        done = subprocess.run(
            ["ss", "-tnmi", "state", "established", f"( sport = :{port} or dport = :{port} )"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return parse_ss(done.stdout)


def buffers_json(rows: Sequence[SocketRow] | None, port: int, connected_s: float) -> dict[str, Any]:
    """What the kernel held for the listeners when the replays ended: server-side sockets
    with data their listener had not acknowledged (the stalled ones: a healthy listener's
    queue is empty by then), listener-side sockets with data not read, and how fast bytes
    reach a listener (the most any listener socket received over ``connected_s``, the time
    since the listeners began connecting)."""
    if rows is None:
        return {"available": False}
    server = [r for r in rows if r.local_port == port]
    clients = [r for r in rows if r.peer_port == port]
    unsent = sorted((r.send_q for r in server if r.send_q > 0), reverse=True)
    unread = sorted((r.recv_q for r in clients if r.recv_q > 0), reverse=True)
    received = max((r.bytes_received for r in clients), default=0)
    sndbuf = max((r.sndbuf for r in server), default=0)
    rcvbuf = max((r.rcvbuf for r in clients), default=0)
    rate = received / connected_s if connected_s > 0 else 0.0
    return {
        "available": True,
        "server_sockets": len(server),
        "server_sockets_with_unsent_bytes": len(unsent),
        "unsent_bytes_max": max(unsent, default=0),
        "unsent_bytes_total": sum(unsent),
        "server_sndbuf_bytes_max": sndbuf,
        "listener_sockets_with_unread_bytes": len(unread),
        "unread_bytes_max": max(unread, default=0),
        "listener_rcvbuf_bytes_max": rcvbuf,
        "listener_bytes_received_max": received,
        "listener_bytes_per_second": rate,
        "seconds_until_buffers_full_estimate": (sndbuf + rcvbuf) / rate if rate > 0 else None,
    }


def buffers_line(buffers: dict[str, Any] | None) -> str:
    """The kernel socket buffers at the end of the replays, in words."""
    if not buffers or not buffers.get("available"):
        return "- Socket buffers: not measured (no `ss`)"
    fill = buffers["seconds_until_buffers_full_estimate"]
    return (
        "- Socket buffers when the replays ended (`ss`): "
        f"{buffers['server_sockets_with_unsent_bytes']} of {buffers['server_sockets']} server "
        f"sockets held unsent bytes (max {buffers['unsent_bytes_max'] / 1000:.1f} kB, total "
        f"{buffers['unsent_bytes_total'] / 1000:.1f} kB; send buffer up to "
        f"{buffers['server_sndbuf_bytes_max'] / 1e6:.1f} MB), "
        f"{buffers['listener_sockets_with_unread_bytes']} listener sockets held unread bytes "
        f"(max {buffers['unread_bytes_max'] / 1000:.1f} kB; receive buffer up to "
        f"{buffers['listener_rcvbuf_bytes_max'] / 1000:.0f} kB). A listener received "
        f"{buffers['listener_bytes_per_second']:.0f} B/s; at that rate a stalled listener fills "
        "these buffers, so that the server's send blocks and its send timeout starts, after "
        "about " + ("–" if fill is None else f"{fill / 60:.0f} min")
    )
