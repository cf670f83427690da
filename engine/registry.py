"""The sessions this process knows: created here, or loaded back from the store."""

from __future__ import annotations

import time
import uuid
from collections.abc import Awaitable, Callable

from engine.delivery.hub import Hub
from engine.session import Pipeline, Session
from engine.store.base import (
    CodeTaken,
    SessionRecord,
    SessionStore,
    hash_token,
    new_code,
    new_token,
    normalise_code,
)


class TooManySessions(Exception):
    """The process holds as many live sessions as its settings allow."""


class SessionRegistry:
    def __init__(
        self, store: SessionStore, hub: Hub, pipeline: Pipeline, *, max_sessions: int
    ) -> None:
        self._store = store
        self._hub = hub
        self._pipeline = pipeline
        self._sessions: dict[str, Session] = {}
        self.max_sessions = max_sessions
        self.on_session: Callable[[Session], Awaitable[None]] | None = None
        """Called once for each session this process takes on (e.g. to add translation)."""

    def __len__(self) -> int:
        return len(self._sessions)

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(list(self._sessions.values()))

    async def create(
        self, title: str, source_language: str, target_languages: tuple[str, ...]
    ) -> tuple[Session, str]:
        """A new session and its presenter token (the only time the token is seen)."""
        active = sum(1 for s in self._sessions.values() if s.state != "ended")
        if active >= self.max_sessions:
            raise TooManySessions(f"{active} sessions open; the limit is {self.max_sessions}")
        token = new_token()
        for _attempt in range(20):
            record = SessionRecord(
                id=uuid.uuid4().hex,
                code=new_code(),
                title=title,
                source_language=source_language,
                target_languages=target_languages,
                token_hash=hash_token(token),
                state="waiting",
                created_at=time.time(),
                ended_at=None,
            )
            try:
                await self._pipeline.store_pool.run(self._store.create, record)
            except CodeTaken:
                continue
            break
        else:  # pragma: no cover - 20 collisions in a 31**6 space
            raise RuntimeError("could not allocate a session code")
        session = Session(record, self._store, self._hub, self._pipeline)
        if self.on_session is not None:
            await self.on_session(session)
        self._sessions[record.code] = session
        return session, token

    async def get(self, code: str) -> Session | None:
        """The session for a join code, loading it (and its finals) from the store if this
        process has not seen it since it started."""
        try:
            code = normalise_code(code)
        except ValueError:
            return None
        session = self._sessions.get(code)
        if session is not None:
            return session
        record = await self._pipeline.store_pool.run(self._store.get, code)
        if record is None:
            return None
        finals = await self._pipeline.store_pool.run(self._store.finals, code)
        last_seq = await self._pipeline.store_pool.run(self._store.last_seq, code)
        session = self._sessions.get(code)  # another request may have loaded it meanwhile
        if session is None:
            session = Session(
                record, self._store, self._hub, self._pipeline, last_seq=last_seq, finals=finals
            )
            if self.on_session is not None:
                await self.on_session(session)
            self._sessions.setdefault(code, session)
        return self._sessions[code]

    def loaded(self, code: str) -> Session | None:
        """The session if this process has it in memory (never touches the store)."""
        return self._sessions.get(code)

    def forget(self, code: str) -> None:
        self._sessions.pop(code, None)
        self._hub.drop(code)
