"""Shared test support: a real server process, a real Redis, a presenter client (the recordings
the tests replay are named in ``tests/data``)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import wave
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parent.parent
REDIS_SERVER = Path(os.environ.get("INTERP_REDIS_SERVER", "/usr/bin/redis-server"))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def read_wav(path: Path) -> tuple[bytes, int]:
    """PCM bytes and sample rate of a 16-bit mono WAV."""
    with wave.open(str(path)) as handle:
        assert handle.getsampwidth() == 2 and handle.getnchannels() == 1
        return handle.readframes(handle.getnframes()), handle.getframerate()


def normalise_for_wer(text: str, lang: str = "en") -> str:
    """The bench's normalisation (docs/metrics.md, "Normalisation"): Whisper's English
    normaliser for English, its basic one for other languages."""
    from bench.textnorm import normalise

    return normalise(text, lang)


@dataclass
class ServerProcess:
    """A real ``interp serve`` in a child process on a free loopback port."""

    data_dir: Path
    env: Mapping[str, str] | None = None
    port: int = 0
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 180.0) -> ServerProcess:
        self.port = self.port or free_port()
        env = {**os.environ, "INTERP_DATA_DIR": str(self.data_dir), **(self.env or {})}
        log = (self.data_dir / "server.log").open("ab")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "app.cli", "serve", "--port", str(self.port)],
            cwd=REPO,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"server exited: {self.log_tail()}")
            try:
                ready = httpx.get(f"{self.url}/readyz", timeout=2)
                if ready.status_code == 200:
                    return self
                if ready.json().get("status") == "failed":
                    raise RuntimeError(f"server failed to load models: {self.log_tail()}")
            except httpx.HTTPError:
                pass
            time.sleep(0.25)
        raise RuntimeError(f"server not ready in {timeout}s: {self.log_tail()}")

    def log_tail(self) -> str:
        path = self.data_dir / "server.log"
        return path.read_text(errors="replace")[-3000:] if path.exists() else ""

    def stop(self, kill: bool = False) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        if kill:
            self.process.kill()
        else:
            self.process.terminate()
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)


@dataclass
class RedisServer:
    """A real ``redis-server`` on a free loopback port. Its append-only file is fsynced on
    every write, so :meth:`restart` (even after ``kill -9``) keeps every key."""

    data_dir: Path
    port: int = 0
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout: float = 15.0) -> RedisServer:
        import redis

        self.port = self.port or free_port()
        command = [
            str(REDIS_SERVER),
            *("--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.data_dir)),
            *("--save", "", "--appendonly", "yes", "--appendfsync", "always"),
            *("--logfile", str(self.data_dir / "redis.log")),
        ]
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL)
        client = redis.Redis(port=self.port, socket_connect_timeout=0.5)
        deadline = time.monotonic() + timeout
        try:
            while time.monotonic() < deadline:
                if self.process.poll() is not None:
                    raise RuntimeError(f"redis-server exited: {self.log_tail()}")
                try:
                    if client.ping():
                        return self
                except (redis.ConnectionError, redis.BusyLoadingError):
                    time.sleep(0.05)
        finally:
            client.close()
        raise RuntimeError(f"redis-server not ready in {timeout}s: {self.log_tail()}")

    def log_tail(self) -> str:
        path = self.data_dir / "redis.log"
        return path.read_text(errors="replace")[-2000:] if path.exists() else ""

    def stop(self, kill: bool = False) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        if kill:
            self.process.kill()
        else:
            self.process.terminate()
        self.process.wait(15)

    def restart(self, down_s: float = 0.0, kill: bool = True) -> None:
        """Stop (``kill -9`` by default), stay down ``down_s`` seconds, start on the same
        port with the same data."""
        self.stop(kill=kill)
        time.sleep(down_s)
        self.start()


@dataclass
class PresenterRun:
    """What a presenter client saw while streaming a recording."""

    code: str
    token: str
    events: list[dict[str, object]]
    close_code: int | None
    close_reason: str

    def finals(self, lang: str | None = None) -> list[dict[str, object]]:
        return [
            e
            for e in self.events
            if e.get("type") == "caption"
            and e.get("state") == "final"
            and (lang is None or e.get("lang") == lang)
        ]

    def final_text(self) -> str:
        return " ".join(str(e["text"]) for e in self.finals() if e.get("source"))


def create_session(base_url: str, **body: object) -> dict[str, str]:
    payload = {"title": "test", "source_language": "en", "target_languages": [], **body}
    response = httpx.post(f"{base_url}/api/sessions", json=payload, timeout=10)
    response.raise_for_status()
    data: dict[str, str] = response.json()
    return data


async def stream_recording(
    base_url: str,
    pcm: bytes,
    rate: int = 16000,
    *,
    speed: float = 4.0,
    chunk_s: float = 0.1,
    session: dict[str, str] | None = None,
    language: str = "en",
) -> PresenterRun:
    """Stream ``pcm`` through ``/ws/present`` at ``speed`` x real time, stop, and collect
    every event until the server closes the socket."""
    import asyncio
    import json

    import websockets

    session = session or create_session(base_url)
    ws_url = base_url.replace("http://", "ws://") + f"/ws/present/{session['code']}"
    events: list[dict[str, object]] = []
    async with websockets.connect(ws_url, max_size=2**22) as ws:
        start = {
            "type": "start",
            "token": session["presenter_token"],
            "sample_rate": rate,
            "encoding": "pcm_s16le",
            "language": language,
        }
        await ws.send(json.dumps(start))
        ready = json.loads(await ws.recv())
        assert ready["type"] == "ready", ready

        async def receive() -> None:
            async for message in ws:
                events.append(json.loads(message))

        receiver = asyncio.create_task(receive())
        step = int(rate * chunk_s) * 2
        loop = asyncio.get_running_loop()
        began = loop.time()
        for i, offset in enumerate(range(0, len(pcm), step)):
            await ws.send(pcm[offset : offset + step])
            delay = began + (i + 1) * chunk_s / speed - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
        await ws.send(json.dumps({"type": "stop"}))
        await asyncio.wait_for(receiver, 300)
        return PresenterRun(
            session["code"],
            session["presenter_token"],
            events,
            ws.close_code,
            ws.close_reason or "",
        )


def run_bench_against(
    server: ServerProcess, out: Path, name: str, args: Sequence[str], report: str | None = None
) -> dict[str, Any]:
    """``python -m bench NAME ARGS`` against the running ``server`` (its CPU measured by
    pid), writing into ``out``; returns the JSON report ``out/REPORT.json`` (REPORT: NAME
    unless given)."""
    import json

    from bench.__main__ import main

    assert server.process is not None
    pid = str(server.process.pid)
    code = main([name, *args, "--url", server.url, "--server-pid", pid, "--out", str(out)])
    assert code == 0
    data: dict[str, Any] = json.loads((out / f"{report or name}.json").read_text())
    return data


async def follow_socket(url: str, events: list[dict[str, Any]], stop: Any) -> None:
    """Record every text message of the listener socket ``url`` (JSON) into ``events``
    until ``stop`` (an ``asyncio.Event``) is set."""
    import asyncio
    import json

    import websockets

    async with websockets.connect(url) as ws:
        while not stop.is_set():
            try:
                events.append(json.loads(await asyncio.wait_for(ws.recv(), 0.3)))
            except TimeoutError:
                continue
