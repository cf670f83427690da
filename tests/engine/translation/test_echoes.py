from engine.translation.echoes import echoes

# The live French talk of the translation bench (2026-12-04): the sentence after the one about
# Fisichella came back as that sentence again.
BEFORE = "Jean-Carlo fitella lost the control of his car and finished the race after the start."
ECHO = "Jean-Carlo fitella, who lost the control of his car and finished the contract of his car"


def test_a_translation_that_writes_its_prompt_again_echoes() -> None:
    assert echoes(ECHO, BEFORE)
    assert not echoes("Despite his advantage in the second set, he needed a tie-break.", BEFORE)


def test_four_words_in_a_row_make_an_echo_and_case_and_punctuation_do_not_matter() -> None:
    assert echoes("So, Lost The Control Of a bike.", BEFORE)
    assert not echoes("He lost the control on a bike.", BEFORE)  # three words in a row


def test_a_phrase_said_twice_by_the_decode_itself_echoes_without_a_prompt() -> None:
    # The live German talk of the translation bench (2026-12-04), one word changed between.
    twice = (
        "The sediments are still being distributed in flows. "
        "The sediments are being distributed in flows."
    )
    assert echoes(twice, None)
    assert not echoes("The sediments are being distributed in the river's flows.", None)


def test_a_run_must_not_overlap_its_first_saying() -> None:
    # Runs of four "no" overlap one another until the eighth copy.
    assert not echoes("no no no no no no no", None)
    assert echoes("no no no no no no no no", None)
