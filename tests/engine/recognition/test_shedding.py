"""The written order of graceful degradation (engine/recognition/shedding.py)."""

from __future__ import annotations

from engine.recognition.shedding import Shed, SheddingRules, next_level, shed_names

RULES = SheddingRules(context_s=1.0, beam_s=1.5, drafts_s=2.0)


def test_levels_are_shed_in_order_and_come_back_in_reverse() -> None:
    level = Shed.NONE
    trace = []
    for backlog in (0.5, 1.2, 1.7, 2.5, 1.8, 1.2, 0.9, 0.6, 0.4, 0.2):
        level = next_level(level, backlog, RULES)
        trace.append(int(level))
    # Up one level per threshold passed; down only below half a level's threshold.
    assert trace == [0, 1, 2, 3, 3, 3, 2, 1, 0, 0]


def test_a_jump_sheds_every_level_it_passes() -> None:
    assert next_level(Shed.NONE, 5.0, RULES) is Shed.DRAFTS
    assert next_level(Shed.DRAFTS, 0.1, RULES) is Shed.NONE
    assert shed_names(Shed.BEAM) == ("context", "refine beam")
    assert shed_names(Shed.NONE) == ()


def test_late_finals_shed_the_context_until_one_comes_in_half_the_time() -> None:
    rules = SheddingRules(context_s=1.0, beam_s=1.5, drafts_s=2.0, late_final_s=2.0)
    level = Shed.NONE
    trace = []
    for lateness in (1.5, 2.5, 1.5, 1.0, 0.9, 1.5):
        level = next_level(level, 0.2, rules, lateness)  # the backlog stays small
        trace.append(int(level))
    assert trace == [0, 1, 1, 1, 0, 0]
    # Lateness never lowers what the backlog sheds.
    assert next_level(Shed.BEAM, 1.6, rules, 0.0) is Shed.BEAM


def test_a_crowded_pool_sheds_the_context_and_nothing_more() -> None:
    assert next_level(Shed.NONE, 0.0, RULES, crowded=True) is Shed.CONTEXT
    # The backlog still sheds the levels after it, and brings them back to it.
    assert next_level(Shed.CONTEXT, 1.7, RULES, crowded=True) is Shed.BEAM
    assert next_level(Shed.BEAM, 0.1, RULES, crowded=True) is Shed.CONTEXT
    # Once the crowd has gone, the context comes back at the next step.
    assert next_level(Shed.CONTEXT, 0.0, RULES, crowded=False) is Shed.NONE
