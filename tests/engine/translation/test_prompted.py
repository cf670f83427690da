import numpy as np

from engine.translation.prompted import (
    Misled,
    Prompted,
    PromptRules,
    misled,
    prompt_of,
    translate_prompted,
)
from tests.engine.translation.whisper_fake import FakeWhisper

BEFORE = "Jean-Carlo lost control of his car and finished the race."


def seconds(n: float) -> np.ndarray:
    return np.zeros(int(16000 * n), dtype=np.float32)


def test_the_prompt_keeps_the_hints_whole_and_the_end_of_the_previous_translation() -> None:
    assert prompt_of("Potro", BEFORE, 200) == (f"Potro {BEFORE}", BEFORE)
    assert prompt_of("Potro", BEFORE, 24) == ("Potro finished the race.", "finished the race.")
    assert prompt_of("Potro", BEFORE, 23) == ("Potro the race.", "the race.")
    assert prompt_of("", "", 200) == (None, "")
    assert prompt_of("a long list of hints", BEFORE, 10) == ("a long list of hints", "")


def test_a_decode_is_misled_by_an_echo_or_by_stopping_short_only_after_a_previous_translation() -> (
    None
):
    rules = PromptRules()
    assert misled(BEFORE, BEFORE, 2.0, rules) is Misled.ECHO
    assert misled("Jean-Carlo.", BEFORE, 9.4, rules) is Misled.SHORT
    assert misled("Jean-Carlo.", BEFORE, 2.0, rules) is None  # a short sentence may say little
    assert misled("Jean-Carlo.", "", 9.4, rules) is None  # no previous translation misled it
    assert misled("He needed a tie-break after six games all.", BEFORE, 4.0, rules) is None


async def test_an_echo_is_decoded_again_with_the_hints_alone_and_that_decode_kept() -> None:
    whisper = FakeWhisper.saying(
        {f"Potro {BEFORE}": BEFORE, "Potro": "Del Potro needed a tie-break."}
    )
    made = await translate_prompted(whisper, seconds(4), hints="Potro", previous=BEFORE)
    assert made == Prompted("Del Potro needed a tie-break.", Misled.ECHO)
    assert whisper.prompts == [f"Potro {BEFORE}", "Potro"]


async def test_a_short_stop_is_decoded_again_and_the_longer_text_kept() -> None:
    longer = FakeWhisper.saying(
        {BEFORE: "Jean-Carlo.", None: "Jean-Carlo lost control of his car."}
    )
    made = await translate_prompted(longer, seconds(9), previous=BEFORE)
    assert made == Prompted("Jean-Carlo lost control of his car.", Misled.SHORT)
    assert longer.prompts == [BEFORE, None]
    no_better = FakeWhisper.saying({BEFORE: "Jean-Carlo lost.", None: "Jean."})
    made = await translate_prompted(no_better, seconds(9), previous=BEFORE)
    assert made == Prompted("Jean-Carlo lost.", Misled.SHORT)


async def test_a_decode_the_prompt_did_not_mislead_is_made_once() -> None:
    whisper = FakeWhisper.saying({f"Potro {BEFORE}": "Jean-Carlo."})
    made = await translate_prompted(whisper, seconds(2), hints="Potro", previous=BEFORE)
    assert made == Prompted("Jean-Carlo.")
    assert whisper.prompts == [f"Potro {BEFORE}"]


async def test_a_weighed_final_keeps_the_decode_the_model_was_surer_of() -> None:
    """Decoded after the previous translation and after the hints alone, in one call; the
    prompt misled neither way, so the surer decode is kept."""
    answers: dict[str | None, str] = {  # keyed by prompt
        f"Potro {BEFORE}": "He had to go through a break.",
        "Potro": "Potro needed a tie-break.",
    }
    surer_alone = FakeWhisper.saying(answers, {f"Potro {BEFORE}": -1.02, "Potro": -0.84})
    made = await translate_prompted(
        surer_alone, seconds(4), hints="Potro", previous=BEFORE, weigh=True
    )
    assert made == Prompted("Potro needed a tie-break.", Misled.UNSURE)
    assert surer_alone.prompts == [f"Potro {BEFORE}", "Potro"] and len(surer_alone.calls) == 1
    surer_prompted = FakeWhisper.saying(answers, {f"Potro {BEFORE}": -0.6, "Potro": -0.84})
    made = await translate_prompted(
        surer_prompted, seconds(4), hints="Potro", previous=BEFORE, weigh=True
    )
    assert made == Prompted("He had to go through a break.")
    unknown = FakeWhisper.saying(answers)  # a model that gives no score: the prompted decode stays
    made = await translate_prompted(unknown, seconds(4), hints="Potro", previous=BEFORE, weigh=True)
    assert made == Prompted("He had to go through a break.")
    # Surer, but its budget cut it before the end of what it heard: not kept.
    cut = FakeWhisper.saying(
        answers, {f"Potro {BEFORE}": -1.02, "Potro": -0.84}, cut=frozenset({"Potro"})
    )
    made = await translate_prompted(cut, seconds(4), hints="Potro", previous=BEFORE, weigh=True)
    assert made == Prompted("He had to go through a break.")


async def test_a_weighed_final_that_echoes_keeps_the_decode_without_the_prompt() -> None:
    echo = {BEFORE: BEFORE, None: "Del Potro needed a tie-break."}
    whisper = FakeWhisper.saying(echo, {BEFORE: -0.1, None: -0.9})  # an echo is sure of itself
    made = await translate_prompted(whisper, seconds(4), previous=BEFORE, weigh=True)
    assert made == Prompted("Del Potro needed a tie-break.", Misled.ECHO)
    assert len(whisper.calls) == 1


async def test_a_weighed_final_with_no_previous_translation_is_decoded_once() -> None:
    whisper = FakeWhisper.saying({"Potro": "Del Potro won."})
    made = await translate_prompted(whisper, seconds(4), hints="Potro", weigh=True)
    assert made == Prompted("Del Potro won.")
    assert whisper.prompts == ["Potro"] and len(whisper.calls) == 1
