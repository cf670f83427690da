"""RedisSessionStore against a real redis-server: the SessionStore contract tests of
test_store.py, run on Redis, plus what only Redis has (a restart keeps everything)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from engine.store.redis import RedisSessionStore
from tests.engine.store.test_store import (  # noqa: F401  (collected here, run on Redis)
    final,
    make_record,
    test_a_session_may_be_paused,
    test_append_final_is_idempotent_on_seq,
    test_append_final_refuses_drafts_unnumbered_and_unknown,
    test_caption_fields_round_trip_exactly,
    test_code_is_case_insensitive_and_stored_upper,
    test_create_and_get_round_trip,
    test_duplicate_code_and_id_are_refused,
    test_editor_tokens_are_kept_per_session_until_removed,
    test_finals_filter_by_lang_and_since_in_seq_order,
    test_last_seq_is_zero_for_a_new_session,
    test_private_sessions_keep_a_passcode_hash_and_the_listener_tokens_they_granted,
    test_purge_ended_before,
    test_revision_sources_and_speaker_round_trip,
    test_satisfies_protocol,
    test_set_state_records_end_once,
)
from tests.support import RedisServer


@pytest.fixture
def store(redis_server: RedisServer) -> Iterator[RedisSessionStore]:
    opened = RedisSessionStore(redis_server.url)
    yield opened
    opened.close()


def test_segment_claims_never_overlap_and_a_release_keeps_numbers_consecutive(
    store: RedisSessionStore,
) -> None:
    store.create(make_record())
    first = store.claim_segments("abc234", 0, 100)
    assert first == 0
    second = store.claim_segments("ABC234", 5, 100)  # another node, while the first holds
    assert second == 100
    store.release_segments("ABC234", 100, 12)  # not the last claim: no effect
    assert store.claim_segments("ABC234", 0, 10) == 200
    store.release_segments("ABC234", 210, 203)  # the last claim: the next goes on from it
    assert store.claim_segments("ABC234", 0, 10) == 203
    store.release_segments("ABC234", 213, 203)
    assert store.claim_segments("ABC234", 500, 10) == 500  # never below what was said
    store.create(make_record("PRV234", "s-2"))
    assert store.claim_segments("PRV234", 0, 10) == 0  # per session
    assert store.purge_ended_before(2_000.0) == 2
    assert store.claim_segments("ABC234", 0, 10) == 0  # purged with its session


def test_restart_keeps_sessions_and_finals(redis_server: RedisServer) -> None:
    store = RedisSessionStore(redis_server.url)
    store.create(make_record())
    store.set_state("ABC234", "live", at=1_010.0)
    store.append_final("ABC234", final(1))
    redis_server.restart(down_s=0.2)  # kill -9: the append-only file is all that is left
    record = store.get("ABC234")  # the client reconnects by itself
    assert record is not None and record.state == "live"
    assert store.finals("ABC234") == [final(1)]
    store.close()
