"""The faster-whisper adapter with the real tiny.en on a real recording: a decode that hears
the audio of captions already final (its prefix) returns only the words after them."""

from __future__ import annotations

import wave
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import numpy as np
import pytest

from bench.alignment import word_errors
from bench.textnorm import normalise_words
from engine.recognition.asr import Decoded, DecodeOptions
from models.catalog import resolve_whisper
from models.whisper import FasterWhisperTranscriber
from tests.data import SONNET

START_S, END_S = 10.0, 28.0
"""The part of sonnet 2 the tests decode."""
SPLIT_S = 10.0
"""Where the prefix ends in it: 20 s into the reading, between "lies" and "where". At 15 s
("deep" / "sunken") tiny.en on an AMD EPYC decoded the head with word timing as "...thine own
deeps." and, after that forced full stop, nothing more: the case the recogniser's retry
without context covers (``context_misses``), not what this test is about."""


@pytest.fixture(scope="module")
def tiny_en() -> FasterWhisperTranscriber:
    return FasterWhisperTranscriber(resolve_whisper("tiny.en"))


@pytest.fixture(scope="module")
def tiny_en_own_encoder() -> FasterWhisperTranscriber:
    return FasterWhisperTranscriber(resolve_whisper("tiny.en"), encoder_threads=1)


@pytest.fixture(scope="module")
def audio() -> np.ndarray:
    with wave.open(str(SONNET)) as w:
        pcm = w.readframes(w.getnframes())
    samples = np.frombuffer(pcm, np.int16).astype(np.float32) / 32768
    return samples[int(START_S * 16000) : int(END_S * 16000)]


def text(decoded: Decoded) -> str:
    return "".join(w.text for w in decoded.words)


@pytest.mark.parametrize(
    ("full_window", "word_timestamps"),
    [(True, False), (False, False), (False, True)],
    ids=["full-window", "short-window", "word-timestamps"],
)
def test_a_decode_with_a_prefix_returns_only_what_follows_it(
    tiny_en: FasterWhisperTranscriber, audio: np.ndarray, full_window: bool, word_timestamps: bool
) -> None:
    """Normalisation: bench.textnorm (lowercase, punctuation stripped)."""
    options = DecodeOptions(
        language="en", beam_size=5, word_timestamps=word_timestamps, full_window=full_window
    )
    split = int(SPLIT_S * 16000)
    head = text(tiny_en.transcribe(audio[:split], options)).strip()
    whole = normalise_words(text(tiny_en.transcribe(audio, options)))
    rest = tiny_en.transcribe(audio, replace(options, prefix=head, max_new_tokens=40))
    head_words = normalise_words(head)
    rest_words = normalise_words(text(rest))
    assert len(head_words) >= 3 and len(rest_words) >= 3, (head, rest)
    # Not the prefix again: the first words are the ones after it ...
    assert rest_words[:3] != head_words[:3]
    # ... and prefix plus rest read as the plain decode of the same audio does.
    assert word_errors(whole, head_words + rest_words).wer <= 0.2, (whole, head, rest_words)


def test_the_prefix_is_read_not_generated(
    tiny_en: FasterWhisperTranscriber, audio: np.ndarray
) -> None:
    """The prefix's tokens take nothing from the budget of new ones: ten new tokens are
    several words, not one."""
    options = DecodeOptions(language="en", beam_size=5, word_timestamps=False, full_window=True)
    head = text(tiny_en.transcribe(audio[: int(SPLIT_S * 16000)], options)).strip()
    short = tiny_en.transcribe(audio, replace(options, prefix=head, max_new_tokens=10))
    assert len(short.words) >= 4, short


@pytest.mark.parametrize("full_window", [True, False], ids=["full-window", "short-window"])
def test_the_encoder_copy_reads_as_the_model_itself_does(
    tiny_en: FasterWhisperTranscriber,
    tiny_en_own_encoder: FasterWhisperTranscriber,
    audio: np.ndarray,
    full_window: bool,
) -> None:
    """With more encoder threads than decoder threads a second copy of the model encodes
    (models/whisper.py): its encodings must serve the decoder exactly like the model's own.
    Normalisation: bench.textnorm."""
    assert tiny_en.encoder_copy, "by default a copy with two threads encodes"
    single = tiny_en_own_encoder
    assert not single.encoder_copy
    options = DecodeOptions(language="en", beam_size=5, full_window=full_window)
    copied = normalise_words(text(tiny_en.transcribe(audio, options)))
    own = normalise_words(text(single.transcribe(audio, options)))
    assert len(own) >= 20, own
    assert word_errors(own, copied).wer <= 0.05, (own, copied)


