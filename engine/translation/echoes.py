"""Whether a Whisper-translate decode echoed text instead of translating its audio (pure).

A decode that hears the previous sentence's translation as its prompt sometimes writes that
translation again in place of the new sentence ("Jean-Carlo fitella, who lost the contract of
his car...", the second time for "Malgré le net avantage des potros pendant le deuxième
set..."), or says one phrase of its own twice. Either is a long run of words said before:
:func:`echoes` finds it, and the translation stage decodes the sentence again without the
previous translation (docs/metrics.md, "Translation / Sentences that echo the prompt").
"""

from __future__ import annotations

from engine.recognition.policy import word_key


def _runs(text: str, span: int) -> list[tuple[str, ...]]:
    words = [k for k in (word_key(w) for w in text.split()) if k]
    return [tuple(words[i : i + span]) for i in range(len(words) - span + 1)]


def echoes(text: str, prompt: str | None, *, span: int = 4) -> bool:
    """Whether ``text`` repeats ``span`` words in a row of ``prompt``, or repeats ``span``
    words in a row of its own that do not overlap their first saying (case and punctuation
    aside). Four words catch a sentence said again with one word changed ("The sediments are
    still being distributed in flows. The sediments are being distributed in flows."); a
    false alarm costs only a decode without the previous translation."""
    runs = _runs(text, span)
    if prompt and set(runs) & set(_runs(prompt, span)):
        return True
    first: dict[tuple[str, ...], int] = {}
    for at, run in enumerate(runs):
        if at - first.setdefault(run, at) >= span:
            return True
    return False
