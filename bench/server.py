"""The server under test: started as a subprocess on a free loopback port, or an existing URL."""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import socket
import sys
import tempfile
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import psutil

REPO_ROOT = Path(__file__).resolve().parent.parent
READY_POLL_INTERVAL_S = 0.5


class ServerError(RuntimeError):
    """The server did not start, did not become ready, or exited."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def venv_python() -> str:
    """The project's virtual-environment interpreter if there is one, else this one."""
    candidate = REPO_ROOT / ".venv" / "bin" / "python"
    return str(candidate) if candidate.exists() else sys.executable


@dataclass(frozen=True, slots=True)
class ServerHandle:
    """Where the server listens and, when known, its process id (for CPU accounting)."""

    base_url: str
    pid: int | None


async def wait_ready(base_url: str, process: asyncio.subprocess.Process | None) -> None:
    """Return once ``GET /readyz`` answers 200 (the caller bounds the wait).

    The server is another process and offers no readiness push, so this polls.
    """
    async with httpx.AsyncClient(base_url=base_url, timeout=5.0) as client:
        while True:
            if process is not None and process.returncode is not None:
                raise ServerError(f"server exited with status {process.returncode} while starting")
            try:
                response = await client.get("/readyz")
                if response.status_code == 200:
                    return
            except httpx.TransportError:
                pass  # not listening yet
            await asyncio.sleep(READY_POLL_INTERVAL_S)


class ServerProcess:
    """``python -m app.cli serve`` on a free loopback port, logging to ``log_path``."""

    def __init__(
        self, log_path: Path, python: str | None = None, env: Mapping[str, str] | None = None
    ) -> None:
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.log_path = log_path
        self._python = python or venv_python()
        self._env = {**os.environ, **(env or {})}
        self._process: asyncio.subprocess.Process | None = None

    @property
    def command(self) -> list[str]:
        host = ["--host", "127.0.0.1", "--port", str(self.port)]
        return [self._python, "-m", "app.cli", "serve", *host]

    async def start(self, ready_timeout: float) -> ServerHandle:
        """Start the server and wait until it is ready (at most ``ready_timeout`` seconds)."""
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("wb") as log:
            self._process = await asyncio.create_subprocess_exec(
                *self.command,
                cwd=REPO_ROOT,
                env=self._env,
                stdout=log,
                stderr=asyncio.subprocess.STDOUT,
            )
        try:
            async with asyncio.timeout(ready_timeout):
                await wait_ready(self.base_url, self._process)
        except (ServerError, TimeoutError) as error:
            await self.stop()
            reason = str(error) or f"/readyz not 200 after {ready_timeout:.0f} s"
            raise ServerError(f"{reason}; see {self.log_path}:\n{self.log_tail()}") from error
        return ServerHandle(self.base_url, self._process.pid)

    def log_tail(self, lines: int = 30) -> str:
        """The last ``lines`` lines the server logged."""
        if not self.log_path.exists():
            return ""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    async def stop(self, grace: float = 15.0) -> None:
        """Interrupt the server (graceful shutdown), kill it after ``grace`` seconds."""
        process, self._process = self._process, None
        if process is None or process.returncode is not None:
            return
        process.send_signal(signal.SIGINT)
        try:
            async with asyncio.timeout(grace):
                await process.wait()
        except TimeoutError:
            process.kill()
            await process.wait()


def cpu_seconds(pid: int) -> float:
    """User plus system CPU seconds used so far by process ``pid`` (all its threads) and its
    waited-for children."""
    times = psutil.Process(pid).cpu_times()
    return float(times.user + times.system + times.children_user + times.children_system)


@asynccontextmanager
async def server_under_test(
    url: str | None,
    server_pid: int | None,
    log_path: Path,
    ready_timeout: float,
    env: Mapping[str, str] | None = None,
) -> AsyncIterator[ServerHandle]:
    """The server at ``url``, or a fresh ``app.cli serve`` with an empty data directory and
    ``env`` added to its environment (``env`` does not reach a server at ``url``)."""
    if url is not None:
        yield ServerHandle(url.rstrip("/"), server_pid)
        return
    with tempfile.TemporaryDirectory(prefix="bench-server-data-") as data_dir:
        server = ServerProcess(log_path, env={**(env or {}), "INTERP_DATA_DIR": data_dir})
        handle = await server.start(ready_timeout)
        try:
            yield handle
        finally:
            await server.stop()


def server_arguments(
    parser: argparse.ArgumentParser,
    url_help: str = "base URL of a running server (default: start `python -m app.cli serve` "
    "on a free loopback port and stop it afterwards)",
    pid_help: str = "with --url: process id of that server, to measure its CPU time",
    ready_timeout: float = 120.0,
) -> None:
    """Add ``--url``, ``--server-pid`` and ``--ready-timeout`` to a bench's parser."""
    parser.add_argument("--url", help=url_help)
    parser.add_argument("--server-pid", type=int, help=pid_help)
    parser.add_argument("--ready-timeout", type=float, default=ready_timeout)
