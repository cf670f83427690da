from collections.abc import Sequence

import numpy as np

from engine.translation.backends import Weighed
from engine.translation.prompted import (
    Misled,
    Prompted,
    PromptRules,
    misled,
    prompt_of,
    translate_prompted,
)

BEFORE = "Jean-Carlo lost control of his car and finished the race."


class Whisper:
    """A fake Whisper-translate: what it writes for each prompt and how sure it is of it,
    the prompts it heard, and how many calls it took."""

    def __init__(
        self,
        answers: dict[str | None, str],
        scores: dict[str | None, float] | None = None,
        cut: frozenset[str | None] = frozenset(),
    ) -> None:
        self.answers = answers
        self.scores = scores or {}
        self.cut = cut
        """Prompts whose decode its token budget cut."""
        self.prompts: list[str | None] = []
        self.calls = 0

    async def __call__(
        self, audio: np.ndarray, prompt: str | None, prefix: str | None = None
    ) -> str:
        self.calls += 1
        self.prompts.append(prompt)
        return self.answers[prompt]

    async def each(
        self, audio: np.ndarray, prompts: Sequence[str | None], prefix: str | None = None
    ) -> list[Weighed]:
        self.calls += 1
        self.prompts += prompts
        return [Weighed(self.answers[p], self.scores.get(p), p not in self.cut) for p in prompts]


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
    whisper = Whisper({f"Potro {BEFORE}": BEFORE, "Potro": "Del Potro needed a tie-break."})
    made = await translate_prompted(whisper, seconds(4), hints="Potro", previous=BEFORE)
    assert made == Prompted("Del Potro needed a tie-break.", Misled.ECHO)
    assert whisper.prompts == [f"Potro {BEFORE}", "Potro"]


async def test_a_short_stop_is_decoded_again_and_the_longer_text_kept() -> None:
    longer = Whisper({BEFORE: "Jean-Carlo.", None: "Jean-Carlo lost control of his car."})
    made = await translate_prompted(longer, seconds(9), previous=BEFORE)
    assert made == Prompted("Jean-Carlo lost control of his car.", Misled.SHORT)
    assert longer.prompts == [BEFORE, None]
    no_better = Whisper({BEFORE: "Jean-Carlo lost.", None: "Jean."})
    made = await translate_prompted(no_better, seconds(9), previous=BEFORE)
    assert made == Prompted("Jean-Carlo lost.", Misled.SHORT)


async def test_a_decode_the_prompt_did_not_mislead_is_made_once() -> None:
    whisper = Whisper({f"Potro {BEFORE}": "Jean-Carlo."})
    made = await translate_prompted(whisper, seconds(2), hints="Potro", previous=BEFORE)
    assert made == Prompted("Jean-Carlo.")
    assert whisper.prompts == [f"Potro {BEFORE}"]


async def test_a_weighed_final_keeps_the_decode_the_model_was_surer_of() -> None:
    """Decoded after the previous translation and after the hints alone, in one call; the
    prompt misled neither way, so the surer decode is kept."""
    answers = {
        f"Potro {BEFORE}": "He had to go through a break.",
        "Potro": "Potro needed a tie-break.",
    }
    surer_alone = Whisper(answers, {f"Potro {BEFORE}": -1.02, "Potro": -0.84})
    made = await translate_prompted(
        surer_alone, seconds(4), hints="Potro", previous=BEFORE, weigh=True
    )
    assert made == Prompted("Potro needed a tie-break.", Misled.UNSURE)
    assert surer_alone.prompts == [f"Potro {BEFORE}", "Potro"] and surer_alone.calls == 1
    surer_prompted = Whisper(answers, {f"Potro {BEFORE}": -0.6, "Potro": -0.84})
    made = await translate_prompted(
        surer_prompted, seconds(4), hints="Potro", previous=BEFORE, weigh=True
    )
    assert made == Prompted("He had to go through a break.")
    unknown = Whisper(answers)  # a model that gives no score: the prompted decode stays
    made = await translate_prompted(unknown, seconds(4), hints="Potro", previous=BEFORE, weigh=True)
    assert made == Prompted("He had to go through a break.")
    # Surer, but its budget cut it before the end of what it heard: not kept.
    cut = Whisper(answers, {f"Potro {BEFORE}": -1.02, "Potro": -0.84}, cut=frozenset({"Potro"}))
    made = await translate_prompted(cut, seconds(4), hints="Potro", previous=BEFORE, weigh=True)
    assert made == Prompted("He had to go through a break.")


async def test_a_weighed_final_that_echoes_keeps_the_decode_without_the_prompt() -> None:
    echo = {BEFORE: BEFORE, None: "Del Potro needed a tie-break."}
    whisper = Whisper(echo, {BEFORE: -0.1, None: -0.9})  # an echo is sure of itself
    made = await translate_prompted(whisper, seconds(4), previous=BEFORE, weigh=True)
    assert made == Prompted("Del Potro needed a tie-break.", Misled.ECHO)
    assert whisper.calls == 1


async def test_a_weighed_final_with_no_previous_translation_is_decoded_once() -> None:
    whisper = Whisper({"Potro": "Del Potro won."})
    made = await translate_prompted(whisper, seconds(4), hints="Potro", weigh=True)
    assert made == Prompted("Del Potro won.")
    assert whisper.prompts == ["Potro"] and whisper.calls == 1
