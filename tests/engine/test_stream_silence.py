"""A presenter stream tells its session's translator what the VAD hears after a final: a
sentence left open by its final closes once the pause is long enough, not at the
translator's timer (the real factory, session, stream and translation stage; the model,
the VAD and the text translator are fakes, as in test_lifecycle.py)."""

from __future__ import annotations

from pathlib import Path

from engine.factory import StagePorts
from engine.presenting import StartRequest
from engine.translation.backends import PooledTranslator, TargetPlan
from engine.translation.config import TranslationConfig
from engine.translation.resources import Translation
from engine.translation.routes import Backend, RouteTable, TranslationRoute
from engine.translation.sentences import SentenceRules
from engine.workers import WorkerPool
from tests.engine.test_lifecycle import make_engine, play, speech, until
from tests.engine.translation.test_translation import ScriptedTranslator

APERTIUM = Backend("apertium", "eng-spa")
ROUTE = TranslationRoute("en", "es", APERTIUM, APERTIUM, "")


class Provider:
    def __init__(self, pool: WorkerPool) -> None:
        self.pooled = PooledTranslator(ScriptedTranslator("es"), pool)

    def plan(self, route: TranslationRoute) -> TargetPlan:
        return TargetPlan(route, self.pooled, self.pooled)


async def test_a_long_silence_after_a_final_closes_its_sentence_while_the_stream_goes_on(
    tmp_path: Path,
) -> None:
    """Every final reads "hello", with no full stop, so its sentence stays open after it;
    the timer is a minute. A pause too short for the sentence to end when the final comes,
    then silence streamed on: the sentence closes while the presenter is still live."""
    pool = WorkerPool("mt", threads=1, max_pending=8)
    translation = Translation(
        routes=RouteTable([ROUTE]),
        provider=Provider(pool),
        setup_pool=WorkerPool("setup", threads=1, max_pending=8),
        speech_model=None,
        speech_pool=pool,
        config=TranslationConfig(sentences=SentenceRules(pause_s=60)),
    )
    async with make_engine(tmp_path, stages=StagePorts(translation=translation)) as engine:
        session, token = await engine.registry.create("Talk", "en", ("es",))
        presentation = await engine.presenting.start(session, StartRequest(token, 16000))
        translator = session.translators["en"]
        await play(presentation, speech(2.0, pause=0.5))
        await until(lambda: engine.store.finals(session.code), "the source final")
        assert translator.stats.sentences == 0  # it may go on: the timer runs
        await play(presentation, speech(0.0, pause=2.0))
        await until(lambda: translator.stats.sentences == 1, "the sentence closed")
        assert session.state == "live"
        await presentation.stop()
        await presentation.release()
    pool.shutdown()
