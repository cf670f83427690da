"""The faster-whisper adapter behind :class:`engine.asr.Transcriber`."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from engine import languages
from engine.audio import SAMPLE_RATE, Samples
from engine.events import Word
from engine.recognition.asr import Decoded, DecodeOptions
from models.catalog import ModelError, ResolvedWhisper

log = logging.getLogger(__name__)


FRAMES_PER_SECOND = 100
FULL_WINDOW = 3000
"""Whisper's own window: 30 s of 10 ms mel frames."""


class FasterWhisperTranscriber:
    """A CTranslate2 Whisper model loaded once and shared by every session.

    Short-window decoding: Whisper pads every input to a 30 s window, so the encoder costs
    the same for 2 s of speech as for 30 s (0.3-0.5 s for tiny.en on 2 cores). When no word
    timing is asked for, this adapter encodes only the audio plus at least ``pad_seconds`` of
    silence, rounded up to ``bucket_seconds`` (CTranslate2 accepts any frame count up to
    3000): for a 6 s segment that is a 10 s window, about 8x less encoder time. The padding
    matters: with none, the decoder runs off the end of the audio into a loop.

    Threads: a decode runs on ``cpu_threads`` CTranslate2 threads, its encoder on
    ``encoder_threads``. On 2 cores one thread decodes fastest (tiny.en at beam 5: 3.7 ms a
    token, 14 ms with two threads), while the encoder gains from two (30 s: 0.20 s instead
    of 0.36; ``python -m bench threads``). CTranslate2 fixes the threads per loaded model,
    so with more encoder threads a second copy of the model (tiny.en 40 MB, base 75 MB) does
    the encoding.

    ``workers`` decodes may run at once, from as many Python threads (CTranslate2 keeps a
    replica of the decoder for each): two streams then decode on two cores. Encodes share
    the one encoder copy and take turns.
    """

    def __init__(
        self,
        resolved: ResolvedWhisper,
        *,
        cpu_threads: int = 1,
        workers: int = 1,
        encoder_threads: int = 2,
        compute_type: str = "int8",
        short_window: bool = True,
        pad_seconds: float = 3.0,
        bucket_seconds: float = 5.0,
    ) -> None:
        try:
            from faster_whisper import WhisperModel
        except ImportError as exc:  # pragma: no cover - a dependency of the project
            raise ModelError("faster-whisper is not installed: pip install faster-whisper") from exc
        self.name = resolved.label
        self.multilingual = resolved.multilingual
        self._model: Any = WhisperModel(
            resolved.model,
            device="cpu",
            compute_type=compute_type,
            cpu_threads=cpu_threads,
            num_workers=workers,
        )
        self.encoder_copy = encoder_threads > cpu_threads
        if self.encoder_copy:
            # faster-whisper encodes every window through this method.
            self._model.encode = _encoder(resolved.model, compute_type, encoder_threads)
        self.short_window = short_window
        self._pad_frames = int(pad_seconds * FRAMES_PER_SECOND)
        self._bucket_frames = int(bucket_seconds * FRAMES_PER_SECOND)

    def transcribe(self, audio: Samples, options: DecodeOptions) -> Decoded:
        """Words of ``audio``; with ``options.prefix`` (the text of the audio's first part),
        only the words after it.

        A prefix is forced as the decoder's first tokens, so the encoder hears its audio as
        context while only the words after it are generated. Each forced token costs a
        decoder step (0.17 -> 0.85 s of decoding at beam 5 for a 39-word prefix on 2 cores).
        Cheaper ways were measured and dropped (docs/metrics.md, "Refine context"): only the
        prefix's last words forced, the rest as the previous-text prompt; or the whole
        prefix as that prompt and the decode started at the prefix's end by a timestamp
        token, which tiny.en ignored after short prefixes, transcribing the context again."""
        (decoded,) = self.transcribe_each(audio, [options])
        return decoded

    def transcribe_each(self, audio: Samples, options: Sequence[DecodeOptions]) -> list[Decoded]:
        """``audio`` decoded once for each of ``options`` (a prompt each, say), its features
        and encoding made once where every decode has the same window, and the decodes run
        side by side on the model's decoder replicas (``workers``): two decodes take about
        the time of one where a core is free
        (:class:`engine.recognition.asr.PromptedTranscriber`)."""
        prepared = [self._prepared(o) for o in options]
        decodes = self._decode(audio, prepared)
        return [self._without_prefix(d, o) for d, o in zip(decodes, prepared, strict=True)]

    def _prepared(self, options: DecodeOptions) -> DecodeOptions:
        if options.hotwords and options.prefix:
            # faster-whisper drops hotwords when a prefix is forced: they join the prompt.
            prompt = " ".join(p for p in (options.hotwords, options.prompt) if p)
            options = replace(options, prompt=prompt, hotwords=None)
        if options.prefix and options.max_new_tokens is not None:
            options = replace(options, max_new_tokens=self._budget_after(options))
        return options

    @staticmethod
    def _without_prefix(decoded: Decoded, options: DecodeOptions) -> Decoded:
        if not options.prefix:
            return decoded
        words = tuple(strip_prefix(list(decoded.words), options.prefix))
        return replace(decoded, words=words)

    def _decode(self, audio: Samples, options: Sequence[DecodeOptions]) -> list[Decoded]:
        """Without word timing, one generation per options in a window of our own, encoded
        once when they share it: the short window where it applies (see the class
        docstring), else Whisper's 30 s window, which is what faster-whisper would decode
        (the same features, prompt and options). Word timing, and audio over 30 s, go
        through faster-whisper's ``transcribe``."""
        if not any(o.word_timestamps for o in options):
            features, frames = self._features(audio)
            windows = {self._window(frames, o) for o in options}
            window = windows.pop() if len(windows) == 1 else None
            if window is not None:
                encoded = self._encode(features, frames, window)
                return self._generate_each(encoded, len(audio), options)
        if len(options) > 1:  # different windows: each alone
            return [self._decode(audio, [o])[0] for o in options]
        return [Decoded(tuple(self._transcribe_full(audio, o))) for o in options]

    def _features(self, audio: Samples) -> tuple[Any, int]:
        features = self._model.feature_extractor(audio)
        return features, int(features.shape[-1]) - 1  # the content: not the pad's frame

    def _window(self, frames: int, options: DecodeOptions) -> int | None:
        """The frames of the window ``options`` decode ``frames`` of audio in, or None over
        Whisper's 30 s (faster-whisper's ``transcribe`` decodes those)."""
        if frames > FULL_WINDOW:
            return None
        window = -(-(frames + self._pad_frames) // self._bucket_frames) * self._bucket_frames
        if not self.short_window or options.full_window or window > FULL_WINDOW:
            window = FULL_WINDOW
        return window

    def _budget_after(self, options: DecodeOptions) -> int:
        """``max_new_tokens`` for a decode forced through ``options.prefix``: CTranslate2
        counts the prefix's tokens against the budget, so they are added to it. faster-whisper
        refuses a prompt (previous text, start tokens, prefix) plus budget over Whisper's 448
        tokens, so the sum stays below that."""
        assert options.prefix is not None and options.max_new_tokens is not None
        encode = self._model.hf_tokenizer.encode
        prefix = len(encode(" " + options.prefix.strip()).ids)
        prompt = len(encode(" " + options.prompt.strip()).ids) if options.prompt else 0
        limit = self._model.max_length // 2 - 1  # faster-whisper keeps at most this many
        room = self._model.max_length - 5 - min(prompt, limit) - min(prefix, limit)
        return max(1, min(options.max_new_tokens + prefix, room))

    def _encode(self, features: Any, frames: int, window: int) -> Any:
        """The encoder's output over ``window`` frames (at most Whisper's 30 s), the audio's
        ``frames`` first and silence after."""
        padded = np.zeros((features.shape[0], window), dtype=np.float32)
        padded[:, :frames] = features[:, :frames]
        return self._model.encode(padded)

    def _generate_each(
        self, encoded: Any, samples: int, options: Sequence[DecodeOptions]
    ) -> list[Decoded]:
        """One generation for each of ``options`` over the encoded window of ``samples`` of
        audio, all started at once: with ``workers`` decoder replicas they run side by side.

        A generation ended by itself unless it reached CTranslate2's length limit: the
        smaller of half ``max_length`` and ``max_length`` less the prompt before the text
        (``src/models/whisper.cc``; the half is Whisper's own sample length). With
        faster-whisper's ``max_length`` (the prompt plus the budget) a budget buys about
        half the tokens it names where the prompt is short. A greedy decode (a draft) gets
        twice the budget as ``max_length``, so it buys what it names: at a stream's start,
        with no prompt yet, a draft of fast speech lost its last words. A beam decode (a
        final) keeps faster-whisper's limit: a final cut short is completed from its draft
        (engine/recognition/policy.py ``anchor_to_hint``), and the whole budget changed
        finals at stream start by the beam's choice alone, not by words recovered
        (docs/metrics.md, "Repetitions / What a budget buys")."""
        from faster_whisper.transcribe import get_suppressed_tokens

        started = []
        for each in options:
            tokenizer, prompt, max_length = self._request(each)
            pending = self._model.model.generate(
                encoded,
                [prompt],
                beam_size=each.beam_size,
                max_length=max_length,
                return_scores=True,
                return_no_speech_prob=True,
                suppress_blank=True,
                suppress_tokens=get_suppressed_tokens(tokenizer, (-1,)),
                asynchronous=True,
            )[0]
            started.append((pending, tokenizer, prompt, max_length))
        return [
            self._decoded(pending.result(), tokenizer, prompt, max_length, samples)
            for pending, tokenizer, prompt, max_length in started
        ]

    def _request(self, options: DecodeOptions) -> tuple[Any, list[int], int]:
        """The tokenizer, the prompt's tokens and the ``max_length`` of a generation."""
        from faster_whisper.tokenizer import Tokenizer

        model = self._model
        tokenizer = Tokenizer(
            model.hf_tokenizer,
            model.model.is_multilingual,
            task=options.task,
            language=(options.language or "en") if self.multilingual else None,
        )
        previous = tokenizer.encode(" " + options.prompt.strip()) if options.prompt else []
        prompt = model.get_prompt(
            tokenizer,
            previous,
            without_timestamps=True,
            prefix=options.prefix,
            hotwords=options.hotwords,
        )
        budget = options.max_new_tokens or model.max_length // 2
        max_length = len(prompt) + budget
        if options.beam_size == 1:
            max_length = max(max_length, 2 * budget)  # the whole budget, not half of it
        return tokenizer, prompt, min(model.max_length, max_length)

    @staticmethod
    def _decoded(
        result: Any, tokenizer: Any, prompt: list[int], max_length: int, samples: int
    ) -> Decoded:
        generated = result.sequences_ids[0]
        tokens = [t for t in generated if t < tokenizer.eot]
        # The same silence test faster-whisper applies: probably no speech and a weak decode.
        avg_logprob = result.scores[0] * len(tokens) / (len(tokens) + 1) if tokens else -10.0
        if result.no_speech_prob > 0.6 and avg_logprob < -1.0:
            return Decoded(ended=True)
        pieces = tokenizer.decode(tokens).split()
        duration = samples / SAMPLE_RATE
        span = duration / max(1, len(pieces))
        words = tuple(Word(" " + p, i * span, (i + 1) * span) for i, p in enumerate(pieces))
        return Decoded(
            words,
            ended=len(generated) < generation_limit(prompt, max_length, tokenizer),
            score=avg_logprob,
        )

    def _transcribe_full(self, audio: Samples, options: DecodeOptions) -> list[Word]:
        segments, _info = self._model.transcribe(
            audio,
            language=options.language if self.multilingual else None,
            task=options.task,
            beam_size=options.beam_size,
            best_of=1,
            temperature=0.0,
            initial_prompt=options.prompt or None,
            hotwords=options.hotwords or None,
            prefix=options.prefix or None,
            condition_on_previous_text=False,
            word_timestamps=options.word_timestamps,
            vad_filter=False,
            max_new_tokens=options.max_new_tokens,
            without_timestamps=not options.word_timestamps,
            # A segment of silence or noise should come back empty, not hallucinated.
            no_speech_threshold=0.6,
            log_prob_threshold=-1.0,
            compression_ratio_threshold=None,
        )
        words: list[Word] = []
        for segment in segments:
            if segment.words:
                words.extend(
                    Word(w.word, float(w.start), float(w.end), float(w.probability))
                    for w in segment.words
                )
            elif segment.text.strip():
                pieces = segment.text.split()
                span = (segment.end - segment.start) / max(1, len(pieces))
                words.extend(
                    Word(" " + p, segment.start + i * span, segment.start + (i + 1) * span)
                    for i, p in enumerate(pieces)
                )
        return words

    def identify(self, audio: Samples, candidates: Sequence[str]) -> dict[str, float]:
        """Probability of each candidate language (our codes) for ``audio``, from Whisper's
        language identification restricted to the candidates and renormalised."""
        if not self.multilingual:
            raise ModelError(f"{self.name} is English-only: it cannot identify languages")
        _, _, ranked = self._model.detect_language(audio=audio)
        by_code = dict(ranked)
        scores = {c: float(by_code.get(languages.get(c).whisper or c, 0.0)) for c in candidates}
        total = sum(scores.values()) or 1.0
        return {c: p / total for c, p in scores.items()}

    def warm(self) -> None:
        """Run one decode so the first real request does not pay for lazy initialisation."""
        rng = np.random.default_rng(0)
        noise = (rng.standard_normal(16_000) * 0.01).astype(np.float32)
        self.transcribe(noise, DecodeOptions(beam_size=1, language="en"))


def _encoder(model: str, compute_type: str, threads: int) -> Callable[[np.ndarray], Any]:
    """``WhisperModel.encode`` on a copy of ``model`` (a directory, or a name faster-whisper
    has downloaded) loaded with ``threads`` threads."""
    import ctranslate2
    from faster_whisper.transcribe import get_ctranslate2_storage
    from faster_whisper.utils import download_model

    path = model if Path(model).is_dir() else download_model(model, local_files_only=True)
    copy = ctranslate2.models.Whisper(
        path, device="cpu", compute_type=compute_type, intra_threads=threads
    )

    def encode(features: np.ndarray) -> Any:
        batch = features[None] if features.ndim == 2 else features
        return copy.encode(get_ctranslate2_storage(batch))

    return encode


def generation_limit(prompt: Sequence[int], max_length: int, tokenizer: Any) -> int:
    """How many tokens CTranslate2 generates at most (a forced prefix included) for
    ``prompt`` and ``max_length``: the smaller of half ``max_length`` and ``max_length``
    less the prompt's tokens before its last start token (``src/models/whisper.cc``)."""
    starts = {tokenizer.sot, tokenizer.no_timestamps, *tokenizer.sot_sequence}
    last_start = max(i for i, t in enumerate(prompt) if t in starts)
    return min(max_length // 2, max_length - last_start)


def strip_prefix(words: list[Word], prefix: str) -> list[Word]:
    """``words`` without the forced ``prefix`` they begin with (CTranslate2 returns the
    prefix tokens with the generated ones). The first token generated may extend the
    prefix's last word ("increase" + "s,"): only the extension is kept, as a word.

    A decode that does not begin with its prefix (the window was judged silent, say) gives
    no words: kept whole it would repeat text already final, and the recogniser falls back
    to what streaming showed for the segment."""
    said = prefix.split()
    if not said:
        return words
    texts = [w.text.strip() for w in words]
    last = len(said) - 1
    if (
        len(words) < len(said)
        or texts[:last] != said[:last]
        or not texts[last].startswith(said[last])
    ):
        if words:
            log.warning("decode does not begin with its prefix %r: dropped", prefix[:60])
        return []
    rest = texts[last][len(said[last]) :]
    tail = words[last + 1 :]
    if any(c.isalnum() for c in rest):
        w = words[last]
        tail.insert(0, Word(" " + rest.lstrip(), w.start, w.end, w.probability))
    return tail
