"""SqliteSessionStore on real temporary files: round trips, persistence, crash safety."""

from __future__ import annotations

import dataclasses
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from engine.events import Caption, Speaker
from engine.store.base import (
    CODE_ALPHABET,
    CodeTaken,
    SchemaTooNew,
    SessionExists,
    SessionRecord,
    SessionStore,
    UnknownSession,
    hash_token,
    new_code,
    new_token,
    verify_token,
)
from engine.store.sqlite import SqliteSessionStore
from engine.store.sqlite_schema import MIGRATIONS, SCHEMA_VERSION

REPO_ROOT = Path(__file__).resolve().parents[3]


def make_record(
    code: str = "ABC234", session_id: str = "s-1", created_at: float = 1_000.0
) -> SessionRecord:
    return SessionRecord(
        id=session_id,
        code=code,
        title="Café talk — día 1",
        source_language="en",
        target_languages=("es", "fr"),
        token_hash=hash_token("secret-token"),
        state="waiting",
        created_at=created_at,
        ended_at=None,
    )


def final(seq: int, lang: str = "en", segment: int | None = None, text: str = "") -> Caption:
    return Caption(
        segment=seq if segment is None else segment,
        lang=lang,
        source=lang == "en",
        state="final",
        text=text or f"segment {seq} in {lang}",
        start=seq * 1.5,
        end=seq * 1.5 + 1.25,
        seq=seq,
        ts=1_765_000_000.0 + seq + 0.125,  # when it was numbered: a backfill keeps it
    )


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "sessions.sqlite3"


@pytest.fixture
def store(db_path: Path) -> Iterator[SqliteSessionStore]:
    with SqliteSessionStore(db_path) as opened:
        yield opened


def test_satisfies_protocol(store: SqliteSessionStore) -> None:
    as_protocol: SessionStore = store
    assert as_protocol.get("NOPE22") is None


def test_create_and_get_round_trip(store: SqliteSessionStore) -> None:
    record = make_record()
    store.create(record)
    assert store.get("ABC234") == record
    assert store.get_by_id("s-1") == record
    assert store.get("ZZZ999") is None
    assert store.get_by_id("nope") is None


def test_code_is_case_insensitive_and_stored_upper(store: SqliteSessionStore) -> None:
    store.create(make_record(code="abc234"))
    for typed in ("abc234", "ABC234", "aBc234", " abc234 "):
        found = store.get(typed)
        assert found is not None and found.code == "ABC234"
    store.append_final("abc234", final(1))
    assert [c.seq for c in store.finals("ABC234")] == [1]


def test_duplicate_code_and_id_are_refused(store: SqliteSessionStore) -> None:
    store.create(make_record())
    with pytest.raises(CodeTaken):
        store.create(make_record(code="abc234", session_id="s-2"))
    with pytest.raises(SessionExists):
        store.create(make_record(code="XYZ789", session_id="s-1"))
    assert store.get("XYZ789") is None


def test_reopen_after_close_keeps_everything(db_path: Path) -> None:
    store = SqliteSessionStore(db_path)
    store.create(make_record())
    store.set_state("ABC234", "live", at=1_010.0)
    store.append_final("ABC234", final(1))
    store.append_final("ABC234", final(2, lang="es", segment=1))
    store.close()
    with pytest.raises(sqlite3.ProgrammingError):
        store.get("ABC234")

    with SqliteSessionStore(db_path) as reopened:
        record = reopened.get("ABC234")
        assert record is not None
        assert record.state == "live"
        assert record.target_languages == ("es", "fr")
        assert reopened.finals("ABC234") == [final(1), final(2, lang="es", segment=1)]
        assert reopened.last_seq("ABC234") == 2


