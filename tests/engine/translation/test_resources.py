"""A session's translators as :class:`engine.translation.resources.Translation` builds them
from its config: which window a speech route's decodes use."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from engine.events import Word
from engine.recognition.asr import Decoded, DecodeOptions
from engine.translation.backends import TargetPlan
from engine.translation.config import TranslationConfig
from engine.translation.resources import Translation
from engine.translation.routes import Backend, RouteTable, TranslationRoute
from engine.workers import WorkerPool
from tests.engine.translation.test_translation import Recorder, final

ROUTE = TranslationRoute("de", "en", None, Backend("whisper", "base"), "")


class Heard:
    """A multilingual model that says "It is cold." and keeps every decode's options."""

    name = "fake"
    multilingual = True

    def __init__(self) -> None:
        self.options: list[DecodeOptions] = []

    def transcribe(self, audio: np.ndarray, options: DecodeOptions) -> Decoded:
        (decoded,) = self.transcribe_each(audio, [options])
        return decoded

    def transcribe_each(self, audio: np.ndarray, options: Sequence[DecodeOptions]) -> list[Decoded]:
        self.options += options
        words = tuple(Word(f" {w}", 0.0, 0.1) for w in "It is cold.".split())
        return [Decoded(words, score=-0.5) for _ in options]


class Provider:
    def plan(self, route: TranslationRoute) -> TargetPlan:
        return TargetPlan(route, None, None)


@pytest.mark.parametrize("full_window", [False, True])
async def test_speech_finals_decode_in_the_window_the_config_names(full_window: bool) -> None:
    model = Heard()
    asr, setup = WorkerPool("asr", threads=1), WorkerPool("setup", threads=1)
    translation = Translation(
        routes=RouteTable([ROUTE]),
        provider=Provider(),
        setup_pool=setup,
        speech_model=model,
        speech_pool=asr,
        config=TranslationConfig(speech_finals_full_window=full_window),
    )
    published = Recorder()
    try:
        session = (await translation.stage(["de", "en"], published))["de"]
        session.set_languages({"en"})
        for n, text in enumerate(["Es ist kalt.", "Sehr kalt."]):
            await session.on_source(final(n, text), np.zeros(16000 * (n + 1), np.float32))
        await session.drain()
        await session.close()
    finally:
        asr.shutdown()
        setup.shutdown()
    finals = [o for o in model.options if o.beam_size > 1]
    assert finals and all(o.task == "translate" for o in model.options)
    assert {o.full_window for o in finals} == {full_window}
    assert not any(o.full_window for o in model.options if o.beam_size == 1)  # drafts
    assert [c.text for c in published.captions("en", "final")] == ["It is cold."] * 2
