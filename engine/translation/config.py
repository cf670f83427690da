"""A session translation stage's settings and counters (engine/translation/stage.py)."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from engine.translation.prompted import PromptRules
from engine.translation.sentences import SentenceRules


@dataclass(frozen=True, slots=True)
class TranslationConfig:
    hold_back_words: int = 1
    """Last words of a draft translation not shown until a later draft or the final (less
    flicker); 0 shows everything. Not applied when the source draft is wholly stable."""
    draft_stable_only: bool = True
    """Translate only the stable (committed) part of a source draft: its unstable tail
    changes from one draft to the next, and with a different word order in the target every
    change moved words already shown (docs/metrics.md, "Translation"). Until its first
    glance: a segment none of whose words has been shown yet is translated whole once its
    draft has heard ``glance_after_s`` of speech, stable or not."""
    glance_after_s: float = 1.0
    """Speech after which a reader gets a first glance of a segment (text routes) or of a
    sentence (speech drafts, whose first draft comes then and is shown but never kept: the
    next draft decodes the sentence afresh), whatever the source's stability
    (docs/metrics.md, "Speech drafts" and "A first glance")."""
    degrade_backlog: int = 4
    context_chars: int = 200
    """The most characters of the previous sentence's source text a text route hears as
    context."""
    prompt: PromptRules = field(default_factory=PromptRules)
    """A speech route's prompt, and when its decode is made again
    (engine/translation/prompted.py)."""
    sentences: SentenceRules = field(default_factory=SentenceRules)
    """Where sentences close when every route translates text."""
    speech_sentences: SentenceRules = field(
        default_factory=lambda: SentenceRules(close_at_mark=False, pause_s=2.5)
    )
    """Where they close when a route translates the speech itself (Whisper-translate): its
    decoder hears the sentence's audio, and a mark kept at a reader's pause inside a
    sentence cut it in two. Only a long pause or the cap closes one: the next speech
    beginning ``resume_gap_s`` after the last final, or nothing of the speaker for
    ``pause_s``, which is longer here because the next draft can come two seconds after a
    final while the recogniser catches up (its refine, drafts shed). docs/metrics.md,
    "Marks inside a sentence"."""
    speech_finals_full_window: bool = False
    """A speech route's finals decode in Whisper's full 30 s window, as the route was measured
    offline, rather than the short window its drafts use. Off: live, with the previous
    translation as the prompt, it scored lower and came later (docs/metrics.md, "Finals in
    the full window, again")."""
    speech_drafts: bool = True
    """A route with no text backend drafts from speech (module docstring): a greedy decode
    of the open sentence's audio at each of its source finals, and at a source draft once
    ``speech_draft_every_s`` more of it has been heard, on the recogniser's pool, only
    while someone reads the language."""
    speech_draft_every_s: float = 1.5
    """How much more speech a source draft must bring before it is drafted from speech
    again (a source final, or a segment joining the sentence, always is): each such draft
    decodes the whole open sentence, beginning with the words of the draft shown, once that
    came from at least this much speech (docs/metrics.md, "Speech drafts")."""
    recent_audio_s: float = 120.0
    """Seconds of recent sentences' audio kept (only where a route translates speech) so a
    correction can be decoded again from it."""
    corrections_kept: int = 1024
    """Corrected source texts remembered for sentences not translated yet."""


@dataclass(slots=True)
class TranslationStats:
    drafts_translated: int = 0
    drafts_stale: int = 0
    """Replaced by a newer draft of the same segment before they ran."""
    drafts_late: int = 0
    """Dropped because a sentence final already covered their segment."""
    drafts_failed: int = 0
    sentences: int = 0
    finals_translated: int = 0
    finals_degraded: int = 0
    finals_echoed: int = 0
    """Whisper-translate finals made again because the first decode echoed the previous
    translation (engine/translation/prompted.py)."""
    finals_unprompted: int = 0
    """Whisper-translate finals kept from the decode without the previous translation,
    which the model was surer of (engine/translation/prompted.py)."""
    finals_failed: int = 0
    finals_skipped: int = 0
    """Sentences a lane nobody read could not translate (no text backend): a gap."""
    draft_latency: deque[float] = field(default_factory=lambda: deque(maxlen=512))
    """Seconds from a source draft's arrival to its translation being published."""
    final_latency: deque[float] = field(default_factory=lambda: deque(maxlen=512))
    """Seconds from a sentence closing to its translation being published."""
