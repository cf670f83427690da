"""Sessions and their finals in Redis: the session store every node shares.

With several processes or machines (``REDIS_URL``), any node may be asked about any session:
a listener's node loads the record the presenter's node created, and a transcript download
reads finals another node wrote. This store keeps them in the same Redis as the hub's
streams (key layout in :mod:`engine.delivery.redis_keys`), so one server holds everything, and the
hub writes each final into the same sorted set in the same atomic step that numbers and
streams it (a final is durable before any node can deliver it).

Durability is Redis's: run it with ``appendonly yes`` (the tests use ``appendfsync always``;
``everysec`` may lose the last second on a power loss, not on a Redis restart).

Synchronous like :class:`engine.store.sqlite.SqliteSessionStore`: callers on the event loop go
through the ``store`` worker pool. Reconnect policy: redis-py retries each command on a
connection error or timeout up to ``retries`` times, waiting 0.1 s doubling to 2 s (about
15 s in all, enough for a Redis restart); after that the error reaches the caller (an HTTP
500, or a presenter socket closed with 1011) and the next call tries again.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Mapping
from typing import Any, cast

import redis
from redis.backoff import ExponentialBackoff
from redis.retry import Retry

from engine import terms as term_list
from engine.delivery.redis_connection import REDIS_ERRORS
from engine.delivery.redis_keys import SESSION_PARTS, SESSIONS_INDEX, id_key, session_key
from engine.events import Caption, SessionState, Speaker
from engine.store.base import (
    SESSION_STATES,
    CodeTaken,
    SessionExists,
    SessionRecord,
    SpeakerRecord,
    UnknownSession,
    normalise_code,
)

log = logging.getLogger(__name__)

# KEYS: record, id key, index. ARGV: code, created_at, then field/value pairs.
_CREATE = """
if redis.call('EXISTS', KEYS[2]) == 1 then return -1 end
if redis.call('EXISTS', KEYS[1]) == 1 then return -2 end
redis.call('HSET', KEYS[1], unpack(ARGV, 3))
redis.call('SET', KEYS[2], ARGV[1])
redis.call('ZADD', KEYS[3], ARGV[2], ARGV[1])
return 0
"""

# KEYS: record, index. ARGV: code, state, at.
_SET_STATE = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'state', ARGV[2])
if ARGV[2] == 'ended' then
  local ended = redis.call('HGET', KEYS[1], 'ended_at')
  if not ended or ended == '' then
    redis.call('HSET', KEYS[1], 'ended_at', ARGV[3])
    ended = ARGV[3]
  end
  redis.call('ZADD', KEYS[2], ended, ARGV[1])
else
  redis.call('HSET', KEYS[1], 'ended_at', '')
  redis.call('ZADD', KEYS[2], redis.call('HGET', KEYS[1], 'created_at'), ARGV[1])
end
return 1
"""

# KEYS: record, field. ARGV: field, value. Sets one field of an existing record.
_SET_FIELD = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 1
"""

# KEYS: record, listener tokens. ARGV: token hash.
_ADD_TOKEN = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('SADD', KEYS[2], ARGV[1])
return 1
"""

# KEYS: record, finals. ARGV: seq, member.
_APPEND_FINAL = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if redis.call('ZCOUNT', KEYS[2], ARGV[1], ARGV[1]) == 0 then
  redis.call('ZADD', KEYS[2], ARGV[1], ARGV[2])
end
return 1
"""


# KEYS: the session's claimed-segments counter. ARGV: at least, count. Returns the first.
_CLAIM_SEGMENTS = """
local first = math.max(tonumber(redis.call('GET', KEYS[1]) or '0'), tonumber(ARGV[1]))
redis.call('SET', KEYS[1], first + tonumber(ARGV[2]))
return first
"""

# KEYS: the counter. ARGV: the claim's end, the next number its holder would have used.
_RELEASE_SEGMENTS = """
if tonumber(redis.call('GET', KEYS[1]) or '-1') == tonumber(ARGV[1]) then
  redis.call('SET', KEYS[1], ARGV[2])
