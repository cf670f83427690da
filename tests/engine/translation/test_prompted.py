import numpy as np

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
    """A fake Whisper-translate: what it writes for each prompt, and the prompts it heard."""

    def __init__(self, answers: dict[str | None, str]) -> None:
        self.answers = answers
        self.prompts: list[str | None] = []

    async def __call__(
        self, audio: np.ndarray, prompt: str | None, prefix: str | None = None
    ) -> str:
        self.prompts.append(prompt)
        return self.answers[prompt]


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
