"""A person in the loop: editor tokens, the term list, and corrections of final captions.

The same API for every caller (app/api.py; other nodes' changes through app/nodes.py):

- :meth:`Editing.add_editor` (presenter token): a new editor token. Editor tokens are secrets
  like the presenter's: only their hash is stored (engine/store/base.py ``hash_token``).
- :meth:`Editing.revoke_editors` (presenter token): every editor token of the session stops
  working at once, on every node (each check reads the store), for a link that went astray.
  Editors the presenter still trusts get new links. An editor's open listener socket of a
  private session follows to its end; its next connection is refused.
- :meth:`Editing.set_terms` (presenter or editor token): the term list is stored, applied
  to the session's stages (recognition hints, fixed translations) and published as a
  :class:`engine.events.TermsChanged` event, which every node that holds the session applies.
- :meth:`Editing.correct` (presenter or editor token): a source final's newest text. It is
  published as a new final of the same segment with the next ``rev``, and every caption
  language's translation of its sentence is made again (engine/translation/stage.py).
  Corrections are numbered one at a time in a process (a store read and a publish; the
  translations are made afterwards, in the lanes), so two editors fixing the same line get
  ``rev`` 1 and 2 and the last write wins (across processes, the later ``seq`` of equal
  revisions: engine/revisions.py).

Refusals are :class:`engine.refusals.Refused` with a typed reason (app/errors.py maps them).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

from engine.delivery.hub import Hub
from engine.events import Caption, TermsChanged
from engine.presenting import check_credentials
from engine.refusals import Refusal, Refused
from engine.revisions import RevisionBook
from engine.session import Session
from engine.store.base import SessionStore, hash_token, new_token, verify_token
from engine.terms import Term
from engine.workers import WorkerPool

MAX_CORRECTION_CHARS = 2000


class Editing:
    """Editors, terms and corrections of this process's sessions (module docstring)."""

    def __init__(self, store: SessionStore, store_pool: WorkerPool, hub: Hub) -> None:
        self._store = store
        self._pool = store_pool
        self._hub = hub
        self._numbering = asyncio.Lock()

    async def check(self, session: Session, token: str | None) -> None:
        """Raise :class:`Refused` unless ``token`` is the session's presenter token or one
        of its editor tokens."""
        if not token:
            raise Refused(Refusal.NO_CREDENTIALS, "presenter or editor token required")
        if verify_token(session.record, token):
            return
        if not await self._pool.run(self._store.is_editor, session.code, hash_token(token)):
            raise Refused(
                Refusal.BAD_CREDENTIALS,
                "not a presenter or editor link of this session (or the link was revoked)",
            )

    async def add_editor(self, session: Session, token: str | None) -> str:
        """A new editor token for the session (presenter token only); seen only now."""
        check_credentials(session, token)
        editor = new_token()
        await self._pool.run(self._store.add_editor, session.code, hash_token(editor), time.time())
        return editor

    async def revoke_editors(self, session: Session, token: str | None) -> int:
        """Forget every editor token of the session (presenter token only); how many."""
        check_credentials(session, token)
        return await self._pool.run(self._store.remove_editors, session.code)

    async def set_terms(
        self, session: Session, token: str | None, terms: Sequence[Term]
    ) -> TermsChanged:
        """Replace the session's term list; returns the published event."""
        await self.check(session, token)
        terms = tuple(terms)
        await self._pool.run(self._store.set_terms, session.code, terms)
        session.set_terms(terms)
        event = await session.publish(TermsChanged(terms))
        assert isinstance(event, TermsChanged)
        return event

    async def correct(
        self, session: Session, token: str | None, segment: int, text: str
    ) -> Caption:
        """Replace the text of source final ``segment``; returns the published correction
        (or the line as it was, when ``text`` is what it already says)."""
        await self.check(session, token)
        text = " ".join(text.split())
        if len(text) > MAX_CORRECTION_CHARS:
            raise Refused(
                Refusal.BAD_EDIT, f"a line holds at most {MAX_CORRECTION_CHARS} characters"
            )
        async with self._numbering:
            finals = await self._pool.run(self._store.finals, session.code)
            book = RevisionBook(finals)
            original = book.source(segment)
            if original is None:
                raise Refused(Refusal.UNKNOWN_SEGMENT, f"segment {segment} has no final caption")
            if original.text == text:
                return original
            published = await session.publish(original.revised(text))
            assert isinstance(published, Caption)
            session.corrected(published, book.remakes(published))
            return published