end
return 1
"""


def final_member(caption: Caption) -> str:
    """A final as stored in the finals sorted set (exact times and ``ts``; ``stable`` not
    kept). The hub's emit script writes the same form."""
    return (
        '{"seq":'
        + str(caption.seq)
        + ',"ts":'
        + repr(float(caption.ts))
        + ","
        + final_body(caption)
    )


def final_body(caption: Caption) -> str:
    """The member without its leading ``{"seq":N,"ts":T,`` (the hub's script adds it)."""
    data = {
        "segment": caption.segment,
        "lang": caption.lang,
        "source": caption.source,
        "text": caption.text,
        "start": caption.start,
        "end": caption.end,
    }
    if caption.rev:
        data["rev"] = caption.rev
    if caption.sources:
        data["sources"] = list(caption.sources)
    if caption.speaker is not None:
        data["speaker"] = {"id": caption.speaker.id, "name": caption.speaker.name}
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))[1:]


def parse_final(member: bytes | str) -> Caption:
    data = json.loads(member)
    return Caption(
        segment=int(data["segment"]),
        lang=str(data["lang"]),
        source=bool(data["source"]),
        state="final",
        text=str(data["text"]),
        start=float(data["start"]),
        end=float(data["end"]),
        seq=int(data["seq"]),
        rev=int(data.get("rev", 0)),
        sources=tuple(int(x) for x in data.get("sources", ())),
        speaker=None if "speaker" not in data else Speaker(**data["speaker"]),
        ts=float(data.get("ts", 0.0)),  # finals stored before 2026-12-07 have none
    )


def connect_sync(url: str, retries: int = 10) -> redis.Redis:
    """A synchronous client with the store's retry policy (module docstring)."""
    return redis.Redis.from_url(
        url,
        socket_connect_timeout=2.0,
        socket_timeout=5.0,
        retry=Retry(ExponentialBackoff(cap=2.0, base=0.1), retries),
        retry_on_error=list(REDIS_ERRORS),
    )


