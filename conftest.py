"""Fixtures shared by tests/ and e2e/."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support import REDIS_SERVER, RedisServer, ServerProcess


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """One real server (uvicorn, real models) shared by the integration tests. Presenters
    may send audio up to 8x real time here so recordings replay quickly."""
    proc = ServerProcess(
        tmp_path_factory.mktemp("server"),
        env={"INTERP_MAX_AUDIO_SPEED": "8", "INTERP_SESSION_RATE": "0"},
    ).start()
    yield proc
    proc.stop()


@pytest.fixture(scope="session")
def live_server(server: ServerProcess) -> str:
    """The base URL of the shared real server, e.g. ``http://127.0.0.1:PORT``."""
    return server.url


@pytest.fixture
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """A fresh real redis-server on a free loopback port (append-only, fsync always)."""
    if not REDIS_SERVER.exists():
        pytest.skip(f"{REDIS_SERVER} is missing: install Debian redis-server (./scripts/test does)")
    proc = RedisServer(tmp_path_factory.mktemp("redis")).start()
    yield proc
    proc.stop()