def test_schema_version_is_set_and_newer_schema_refused(db_path: Path) -> None:
    SqliteSessionStore(db_path).close()
    with sqlite3.connect(db_path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        conn.execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(SchemaTooNew):
        SqliteSessionStore(db_path)


def test_set_state_records_end_once(store: SqliteSessionStore) -> None:
    store.create(make_record())
    store.set_state("abc234", "live", at=1_001.0)
    live = store.get("ABC234")
    assert live is not None and live.state == "live" and live.ended_at is None
    store.set_state("ABC234", "ended", at=1_100.0)
    store.set_state("ABC234", "ended", at=1_200.0)
    ended = store.get("ABC234")
    assert ended is not None and ended.state == "ended" and ended.ended_at == 1_100.0
    with pytest.raises(UnknownSession):
        store.set_state("ZZZ999", "live", at=1.0)
    with pytest.raises(ValueError):
        store.set_state("ABC234", "sleeping", at=1.0)  # type: ignore[arg-type]


def test_a_session_may_be_paused(store: SqliteSessionStore) -> None:
    store.create(make_record())
    store.set_state("ABC234", "paused", at=1_001.0)
    paused = store.get("ABC234")
    assert paused is not None and paused.state == "paused" and paused.ended_at is None


def test_revision_sources_and_speaker_round_trip(store: SqliteSessionStore) -> None:
    store.create(make_record())
    said = Caption(3, "es", False, "final", "hola a todos", 1.0, 4.0, seq=7, sources=(3, 4))
    fixed = Caption(
        3, "en", True, "final", "TeamViewer", 1.0, 2.0, seq=8, rev=2, speaker=Speaker("s1", "Ann")
    )
    store.append_final("ABC234", said)
    store.append_final("ABC234", fixed)
    assert store.finals("ABC234") == [said, fixed]


def test_a_version_1_database_is_migrated_with_its_finals(db_path: Path) -> None:
    """A database written before the 2026-12 wave: sessions could not be paused, finals had
    no revision, sources or speaker."""
    with sqlite3.connect(db_path) as conn:
        for statement in MIGRATIONS[0]:
            conn.execute(statement)
        conn.execute("PRAGMA user_version=1")
        conn.execute(
            "INSERT INTO sessions VALUES ('id1', 'OLD234', 't', 'en', '[]', 'h', 'live', 1, NULL)"
        )
        conn.execute("INSERT INTO finals VALUES ('id1', 5, 0, 'en', 1, 'old words', 0.0, 1.0)")
    with SqliteSessionStore(db_path) as store:
        assert [c.text for c in store.finals("OLD234")] == ["old words"]
        assert store.finals("OLD234")[0].rev == 0
        store.set_state("OLD234", "paused", at=2.0)
        record = store.get("OLD234")
        assert record is not None and record.state == "paused"
        assert store.purge_ended_before(10.0) == 1  # finals still belong to their session
        assert store.finals("OLD234") == []


def test_private_sessions_keep_a_passcode_hash_and_the_listener_tokens_they_granted(
    store: SqliteSessionStore,
) -> None:
    store.create(make_record())
    store.create(replace(make_record("PRV234", "s-2"), passcode_hash="scrypt$old"))
    public, private = store.get("ABC234"), store.get("prv234")
    assert public is not None and not public.private and public.passcode_hash is None
    assert private is not None and private.private and private.passcode_hash == "scrypt$old"
    assert not store.has_listener_token("PRV234", "h1")
    store.add_listener_token("prv234", "h1", at=1_001.0)
    store.add_listener_token("PRV234", "h1", at=1_002.0)  # granted twice: still one
    store.set_passcode("PRV234", "scrypt$new")
    stored = store.get("PRV234")
    assert stored is not None and stored.passcode_hash == "scrypt$new"
    assert store.has_listener_token("PRV234", "h1")  # a new passcode keeps granted tokens
    assert not store.has_listener_token("ABC234", "h1")
    assert not store.has_listener_token("NOPE22", "h1")
    with pytest.raises(UnknownSession):
        store.add_listener_token("NOPE22", "h1", at=1.0)
    with pytest.raises(UnknownSession):
        store.set_passcode("NOPE22", "x")
    assert store.purge_ended_before(2_000.0) == 2
    assert not store.has_listener_token("PRV234", "h1")


def test_editor_tokens_are_kept_per_session_until_removed(store: SqliteSessionStore) -> None:
    store.create(make_record())
    store.create(make_record("PRV234", "s-2"))
    store.add_editor("abc234", "e1", at=1_001.0)
    store.add_editor("ABC234", "e2", at=1_002.0)
    store.add_editor("PRV234", "e3", at=1_003.0)
    assert store.is_editor("ABC234", "e1") and store.is_editor("ABC234", "e2")
    assert not store.is_editor("ABC234", "e3") and not store.is_editor("NOPE22", "e1")
    assert store.remove_editors("abc234") == 2
    assert not store.is_editor("ABC234", "e1") and not store.is_editor("ABC234", "e2")
    assert store.is_editor("PRV234", "e3")  # another session's editors keep their links
    assert store.remove_editors("ABC234") == 0
    store.add_editor("ABC234", "e4", at=1_004.0)  # new links work after a removal
    assert store.is_editor("ABC234", "e4")
    with pytest.raises(UnknownSession):
        store.remove_editors("NOPE22")
    with pytest.raises(UnknownSession):
        store.add_editor("NOPE22", "e1", at=1.0)


def test_a_sqlite_store_claims_no_segment_numbers(store: SqliteSessionStore) -> None:
    """One process serves a SQLite store: its session's own numbering is the only one."""
    store.create(make_record())
    assert store.claim_segments("ABC234", 7, 100) == 7
    assert store.claim_segments("ABC234", 7, 100) == 7
    store.release_segments("ABC234", 107, 9)
    assert store.claim_segments("ABC234", 9, 100) == 9


def test_a_version_2_database_gains_private_sessions(db_path: Path) -> None:
    with sqlite3.connect(db_path) as conn:
        for statements in MIGRATIONS[:2]:
            for statement in statements:
                conn.execute(statement)
        conn.execute("PRAGMA user_version=2")
        conn.execute(
            "INSERT INTO sessions VALUES ('id1', 'OLD234', 't', 'en', '[]', 'h', 'paused', 1, NULL)"
        )
    with SqliteSessionStore(db_path) as store:
        record = store.get("OLD234")
        assert record is not None and record.state == "paused" and not record.private
        store.add_listener_token("OLD234", "h", at=2.0)
        assert store.has_listener_token("OLD234", "h")


def test_a_version_5_database_keeps_its_finals_without_their_time(db_path: Path) -> None:
    """Finals stored before ``ts`` was kept come back with ``ts`` 0; new ones keep theirs."""
    with sqlite3.connect(db_path) as conn:
        for statements in MIGRATIONS[:5]:
            for statement in statements:
                conn.execute(statement)
        conn.execute("PRAGMA user_version=5")
        conn.execute(
            "INSERT INTO sessions (id, code, title, source_language, target_languages, "
            "token_hash, state, created_at) VALUES ('id1', 'OLD234', 't', 'en', '[]', 'h', "
            "'live', 1)"
        )
        conn.execute(
            'INSERT INTO finals (session_id, seq, segment, lang, source, text, start, "end") '
            "VALUES ('id1', 5, 0, 'en', 1, 'old words', 0.0, 1.0)"
        )
    with SqliteSessionStore(db_path) as store:
        old = store.finals("OLD234")
        assert [(c.text, c.ts) for c in old] == [("old words", 0.0)]
        store.append_final("OLD234", final(6))
        assert store.finals("OLD234", since_seq=5) == [final(6)]


def test_append_final_is_idempotent_on_seq(store: SqliteSessionStore) -> None:
    store.create(make_record())
    store.append_final("ABC234", final(1, text="first write"))
    store.append_final("ABC234", final(1, text="first write"))
    store.append_final("abc234", final(1, text="a replayed duplicate"))
    assert [c.text for c in store.finals("ABC234")] == ["first write"]


def test_append_final_refuses_drafts_unnumbered_and_unknown(store: SqliteSessionStore) -> None:
    store.create(make_record())
    draft = Caption(
        segment=1, lang="en", source=True, state="draft", text="x", start=0, end=1, seq=3
    )
    with pytest.raises(ValueError):
        store.append_final("ABC234", draft)
    with pytest.raises(ValueError):
        store.append_final("ABC234", final(0))
    with pytest.raises(UnknownSession):
        store.append_final("ZZZ999", final(1))
    assert store.finals("ABC234") == []


def test_finals_filter_by_lang_and_since_in_seq_order(store: SqliteSessionStore) -> None:
    store.create(make_record())
    store.create(make_record(code="OTHER2", session_id="s-2"))
    appended = [
        final(seq, lang=("en", "es", "fr")[seq % 3], segment=seq // 3) for seq in range(1, 13)
    ]
    for caption in reversed(appended):  # stored out of order, read back by seq
        store.append_final("ABC234", caption)
    store.append_final("OTHER2", final(50))

    assert store.finals("ABC234") == appended
    assert store.finals("ABC234", lang="es") == [c for c in appended if c.lang == "es"]
    assert store.finals("ABC234", since_seq=7) == appended[7:]
    assert store.finals("ABC234", lang="fr", since_seq=6) == [
        c for c in appended if c.lang == "fr" and c.seq > 6
    ]
    assert store.finals("ABC234", lang="de") == []
    assert store.last_seq("ABC234") == 12
    assert store.last_seq("OTHER2") == 50
    assert store.last_seq("ZZZ999") == 0
    assert store.finals("ZZZ999") == []


def test_last_seq_is_zero_for_a_new_session(store: SqliteSessionStore) -> None:
    store.create(make_record())
    assert store.last_seq("ABC234") == 0


def test_caption_fields_round_trip_exactly(store: SqliteSessionStore) -> None:
    store.create(make_record())
    caption = Caption(
        segment=7,
        lang="es",
        source=False,
        state="final",
        text="¿Qué tal?\n«bien» --> 👍",
        start=12.3456789,
        end=14.000001,
        seq=42,
        ts=1_765_104_000.123456,
    )
    store.append_final("ABC234", caption)
    assert store.finals("ABC234") == [caption]


def test_purge_ended_before(store: SqliteSessionStore) -> None:
    store.create(make_record(code="OLDEND", session_id="old-ended", created_at=100.0))
    store.set_state("OLDEND", "ended", at=200.0)
    store.create(make_record(code="NEWEND", session_id="new-ended", created_at=100.0))
    store.set_state("NEWEND", "ended", at=900.0)
    store.create(make_record(code="STALE2", session_id="stale", created_at=300.0))
    store.create(make_record(code="FRESH2", session_id="fresh", created_at=800.0))
    for code in ("OLDEND", "NEWEND", "STALE2", "FRESH2"):
        store.append_final(code, final(1))
        store.append_final(code, final(2))

    assert store.purge_ended_before(500.0) == 2
    assert store.get("OLDEND") is None and store.get("STALE2") is None
    assert store.get("NEWEND") is not None and store.get("FRESH2") is not None
    assert len(store.finals("NEWEND")) == 2 and len(store.finals("FRESH2")) == 2
    # The purged sessions' finals are gone too: a new session reusing a code starts empty.
    store.create(make_record(code="OLDEND", session_id="reused", created_at=1_000.0))
    assert store.finals("OLDEND") == [] and store.last_seq("OLDEND") == 0
    assert store.purge_ended_before(500.0) == 0


def test_token_hash_and_verify() -> None:
    token = new_token()
    record = dataclasses.replace(make_record(), token_hash=hash_token(token))
    assert record.token_hash != token and len(record.token_hash) == 64
    assert verify_token(record, token)
    assert not verify_token(record, token[:-1])
    assert not verify_token(record, token + "x")
    assert not verify_token(record, "")
    assert not verify_token(record, "\ud800 lone surrogate")


def test_new_token_has_at_least_128_bits() -> None:
    tokens = {new_token() for _ in range(200)}
    assert len(tokens) == 200
    for token in tokens:
        assert len(token) * 6 >= 128  # URL-safe base64: 6 bits a character
        assert token.replace("-", "").replace("_", "").isalnum()


def test_new_code_alphabet_and_length() -> None:
    codes = [new_code() for _ in range(500)]
    assert all(len(code) == 6 and set(code) <= set(CODE_ALPHABET) for code in codes)
    assert not set("".join(codes)) & set("01OIL")
    assert len(set(codes)) > 490  # 31**6 codes: collisions in 500 draws are rare
    assert len(set("".join(codes))) == len(CODE_ALPHABET)  # every character gets used


def test_concurrent_appends_from_threads(store: SqliteSessionStore) -> None:
    store.create(make_record())
    threads_n, per_thread = 8, 50
    barrier = threading.Barrier(threads_n)
    errors: list[BaseException] = []

    def append_range(first: int) -> None:
        barrier.wait()
        try:
            for seq in range(first, first + per_thread):
                store.append_final("ABC234", final(seq))
                store.get("ABC234")
        except BaseException as exc:  # collected and re-raised by the test below
            errors.append(exc)

    threads = [
        threading.Thread(target=append_range, args=(1 + i * per_thread,)) for i in range(threads_n)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert [c.seq for c in store.finals("ABC234")] == list(range(1, threads_n * per_thread + 1))


CHILD_SCRIPT = textwrap.dedent(
    """
    import os, signal, sys
    from engine.events import Caption, Speaker
    from engine.store.base import SessionRecord, hash_token
    from engine.store.sqlite import SqliteSessionStore

    store = SqliteSessionStore(sys.argv[1])
    store.create(SessionRecord(id="crash", code="KILL99", title="t", source_language="en",
                               target_languages=("es",), token_hash=hash_token("t"),
                               state="live", created_at=1.0))
    for seq in range(1, int(sys.argv[2]) + 1):
        store.append_final("KILL99", Caption(segment=seq, lang="en", source=True,
                                             state="final", text=f"said {seq}",
                                             start=float(seq), end=seq + 0.5, seq=seq))
    # No close(), no flush: die the moment the last append has returned.
    os.kill(os.getpid(), signal.SIGKILL)
    """
)


def test_finals_survive_sigkill_right_after_append(db_path: Path) -> None:
    count = 25
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    child = subprocess.run(
        [sys.executable, "-c", CHILD_SCRIPT, str(db_path), str(count)],
        env=env,
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert child.returncode == -signal.SIGKILL, child.stderr
    with SqliteSessionStore(db_path) as reopened:
        finals = reopened.finals("kill99")
        assert [c.seq for c in finals] == list(range(1, count + 1))
        assert finals[-1].text == f"said {count}"
        assert reopened.last_seq("KILL99") == count
