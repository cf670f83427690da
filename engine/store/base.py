"""Persistence of sessions and their final captions.

A session's live log (drafts, state changes, replay for listeners) belongs to the hub; this
store keeps what must outlive the process: who may present a session, its state, and every
final caption, so transcripts can be exported during and after the session.

:class:`engine.store.sqlite.SqliteSessionStore` is the one-machine default and
:class:`engine.store.redis.RedisSessionStore` the one shared by several processes or machines.
Both are synchronous: callers on the event loop reach them through engine/workers.py.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from typing import Protocol, get_args

from engine.events import Caption, SessionState
from engine.terms import Term

CODE_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
CODE_LENGTH = 6
TOKEN_BYTES = 24  # 192 random bits; the protocol asks for at least 128.
SESSION_STATES: tuple[SessionState, ...] = get_args(SessionState)


@dataclass(frozen=True, slots=True)
class SessionRecord:
    """What is stored about a session. ``code`` is upper-case; times are unix seconds."""

    id: str
    code: str
    title: str
    source_language: str
    target_languages: tuple[str, ...]
    token_hash: str
    state: SessionState
    created_at: float
    ended_at: float | None = None
    passcode_hash: str | None = None
    """A private session's listener passcode, hashed (engine/access.py); ``None``: anyone
    with the code may follow the session."""

    @property
    def private(self) -> bool:
        return self.passcode_hash is not None


@dataclass(frozen=True, slots=True)
class SpeakerRecord:
    """One speaker of a panel session: who they are, what they speak, and the hash of the
    token their microphone presents with. The presenter is the first speaker of every session
    (not stored: made from the session's record, :func:`presenter_speaker`)."""

    id: str
    name: str
    language: str
    token_hash: str
    position: int


PRESENTER_ID = "presenter"


def presenter_speaker(record: SessionRecord, name: str = "Presenter") -> SpeakerRecord:
    """The presenter as the session's first speaker."""
    return SpeakerRecord(PRESENTER_ID, name, record.source_language, record.token_hash, 0)


class StoreError(Exception):
    """Base class of the errors this module raises."""


class UnknownSession(StoreError, LookupError):
    """A write named a session code that is not stored."""


class CodeTaken(StoreError):
    """Another stored session already has this code: draw a new one and retry."""


class SessionExists(StoreError):
    """A session with this id is already stored."""


class SchemaTooNew(StoreError):
    """The database was written by a newer version of this program."""


class SessionStore(Protocol):
    """Sessions and their final captions, kept across restarts.

    Codes are matched case-insensitively. Reads of an unknown code return ``None``, ``[]`` or
    ``0``; writes to an unknown code raise :class:`UnknownSession`.
    """

    def create(self, record: SessionRecord) -> None:
        """Store a new session; :class:`CodeTaken` if its code is in use."""
        ...

    def get(self, code: str) -> SessionRecord | None:
        """The session with this code (any case), or ``None``."""
        ...

    def get_by_id(self, session_id: str) -> SessionRecord | None:
        """The session with this id, or ``None``."""
        ...

    def set_state(self, code: str, state: SessionState, at: float) -> None:
        """Record that the session moved to ``state`` at unix time ``at``."""
        ...

    def append_final(self, code: str, caption: Caption) -> None:
        """Store a numbered final caption; storing the same ``seq`` again does nothing."""
        ...

    def finals(self, code: str, lang: str | None = None, since_seq: int = 0) -> list[Caption]:
        """Finals with ``seq > since_seq`` (of ``lang`` if given), ordered by ``seq``."""
        ...

    def last_seq(self, code: str) -> int:
        """The highest stored ``seq`` of the session, 0 when none."""
        ...

    def add_speaker(self, code: str, speaker: SpeakerRecord) -> None:
        """Store a speaker of the session (its ``id`` unique in the session)."""
        ...

    def speakers(self, code: str) -> list[SpeakerRecord]:
        """The session's stored speakers, by ``position`` (the presenter is not stored)."""
        ...

    def purge_ended_before(self, cutoff: float) -> int:
        """Delete sessions whose last moment is before ``cutoff``; return how many."""
        ...

    def set_terms(self, code: str, terms: tuple[Term, ...]) -> None:
        """Replace the session's term list (engine/terms.py)."""
        ...

    def terms(self, code: str) -> tuple[Term, ...]:
        """The session's term list; empty when none was given."""
        ...

    def add_editor(self, code: str, token_hash: str, at: float) -> None:
        """Remember an editor token the presenter made (its hash), at unix time ``at``."""
        ...

    def is_editor(self, code: str, token_hash: str) -> bool:
        """Whether the session has an editor token with this hash."""
        ...

    def remove_editors(self, code: str) -> int:
        """Forget every editor token of the session (their links stop working); how many
        there were."""
        ...

    def set_passcode(self, code: str, passcode_hash: str) -> None:
        """Replace a private session's passcode hash (the tokens it granted stay valid)."""
        ...

    def claim_segments(self, code: str, at_least: int, count: int) -> int:
        """Reserve ``count`` consecutive segment numbers of the session, none below
        ``at_least``, for the process that asks; the first of them. No number is reserved
        twice, whichever processes share the store (engine/segment_claims.py)."""
        ...

    def release_segments(self, code: str, claimed_end: int, next_segment: int) -> None:
        """The process that claimed numbers up to ``claimed_end`` (exclusive) is done with
        them, having used those below ``next_segment``: the next claim may start there, if
        nobody claimed after it."""
        ...

    def add_listener_token(self, code: str, token_hash: str, at: float) -> None:
        """Remember a listener token the session granted (its hash), at unix time ``at``."""
        ...

    def has_listener_token(self, code: str, token_hash: str) -> bool:
        """Whether the session granted the listener token with this hash."""
        ...

    def close(self) -> None:
        """Release the store's resources."""
        ...


def new_code() -> str:
    """A random 6-character session code without look-alike characters (no 0/O, 1/I/L)."""
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))


def normalise_code(code: str) -> str:
    """The stored form of a code typed in any case."""
    return code.strip().upper()


def new_token() -> str:
    """A new presenter, editor or listener token: 192 random bits, URL-safe base64 (32
    characters)."""
    return secrets.token_urlsafe(TOKEN_BYTES)


def hash_token(token: str) -> str:
    """The stored form of a presenter, editor or listener token: SHA-256, hex.

    A plain fast hash is enough here, unlike for passwords: the token is drawn by
    :func:`new_token` from 192 random bits, so guessing a preimage of a leaked hash means
    searching 2**191 candidates on average whatever the hash speed, and there is nothing to
    gain from a dictionary. Slow, salted hashes (scrypt, argon2) exist to stretch low-entropy
    secrets chosen by people. Storing only the hash keeps a copied database from granting
    control of its sessions.
    """
    # surrogatepass: a token taken from JSON may hold lone surrogates; hash them, never crash.
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def verify_token(record: SessionRecord, token: str) -> bool:
    """Whether ``token`` is the presenter token of ``record`` (constant-time comparison)."""
    return hmac.compare_digest(hash_token(token), record.token_hash)
