"""Fixtures of the app tests that start real servers."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import RedisServer, ServerProcess


@pytest.fixture
def nodes(redis_server: RedisServer, tmp_path: Path) -> Iterator[list[ServerProcess]]:
    """Two server processes sharing one real Redis (``REDIS_URL``), each with its own data
    directory: what several machines behind a load balancer are."""
    env = {
        "REDIS_URL": redis_server.url,
        "INTERP_MAX_AUDIO_SPEED": "8",
        "INTERP_SESSION_RATE": "0",
        "INTERP_MULTILINGUAL": "0",
        "INTERP_SPEECH": "0",
    }
    servers = []
    try:
        for name in ("a", "b"):
            (tmp_path / name).mkdir()
            servers.append(ServerProcess(tmp_path / name, env=env).start())
        yield servers
    finally:
        for server in servers:
            server.stop()
