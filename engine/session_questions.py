"""A session's questions from the floor: asked, heard, decided (engine/questions.py).

The session's part that turns the :class:`QuestionBox` bookkeeping into events: a typed
question is held with its translation into the session's language, a spoken one is
recognised first, and an accepted one is said, as "Audience", to everyone in every language.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from engine.audio import SAMPLE_RATE
from engine.continuity import Continuity
from engine.events import Caption, Event, Question, Speaker
from engine.questions import AUDIENCE_ID, AUDIENCE_NAME, QuestionBox
from engine.recognition.asr import DecodeOptions, token_budget
from engine.recognition.policy import guard_repetitions, join_words
from engine.recognition.resources import Recognition
from engine.refusals import Refusal, Refused
from engine.segment_claims import SegmentClaims
from engine.stream import Publish
from engine.translation.sentences import ends_sentence
from engine.translation.stage import SessionTranslator

MAX_QUESTION_S = 30
"""The longest spoken question heard (seconds)."""


class SessionQuestions:
    """Questions from the floor of one session (module docstring)."""

    def __init__(
        self,
        source_language: str,
        offered: Sequence[str],
        translators: Mapping[str, SessionTranslator],
        recognition: Recognition,
        continuity: Continuity,
        claims: SegmentClaims,
        publish: Publish,
    ) -> None:
        """``source_language``: what the moderator reads questions in. ``offered``: the
        languages one may ask in. ``continuity``: where an accepted question's caption goes
        in the session's numbering and audio time, held through ``claims`` while it is
        numbered (engine/segment_claims.py). ``publish``: the session's publish."""
        self.box = QuestionBox()
        self._source = source_language
        self._offered = list(offered)
        self._translators = translators
        self._recognition = recognition
        self._continuity = continuity
        self._claims = claims
        self._publish = publish

    async def ask(self, asker: str, lang: str, text: str) -> Question:
        """Hold a question from the floor for the moderator, translated into the session's
        language (engine/questions.py); raises :class:`Refused`."""
        if lang not in self._offered:
            raise Refused(Refusal.UNKNOWN_LANGUAGE, f"ask in one of {', '.join(self._offered)}")
        translator = self._translators.get(lang)
        source = self._source
        translation = ""
        if lang != source and translator is not None and text.strip():
            translation = await translator.translate_text(source, text)
        question = self.box.ask(asker, lang, text, translation)
        await self._publish(question)
        return question

    async def hear(self, lang: str, samples: np.ndarray) -> str:
        """What a spoken question says (16 kHz mono float32, at most ``MAX_QUESTION_S``)."""
        if len(samples) > MAX_QUESTION_S * SAMPLE_RATE:
            raise Refused(Refusal.MESSAGE_TOO_BIG, f"a question lasts at most {MAX_QUESTION_S} s")
        recognition = self._recognition
        transcriber = recognition.transcriber_for(lang)
        if transcriber is None:
            raise Refused(Refusal.NO_MODEL, f"no recognition model for {lang!r}")
        options = DecodeOptions(
            language=lang,
            beam_size=5,
            word_timestamps=False,
            full_window=True,
            max_new_tokens=token_budget(len(samples) / SAMPLE_RATE),
        )
        decoded = await recognition.pool.run(transcriber.transcribe, samples, options)
        return join_words(guard_repetitions(decoded.words, ended=decoded.ended))

    async def decide(self, question_id: str, accept: bool) -> Question:
        """The moderator's decision; an accepted question is said, as "Audience", to
        everyone in every language."""
        question = self.box.decide(question_id, "accepted" if accept else "rejected")
        await self._publish(question)
        if accept:
            said = await self._say(question)
            translator = self._translators.get(question.lang)
            if translator is not None and isinstance(said, Caption):
                await translator.on_source(said, whole=True)
        return question

    async def _say(self, question: Question) -> Event:
        """Publish an accepted question as a source final, numbered under the claim."""
        text = question.text if ends_sentence(question.text) else f"{question.text}?"
        await self._claims.hold()
        try:
            audio_time = self._continuity.audio_time
            caption = Caption(
                segment=self._continuity.next_segment(),
                lang=question.lang,
                source=True,
                state="final",
                text=text,
                start=audio_time,
                end=audio_time,
                stable=len(text),
                speaker=Speaker(AUDIENCE_ID, AUDIENCE_NAME),
            )
            return await self._publish(caption)
        finally:
            await self._claims.let_go()
