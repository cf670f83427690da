"""Sessions built whole from typed ports: :class:`SessionFactory`.

The app loads the models and hands the factory what they are (recognition, translation,
speech) and where events go (store, hub). A session comes out finished: its publisher, its
translators and its speech stage are made before it exists, and nothing is attached to it
afterwards.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from engine.delivery.push import Poster, PushPolicy, SessionPushes
from engine.events import Caption, Event
from engine.publisher import Publisher
from engine.session import Session, SessionPorts
from engine.speech.resources import Speech
from engine.store.base import SessionRecord, SpeakerRecord
from engine.terms import Term
from engine.translation.resources import Translation


@dataclass(frozen=True, slots=True)
class StagePorts:
    """The optional stages: translation (None: this process translates nothing), speech
    (None: it speaks nothing) and captions pushed out to YouTube or Zoom (None: off)."""

    translation: Translation | None = None
    speech: Speech | None = None
    poster: Poster | None = None
    push_policy: PushPolicy = field(default_factory=PushPolicy)


class SessionFactory:
    """Builds each session of a process from the same ports."""

    def __init__(self, ports: SessionPorts, stages: StagePorts) -> None:
        self.ports = ports
        self.stages = stages

    async def build(
        self,
        record: SessionRecord,
        *,
        last_seq: int = 0,
        finals: Sequence[Caption] = (),
        speakers: Sequence[SpeakerRecord] = (),
        terms: Sequence[Term] = (),
    ) -> Session:
        """The session of ``record``, its numbering continuing after ``last_seq``, its
        history holding ``finals``, its panel ``speakers`` (a session loaded back from the
        store) and its term list ``terms``."""
        ports = self.ports
        ports.hub.open(record.code, last_seq, finals)
        publisher = Publisher(record.code, ports.hub, ports.store, ports.store_pool, ports.observer)
        speech = self.stages.speech
        speaker = (
            None
            if speech is None
            else speech.stage(publisher.publish, on_first_audio=ports.observer.first_audio)
        )

        async def publish_translation(event: Event) -> Event:
            """Translations are published, and their finals spoken (the source language is
            heard from the speaker); their drafts let an idle voice start early."""
            numbered = await publisher.publish(event)
            if speaker is not None and isinstance(numbered, Caption):
                if numbered.is_final:
                    speaker.on_final(numbered)
                else:
                    speaker.on_draft(numbered)
            return numbered

        translation = self.stages.translation
        offered = [record.source_language, *record.target_languages]
        translators = (
            {} if translation is None else await translation.stage(offered, publish_translation)
        )
        hub = ports.hub
        poster = self.stages.poster
        pushes = (
            None
            if poster is None
            else SessionPushes(
                lambda langs, since: hub.subscribe(record.code, langs, since, counted=False),
                hub.unsubscribe,
                lambda: hub.last_seq(record.code),
                poster,
                self.stages.push_policy,
            )
        )
        return Session(
            record,
            ports,
            publisher,
            translators=translators,
            speaker=speaker,
            finals=finals,
            speakers=speakers,
            terms=terms,
            pushes=pushes,
        )