def test_two_workers_decode_two_streams_at_once_as_each_alone(
    tiny_en: FasterWhisperTranscriber, audio: np.ndarray
) -> None:
    """With ``workers=2`` (the server's ``asr_workers``) two threads decode at once, each in
    its own replica of the decoder, sharing the encoder copy: each reads its audio exactly as
    one decode alone does. Normalisation: bench.textnorm."""
    both = FasterWhisperTranscriber(resolve_whisper("tiny.en"), workers=2)
    options = DecodeOptions(language="en", beam_size=5)
    halves = [audio[: len(audio) // 2], audio[len(audio) // 2 :]]
    alone = [normalise_words(text(tiny_en.transcribe(half, options))) for half in halves]
    with ThreadPoolExecutor(max_workers=2) as pool:
        together = [
            normalise_words(text(decoded))
            for decoded in pool.map(lambda half: both.transcribe(half, options), halves * 2)
        ]
    assert all(len(words) >= 8 for words in alone), alone
    assert together == alone * 2


@pytest.mark.parametrize("full_window", [True, False], ids=["full-window", "short-window"])
def test_a_decode_says_whether_it_ended_by_itself_or_ran_out_of_budget(
    tiny_en: FasterWhisperTranscriber, audio: np.ndarray, full_window: bool
) -> None:
    """A decode with room for what it heard ends by itself; one whose budget stops it
    mid-sentence says so (models/whisper.py ``generation_limit``), with or without a
    previous-text prompt before its start tokens."""
    options = DecodeOptions(
        language="en", beam_size=5, word_timestamps=False, full_window=full_window
    )
    clip = audio[: 6 * 16000]
    roomy = tiny_en.transcribe(clip, replace(options, max_new_tokens=120))
    assert roomy.ended and len(roomy.words) >= 8, roomy
    for prompt in (None, "Shall I compare thee to a summer's day? Thou art more lovely."):
        cut = tiny_en.transcribe(clip, replace(options, max_new_tokens=8, prompt=prompt))
        assert not cut.ended and 1 <= len(cut.words) < len(roomy.words), (prompt, cut)


@pytest.mark.parametrize("full_window", [True, False], ids=["full-window", "short-window"])
def test_a_budget_buys_the_tokens_it_names(
    tiny_en: FasterWhisperTranscriber, audio: np.ndarray, full_window: bool
) -> None:
    """``max_new_tokens`` N lets a greedy decode (a draft) generate N tokens (one more
    where a prompt comes before its start tokens), not the half of N plus the prompt that
    CTranslate2's own limit leaves (models/whisper.py ``_generate_each``): at a stream's
    start there is no prompt, and a draft of fast speech lost its last words."""
    options = DecodeOptions(
        language="en", beam_size=1, word_timestamps=False, full_window=full_window
    )
    clip = audio[: 8 * 16000]
    count = tiny_en._model.hf_tokenizer.encode
    for prompt in (None, "Shall I compare thee to a summer's day? Thou art more lovely."):
        for budget in (10, 20):
            cut = tiny_en.transcribe(clip, replace(options, max_new_tokens=budget, prompt=prompt))
            tokens = len(count(text(cut), add_special_tokens=False).ids)
            assert not cut.ended and budget <= tokens <= budget + 1, (prompt, budget, cut)


def test_the_full_window_reads_as_faster_whisper_itself_does(
    tiny_en: FasterWhisperTranscriber, audio: np.ndarray
) -> None:
    """Decodes without word timing run one generation in our own window; in Whisper's 30 s
    window that must give faster-whisper's own result (the same features, prompt and
    options). Normalisation: bench.textnorm."""
    options = DecodeOptions(language="en", beam_size=5, word_timestamps=False, full_window=True)
    options = replace(options, prompt="From fairest creatures.", max_new_tokens=150)
    ours = tiny_en.transcribe(audio, options)
    segments, _ = tiny_en._model.transcribe(
        audio,
        beam_size=5,
        best_of=1,
        temperature=0.0,
        initial_prompt="From fairest creatures.",
        max_new_tokens=150,
        condition_on_previous_text=False,
        without_timestamps=True,
        vad_filter=False,
        compression_ratio_threshold=None,
    )
    theirs = " ".join(s.text.strip() for s in segments)
    assert len(ours.words) >= 20
    assert text(ours).strip() == theirs


@pytest.mark.parametrize("prefix", [None, "From fairest creatures"], ids=["plain", "prefix"])
def test_one_encoding_decoded_after_each_prompt_reads_as_each_decode_alone(
    tiny_en: FasterWhisperTranscriber, audio: np.ndarray, prefix: str | None
) -> None:
    """``transcribe_each`` encodes the audio once and decodes it after each prompt: each
    decode is the one ``transcribe`` gives alone, with the same score, which says how sure
    the model was (a mean log-probability per token: negative)."""
    options = DecodeOptions(
        language="en", beam_size=5, word_timestamps=False, prefix=prefix, max_new_tokens=80
    )
    prompts = [None, "Shakespeare's sonnets, read aloud.", "Thy youth's proud livery."]
    each = tiny_en.transcribe_each(audio, [replace(options, prompt=p) for p in prompts])
    alone = [tiny_en.transcribe(audio, replace(options, prompt=p)) for p in prompts]
    assert [text(d) for d in each] == [text(d) for d in alone]
    assert all(len(d.words) >= 10 for d in each), [text(d) for d in each]
    scores = [d.score for d in each]
    assert all(s is not None and -3.0 < s < 0.0 for s in scores), scores
    assert scores == pytest.approx([d.score for d in alone])
