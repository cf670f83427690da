"""A Whisper-translate for tests of the translation stage alone: what it writes comes from
a function the test gives, one call per decode."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence

import numpy as np

from engine.translation.backends import Weighed

Answer = Callable[[np.ndarray, str | None, str | None], Awaitable[str]]
"""What one decode writes, from its audio, prompt and prefix."""


class FakeWhisper:
    """A :class:`engine.translation.backends.WhisperTranslate` that asks ``answer`` for each
    decode. ``scores`` says how sure each prompt's decode is (none: the model does not say,
    so the prompted decode of a final is kept unless the prompt visibly misled it); ``cut``
    names the prompts whose decode its token budget cut."""

    def __init__(
        self,
        answer: Answer,
        scores: Mapping[str | None, float] | None = None,
        cut: frozenset[str | None] = frozenset(),
    ) -> None:
        self.answer = answer
        self.scores = dict(scores or {})
        self.cut = cut
        self.calls: list[int] = []
        """How many samples each call heard: one call per sentence or draft, however many
        prompts it decodes after."""
        self.prompts: list[str | None] = []
        """Every decode's prompt, in order."""

    @classmethod
    def saying(
        cls,
        answers: Mapping[str | None, str],
        scores: Mapping[str | None, float] | None = None,
        cut: frozenset[str | None] = frozenset(),
    ) -> FakeWhisper:
        """One that writes ``answers[prompt]`` whatever it hears."""

        async def answer(audio: np.ndarray, prompt: str | None, prefix: str | None) -> str:
            return answers[prompt]

        return cls(answer, scores, cut)

    async def __call__(
        self, audio: np.ndarray, prompt: str | None, prefix: str | None = None
    ) -> str:
        self.calls.append(len(audio))
        self.prompts.append(prompt)
        return await self.answer(audio, prompt, prefix)

    async def each(
        self, audio: np.ndarray, prompts: Sequence[str | None], prefix: str | None = None
    ) -> list[Weighed]:
        self.calls.append(len(audio))
        self.prompts += prompts
        return [
            Weighed(await self.answer(audio, p, prefix), self.scores.get(p), p not in self.cut)
            for p in prompts
        ]
