"""One session's translation stage for one source language: source captions in, translated
captions out.

Translation is made once per target language (a *lane*), never once per listener:

- Finals are made from whole sentences (engine/translation/sentences.py; each lane's by
  engine/translation/finals.py, :class:`SentenceFinals`): the source finals
  of a sentence are gathered, and once it closes each lane translates it once, with the
  previous sentence as context where the backend uses it. The translation final names the
  source segments it covers (``sources``); its ``segment`` is the first of them. Every lane
  translates every sentence, whether or not anyone reads its language: a lane nobody reads
  uses its route's text backend (cheap; Whisper-translate needs its decoder and runs only
  for a language someone reads), so every offered language's transcript is complete. Where a
  route has no text backend, the lines nobody read are a gap, and the first reader of that
  language is told so.
- Drafts, only for languages someone reads, show each speaker's open sentence so far,
  translated as one text under its first segment, until its final replaces them
  (engine/translation/drafts.py, :class:`SentenceDrafts`; a route with no text backend
  drafts from the sentence's speech). Drafts never wait behind finals.

Both translate through :class:`engine.translation.calls.TranslationCalls`, which applies the
presenter's glossary.

Corrections (engine/editing.py): a person's correction of a source final reaches the stage
through :meth:`SessionTranslator.correct`; a sentence not yet translated is translated with
the corrected text, and a translation final already published is made again
(engine/translation/corrections.py, module docstring).

Each speaker's open sentence, and the pause that closes it, are kept by
engine/translation/open_sentences.py; each lane's finals queue, its overflow policy (finals
are never dropped; a backlog degrades to the draft backend) and what a backend failure
publishes are in engine/translation/finals.py (module docstring).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Iterable, Mapping

import numpy as np

from engine import languages
from engine.events import Caption, ErrorEvent
from engine.recognition.vad import NextSpeech
from engine.revisions import Remake
from engine.translation.backends import TargetPlan, WhisperTranslate
from engine.translation.calls import TranslationCalls
from engine.translation.config import TranslationConfig, TranslationStats
from engine.translation.corrections import Corrections, Remakes
from engine.translation.drafts import Publish, SentenceDrafts
from engine.translation.finals import SentenceFinals
from engine.translation.lane import ClosedSentence, Lane, PendingDraft, log_crash
from engine.translation.open_sentences import OpenSentences
from engine.translation.sentences import Sentence
from engine.translation.text import Glossary


class SessionTranslator:
    """Translates one source language's captions of a session into its target languages."""

    def __init__(
        self,
        source: str,
        publish: Publish,
        plans: Mapping[str, TargetPlan],
        *,
        whisper_translate: WhisperTranslate | None = None,
        whisper_drafts: WhisperTranslate | None = None,
        glossary: Glossary | Mapping[str, Mapping[str, str]] | None = None,
        config: TranslationConfig | None = None,
    ) -> None:
        self.source = languages.normalise(source)
        self._publish = publish
        self._lanes = {
            languages.normalise(t): Lane(languages.normalise(t), p) for t, p in plans.items()
        }
        self.config = config or TranslationConfig()
        self.stats = TranslationStats()
        self._calls = TranslationCalls(
            self.config,
            self.stats,
            whisper=whisper_translate,
            whisper_drafts=whisper_drafts,
            glossary=glossary,
        )
        keeps_audio = any(plan.route.speech_final for plan in plans.values())
        rules = self.config.speech_sentences if keeps_audio else self.config.sentences
        self._corrections = Corrections(self.config, keeps_audio=keeps_audio)
        self._remakes = Remakes(publish, self._calls, self._corrections)
        self._sentences = OpenSentences(rules, self.config.context_chars, self._enqueue)
        self._drafts = SentenceDrafts(
            publish, self._calls, self._sentences.by_speaker, self.config, self.stats
        )
        self._finals = SentenceFinals(
            self.source,
            publish,
            self._calls,
            self._corrections,
            self._remakes,
            self.config,
            self.stats,
        )
        self._closed = False

    @property
    def languages(self) -> frozenset[str]:
        """The target languages someone reads now."""
        return frozenset(t for t, lane in self._lanes.items() if lane.reading)

    @property
    def targets(self) -> frozenset[str]:
        """Every target language this stage translates finals into."""
        return frozenset(self._lanes)

    def set_languages(self, targets: Iterable[str]) -> None:
        """Someone reads exactly ``targets`` from now on (the union of what listeners and the
        presenter selected): those get drafts and the route's best final backend. Call it on
        the event loop (it starts the lanes' tasks)."""
        wanted = {languages.normalise(code) for code in targets}
        self._start()
        for target, lane in self._lanes.items():
            if target in wanted and not lane.reading:
                lane.reading = True
                if lane.gap:
                    lane.gap = False
                    self._spawn(self._report_gap(lane))
            elif target not in wanted and lane.reading:
                lane.reading = False
                lane.pending.clear()

    async def translate_text(self, target: str, text: str) -> str:
        """``text`` translated into ``target`` by the route's text backend (its final one,
        else its draft one); "" when the route has none (a question for the moderator)."""
        lane = self._lanes.get(languages.normalise(target))
        if lane is None:
            return ""
        backend = lane.plan.final or lane.plan.draft
        if backend is None:
            return ""
        return await self._calls.translate_text(backend, lane.target, text)

    def set_glossary(self, glossary: Mapping[str, Mapping[str, str]]) -> None:
        """Replace the presenter's glossary; applies to every translation from now on."""
        self._calls.set_glossary(glossary)

    def correct(self, caption: Caption, remakes: Iterable[Remake] = ()) -> None:
        """A person corrected the source final ``caption`` (``rev`` > 0): a sentence not
        translated yet takes the corrected text; each of ``remakes`` (the published
        translation finals covering it, engine/revisions.py) is made again in its lane."""
        self._corrections.learn(caption)
        self._start()
        for remake in remakes:
            lane = self._lanes.get(remake.line.lang)
            if lane is not None and not self._closed:
                self._remakes.queue(lane, self._corrections.redo(remake, caption.text))

    def source_text(self, sentence: Sentence) -> str:
        """The sentence's source text with every correction made to it so far."""
        return self._corrections.source_text(sentence)

    async def on_source(
        self,
        caption: Caption,
        audio: np.ndarray | None = None,
        *,
        whole: bool = False,
        after: NextSpeech | None = None,
    ) -> None:
        """Take the next source caption (in order); ``audio`` is the segment's 16 kHz audio,
        given with finals. ``whole``: the final is a sentence of its own (an accepted
        question), closed at once whatever the rules wait for. ``after``: what the VAD had
        heard after a final when it was made (engine/translation/sentences.py). Returns at
        once: translation runs in the lanes' tasks."""
        if not caption.source or self._closed:
            return
        self._start()
        now = time.perf_counter()
        if not caption.is_final:
            self._sentences.hear(caption)
            for lane in self._lanes.values():
                self._drafts.want(lane, PendingDraft(caption, now, audio=audio))
            return
        if not self._sentences.add(caption, audio, whole=whole, after=after):
            return
        # The open sentence shows translated drafts of its refined source until its final.
        refined = Caption(
            segment=caption.segment,
            lang=caption.lang,
            source=True,
            state="draft",
            text=caption.text,
            start=caption.start,
            end=caption.end,
            stable=len(caption.text),
        )
        for lane in self._lanes.values():
            self._drafts.want(lane, PendingDraft(refined, now, refined=True))

    def on_silence(self, final: Caption, after: NextSpeech | None) -> bool:
        """What the VAD has heard since ``final``, the last source final passed in, while the
        pause after it is timed (:meth:`OpenSentences.on_silence`: a silence already too long
        for its sentence to go on closes it now; docs/metrics.md, "Translation / Sentences
        closed by the silence"). Whether the pause is still timed, so worth telling again."""
        return self._sentences.on_silence(final, after)

    async def drain(self) -> None:
        """Close the open sentences (the stream stopped) and wait until every sentence queued
        so far has been published."""
        self._sentences.close_all()
        await asyncio.gather(*(lane.finals.join() for lane in self._lanes.values()))
        redoing = [lane.redoing for lane in self._lanes.values() if lane.redoing is not None]
        await asyncio.gather(*redoing, return_exceptions=True)

    async def close(self) -> None:
        """Finish the queued finals, cancel drafts, stop every lane's tasks."""
        self._closed = True
        self._sentences.stop()
        for lane in self._lanes.values():
            lane.reading = False
            lane.pending.clear()
            if lane.tasks:
                lane.finals.put_nowait(None)
        draft_tasks = [lane.tasks[0] for lane in self._lanes.values() if lane.tasks]
        for task in draft_tasks:
            task.cancel()
        final_tasks = [t for lane in self._lanes.values() for t in lane.tasks[1:]]
        redoing = [lane.redoing for lane in self._lanes.values() if lane.redoing is not None]
        await asyncio.gather(*final_tasks, *draft_tasks, *redoing, return_exceptions=True)

    @property
    def drafts_from_speech(self) -> bool:
        """Whether a source draft's audio is of use: someone reads a language this stage
        drafts from speech. Otherwise the stream need not hand it over."""
        return self._drafts.from_speech(self._lanes.values())

    def _enqueue(self, sentence: Sentence) -> None:
        """A sentence closed: each lane's finals queue takes it."""
        self.stats.sentences += 1
        self._corrections.remember(sentence)
        closed = ClosedSentence(sentence, time.perf_counter())
        for lane in self._lanes.values():
            self.stats.drafts_late += lane.cover(sentence.segments)
            lane.finals.put_nowait(closed)

    # -- lanes ------------------------------------------------------------------------------

    def _start(self) -> None:
        for lane in self._lanes.values():
            if not lane.tasks and not self._closed:
                lane.tasks = [
                    asyncio.create_task(self._drafts.run(lane), name=f"mt-draft-{lane.target}"),
                    asyncio.create_task(self._finals.run(lane), name=f"mt-final-{lane.target}"),
                ]
                for task in lane.tasks:
                    task.add_done_callback(log_crash)

    def _spawn(self, work: Awaitable[None]) -> None:
        task = asyncio.ensure_future(work)
        task.add_done_callback(log_crash)

    async def _report_gap(self, lane: Lane) -> None:
        name = languages.get(lane.target).english_name if languages.is_known(lane.target) else ""
        await self._publish(
            ErrorEvent(
                f"Earlier lines have no {name or lane.target} translation: this server "
                f"translates {self.source} into {lane.target} from speech, only while "
                "someone reads it."
            )
        )
