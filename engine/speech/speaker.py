"""One session's speech stage: final translations in, spoken audio (:class:`SpeechAudio`) out.

Speech is made once per language that at least one listener hears with audio on (the hub's
``wanted_speech``), never once per listener, and only for finals: a draft is never spoken.
The session hands over translations only (the source language is heard from the speaker).
Per language a :class:`LanguageSpeaker` speaks its finals in order, piece by piece: a final is
split into sentences and long sentences at clauses (:func:`speech_pieces`), and each piece is
synthesised and published on its own, so the first audio leaves before the rest of the
sentence is synthesised.

Keeping pace with the speaker (:class:`PaceConfig`): the speaker models the listener's
playback clock (audio plays in real time from when it is sent) and synthesises the next piece
only when less than ``lead_s`` of audio is still waiting to play, so the text not yet spoken
stays here where it can be sped up or skipped, not in the listener's buffer. Before each piece
it estimates how far behind the live speaker the voice is (audio still to play + text still
queued, at the voice's normal speed):

- over ``speedup_from_s`` it speaks faster, rising linearly to ``max_rate`` at ``bound_s``;
- over ``bound_s`` it skips to the newest sentence: the older queued pieces are dropped and
  the next audio header says how many (``skipped``) so the listener can be told.

A corrected final (``rev`` > 0, a person's correction re-made into this language) replaces
the queued pieces of its segment when none of them has been spoken yet, so the line is
spoken corrected; once any piece of it was synthesised it is not spoken again.

Overflow policy of the text queue: at most ``max_pieces`` pieces wait; beyond that the oldest
are dropped and counted as skipped. Synthesis runs in the ``tts`` worker pool (the one thread
crossing, engine/workers.py); a saturated pool is retried after a short wait.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Protocol

from engine.events import Caption, ErrorEvent, Event, SpeechAudio
from engine.workers import Saturated

log = logging.getLogger(__name__)

Publish = Callable[[Event], Awaitable[object]]


class Synthesizer(Protocol):
    """A voice: text in, 16-bit mono PCM out (blocking; run it in a worker pool)."""

    name: str
    sample_rate: int

    def synthesize(self, text: str, rate: float = 1.0) -> bytes:
        """Speak ``text``; ``rate`` > 1 speaks faster (1.0 is the voice's normal speed)."""
        ...


VoiceSource = Callable[[str], Awaitable[Synthesizer | None]]
"""Gives the (loaded) voice for a language, or None if no voice speaks it."""


class VoiceProvider(Protocol):
    """The voices of a process (:class:`models.voices.VoiceBank`)."""

    def languages(self) -> frozenset[str]:
        """Languages some voice speaks."""
        ...

    def load(self, lang: str) -> Synthesizer | None:
        """The loaded voice for ``lang`` (None if none speaks it); blocking, thread-safe."""
        ...


Run = Callable[..., Awaitable[object]]
"""A worker pool's ``run``: where blocking synthesis happens."""


@dataclass(frozen=True, slots=True)
class PaceConfig:
    bound_s: float = 6.0
    """Skip to the newest sentence when the voice is further behind than this."""
    speedup_from_s: float = 3.0
    """Start speaking faster when the voice is further behind than this."""
    max_rate: float = 1.3
    """The fastest speed used (1.3 is still natural for every voice tried)."""
    lead_s: float = 1.0
    """Synthesise the next piece when less than this much audio is still waiting to play."""
    chars_per_second: float = 15.0
    """A voice's normal speed before it has spoken (then learnt from what it says), to
    estimate how long queued text takes to speak."""
    max_pieces: int = 64
    clause_chars: int = 80
    """Sentences longer than this are split at clauses."""


_SENTENCE_END = re.compile(r"(?<=[.!?…。！？])\s+")
_CLAUSE_END = re.compile(r"(?<=[,;:，；：、—])\s+")
_MIN_CLAUSE = 24
_MIN_LEAD = 12


def speech_pieces(text: str, clause_chars: int = 80, lead_chars: int = 48) -> list[list[str]]:
    """Split ``text`` into sentences, and each sentence longer than ``clause_chars`` into
    clauses (short clauses are joined to the next): a list of sentences, each a list of
    pieces to synthesise one at a time.

    The first piece is kept short (at most about ``lead_chars``): synthesis time grows with
    length, and the first piece is what the listener waits for. A first sentence longer than
    that is cut at its first clause, or failing one, at a word boundary; the voice's pause
    there is the price of audio starting sooner."""
    sentences = [s.strip() for s in _SENTENCE_END.split(text.strip()) if s.strip()]
    result: list[list[str]] = []
    for index, sentence in enumerate(sentences):
        lead: list[str] = []
        if index == 0 and len(sentence) > lead_chars:
            lead, sentence = _split_lead(sentence, lead_chars)
        if len(sentence) <= clause_chars:
            result.append([*lead, sentence])
            continue
        pieces: list[str] = []
        pending = ""
        for clause in _CLAUSE_END.split(sentence):
            pending = f"{pending} {clause}".strip()
            if len(pending) >= _MIN_CLAUSE:
                pieces.append(pending)
                pending = ""
        if pending:
            if pieces and len(pending) < _MIN_CLAUSE:
                pieces[-1] = f"{pieces[-1]} {pending}"
            else:
                pieces.append(pending)
        result.append([*lead, *pieces])
    return result


def _split_lead(sentence: str, lead_chars: int) -> tuple[list[str], str]:
    """Cut a short first piece off ``sentence`` (see :func:`speech_pieces`)."""
    for match in _CLAUSE_END.finditer(sentence):
        if _MIN_LEAD <= match.start() <= lead_chars + 16:
            return [sentence[: match.start()]], sentence[match.end() :]
        if match.start() > lead_chars + 16:
            break
    cut = sentence.rfind(" ", _MIN_LEAD, lead_chars)
    if cut < 0 or len(sentence) - cut < _MIN_LEAD:
        return [], sentence
    return [sentence[:cut]], sentence[cut + 1 :]


@dataclass(frozen=True, slots=True)
class _Piece:
    segment: int
    sentence: int
    """Running sentence number in this language (skipping keeps a whole sentence)."""
    text: str
    last: bool
    """The last piece of its caption."""
    queued: float


@dataclass(slots=True)
class SpeakerStats:
    pieces: int = 0
    audio_seconds: float = 0.0
    synth_seconds: float = 0.0
    skipped: int = 0
    failures: int = 0
    max_behind: float = 0.0
    first_audio: deque[float] = field(default_factory=lambda: deque(maxlen=512))
    """Seconds from a final being handed over to its first audio being published."""


SEGMENTS_REMEMBERED = 256
"""Spoken segments remembered, so that a late correction of one is not spoken again."""


class LanguageSpeaker:
    """Speaks one language's finals in order, keeping pace (module docstring)."""

    def __init__(
        self,
        lang: str,
        voice: VoiceSource,
        run: Run,
        publish: Publish,
        config: PaceConfig | None = None,
        clock: Callable[[], float] = time.monotonic,
        stats: SpeakerStats | None = None,
        on_first_audio: Callable[[str, float], None] | None = None,
    ) -> None:
        self.lang = lang
        self._on_first_audio = on_first_audio
        self._voice_source = voice
        self._run = run
        self._publish = publish
        self.config = config or PaceConfig()
        self._clock = clock
        self._queue: deque[_Piece] = deque()
        self._wake = asyncio.Event()
        self._sentences = 0
        self._dropped = 0
        self._play_until = 0.0
        self._closed = False
        self._first_pending: dict[int, float] = {}
        self._idle = asyncio.Event()
        self._idle.set()
        self._cps = self.config.chars_per_second
        self._failing = False
        self._started: deque[int] = deque(maxlen=SEGMENTS_REMEMBERED)
        """Segments of which a piece was taken to be spoken (newest last)."""
        self.stats = stats if stats is not None else SpeakerStats()
        self._task = asyncio.create_task(self._loop(), name=f"speech-{lang}")

    def say(self, caption: Caption) -> None:
        """Queue a final caption to be spoken (never waits)."""
        if self._closed or not caption.text.strip():
            return
        now = self._clock()
        sentences = speech_pieces(caption.text, self.config.clause_chars)
        for s_index, sentence in enumerate(sentences):
            self._sentences += 1
            for p_index, text in enumerate(sentence):
                last = s_index == len(sentences) - 1 and p_index == len(sentence) - 1
                self._queue.append(_Piece(caption.segment, self._sentences, text, last, now))
        self._first_pending.setdefault(caption.segment, now)
        self._idle.clear()
        while len(self._queue) > self.config.max_pieces:
            self._queue.popleft()
            self._dropped += 1
        self._wake.set()

    def correct(self, caption: Caption) -> bool:
        """A corrected final: its text replaces the queued pieces of its segment if none of
        them was spoken yet (True); otherwise it is not spoken (False)."""
        segment = caption.segment
        if self._closed or segment in self._started:
            return False
        places = [i for i, piece in enumerate(self._queue) if piece.segment == segment]
        if not places:
            return False
        first = self._queue[places[0]]
        kept = [piece for piece in self._queue if piece.segment != segment]
        pieces = [
            _Piece(segment, first.sentence, text, False, first.queued)
            for sentence in speech_pieces(caption.text, self.config.clause_chars)
            for text in sentence
        ]
        if pieces:
            pieces[-1] = _Piece(segment, first.sentence, pieces[-1].text, True, first.queued)
        self._queue = deque([*kept[: places[0]], *pieces, *kept[places[0] :]])
        return True

    @property
    def queued(self) -> int:
        return len(self._queue)

    def behind(self) -> float:
        """Seconds the voice is behind: audio still to play plus queued text to speak."""
        waiting = max(0.0, self._play_until - self._clock())
        chars = sum(len(p.text) for p in self._queue)
        return waiting + chars / self._cps

    def rate_for(self, behind: float) -> float:
        c = self.config
        if behind <= c.speedup_from_s:
            return 1.0
        share = (behind - c.speedup_from_s) / max(c.bound_s - c.speedup_from_s, 1e-6)
        return round(min(c.max_rate, 1.0 + share * (c.max_rate - 1.0)), 3)

    async def close(self) -> None:
        """Stop speaking: drop what is queued and end the task."""
        self._closed = True
        self._queue.clear()
        self._wake.set()
        self._idle.set()
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task

    async def drain(self) -> None:
        """Wait until everything queued has been spoken (tests and benches)."""
        if not self._task.done():
            await self._idle.wait()

    def _skip_to_newest(self) -> int:
        newest = self._queue[-1].sentence
        dropped = 0
        while self._queue and self._queue[0].sentence != newest:
            self._queue.popleft()
            dropped += 1
        return dropped

    async def _loop(self) -> None:
        voice = await self._voice_source(self.lang)
        if voice is None:
            log.warning("no voice for %s: its listeners get captions only", self.lang)
            self._closed = True
            self._queue.clear()
            self._idle.set()
            return
        while not self._closed:
            if not self._queue:
                self._idle.set()
                self._wake.clear()
                await self._wake.wait()
                continue
            ahead = self._play_until - self._clock()
            if ahead > self.config.lead_s:
                await asyncio.sleep(ahead - self.config.lead_s)
                continue
            behind = self.behind()
            self.stats.max_behind = max(self.stats.max_behind, behind)
            if behind > self.config.bound_s:
                self._dropped += self._skip_to_newest()
            rate = self.rate_for(self.behind())
            piece = self._queue.popleft()
            if not self._started or self._started[-1] != piece.segment:
                self._started.append(piece.segment)
            await self._speak(voice, piece, rate)

    async def _speak(self, voice: Synthesizer, piece: _Piece, rate: float) -> None:
        started = self._clock()
        while True:
            try:
                pcm = await self._run(voice.synthesize, piece.text, rate)
                break
            except Saturated:
                await asyncio.sleep(0.1)
            except Exception as exc:  # a voice failure: say so once per run, keep going
                self.stats.failures += 1
                log.exception("speech synthesis failed (%s)", self.lang)
                if not self._failing:
                    self._failing = True
                    message = f"spoken translation failed ({self.lang}): {type(exc).__name__}"
                    await self._publish(ErrorEvent(message))
                return
        self._failing = False
        assert isinstance(pcm, bytes)
        self.stats.synth_seconds += self._clock() - started
        skipped, self._dropped = self._dropped, 0
        self.stats.skipped += skipped
        audio = SpeechAudio(
            segment=piece.segment,
            lang=self.lang,
            sample_rate=voice.sample_rate,
            pcm=pcm,
            text=piece.text,
            last=piece.last,
            skipped=skipped,
            rate=rate,
        )
        await self._publish(audio)
        now = self._clock()
        first = self._first_pending.pop(piece.segment, None)
        if first is not None:
            self.stats.first_audio.append(now - first)
            if self._on_first_audio is not None:
                self._on_first_audio(self.lang, now - first)
        for segment in [s for s in self._first_pending if s < piece.segment]:
            del self._first_pending[segment]  # skipped before any audio
        self.stats.pieces += 1
        self.stats.audio_seconds += audio.duration
        if audio.duration > 0.2:  # learn the voice's normal speed (characters a second)
            cps = len(piece.text) / (audio.duration * rate)
            self._cps = 0.7 * self._cps + 0.3 * cps
        self._play_until = max(self._play_until, now) + audio.duration


class SessionSpeaker:
    """The speech stage of one session: a :class:`LanguageSpeaker` per language that some
    listener hears with audio on."""

    def __init__(
        self,
        voice: VoiceSource,
        run: Run,
        publish: Publish,
        config: PaceConfig | None = None,
        spoken: Iterable[str] = (),
        on_first_audio: Callable[[str, float], None] | None = None,
    ) -> None:
        self._voice = voice
        self._on_first_audio = on_first_audio
        self._run = run
        self._publish = publish
        self.config = config or PaceConfig()
        self._spoken = frozenset(spoken)
        """Languages a voice exists for (others are never started)."""
        self.speakers: dict[str, LanguageSpeaker] = {}
        self.stats: dict[str, SpeakerStats] = {}
        """Per language, over the whole session (a language's speaker may stop and restart
        as its audio listeners come and go)."""
        self._closing: set[asyncio.Task[None]] = set()

    def set_languages(self, langs: frozenset[str]) -> None:
        """Speak exactly ``langs`` (those with a voice) from now on."""
        wanted = {lang for lang in langs if lang in self._spoken}
        for lang in set(self.speakers) - wanted:
            task = asyncio.create_task(self.speakers.pop(lang).close())
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)
        for lang in wanted - set(self.speakers):
            self.speakers[lang] = LanguageSpeaker(
                lang,
                self._voice,
                self._run,
                self._publish,
                self.config,
                stats=self.stats.setdefault(lang, SpeakerStats()),
                on_first_audio=self._on_first_audio,
            )

    def on_final(self, caption: Caption) -> None:
        """Speak a translation final; a correction (``rev`` > 0) only replaces what is
        still unspoken of its line."""
        speaker = self.speakers.get(caption.lang)
        if speaker is None or not caption.is_final:
            return
        if caption.rev:
            speaker.correct(caption)
        else:
            speaker.say(caption)

    async def drain(self) -> None:
        for speaker in list(self.speakers.values()):
            await speaker.drain()

    async def close(self) -> None:
        for speaker in list(self.speakers.values()):
            await speaker.close()
        self.speakers.clear()
