"""Which hub and session store a process uses: its own (one process), or shared through
Redis with every other process and machine (``REDIS_URL``), and how a node follows what
the others do to a session it also serves."""

from __future__ import annotations

from app.settings import Settings
from engine.delivery.hub import Hub, InMemoryHub
from engine.events import SessionState
from engine.registry import SessionRegistry
from engine.store.base import SessionStore
from engine.store.sqlite import SqliteSessionStore


def backends(settings: Settings) -> tuple[SessionStore, Hub]:
    """SQLite and the in-process hub by default; with ``redis_url``, the Redis store and
    hub every node shares (docs/architecture.md, "Several processes or machines")."""
    if settings.redis_url:
        from engine.delivery.redis import RedisHub
        from engine.store.redis import RedisSessionStore

        store = RedisSessionStore(settings.redis_url)
        return store, RedisHub(settings.redis_url, max_queue=settings.listener_queue)
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    return SqliteSessionStore(settings.database), InMemoryHub(max_queue=settings.listener_queue)


def follow_other_nodes(hub: Hub, registry: SessionRegistry) -> None:
    """With a shared hub: when listeners on other nodes join, leave or switch language,
    the sessions loaded here re-read what to translate and speak (and announce the new
    audience size); a state another node published becomes this node's state too."""
    from engine.delivery.redis import RedisHub

    if not isinstance(hub, RedisHub):
        return

    def audience(code: str) -> None:
        session = registry.loaded(code)
        if session is not None:
            session.audience_changed()

    def state(code: str, new_state: SessionState) -> None:
        session = registry.loaded(code)
        if session is not None:
            session.state = new_state

    hub.on_audience = audience
    hub.on_state = state
