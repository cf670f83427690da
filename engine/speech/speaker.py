"""Speaking a language's translations (:class:`LanguageSpeaker`), and the rules of the speech
stage (engine/speech/stage.py): final translations in, spoken audio (:class:`SpeechAudio`) out.

Speech is made once per language that at least one listener hears with audio on (the hub's
``wanted_speech``), never once per listener, and only for finals: a draft is never spoken.
The session hands over translations only (the source language is heard from the speaker).
Per language a :class:`LanguageSpeaker` speaks its finals in order, piece by piece: a final is
split into sentences, long sentences at clauses, and the first sentence begins with a short
lead followed by growing pieces (engine/speech/pieces.py). Each piece is synthesised and
published on its own, so the first audio leaves before the rest of the sentence is
synthesised. How long the lead is follows the voice's learnt cost (engine/speech/costs.py):
a final's first piece should take about ``first_audio_s`` to synthesise.

Keeping pace with the speaker (:class:`PaceConfig`): the speaker models the listener's
playback clock (audio plays in real time from when it is sent) and synthesises the next piece
only when less than ``lead_s`` plus the piece's expected synthesis time is still waiting to
play, so the text not yet spoken stays here where it can be sped up or skipped, not in the
listener's buffer, and a slow voice still starts each piece in time. Before each piece it
estimates how far behind the live speaker the voice is (audio still to play + text still
queued, at the voice's normal speed):

- over ``speedup_from_s`` it speaks faster, rising linearly to ``max_rate`` at ``bound_s``;
- over ``bound_s`` it skips to the newest final: the older finals' queued pieces are dropped and
  the next audio header says how many (``skipped``) so the listener can be told.

Falling back (per sentence): a language whose voice is natural may have a fast fallback
(espeak-ng, in a pool of its own). At each sentence's first piece the speaker computes the
*gap*: the voice's expected synthesis time for that piece minus the audio still waiting to
play, the silence a listener would hear before the sentence. Over ``fallback_gap_s`` the whole
sentence is spoken by the fallback instead. The gap grows when synthesis slows (a busy
machine, several languages sharing the ``tts`` pool), since the cost is measured in
wall-clock time; each sentence the fallback speaks relaxes the voice's learnt cost
(``fallback_relax``), so the voice is tried again. A natural call that has not answered once
the listener would wait ``fallback_gap_s`` (a sudden load) is given up on: the fallback speaks
that piece and the rest of its sentence, the call finishes on its own (the fallback speaks
until it has), and its time is learnt. Until a natural voice has loaded (the low-priority
pool may take a while on a busy machine), its fast voice speaks every sentence. Each audio
header names the kind of voice that spoke it (``voice``).

The speakers of a panel get different voices where the voice has several (``variants``: a
Kokoro style, an espeak-ng variant), in order of first appearance; one queue per language
keeps the speech in the order it was said.

Foresight (:meth:`LanguageSpeaker.foresee`): an idle natural voice has nothing to do while
the speaker is still in a sentence, and its first piece is what the listener waits for once
the final comes. So the translated drafts of a sentence's first segment are cut into pieces
as a final would be, and once a draft holds more than its lead, that lead is synthesised
ahead; the final's first piece takes the audio when it reads the same (same words, same
voice; made at normal speed, so a final already behind speaks its lead so and the rest
faster), and its first audio leaves at once. One such call a sentence (each
takes a little of the captions' cores: docs/metrics.md, "Natural voices / Foresight"), only
while nothing is queued; one that does not match is simply not used.

A corrected final (``rev`` > 0, a person's correction re-made into this language) replaces
the queued pieces of its segment when none of them has been spoken yet, so the line is
spoken corrected; once any piece of it was synthesised it is not spoken again.

Overflow policy of the text queue: at most ``max_pieces`` pieces wait; beyond that the oldest
are dropped and counted as skipped. Synthesis runs in the ``tts`` worker pool (the one thread
crossing, engine/workers.py; one thread, below recognition in priority); a saturated pool is
retried after a short wait.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from engine.events import Caption, ErrorEvent, SpeechAudio
from engine.speech.config import PaceConfig, Publish, Run, SpeakerStats
from engine.speech.costs import SynthesisCosts
from engine.speech.pieces import speech_pieces
from engine.speech.voice import LanguageVoices, Synthesizer, VoiceSource
from engine.workers import Saturated

__all__ = ["LanguageSpeaker"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class _Piece:
    segment: int
    sentence: int
    """Running sentence number in this language (skipping keeps a whole sentence)."""
    text: str
    last: bool
    """The last piece of its caption."""
    queued: float
    variant: int = 0
    """Which of the voice's voices speaks it (one per speaker of a panel)."""


