"""The streaming recogniser's settings (engine/recognition/recognizer.py); each rule's
measurement is in the docs/metrics.md section its docstring names."""

from __future__ import annotations

from dataclasses import dataclass

from engine.recognition.asr import TOKENS_PER_SECOND


@dataclass(frozen=True, slots=True)
class RecognizerConfig:
    language: str = "en"
    speech_threshold: float = 0.5
    speech_hold: float = 0.1
    """Once speech has begun, a window scoring down to this much under ``speech_threshold``
    still holds it, as in Silero's own rule for where speech ends (which holds down to 0.15
    under): engine/recognition/vad.py, ``SpeechTimeline``. Without it, the quiet end of a
    word ("help you?") counted as a pause and cut it. Measured in docs/metrics.md ("Speech
    classes / The VAD holds speech it has begun")."""
    min_silence_s: float = 0.4
    """A pause this long closes a segment."""
    short_pause_s: float = 0.15
    """Once a segment is long (``long_segment_s``) or has a committed sentence end after
    ``sentence_min_s``, a pause this short closes it."""
    long_segment_s: float = 2.0
    sentence_min_s: float = 1.0
    max_segment_s: float = 8.0
    """With no pause at all, a segment is cut at its quietest moment past this length."""
    min_close_speech_s: float = 1.5
    """A pause after less speech than this (a line of verse, a word or two before a breath)
    closes the segment only if it lasts ``long_pause_s``; a shorter one lets the segment run
    on into the next phrase. Alone, such a segment's final is read from too little audio
    ("Look in thy glass" came out "Looking like last"), and its forced text then misleads
    the next final that hears it as context. 0 turns it off. Measured in docs/metrics.md
    ("Short segments")."""
    long_pause_s: float = 0.7
    lead_in_s: float = 0.3
    draft_interval_s: float = 0.5
    """At least this much new audio between draft decodes: more often only redraws the same
    words (and churns the unstable tail) at the cost of CPU the refine pass needs (real-time
    replay of the English set: 0.3 s took 0.76 CPU s per audio s with draft p50 0.07 s; 0.5 s
    takes 0.59 with draft p50 0.13 s, the same WER and a lower draft p95)."""
    draft_word_timestamps: bool = False
    keep_final_audio: bool = False
    """Hand each final's audio to :meth:`StreamingRecognizer.take_final_audio`."""
    min_speech_s: float = 0.3
    """No draft decode until the segment holds this much speech."""
    draft_beam: int = 1
    refine_beam: int = 5
    refine: bool = True
    refine_full_window: bool = True
    """Finals decode in Whisper's full 30 s window (drafts use a short one)."""
    stop_refine_full_window: bool = False
    """The segment a stop closes decodes in the short window: someone is waiting for it (a
    traveller's turn ends with a tap; base on a 10 s turn: 0.72 s instead of 1.28 s)."""
    prompt_chars: int = 160
    max_tokens_per_second: float = TOKENS_PER_SECOND
    """Bounds every decode; speech rarely passes 5 tokens a second, loops do."""
    max_backlog_s: float = 2.0
    """Past this much unprocessed audio, drafts are skipped until the backlog clears (the last
    level of shedding, engine/recognition/shedding.py)."""
    beam_backlog_s: float = 1.5
    """Past this much, finals decode greedily (the second level of shedding)."""
    early_finals: bool = True
    """Make a segment's refine decode once its speech pauses, while the pause is still too
    short to close it, so that its final follows the close without a decode."""
    refine_context_s: float = 15.0
    """A full-window refine decode also hears the finals that began up to this long before
    its segment, their text given as the decode's prefix so that only the segment's words
    come back: alone, a short segment (a line of verse, a title) is read with too little
    audio around it. The full window's encoder costs the same whatever it holds; the forced
    prefix costs a decoder step a token. A short-window refine (the segment a stop closes)
    goes without. 0 turns it off. Measured in docs/metrics.md ("Refine context")."""
    refine_context_below_s: float = 99.0
    """Only a segment shorter than this hears the context: a longer one holds enough audio
    of its own, and its words should not wait for the prefix's decoder steps."""
    sentence_pause_s: float = 0.4
    """A segment's final ends a sentence only if the speech had paused this long when it was
    made (and its last word can end one): engine/recognition/punctuation.py."""
    refine_wait_s: float | None = 0.25
    """How long a step waits for the refine of the segment it closed before going on with
    the next one: a refine that takes longer (Whisper base in the full window, a second and
    a half on two cores) goes on beside the next segment's drafts, on the pool's other
    worker, and its final follows in a later step. Before, the drafts waited, and the speech
    after a short pause stayed unshown for the whole refine (docs/metrics.md, "Panels").
    None: every step waits for it (a compute-unaware replay, bench/steps.py, where each
    decode takes no time)."""
    context_max_backlog_s: float = 1.0
    """Past this much, finals shed their context (the first level of shedding): the worker
    is shared (two presenters on one machine kept it 90% busy with finals that heard
    context), and a stream that waits for it sheds that cost first."""
    context_late_final_s: float = 2.0
    """A final that comes out later than this after its cut (audio heard meanwhile) sheds
    the context too, until one comes out in half the time: the finals' decodes are what
    the cores cannot keep up with (docs/metrics.md, "Panels / Cheaper finals when they
    come late")."""
    shed_when_crowded: bool = True
    """Shed the context while the recognition pool is crowded (more streams than threads;
    engine/recognition/shedding.py), not only once this stream falls behind."""
    shed_context_s: float = 6.0
    """While context is shed, a refine decodes in the short window and hears the finals
    that began up to this long before its segment: at a third of the full window's cost,
    as accurate as the full window without context (docs/metrics.md, "Panels / Refines
    beside drafts", the table of refines)."""
