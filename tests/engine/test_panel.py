"""A session's speakers (engine/panel.py): the presenter first, then a panel's, each with a
token of their own, kept in the store."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.events import Speaker
from engine.panel import MAX_NAME, MAX_SPEAKERS, Speakers
from engine.refusals import Refusal, Refused
from engine.store.base import SessionRecord, hash_token, new_token
from engine.store.sqlite import SqliteSessionStore
from engine.workers import WorkerPool

PRESENTER_TOKEN = new_token()
RECORD = SessionRecord(
    id="1" * 32,
    code="PANEL1",
    title="Panel",
    source_language="en",
    target_languages=("es",),
    token_hash=hash_token(PRESENTER_TOKEN),
    state="waiting",
    created_at=time.time(),
)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteSessionStore]:
    with SqliteSessionStore(tmp_path / "sessions.sqlite3") as store:
        store.create(RECORD)
        yield store


@pytest.fixture
def pool() -> Iterator[WorkerPool]:
    pool = WorkerPool("store", threads=1)
    yield pool
    pool.shutdown()


async def test_the_presenter_alone_is_no_panel_and_their_captions_name_nobody(
    store: SqliteSessionStore, pool: WorkerPool
) -> None:
    speakers = Speakers(RECORD, (), store, pool)

    (presenter,) = speakers
    assert presenter.position == 0
    assert not speakers.panel
    assert speakers.label(presenter.id) is None
    assert speakers.with_token(PRESENTER_TOKEN) == presenter
    assert speakers.with_token(new_token()) is None


async def test_an_added_speaker_has_a_token_a_label_and_is_stored(
    store: SqliteSessionStore, pool: WorkerPool
) -> None:
    speakers = Speakers(RECORD, (), store, pool)

    bo, token = await speakers.add("  Bo  ", "es")

    assert speakers.panel
    assert [s.position for s in speakers] == [0, 1]
    assert (bo.name, bo.language) == ("Bo", "es")
    assert speakers.with_token(token) == bo
    assert speakers.label(bo.id) == Speaker(bo.id, "Bo")
    assert speakers.label("nobody") is None
    assert store.speakers(RECORD.code) == [bo]
    # Loaded back from the store, the session has the same speakers.
    assert list(Speakers(RECORD, store.speakers(RECORD.code), store, pool)) == list(speakers)


async def test_names_are_cut_or_given_and_a_full_panel_refuses_more(
    store: SqliteSessionStore, pool: WorkerPool
) -> None:
    speakers = Speakers(RECORD, (), store, pool)

    long, _ = await speakers.add("x" * (MAX_NAME + 10), "en")
    unnamed, _ = await speakers.add("   ", "en")
    while len(speakers) < MAX_SPEAKERS:
        await speakers.add("Another", "en")

    assert long.name == "x" * MAX_NAME
    assert unnamed.name == "Speaker 3"
    with pytest.raises(Refused) as refused:
        await speakers.add("One too many", "en")
    assert refused.value.reason is Refusal.AT_CAPACITY
    assert len(speakers) == MAX_SPEAKERS
