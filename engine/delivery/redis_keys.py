"""Where the Redis hub and the Redis session store keep things, and how they reconnect.

Every key of one session carries the session code as a hash tag (``interp:s:{CODE}:...``),
so one session's keys live together. Layout:

- ``...:rec``     hash: the session record (:class:`engine.store.base.SessionRecord` fields)
- ``...:finals``  sorted set: final captions, score = ``seq``, member = JSON
- ``...:events``  stream: every caption, state and error event, entry id ``<seq>-0``
- ``...:audio``   stream: spoken-translation chunks (live only; short, separate bound)
- ``...:seq``     integer: the last ``seq`` handed out (shared by every node)
- ``...:aud``     hash: each node's audience of the session (count, languages, speech)
- ``...:lt``      set: hashes of the listener tokens a private session granted
- ``...:presenter`` string: kept in the purge list for sessions of older builds; nothing
  writes it (a speaker's "already live" check is per process: docs/architecture.md)
- ``...:segs``    integer: the end of the newest block of segment numbers a node claimed
  (engine/segment_claims.py)
- ``...:spk``     hash: the panel's speakers (id -> JSON of
  :class:`engine.store.base.SpeakerRecord`)
- ``...:terms``   string: the session's term list (JSON, engine/terms.py)
- ``...:editors`` set: the hashes of the session's editor tokens
- ``...:e:<id>``  string: the ``seq`` an emitted event got (lets a retry find it; TTL)
- ``interp:sid:<id>`` string: session id -> code; ``interp:sessions`` sorted set: codes by
  their last moment (``ended_at`` or ``created_at``), for retention.
"""

from __future__ import annotations

import asyncio
import random

PREFIX = "interp"
SESSIONS_INDEX = f"{PREFIX}:sessions"
SESSION_PARTS = (
    "rec",
    "finals",
    "events",
    "audio",
    "seq",
    "aud",
    "presenter",
    "terms",
    "editors",
    "spk",
    "lt",
    "segs",
)


def session_key(code: str, part: str) -> str:
    """The key of one part of a session (``code`` already normalised)."""
    return f"{PREFIX}:s:{{{code}}}:{part}"


def id_key(session_id: str) -> str:
    return f"{PREFIX}:sid:{session_id}"


def code_of(key: bytes | str) -> str:
    """The session code inside a session key."""
    text = key.decode() if isinstance(key, bytes) else key
    return text[text.index("{") + 1 : text.index("}")]


class Backoff:
    """Reconnect delays: ``first`` seconds, doubling up to ``cap``, with +-20 % jitter so
    many nodes do not retry in lock step; :meth:`reset` after a success."""

    def __init__(self, first: float = 0.05, cap: float = 2.0) -> None:
        self.first = first
        self.cap = cap
        self._next = first

    def reset(self) -> None:
        self._next = self.first

    def next_delay(self) -> float:
        delay = self._next
        self._next = min(self.cap, self._next * 2)
        return delay * random.uniform(0.8, 1.2)

    async def sleep(self) -> None:
        await asyncio.sleep(self.next_delay())
