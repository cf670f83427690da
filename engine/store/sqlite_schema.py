"""The SQLite store's schema: its migrations, and bringing a database up to date.

A database records the number of migrations applied in ``PRAGMA user_version``; opening one
applies the missing ones in one transaction (engine/store/sqlite.py calls :func:`migrate`).
"""

from __future__ import annotations

import sqlite3

from engine.store.base import SchemaTooNew, StoreError

# Schema migrations: MIGRATIONS[n] brings a database from user_version n to n + 1.
# Append new entries; never edit one that has shipped.
MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        """
        CREATE TABLE sessions (
            id TEXT PRIMARY KEY,
            code TEXT NOT NULL UNIQUE,
            title TEXT NOT NULL,
            source_language TEXT NOT NULL,
            target_languages TEXT NOT NULL,
            token_hash TEXT NOT NULL,
            state TEXT NOT NULL CHECK (state IN ('waiting', 'live', 'ended')),
            created_at REAL NOT NULL,
            ended_at REAL
        )
        """,
        """
        CREATE TABLE finals (
            session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
            seq INTEGER NOT NULL,
            segment INTEGER NOT NULL,
            lang TEXT NOT NULL,
            source INTEGER NOT NULL,
            text TEXT NOT NULL,
            start REAL NOT NULL,
            "end" REAL NOT NULL,
            PRIMARY KEY (session_id, seq)
        ) WITHOUT ROWID
        """,
        "CREATE INDEX finals_by_lang ON finals (session_id, lang, seq)",
    ),
    (
        # A session may be paused; a SQLite CHECK changes only by rebuilding its table
        # (foreign keys are off while migrating: finals keep pointing at "sessions").
        """
        CREATE TABLE sessions_new (
            id TEXT PRIMARY KEY,
            code TEXT NOT NULL UNIQUE,
            title TEXT NOT NULL,
            source_language TEXT NOT NULL,
            target_languages TEXT NOT NULL,
            token_hash TEXT NOT NULL,
            state TEXT NOT NULL CHECK (state IN ('waiting', 'live', 'paused', 'ended')),
            created_at REAL NOT NULL,
            ended_at REAL
        )
        """,
        "INSERT INTO sessions_new SELECT * FROM sessions",
        "DROP TABLE sessions",
        "ALTER TABLE sessions_new RENAME TO sessions",
        # A final's revision (a person's correction), the source segments a translation
        # covers (JSON list) and who said it (JSON object), all optional.
        "ALTER TABLE finals ADD COLUMN rev INTEGER NOT NULL DEFAULT 0",
        "ALTER TABLE finals ADD COLUMN sources TEXT",
        "ALTER TABLE finals ADD COLUMN speaker TEXT",
    ),
    (
        # The speakers of a panel (the presenter, the first, is not stored).
        """
        CREATE TABLE speakers (
            session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
            id TEXT NOT NULL,
            name TEXT NOT NULL,
            language TEXT NOT NULL,
            token_hash TEXT NOT NULL,
            position INTEGER NOT NULL,
            PRIMARY KEY (session_id, id)
        ) WITHOUT ROWID
        """,
    ),
    (
        # The session's term list (JSON, engine/terms.py) and the editor tokens the
        # presenter made (hashed, like the presenter token).
        "ALTER TABLE sessions ADD COLUMN terms TEXT",
        """
        CREATE TABLE editors (
            session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
            token_hash TEXT NOT NULL,
            created_at REAL NOT NULL,
            PRIMARY KEY (session_id, token_hash)
        ) WITHOUT ROWID
        """,
    ),
    (
        # Private sessions: the listener passcode (hashed) and the listener tokens granted.
        "ALTER TABLE sessions ADD COLUMN passcode_hash TEXT",
        """
        CREATE TABLE listener_tokens (
            session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
            token_hash TEXT NOT NULL,
            created_at REAL NOT NULL,
            PRIMARY KEY (session_id, token_hash)
        ) WITHOUT ROWID
        """,
    ),
    (
        # A final's ``ts``: when the server numbered it (docs/protocol.md: a backfill keeps
        # it). Finals stored before have none: 0.
        "ALTER TABLE finals ADD COLUMN ts REAL NOT NULL DEFAULT 0",
    ),
)
SCHEMA_VERSION = len(MIGRATIONS)


def user_version(conn: sqlite3.Connection) -> int:
    """The number of migrations the database has had."""
    row = conn.execute("PRAGMA user_version").fetchone()
    return int(row[0])


def migrate(conn: sqlite3.Connection) -> None:
    """Apply the migrations ``conn``'s database lacks; :class:`SchemaTooNew` if it is ahead.

    ``conn`` is in autocommit mode (``isolation_level=None``), as the store opens it.
    """
    version = user_version(conn)
    if version > SCHEMA_VERSION:
        raise SchemaTooNew(
            f"database schema version {version} is newer than this program's "
            f"({SCHEMA_VERSION}); upgrade the program"
        )
    if version == SCHEMA_VERSION:
        return
    # Foreign keys are off while tables are rebuilt (the pragma is a no-op inside a
    # transaction, so it is set before it). BEGIN IMMEDIATE takes the write lock, so two
    # processes opening a new file at once migrate it once: the second re-reads the
    # version inside its transaction.
    conn.execute("PRAGMA foreign_keys=OFF")
    conn.execute("BEGIN IMMEDIATE")
    try:
        version = user_version(conn)
        for statements in MIGRATIONS[version:]:
            for statement in statements:
                conn.execute(statement)
        # PRAGMA takes no parameters; SCHEMA_VERSION is an int constant.
        conn.execute(f"PRAGMA user_version={SCHEMA_VERSION:d}")
        broken = conn.execute("PRAGMA foreign_key_check").fetchall()
        if broken:
            raise StoreError(f"migration left rows without their session: {broken[:3]}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    finally:
        conn.execute("PRAGMA foreign_keys=ON")
