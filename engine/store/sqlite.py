"""The one-machine session store: :class:`SqliteSessionStore` in one SQLite file.

It is synchronous: callers on the event loop reach it through the project's thread-crossing
module (engine/workers.py).
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

from engine import terms as term_list
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
from engine.store.sqlite_schema import migrate

_T = TypeVar("_T")


_SESSION_COLUMNS = (
    "id, code, title, source_language, target_languages, token_hash, state, created_at, "
    "ended_at, passcode_hash"
)


class SqliteSessionStore:
    """:class:`SessionStore` in one SQLite file (or ``":memory:"``).

    Thread-safe: one connection shared under a lock (SQLite serialises writers anyway, and
    each call is short). Durability: WAL journal with ``synchronous=NORMAL``; every write is
    committed before its method returns, so it survives the process being killed (the WAL
    write is in the OS page cache). Only a power loss or OS crash can drop the last commits;
    pass ``synchronous="FULL"`` where that matters more than write speed.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        synchronous: str = "NORMAL",
        busy_timeout: float = 5.0,
    ) -> None:
        if synchronous not in ("NORMAL", "FULL"):
            raise ValueError(f"synchronous must be NORMAL or FULL, not {synchronous!r}")
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(
            str(path), timeout=busy_timeout, isolation_level=None, check_same_thread=False
        )
        try:
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute(f"PRAGMA synchronous={synchronous}")
            self._conn.execute("PRAGMA foreign_keys=ON")
            migrate(self._conn)
        except BaseException:
            self._conn.close()
            raise

    def _run(self, work: Callable[[sqlite3.Connection], _T]) -> _T:
        with self._lock:
            return work(self._conn)

    def create(self, record: SessionRecord) -> None:
        """Store a new session; :class:`CodeTaken` or :class:`SessionExists` on a clash."""
        if record.state not in SESSION_STATES:
            raise ValueError(f"unknown session state {record.state!r}")
        values = (
            record.id,
            normalise_code(record.code),
            record.title,
            record.source_language,
            json.dumps(list(record.target_languages)),
            record.token_hash,
            record.state,
            record.created_at,
            record.ended_at,
            record.passcode_hash,
        )

        def work(conn: sqlite3.Connection) -> None:
            try:
                conn.execute(
                    f"INSERT INTO sessions ({_SESSION_COLUMNS}) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    values,
                )
            except sqlite3.IntegrityError as exc:
                # SQLite names the violated constraint: "UNIQUE constraint failed: sessions.id".
                if str(exc).endswith("sessions.id"):
                    raise SessionExists(f"session id {record.id!r} is already stored") from exc
                if str(exc).endswith("sessions.code"):
                    raise CodeTaken(f"session code {values[1]!r} is in use") from exc
                raise

        self._run(work)

    def get(self, code: str) -> SessionRecord | None:
        """The session with this code (any case), or ``None``."""
        return self._fetch_session("code", normalise_code(code))

    def get_by_id(self, session_id: str) -> SessionRecord | None:
        """The session with this id, or ``None``."""
        return self._fetch_session("id", session_id)

    def _fetch_session(self, column: str, value: str) -> SessionRecord | None:
        query = f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE {column} = ?"
        row = self._run(lambda conn: conn.execute(query, (value,)).fetchone())
        if row is None:
            return None
        return SessionRecord(
            id=row[0],
            code=row[1],
            title=row[2],
            source_language=row[3],
            target_languages=tuple(json.loads(row[4])),
            token_hash=row[5],
            state=row[6],
            created_at=row[7],
            ended_at=row[8],
            passcode_hash=row[9],
        )

    def set_state(self, code: str, state: SessionState, at: float) -> None:
        """Record the session's new state; ``ended`` sets ``ended_at`` to ``at`` (first wins)."""
        if state not in SESSION_STATES:
            raise ValueError(f"unknown session state {state!r}")
        query = (
            "UPDATE sessions SET state = ?, ended_at = CASE WHEN ? = 'ended' "
            "THEN coalesce(ended_at, ?) ELSE NULL END WHERE code = ?"
        )
        norm = normalise_code(code)
        changed = self._run(lambda conn: conn.execute(query, (state, state, at, norm)).rowcount)
        if changed == 0:
            raise UnknownSession(f"no session with code {norm!r}")

    def append_final(self, code: str, caption: Caption) -> None:
        """Store a final caption numbered by the session log.

        Idempotent on ``(code, caption.seq)``: the first caption stored under a ``seq`` stays
        (a replay after a restart may append again). The draft-only field ``stable`` is not
        kept; ``ts`` is, so a backfill after a restart carries the time the final was numbered.
        """
        if not caption.is_final:
            raise ValueError("only final captions are stored")
        if caption.seq <= 0:
            raise ValueError("caption has no seq: append it to the session log first")
        norm = normalise_code(code)
        query = (
            "INSERT OR IGNORE INTO finals "
            '(session_id, seq, segment, lang, source, text, start, "end", rev, sources, speaker, '
            "ts) SELECT id, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ? FROM sessions WHERE code = ?"
        )
        values = (
            caption.seq,
            caption.segment,
            caption.lang,
            int(caption.source),
            caption.text,
            caption.start,
            caption.end,
            caption.rev,
            json.dumps(list(caption.sources)) if caption.sources else None,
            None if caption.speaker is None else json.dumps(asdict(caption.speaker)),
            caption.ts,
            norm,
        )

        def work(conn: sqlite3.Connection) -> None:
            if (
                conn.execute(query, values).rowcount == 0
                and not conn.execute("SELECT 1 FROM sessions WHERE code = ?", (norm,)).fetchone()
            ):
                raise UnknownSession(f"no session with code {norm!r}")

        self._run(work)

    def finals(self, code: str, lang: str | None = None, since_seq: int = 0) -> list[Caption]:
        """Finals with ``seq > since_seq``, of ``lang`` if given, ordered by ``seq``."""
        query = (
            'SELECT f.segment, f.lang, f.source, f.text, f.start, f."end", f.seq, '
            "f.rev, f.sources, f.speaker, f.ts "
            "FROM finals f JOIN sessions s ON s.id = f.session_id "
            "WHERE s.code = ? AND f.seq > ?"
        )
        params: tuple[object, ...] = (normalise_code(code), since_seq)
        if lang is not None:
            query += " AND f.lang = ?"
            params = (*params, lang)
        query += " ORDER BY f.seq"
        rows: Sequence[tuple[Any, ...]] = self._run(
            lambda conn: conn.execute(query, params).fetchall()
        )
        return [
            Caption(
                segment=segment,
                lang=row_lang,
                source=bool(source),
                state="final",
                text=text,
                start=start,
                end=end,
                seq=seq,
                rev=rev,
                sources=tuple(json.loads(sources)) if sources else (),
                speaker=None if speaker is None else Speaker(**json.loads(speaker)),
                ts=ts,
            )
            for segment, row_lang, source, text, start, end, seq, rev, sources, speaker, ts in rows
        ]

    def last_seq(self, code: str) -> int:
        """The highest stored ``seq`` of the session (any language), 0 when none."""
        query = (
            "SELECT coalesce(max(f.seq), 0) FROM finals f "
            "JOIN sessions s ON s.id = f.session_id WHERE s.code = ?"
        )
        row = self._run(lambda conn: conn.execute(query, (normalise_code(code),)).fetchone())
        return int(row[0])

    def add_speaker(self, code: str, speaker: SpeakerRecord) -> None:
        """Store a speaker of the session; :class:`UnknownSession` if there is none."""
        norm = normalise_code(code)
        query = (
            "INSERT INTO speakers (session_id, id, name, language, token_hash, position) "
            "SELECT id, ?, ?, ?, ?, ? FROM sessions WHERE code = ?"
        )
        values = (
            speaker.id,
            speaker.name,
            speaker.language,
            speaker.token_hash,
            speaker.position,
            norm,
        )
        if self._run(lambda conn: conn.execute(query, values).rowcount) == 0:
            raise UnknownSession(f"no session with code {norm!r}")

    def speakers(self, code: str) -> list[SpeakerRecord]:
        """The session's stored speakers, by ``position``."""
        query = (
            "SELECT k.id, k.name, k.language, k.token_hash, k.position FROM speakers k "
            "JOIN sessions s ON s.id = k.session_id WHERE s.code = ? ORDER BY k.position"
        )
        rows = self._run(lambda conn: conn.execute(query, (normalise_code(code),)).fetchall())
        return [SpeakerRecord(*row) for row in rows]

    def purge_ended_before(self, cutoff: float) -> int:
        """Delete old sessions and their finals; return how many sessions went.

        A session goes when it ended before ``cutoff``, or never ended and was created before
        ``cutoff`` (abandoned: waiting forever, or live when its process died). Choose a cutoff
        longer than any real session lasts.
        """
        query = "DELETE FROM sessions WHERE coalesce(ended_at, created_at) < ?"
        # Finals go with their session through ON DELETE CASCADE, in the same statement.
        return self._run(lambda conn: conn.execute(query, (cutoff,)).rowcount)

    def set_terms(self, code: str, terms: tuple[term_list.Term, ...]) -> None:
        """Replace the session's term list."""
        norm = normalise_code(code)
        query = "UPDATE sessions SET terms = ? WHERE code = ?"
        text = term_list.dumps(terms)
        if self._run(lambda conn: conn.execute(query, (text, norm)).rowcount) == 0:
            raise UnknownSession(f"no session with code {norm!r}")

    def terms(self, code: str) -> tuple[term_list.Term, ...]:
        """The session's term list; empty when none was given (or no such session)."""
        query = "SELECT terms FROM sessions WHERE code = ?"
        row = self._run(lambda conn: conn.execute(query, (normalise_code(code),)).fetchone())
        return term_list.loads(row[0] if row else None)

    def add_editor(self, code: str, token_hash: str, at: float) -> None:
        """Remember an editor token (its hash) of the session."""
        self._add_token("editors", code, token_hash, at)

    def _add_token(self, table: str, code: str, token_hash: str, at: float) -> None:
        """Insert a token hash of the session into ``table`` (editors, listener_tokens)."""
        norm = normalise_code(code)
        query = (
            f"INSERT OR IGNORE INTO {table} (session_id, token_hash, created_at) "
            "SELECT id, ?, ? FROM sessions WHERE code = ?"
        )

        def work(conn: sqlite3.Connection) -> None:
            if (
                conn.execute(query, (token_hash, at, norm)).rowcount == 0
                and not conn.execute("SELECT 1 FROM sessions WHERE code = ?", (norm,)).fetchone()
            ):
                raise UnknownSession(f"no session with code {norm!r}")

        self._run(work)

    def set_passcode(self, code: str, passcode_hash: str) -> None:
        """Replace a private session's passcode hash (the tokens it granted stay valid)."""
        norm = normalise_code(code)
        query = "UPDATE sessions SET passcode_hash = ? WHERE code = ?"
        changed = self._run(lambda conn: conn.execute(query, (passcode_hash, norm)).rowcount)
        if changed == 0:
            raise UnknownSession(f"no session with code {norm!r}")

    def claim_segments(self, code: str, at_least: int, count: int) -> int:
        """``at_least``: a SQLite store serves one process, whose session numbers its
        segments in one sequence (engine/continuity.py); nobody else claims any."""
        return at_least

    def release_segments(self, code: str, claimed_end: int, next_segment: int) -> None:
        """Nothing to give back: one process, no claims kept (:meth:`claim_segments`)."""

    def add_listener_token(self, code: str, token_hash: str, at: float) -> None:
        """Remember a listener token the session granted (its hash)."""
        self._add_token("listener_tokens", code, token_hash, at)

    def is_editor(self, code: str, token_hash: str) -> bool:
        """Whether the session has an editor token with this hash."""
        query = (
            "SELECT 1 FROM editors e JOIN sessions s ON s.id = e.session_id "
            "WHERE s.code = ? AND e.token_hash = ?"
        )
        params = (normalise_code(code), token_hash)
        return self._run(lambda conn: conn.execute(query, params).fetchone()) is not None

    def remove_editors(self, code: str) -> int:
        """Forget every editor token of the session; how many there were."""
        norm = normalise_code(code)
        query = "DELETE FROM editors WHERE session_id = (SELECT id FROM sessions WHERE code = ?)"

        def work(conn: sqlite3.Connection) -> int:
            if not conn.execute("SELECT 1 FROM sessions WHERE code = ?", (norm,)).fetchone():
                raise UnknownSession(f"no session with code {norm!r}")
            return int(conn.execute(query, (norm,)).rowcount)

        return self._run(work)

    def has_listener_token(self, code: str, token_hash: str) -> bool:
        """Whether the session granted the listener token with this hash."""
        query = (
            "SELECT 1 FROM listener_tokens t JOIN sessions s ON s.id = t.session_id "
            "WHERE s.code = ? AND t.token_hash = ?"
        )
        params = (normalise_code(code), token_hash)
        return self._run(lambda conn: conn.execute(query, params).fetchone()) is not None

    def close(self) -> None:
        """Close the connection; later calls raise ``sqlite3.ProgrammingError``."""
        with self._lock:
            self._conn.close()

    def __enter__(self) -> SqliteSessionStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
