"""The sessions this process holds in memory: created here, or loaded back from the store.

A session is built once, however many requests ask for it at once (concurrent loads share one
build). An ended session leaves memory ``ended_grace_s`` after it ended: its stages close and
its hub log is dropped. Its transcript stays in the store, and a late listener or a download
loads it again from there (and it leaves again after the grace period).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Iterator

from engine.factory import SessionFactory
from engine.recognition.shedding import Shed
from engine.session import Session
from engine.store.base import (
    CodeTaken,
    SessionRecord,
    hash_token,
    new_code,
    new_token,
    normalise_code,
)
from engine.terms import Term

log = logging.getLogger(__name__)


class TooManySessions(Exception):
    """The process holds as many open sessions as its settings allow."""


class SessionRegistry:
    def __init__(self, factory: SessionFactory, *, max_sessions: int, ended_grace_s: float) -> None:
        self._factory = factory
        self._store = factory.ports.store
        self._store_pool = factory.ports.store_pool
        self._hub = factory.ports.hub
        self._sessions: dict[str, Session] = {}
        self._loading: dict[str, asyncio.Task[Session | None]] = {}
        self._releases: dict[str, asyncio.Task[None]] = {}
        self.max_sessions = max_sessions
        self.ended_grace_s = ended_grace_s

    def __len__(self) -> int:
        return len(self._sessions)

    def __iter__(self) -> Iterator[Session]:
        return iter(list(self._sessions.values()))

    def live_streams(self) -> int:
        """Presenter streams open in this process (a panel's speakers each count)."""
        return sum(len(session.live_streams) for session in self._sessions.values())

    def behind(self) -> bool:
        """Whether a live stream of this process is so far behind that it sheds drafts
        (engine/recognition/shedding.py): the machine carries no more streams now."""
        return any(
            stream.recognizer.shed >= Shed.DRAFTS
            for session in self._sessions.values()
            for stream in session.live_streams
        )

    async def create(
        self,
        title: str,
        source_language: str,
        target_languages: tuple[str, ...],
        terms: tuple[Term, ...] = (),
        *,
        passcode_hash: str | None = None,
    ) -> tuple[Session, str]:
        """A new session and its presenter token (the only time the token is seen), with
        the term list ``terms``; ``passcode_hash`` makes it private (engine/access.py)."""
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
                passcode_hash=passcode_hash,
            )
            try:
                await self._store_pool.run(self._store.create, record)
            except CodeTaken:
                continue
            break
        else:  # pragma: no cover - 20 collisions in a 31**6 space
            raise RuntimeError("could not allocate a session code")
        if terms:
            await self._store_pool.run(self._store.set_terms, record.code, terms)
        session = await self._factory.build(record, terms=terms)
        self._sessions[record.code] = session
        return session, token

    async def get(self, code: str) -> Session | None:
        """The session for a join code, loading it (and its finals) from the store if this
        process does not hold it. Requests that ask at once share one load."""
        try:
            code = normalise_code(code)
        except ValueError:
            return None
        session = self._sessions.get(code)
        if session is not None:
            return session
        loading = self._loading.get(code)
        if loading is None:
            loading = asyncio.create_task(self._load(code), name=f"load-{code}")
            self._loading[code] = loading
            loading.add_done_callback(lambda _: self._loading.pop(code, None))
        return await asyncio.shield(loading)

    async def _load(self, code: str) -> Session | None:
        record = await self._store_pool.run(self._store.get, code)
        if record is None:
            return None
        finals = await self._store_pool.run(self._store.finals, code)
        last_seq = await self._store_pool.run(self._store.last_seq, code)
        speakers = await self._store_pool.run(self._store.speakers, code)
        terms = await self._store_pool.run(self._store.terms, code)
        session = await self._factory.build(
            record, last_seq=last_seq, finals=finals, speakers=speakers, terms=terms
        )
        self._sessions[code] = session
        if session.state == "ended":
            self.retire(session)
        return session

    def loaded(self, code: str) -> Session | None:
        """The session if this process holds it (never touches the store)."""
        return self._sessions.get(code)

    def retire(self, session: Session) -> None:
        """The session has ended: finalise the streams still open here (it may have ended
        through another process), then release it after the grace period (once)."""
        if session.code not in self._releases:
            task = asyncio.create_task(self._release_later(session), name=f"retire-{session.code}")
            self._releases[session.code] = task

    async def _release_later(self, session: Session) -> None:
        try:
            try:
                await session.finish_streams()
            except Exception:  # released all the same; the stream's own close logs too
                log.exception("could not finalise the streams of ended session %s", session.code)
            await asyncio.sleep(self.ended_grace_s)
            await self.release(session)
        finally:
            self._releases.pop(session.code, None)

    async def release(self, session: Session) -> None:
        """Drop ``session`` from memory now: close its stages, drop its hub log (its
        subscribers are closed and reconnect to a fresh load)."""
        if self._sessions.get(session.code) is not session:
            return
        del self._sessions[session.code]
        try:
            await session.close()
        finally:
            self._hub.drop(session.code)
        log.info("session %s left memory", session.code)

    async def close(self) -> None:
        """Shutdown: stop pending releases and close every session's stages."""
        for task in list(self._releases.values()):
            task.cancel()
        for task in list(self._releases.values()):
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for session in list(self._sessions.values()):
            with contextlib.suppress(Exception):
                await session.close()
