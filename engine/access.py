"""Who may follow a private session: its listener passcode and the tokens it grants.

A private session has a passcode (chosen by the presenter, typed by people). Whoever gives
it to :meth:`ListenerAccess.join` gets a *listener token*: 192 random bits, stored hashed,
that opens ``/ws/listen``, transcripts and the session's facts. The session's other tokens
open them too: the presenter's, a panel speaker's and an editor's (the people it lets speak
or fix lines follow what it says), and :meth:`ListenerAccess.grant` gives the presenter and
a panel's speakers a listener token for their console's share link and QR code (which carry
it in the URL fragment).

Rotating the passcode (:meth:`ListenerAccess.rotate`) stops new joins with the old one; the
tokens granted before stay valid, so people who already joined keep their captions, their
reconnects and their downloads. To shut everyone out, end the session.

Passcodes are short human secrets: they are stored as scrypt hashes with a random salt, and
each check runs in a worker thread (engine/workers.py). Guessing is limited at the edge (a
rate limit per client, app/api.py). Tokens are random, so a fast hash is enough for them
(engine/store/base.py, ``hash_token``).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time
from typing import TypeGuard

from engine.presenting import check_credentials, speaker_of
from engine.refusals import Refusal, Refused
from engine.session import Session
from engine.store.base import SessionStore, hash_token, new_token
from engine.workers import WorkerPool

MIN_PASSCODE, MAX_PASSCODE = 4, 128
"""Characters a passcode may have."""

SCRYPT_N, SCRYPT_R, SCRYPT_P = 2**14, 8, 1
"""scrypt's cost (about 16 MiB and tens of milliseconds a check on a small CPU)."""


def valid_passcode(passcode: object) -> TypeGuard[str]:
    """Whether ``passcode`` is a string a presenter may choose."""
    return (
        isinstance(passcode, str)
        and MIN_PASSCODE <= len(passcode.strip()) <= MAX_PASSCODE
        and passcode.isprintable()
    )


def hash_passcode(passcode: str) -> str:
    """The stored form of a passcode: ``scrypt$N$r$p$salt$hash`` (base64)."""
    salt = secrets.token_bytes(16)
    digest = _scrypt(passcode, salt, SCRYPT_N, SCRYPT_R, SCRYPT_P)
    encode = base64.urlsafe_b64encode
    return (
        f"scrypt${SCRYPT_N}${SCRYPT_R}${SCRYPT_P}${encode(salt).decode()}${encode(digest).decode()}"
    )


def verify_passcode(stored: str, passcode: str) -> bool:
    """Whether ``passcode`` is the one ``stored`` was made from (constant-time compare)."""
    try:
        scheme, n, r, p, salt, digest = stored.split("$")
        if scheme != "scrypt":
            return False
        decode = base64.urlsafe_b64decode
        candidate = _scrypt(passcode, decode(salt), int(n), int(r), int(p))
        return hmac.compare_digest(candidate, decode(digest))
    except ValueError:
        return False


def _scrypt(passcode: str, salt: bytes, n: int, r: int, p: int) -> bytes:
    secret = passcode.strip().encode("utf-8", "surrogatepass")
    return hashlib.scrypt(secret, salt=salt, n=n, r=r, p=p, maxmem=64 * 1024 * 1024, dklen=32)


class ListenerAccess:
    """Joins, tokens and passcode rotation of private sessions (rules in the module
    docstring). Every store call goes through ``store_pool``, every scrypt through
    ``hash_pool``."""

    def __init__(self, store: SessionStore, store_pool: WorkerPool, hash_pool: WorkerPool):
        self._store = store
        self._store_pool = store_pool
        self._hash_pool = hash_pool

    async def passcode_hash(self, passcode: str) -> str:
        """The stored form of a new session's passcode (hashed in the worker thread)."""
        return await self._hash_pool.run(hash_passcode, passcode)

    async def check(self, session: Session, token: str | None) -> None:
        """Nothing for a public session; for a private one, :class:`Refused` unless
        ``token`` is one of its tokens: a listener token it granted, the presenter's, a
        panel speaker's or an editor's (module docstring)."""
        if not session.record.private:
            return
        if not token:
            raise Refused(Refusal.NO_CREDENTIALS, "this session is private: join with its passcode")
        if session.speakers.with_token(token) is not None:  # the presenter's too
            return
        if await self._store_pool.run(self._stored, session.code, hash_token(token)):
            return
        if await session.speakers.find(token) is None:  # one added by another process
            raise Refused(Refusal.BAD_CREDENTIALS, "this listener token is not valid here")

    def _stored(self, code: str, token_hash: str) -> bool:
        """Whether the store holds ``token_hash`` as the session's listener or editor token
        (in the store's worker thread)."""
        return self._store.has_listener_token(code, token_hash) or self._store.is_editor(
            code, token_hash
        )

    async def join(self, session: Session, passcode: str) -> str:
        """A new listener token for whoever knows the passcode (read from the store, so a
        rotation on another node counts); :class:`Refused` ``WRONG_PASSCODE`` otherwise,
        ``NOT_PRIVATE`` for a public session (it needs no token)."""
        _check_private(session)
        record = await self._store_pool.run(self._store.get, session.code)
        stored = None if record is None else record.passcode_hash
        if stored is None or not await self._hash_pool.run(verify_passcode, stored, passcode):
            raise Refused(Refusal.WRONG_PASSCODE, "wrong passcode")
        return await self._grant(session)

    async def grant(self, session: Session, token: str | None) -> str:
        """A listener token for a console's share link and QR code (``Refused`` unless
        ``token`` is the presenter's or a panel speaker's: who may speak may invite, or the
        session is public)."""
        await speaker_of(session, token)
        _check_private(session)
        return await self._grant(session)

    async def rotate(self, session: Session, presenter_token: str | None, passcode: object) -> None:
        """Replace the passcode of a private session; tokens granted before stay valid.
        Refused in this order: the presenter's token, a private session, the passcode's form
        (so nobody without the token learns anything of the rules)."""
        check_credentials(session, presenter_token)
        _check_private(session)
        if not valid_passcode(passcode):
            raise Refused(Refusal.BAD_REQUEST, "passcode must be 4-128 printable characters")
        stored = await self._hash_pool.run(hash_passcode, passcode)
        await self._store_pool.run(self._store.set_passcode, session.code, stored)

    async def _grant(self, session: Session) -> str:
        token = new_token()
        await self._store_pool.run(
            self._store.add_listener_token, session.code, hash_token(token), time.time()
        )
        return token


def _check_private(session: Session) -> None:
    if not session.record.private:
        raise Refused(Refusal.NOT_PRIVATE, "this session is public: it needs no passcode")