@dataclass(frozen=True, slots=True)
class _Foreseen:
    """A sentence's lead synthesised from a translated draft of ``segment`` before its final
    (module docstring, "Foresight"), and the lead length its pieces were cut with."""

    segment: int
    text: str
    variant: int
    lead_chars: int
    voice: Synthesizer
    call: asyncio.Future[bytes | None]

    def serves(self, piece: _Piece, voice: Synthesizer) -> bool:
        """Whether ``piece`` is this lead, in this voice (made at the normal speed: a
        final already behind speaks its lead so, and the rest faster)."""
        return (
            piece.segment,
            piece.text,
            piece.variant,
        ) == (self.segment, self.text, self.variant) and voice is self.voice


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
        costs: SynthesisCosts | None = None,
        run_fast: Run | None = None,
    ) -> None:
        self.lang = lang
        self._run_fast = run_fast or run
        """Where fast voices run: a pool of their own, never behind a natural voice."""
        self._abandoned: set[asyncio.Future[bytes | None]] = set()
        """Natural-voice calls given up on, still finishing in their pool."""
        self._on_first_audio = on_first_audio
        self._voice_source = voice
        self._run = run
        self._publish = publish
        self.config = config or PaceConfig()
        self._clock = clock
        self._costs = costs if costs is not None else SynthesisCosts()
        self._voices: LanguageVoices | None = None
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
        self._sentence = 0
        """The sentence being spoken, and the voice chosen for it."""
        self._sentence_voice: Synthesizer | None = None
        self._drafted: dict[int, int] = {}
        """Segment -> variant of each segment with translated drafts and no final yet: a
        variant's lowest is the head of its open sentence."""
        self._foreseen: _Foreseen | None = None
        self.stats = stats if stats is not None else SpeakerStats()
        self._task = asyncio.create_task(self._loop(), name=f"speech-{lang}")

    def say(self, caption: Caption, variant: int = 0) -> None:
        """Queue a final caption to be spoken (never waits), in the voice's ``variant``."""
        if self._closed or not caption.text.strip():
            return
        now = self._clock()
        last = max(caption.covers)
        for segment in [s for s, v in self._drafted.items() if v == variant and s <= last]:
            del self._drafted[segment]
        lead = self.lead_chars()
        foreseen = self._foreseen
        if foreseen is not None and foreseen.segment == caption.segment:
            lead = foreseen.lead_chars  # cut as the draft was, so that its lead can serve
        sentences = speech_pieces(caption.text, self.config.clause_chars, lead)
        for s_index, sentence in enumerate(sentences):
            self._sentences += 1
            for p_index, text in enumerate(sentence):
                last = s_index == len(sentences) - 1 and p_index == len(sentence) - 1
                self._queue.append(
                    _Piece(caption.segment, self._sentences, text, last, now, variant)
                )
        self._first_pending.setdefault(caption.segment, now)
        self._idle.clear()
        while len(self._queue) > self.config.max_pieces:
            self._queue.popleft()
            self._dropped += 1
        self._wake.set()

    def foresee(self, caption: Caption, variant: int = 0) -> None:
        """A translated draft: synthesise its sentence's lead ahead if the natural voice is
        idle and the draft is its sentence's first segment with more than a lead of text
        (module docstring, "Foresight"); never waits."""
        if self._closed or not self.config.foresight or not caption.text.strip():
            return
        if caption.segment in self._started:
            return
        self._drafted.setdefault(caption.segment, variant)
        if len(self._drafted) > SEGMENTS_REMEMBERED:  # drafts whose final never came
            del self._drafted[min(self._drafted)]
        head = min(s for s, v in self._drafted.items() if v == variant)
        voices = self._voices
        known = self._foreseen
        if (
            head != caption.segment
            or voices is None
            or voices.loading is not None
            or not self._idle.is_set()
            or self._abandoned  # the pool still finishes a call nobody wants
            # one call at a time, and one a sentence: each costs the captions' cores a little
            or (known is not None and (known.segment == head or not known.call.done()))
        ):
            return
        lead_chars = self.lead_chars()
        sentences = speech_pieces(caption.text, self.config.clause_chars, lead_chars)
        if not sentences or len(sentences[0]) < 2:
            return  # no lead cut off yet: its last words may still grow
        text = sentences[0][0]
        if self._falls_back(voices, text):
            return  # the final would be spoken by the fallback
        piece = _Piece(caption.segment, 0, text, False, self._clock(), variant)
        call = asyncio.ensure_future(self._call(voices.voice, piece, 1.0))
        self._foreseen = _Foreseen(caption.segment, text, variant, lead_chars, voices.voice, call)
        self.stats.foreseen += 1

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
            _Piece(segment, first.sentence, text, False, first.queued, first.variant)
            for sentence in speech_pieces(caption.text, self.config.clause_chars, self.lead_chars())
            for text in sentence
        ]
        if pieces:
            pieces[-1] = _Piece(
                segment, first.sentence, pieces[-1].text, True, first.queued, first.variant
            )
        self._queue = deque([*kept[: places[0]], *pieces, *kept[places[0] :]])
        return True

    @property
    def queued(self) -> int:
        return len(self._queue)

    def lead_chars(self) -> int:
        """How long a final's first piece may be: what the voice synthesises in about
        ``first_audio_s``, within ``min_lead_chars`` and ``lead_chars``."""
        c = self.config
        per_char = self._per_char(self._voices.voice if self._voices else None)
        fits = int(c.first_audio_s / per_char) if per_char > 0 else c.lead_chars
        return max(c.min_lead_chars, min(c.lead_chars, fits))

    def _per_char(self, voice: Synthesizer | None) -> float:
        name = voice.name if voice is not None else ""
        return self._costs.per_char(name, self.config.cost_prior_s)

    def _expected(self, voice: Synthesizer, text: str) -> float:
        return self._per_char(voice) * len(text)

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
        if self._foreseen is not None:
            self._abandoned.add(self._foreseen.call)
        for call in list(self._abandoned):
            call.cancel()  # its pool still finishes the call; the result is not wanted
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task

    async def drain(self) -> None:
        """Wait until everything queued has been spoken (tests and benches)."""
        if not self._task.done():
            await self._idle.wait()

    def _skip_to_newest(self) -> int:
        """Drop the queued pieces of every final before the newest: a final is never cut
        in the middle (one of a whole sentence can hold more speech than ``bound_s``)."""
        newest = self._queue[-1].segment
        dropped = 0
        while self._queue and self._queue[0].segment != newest:
            self._queue.popleft()
            dropped += 1
        return dropped

    async def _loop(self) -> None:
        voices = await self._voice_source(self.lang)
        if voices is None:
            log.warning("no voice for %s: its listeners get captions only", self.lang)
            self._closed = True
            self._queue.clear()
            self._idle.set()
            return
        self._voices = voices
        while not self._closed:
            voices = self._voices  # the natural voice may have finished loading
            if not self._queue:
                self._idle.set()
                self._wake.clear()
                await self._wake.wait()
                continue
            head = self._queue[0]
            voice = self._voice_of(head.sentence) or voices.voice
            lead = self.config.lead_s + self._expected(voice, head.text)
            ahead = self._play_until - self._clock()
            if ahead > lead:
                await asyncio.sleep(ahead - lead)
                continue
            behind = self.behind()
            self.stats.max_behind = max(self.stats.max_behind, behind)
            if behind > self.config.bound_s:
                self._dropped += self._skip_to_newest()
            rate = self.rate_for(self.behind())
            piece = self._queue.popleft()
            if not self._started or self._started[-1] != piece.segment:
                self._started.append(piece.segment)
            await self._speak(self._choose_voice(piece, voices), piece, rate)

    def _voice_of(self, sentence: int) -> Synthesizer | None:
        """The voice already chosen for ``sentence`` (None before its first piece)."""
        return self._sentence_voice if sentence == self._sentence else None

    def gap(self, voice: Synthesizer, text: str) -> float:
        """Seconds of silence the listener would hear before ``voice`` has spoken ``text``:
        its expected synthesis time minus the audio still waiting to play."""
        waiting = max(0.0, self._play_until - self._clock())
        return self._expected(voice, text) - waiting

    def _choose_voice(self, piece: _Piece, voices: LanguageVoices) -> Synthesizer:
        """The voice of ``piece``: its sentence's, chosen at the sentence's first piece
        (module docstring, "Falling back")."""
        chosen = self._voice_of(piece.sentence)
        if chosen is not None:
            return chosen
        chosen = voices.voice
        if voices.loading is not None:
            return self._while_loading(piece, voices)
        if voices.fallback is not None and self._falls_back(voices, piece.text):
            chosen = voices.fallback
            self._costs.relax(
                voices.voice.name, self.config.fallback_relax, self.config.cost_prior_s
            )
        self._sentence, self._sentence_voice = piece.sentence, chosen
        return chosen

    def _falls_back(self, voices: LanguageVoices, text: str) -> bool:
        """Whether a sentence beginning with ``text`` goes to the fallback: the voice's
        pool is still busy with a call given up on, or the listener would wait too long."""
        return voices.fallback is not None and (
            bool(self._abandoned) or self.gap(voices.voice, text) > self.config.fallback_gap_s
        )

    def _while_loading(self, piece: _Piece, voices: LanguageVoices) -> Synthesizer:
        """A sentence's voice while the natural voice loads: the fast one, until it is
        ready (then the natural voice, with the fast one as its fallback, from now on)."""
        ready = voices.ready()
        if ready is not voices:
            self._voices = ready
            return self._choose_voice(piece, ready)
        self._sentence, self._sentence_voice = piece.sentence, voices.voice
        return voices.voice

    async def _synthesize(
        self, voice: Synthesizer, piece: _Piece, rate: float
    ) -> tuple[Synthesizer, bytes] | None:
        """Synthesise ``piece``; a natural voice that has not answered once the listener
        would have waited ``fallback_gap_s`` is left to finish on its own, and the piece,
        and the rest of its sentence, are spoken by the fallback (module docstring)."""
        fallback = self._voices.fallback if self._voices is not None else None
        foreseen, self._foreseen = self._foreseen, None
        if foreseen is not None and foreseen.serves(piece, voice):
            self.stats.foreseen_spoken += 1
            call = foreseen.call
        else:
            if foreseen is not None and not foreseen.call.done():
                self._abandoned.add(foreseen.call)  # unused, still finishing in its pool
                foreseen.call.add_done_callback(self._abandoned.discard)
            call = asyncio.ensure_future(self._call(voice, piece, rate))
        if fallback is None or voice is fallback:
            pcm = await call
            return None if pcm is None else (voice, pcm)
        patience = max(0.0, self._play_until - self._clock()) + self.config.fallback_gap_s
        started = self._clock()
        done, _ = await asyncio.wait({call}, timeout=patience)
        if call in done:
            pcm = call.result()
            return None if pcm is None else (voice, pcm)
        self._abandoned.add(call)
        call.add_done_callback(self._abandoned.discard)
        # At least this slow: the sentences after this one choose by it.
        self._costs.learn(voice.name, len(piece.text), self._clock() - started)
        self.stats.stalls += 1
        self._sentence_voice = fallback
        pcm = await self._call(fallback, piece, rate)
        return None if pcm is None else (fallback, pcm)

    async def _call(self, voice: Synthesizer, piece: _Piece, rate: float) -> bytes | None:
        """One synthesis in the voice's pool (fast voices have their own, so that they never
        wait behind a natural one; retried while a pool is saturated); its wall-clock cost
        is learnt. None if the voice failed (said once per failing run)."""
        run = self._run_fast if voice.kind == "fast" else self._run
        started = self._clock()
        while True:
            try:
                pcm = await run(voice.synthesize, piece.text, rate, piece.variant)
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
                return None
        self._failing = False
        assert isinstance(pcm, bytes)
        took = self._clock() - started
        self._costs.learn(voice.name, len(piece.text), took)
        self.stats.synth_seconds += took
        return pcm

    async def _speak(self, voice: Synthesizer, piece: _Piece, rate: float) -> None:
        spoken = await self._synthesize(voice, piece, rate)
        if spoken is None:
            return
        voice, pcm = spoken
        voices = self._voices
        if voices is not None and (voice is voices.fallback or voices.loading is not None):
            self.stats.fallback_pieces += 1  # spoken by the fast voice in a natural one's place
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
            voice=voice.kind,
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
