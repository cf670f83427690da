"""Which hub and session store a process uses: its own (one process), or shared through
Redis with every other process and machine (``REDIS_URL``), and how a node follows what
the others do to a session it also serves."""

from __future__ import annotations

from dataclasses import dataclass

from app.settings import Settings
from engine.delivery.hub import AudienceChanged, Corrected, Hub, QuestionFollowed, TermsFollowed
from engine.delivery.memory import InMemoryHub
from engine.registry import SessionRegistry
from engine.store.base import SessionStore
from engine.store.sqlite import SqliteSessionStore


@dataclass(frozen=True, slots=True)
class Backends:
    """Where sessions are kept and how their events travel."""

    store: SessionStore
    hub: Hub


def backends(settings: Settings) -> Backends:
    """SQLite and the in-process hub by default; with ``redis_url``, the Redis store and
    hub every node shares (docs/architecture.md, "Several processes or machines")."""
    if settings.redis_url:
        from engine.delivery.redis import RedisHub
        from engine.store.redis import RedisSessionStore

        return Backends(
            RedisSessionStore(settings.redis_url),
            RedisHub(settings.redis_url, max_queue=settings.listener_queue),
        )
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    return Backends(
        SqliteSessionStore(settings.database), InMemoryHub(max_queue=settings.listener_queue)
    )


async def follow_other_nodes(hub: Hub, registry: SessionRegistry) -> None:
    """Run for the life of the process: when listeners on other nodes join, leave or switch
    language, the sessions held here re-read what to translate and speak (and announce the
    new audience size); a state another node published becomes this node's state too, and
    an ended session has the streams open here finalised, then leaves memory after the
    grace period; a term list another node set applies here too, and a correction another
    node made reaches the sentences this node has not translated yet (that node re-made the
    published ones); a question from the floor another node held or decided is held or
    decided here too, so the moderator may list and decide it through any node. A hub of
    one process has no other nodes, and this returns at once."""
    async for change in hub.remote_changes():
        session = registry.loaded(change.code)
        if session is None:
            continue
        if isinstance(change, AudienceChanged):
            session.audience_changed()
            continue
        if isinstance(change, TermsFollowed):
            session.set_terms(change.terms)
            continue
        if isinstance(change, Corrected):
            session.corrected(change.caption)
            continue
        if isinstance(change, QuestionFollowed):
            session.questions.follow(change.question)
            continue
        session.follow_state(change.state)
        if change.state == "ended":
            registry.retire(session)
