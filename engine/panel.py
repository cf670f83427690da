"""A session's speakers: the presenter first, then those a panel adds.

Each added speaker has a token of their own (stored hashed, shown once) and a language. A
session with more than one speaker is a panel, and its captions name their speaker.

Processes sharing a Redis store each hold the speakers they loaded or added. A speaker
added through another process is read from the store when a token matches nobody held
here (:meth:`Speakers.find`), before one is added (positions and the limit count them all),
and for the session's facts at most every ``REFRESH_S`` (:meth:`Speakers.current`).
"""

from __future__ import annotations

import hmac
import secrets
import time
from collections.abc import Iterator, Sequence

from engine.events import Speaker
from engine.refusals import Refusal, Refused
from engine.store.base import (
    SessionRecord,
    SessionStore,
    SpeakerRecord,
    hash_token,
    new_token,
    presenter_speaker,
)
from engine.workers import WorkerPool

MAX_SPEAKERS = 12
"""Speakers one session may have, the presenter included."""

MAX_NAME = 60
"""The longest speaker's name kept (longer names are cut)."""

REFRESH_S = 5.0
"""How stale the speakers in a session's facts may be where another process added one: the
console reads the facts every 10 s, and a store read per request would follow a crowd of
listeners opening the page."""


class Speakers:
    """The speakers of one session, in the order they joined (the presenter first)."""

    def __init__(
        self,
        record: SessionRecord,
        stored: Sequence[SpeakerRecord],
        store: SessionStore,
        store_pool: WorkerPool,
    ) -> None:
        """``stored``: the panel's speakers loaded from the store (the presenter comes first
        anyway); ``store`` keeps each speaker added, through ``store_pool``."""
        self._code = record.code
        self._all: list[SpeakerRecord] = [presenter_speaker(record), *stored]
        self._store = store
        self._store_pool = store_pool
        self._refreshed = time.monotonic()

    def __iter__(self) -> Iterator[SpeakerRecord]:
        return iter(list(self._all))

    def __len__(self) -> int:
        return len(self._all)

    @property
    def panel(self) -> bool:
        """Whether the session has more than one speaker (its captions name them)."""
        return len(self._all) > 1

    def with_token(self, token: str) -> SpeakerRecord | None:
        """The speaker whose token this is (constant-time comparisons), or None."""
        found = None
        for speaker in self._all:
            if hmac.compare_digest(hash_token(token), speaker.token_hash):
                found = speaker
        return found

    async def find(self, token: str) -> SpeakerRecord | None:
        """The speaker whose token this is, one added by another process included (read
        from the store when nobody held here has it), or None."""
        found = self.with_token(token)
        if found is None:
            await self.refresh()
            found = self.with_token(token)
        return found

    async def current(self) -> list[SpeakerRecord]:
        """The speakers, read again from the store if that was more than ``REFRESH_S`` ago."""
        if time.monotonic() - self._refreshed > REFRESH_S:
            await self.refresh()
        return list(self._all)

    async def refresh(self) -> None:
        """Take in the speakers other processes added (the store's list)."""
        stored = await self._store_pool.run(self._store.speakers, self._code)
        self._refreshed = time.monotonic()
        known = {speaker.id for speaker in self._all}
        self._all.extend(speaker for speaker in stored if speaker.id not in known)

    def label(self, speaker_id: str) -> Speaker | None:
        """What a caption of this speaker names, in a panel; None otherwise."""
        if not self.panel:
            return None
        record = next((s for s in self._all if s.id == speaker_id), None)
        return None if record is None else Speaker(record.id, record.name)

    async def add(self, name: str, language: str) -> tuple[SpeakerRecord, str]:
        """A new speaker of the panel and their token (the only time it is seen)."""
        await self.refresh()
        if len(self._all) >= MAX_SPEAKERS:
            raise Refused(Refusal.AT_CAPACITY, f"a session has at most {MAX_SPEAKERS} speakers")
        token = new_token()
        speaker = SpeakerRecord(
            id=secrets.token_hex(4),
            name=name.strip()[:MAX_NAME] or f"Speaker {len(self._all) + 1}",
            language=language,
            token_hash=hash_token(token),
            position=len(self._all),
        )
        await self._store_pool.run(self._store.add_speaker, self._code, speaker)
        self._all.append(speaker)
        return speaker, token