class RedisSessionStore:
    """:class:`engine.store.base.SessionStore` in Redis (thread-safe: redis-py pools its
    connections)."""

    def __init__(self, url: str, *, retries: int = 10) -> None:
        self._redis = connect_sync(url, retries)
        self._create = self._redis.register_script(_CREATE)
        self._set_state = self._redis.register_script(_SET_STATE)
        self._append_final = self._redis.register_script(_APPEND_FINAL)
        self._set_field = self._redis.register_script(_SET_FIELD)
        self._add_token = self._redis.register_script(_ADD_TOKEN)
        self._claim_segments = self._redis.register_script(_CLAIM_SEGMENTS)
        self._release_segments = self._redis.register_script(_RELEASE_SEGMENTS)

    def ping(self) -> bool:
        return bool(self._redis.ping())

    def create(self, record: SessionRecord) -> None:
        """Store a new session; :class:`CodeTaken` or :class:`SessionExists` on a clash."""
        if record.state not in SESSION_STATES:
            raise ValueError(f"unknown session state {record.state!r}")
        code = normalise_code(record.code)
        fields: dict[str, str] = {
            "id": record.id,
            "code": code,
            "title": record.title,
            "source_language": record.source_language,
            "target_languages": json.dumps(list(record.target_languages)),
            "token_hash": record.token_hash,
            "state": record.state,
            "created_at": repr(float(record.created_at)),
            "ended_at": "" if record.ended_at is None else repr(float(record.ended_at)),
            "passcode_hash": record.passcode_hash or "",
        }
        pairs = [item for kv in fields.items() for item in kv]
        keys = [session_key(code, "rec"), id_key(record.id), SESSIONS_INDEX]
        last = record.ended_at if record.ended_at is not None else record.created_at
        result = self._create(keys=keys, args=[code, repr(float(last)), *pairs])
        if result == -1:
            raise SessionExists(f"session id {record.id!r} is already stored")
        if result == -2:
            raise CodeTaken(f"session code {code!r} is in use")

    def get(self, code: str) -> SessionRecord | None:
        """The session with this code (any case), or ``None``."""
        raw = cast(
            Mapping[bytes, bytes], self._redis.hgetall(session_key(normalise_code(code), "rec"))
        )
        if not raw:
            return None
        data = {k.decode(): v.decode() for k, v in raw.items()}
        return SessionRecord(
            id=data["id"],
            code=data["code"],
            title=data["title"],
            source_language=data["source_language"],
            target_languages=tuple(json.loads(data["target_languages"])),
            token_hash=data["token_hash"],
            state=cast(SessionState, data["state"]),
            created_at=float(data["created_at"]),
            ended_at=float(data["ended_at"]) if data.get("ended_at") else None,
            passcode_hash=data.get("passcode_hash") or None,
        )

    def get_by_id(self, session_id: str) -> SessionRecord | None:
        """The session with this id, or ``None``."""
        code = cast(bytes | None, self._redis.get(id_key(session_id)))
        return None if code is None else self.get(code.decode())

    def set_state(self, code: str, state: SessionState, at: float) -> None:
        """Record the session's new state; ``ended`` sets ``ended_at`` to ``at`` (first wins)."""
        if state not in SESSION_STATES:
            raise ValueError(f"unknown session state {state!r}")
        norm = normalise_code(code)
        keys = [session_key(norm, "rec"), SESSIONS_INDEX]
        if self._set_state(keys=keys, args=[norm, state, repr(float(at))]) == 0:
            raise UnknownSession(f"no session with code {norm!r}")

    def append_final(self, code: str, caption: Caption) -> None:
        """Store a numbered final; idempotent on ``seq`` (the first one stored stays)."""
        if not caption.is_final:
            raise ValueError("only final captions are stored")
        if caption.seq <= 0:
            raise ValueError("caption has no seq: append it to the session log first")
        norm = normalise_code(code)
        keys = [session_key(norm, "rec"), session_key(norm, "finals")]
        if self._append_final(keys=keys, args=[caption.seq, final_member(caption)]) == 0:
            raise UnknownSession(f"no session with code {norm!r}")

    def finals(self, code: str, lang: str | None = None, since_seq: int = 0) -> list[Caption]:
        """Finals with ``seq > since_seq``, of ``lang`` if given, ordered by ``seq``."""
        key = session_key(normalise_code(code), "finals")
        members = cast(list[bytes], self._redis.zrangebyscore(key, f"({since_seq}", "+inf"))
        captions = [parse_final(m) for m in members]
        return [c for c in captions if lang is None or c.lang == lang]

    def last_seq(self, code: str) -> int:
        """The highest stored ``seq`` of the session's finals, 0 when none."""
        key = session_key(normalise_code(code), "finals")
        top = cast(list[Any], self._redis.zrevrange(key, 0, 0, withscores=True))
        return int(top[0][1]) if top else 0

    def add_speaker(self, code: str, speaker: SpeakerRecord) -> None:
        """Store a speaker of the session; :class:`UnknownSession` if there is none."""
        norm = normalise_code(code)
        if not self._redis.exists(session_key(norm, "rec")):
            raise UnknownSession(f"no session with code {norm!r}")
        body = json.dumps(dataclasses.asdict(speaker), ensure_ascii=False)
        self._redis.hset(session_key(norm, "spk"), speaker.id, body)

    def speakers(self, code: str) -> list[SpeakerRecord]:
        """The session's stored speakers, by ``position``."""
        table = cast(
            dict[bytes, bytes], self._redis.hgetall(session_key(normalise_code(code), "spk"))
        )
        speakers = [SpeakerRecord(**json.loads(value)) for value in table.values()]
        return sorted(speakers, key=lambda s: s.position)

    def purge_ended_before(self, cutoff: float) -> int:
        """Delete sessions whose last moment is before ``cutoff``, with every key they have
        (finals, streams, counters). Redis unreachable: logged, nothing purged (it is only
        housekeeping; the next start tries again)."""
        try:
            codes = cast(
                list[bytes], self._redis.zrangebyscore(SESSIONS_INDEX, "-inf", f"({cutoff}")
            )
            for raw in codes:
                code = raw.decode()
                session_id = cast(bytes | None, self._redis.hget(session_key(code, "rec"), "id"))
                pipe = self._redis.pipeline()
                pipe.delete(*(session_key(code, part) for part in SESSION_PARTS))
                if session_id is not None:
                    pipe.delete(id_key(session_id.decode()))
                pipe.zrem(SESSIONS_INDEX, code)
                pipe.execute()
            return len(codes)
        except REDIS_ERRORS as exc:
            log.warning("could not purge expired sessions: Redis unavailable (%s)", exc)
            return 0

    def set_terms(self, code: str, terms: tuple[term_list.Term, ...]) -> None:
        """Replace the session's term list."""
        norm = normalise_code(code)
        if not self._redis.exists(session_key(norm, "rec")):
            raise UnknownSession(f"no session with code {norm!r}")
        self._redis.set(session_key(norm, "terms"), term_list.dumps(terms))

    def terms(self, code: str) -> tuple[term_list.Term, ...]:
        """The session's term list; empty when none was given."""
        raw = cast(bytes | None, self._redis.get(session_key(normalise_code(code), "terms")))
        return term_list.loads(raw)

    def add_editor(self, code: str, token_hash: str, at: float) -> None:
        """Remember an editor token (its hash) of the session."""
        norm = normalise_code(code)
        if not self._redis.exists(session_key(norm, "rec")):
            raise UnknownSession(f"no session with code {norm!r}")
        self._redis.sadd(session_key(norm, "editors"), token_hash)

    def is_editor(self, code: str, token_hash: str) -> bool:
        """Whether the session has an editor token with this hash."""
        key = session_key(normalise_code(code), "editors")
        return bool(self._redis.sismember(key, token_hash))

    def claim_segments(self, code: str, at_least: int, count: int) -> int:
        """Reserve ``count`` numbers from the session's counter (one script: atomic across
        every node), none below ``at_least``; the first."""
        key = session_key(normalise_code(code), "segs")
        return int(cast(int, self._claim_segments(keys=[key], args=[at_least, count])))

    def release_segments(self, code: str, claimed_end: int, next_segment: int) -> None:
        """Move the counter back to ``next_segment`` if the last claim was the one ending at
        ``claimed_end`` (otherwise another node claimed after it: its numbers stay out)."""
        key = session_key(normalise_code(code), "segs")
        self._release_segments(keys=[key], args=[claimed_end, next_segment])

    def remove_editors(self, code: str) -> int:
        """Forget every editor token of the session; how many there were."""
        norm = normalise_code(code)
        if not self._redis.exists(session_key(norm, "rec")):
            raise UnknownSession(f"no session with code {norm!r}")
        key = session_key(norm, "editors")
        pipe = self._redis.pipeline()
        pipe.scard(key)
        pipe.delete(key)
        count, _ = pipe.execute()
        return int(count)

    def set_passcode(self, code: str, passcode_hash: str) -> None:
        """Replace a private session's passcode hash (the tokens it granted stay valid)."""
        norm = normalise_code(code)
        keys = [session_key(norm, "rec")]
        if self._set_field(keys=keys, args=["passcode_hash", passcode_hash]) == 0:
            raise UnknownSession(f"no session with code {norm!r}")

    def add_listener_token(self, code: str, token_hash: str, at: float) -> None:
        """Remember a listener token the session granted (its hash; ``at`` is not kept)."""
        norm = normalise_code(code)
        keys = [session_key(norm, "rec"), session_key(norm, "lt")]
        if self._add_token(keys=keys, args=[token_hash]) == 0:
            raise UnknownSession(f"no session with code {norm!r}")

    def has_listener_token(self, code: str, token_hash: str) -> bool:
        """Whether the session granted the listener token with this hash."""
        key = session_key(normalise_code(code), "lt")
        return bool(self._redis.sismember(key, token_hash))

    def close(self) -> None:
        self._redis.close()
