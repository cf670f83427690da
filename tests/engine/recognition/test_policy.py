"""The streaming policy with scripted hypotheses: no model involved."""

from __future__ import annotations

from engine.events import Word
from engine.recognition.policy import (
    LocalAgreement,
    anchor_to_hint,
    guard_repetitions,
    guard_text,
    join_words,
)


def words(text: str, start: float = 0.0, step: float = 0.5) -> list[Word]:
    return [
        Word(" " + t, start + i * step, start + i * step + 0.4) for i, t in enumerate(text.split())
    ]


def texts(ws: list[Word]) -> str:
    return join_words(ws)


def test_first_hypothesis_commits_nothing() -> None:
    agreement = LocalAgreement()
    assert agreement.update(words("hello there")) == []
    assert texts(agreement.tail) == "hello there"


def test_longest_common_prefix_of_two_hypotheses_is_committed() -> None:
    agreement = LocalAgreement()
    agreement.update(words("the quick brown fax"))
    newly = agreement.update(words("the quick brown fox jumps"))
    assert texts(newly) == "the quick brown"
    assert texts(agreement.committed) == "the quick brown"
    assert texts(agreement.tail) == "fox jumps"


def test_comparison_ignores_case_and_punctuation() -> None:
    agreement = LocalAgreement()
    agreement.update(words("Hello, world"))
    newly = agreement.update(words("hello world."))
    assert [w.text.strip() for w in newly] == ["hello", "world."]


def test_committed_words_never_change() -> None:
    agreement = LocalAgreement()
    agreement.update(words("one two three"))
    agreement.update(words("one two three four"))
    committed = list(agreement.committed)
    # The model changes its mind about the committed part: those words stay.
    agreement.update(words("won too three four five"))
    assert agreement.committed[: len(committed)] == committed


def test_divergent_hypothesis_is_matched_by_time_after_committed_words() -> None:
    agreement = LocalAgreement()
    agreement.update(words("a b c d"))
    agreement.update(words("a b c d"))
    assert texts(agreement.committed) == "a b c d"
    # Rephrased start; only words after the committed end (1.9 s) count as new.
    agreement.update(words("A be see d e f"))
    assert texts(agreement.tail) == "e f"


def test_last_sentence_end_finds_committed_sentence_ends() -> None:
    agreement = LocalAgreement()
    hyp = words("first sentence. second part")
    agreement.update(hyp)
    assert agreement.last_sentence_end(min_end=0.0) == 0  # nothing committed yet
    agreement.update(hyp)
    assert agreement.last_sentence_end(min_end=0.0) == 2
    assert agreement.last_sentence_end(min_end=1.0) == 0  # the sentence end is too early


def test_repetition_guard_cuts_phrase_loops() -> None:
    looped = words("and then we go and then we go and then we go")
    assert texts(guard_repetitions(looped)) == "and then we go"


def test_repetition_guard_cuts_single_word_loops_but_keeps_a_double() -> None:
    assert texts(guard_repetitions(words("no no no no no"))) == "no"
    assert texts(guard_repetitions(words("very very good"))) == "very very good"


def test_repetition_guard_keeps_a_repetition_the_decoder_went_on_from() -> None:
    # Said: a few copies, then other words. A loop runs on to the end of the hypothesis.
    said = "here are some more words words words words and that should be all"
    assert texts(guard_repetitions(words(said))) == said
    assert texts(guard_repetitions(words("I think that I think that we should go"))) == (
        "I think that I think that we should go"
    )
    # Too many copies to be speech, or too little after them to call it a recovery.
    assert texts(guard_repetitions(words("no no no no no and then more"))) == "no"
    assert texts(guard_repetitions(words("words words words and that"))) == "words"
    # A loop after a spoken repetition is still cut.
    looped = words("very very very good and then we go and then we go")
    assert texts(guard_repetitions(looped)) == "very very very good and then we go"


def test_a_repetition_at_the_end_of_a_decode_that_ended_by_itself_was_said() -> None:
    # SNG0072 ends "bye bye bye bye": a decoder that closed it with its end-of-text token
    # heard it; one that its budget stopped there may have been looping.
    said = words("thank you so much bye bye bye bye")
    assert texts(guard_repetitions(said, ended=True)) == "thank you so much bye bye bye bye"
    assert texts(guard_repetitions(said)) == "thank you so much bye"
    # More copies than anyone says, or a loop with words after it, is still a loop.
    assert texts(guard_repetitions(words("no no no no no no"), ended=True)) == "no"
    looped = words("and then we go and then we go and then we go")
    assert texts(guard_repetitions(looped, ended=True)) == "and then we go"


def test_repetition_guard_cuts_a_long_loop_that_its_budget_stopped() -> None:
    # tiny.en in the short window without context, on the monologue: a sentence longer than
    # any n-gram the guard looks for, then its start again until the token budget ran out.
    sentence = (
        "the library is completely open source and it would mean a lot to me if you could "
        "support it by giving a star on GitHub"
    )
    echo = "the library is completely open source and it would mean a lot to me if you could"
    looped = words(f"{sentence} {echo}")
    assert texts(guard_repetitions(looped)) == sentence
    twice = words(f"bigger {sentence} {sentence} the library is")
    assert texts(guard_repetitions(twice)) == f"bigger {sentence}"
    # A phrase said again, then other words, is speech; so is a short echo at the end.
    assert texts(guard_repetitions(words(f"{sentence} {sentence} and more"))) == (
        f"{sentence} {sentence} and more"
    )
    said = "so what we found in the end is that so what we found"
    assert texts(guard_repetitions(words(said))) == said
    restart = words(f"{sentence} the library is completely open source")
    assert texts(guard_repetitions(restart)) == f"{sentence} the library is completely open source"


def test_repetition_guard_keeps_ordinary_text() -> None:
    text = "from fairest creatures we desire increase that thereby beauty's rose might never die"
    assert texts(guard_repetitions(words(text))) == text


def test_a_loop_is_never_committed() -> None:
    agreement = LocalAgreement()
    loop = words("thank you thank you thank you thank you")
    agreement.update(loop)
    agreement.update(loop)
    assert texts(agreement.committed) == "thank you"


def test_prompt_is_guarded_and_bounded() -> None:
    prompt = guard_text("hello world " + "la la la la " * 20, max_chars=200)
    assert prompt == "hello world la"
    long = " ".join(f"word{i}" for i in range(100))
    bounded = guard_text(long, max_chars=50)
    assert len(bounded) <= 50
    assert long.endswith(bounded)
    assert not bounded.startswith(" ")


def test_anchor_drops_an_invented_tail() -> None:
    hint = words("making a famine where abundance lies")
    refined = words("Making a famine where abundance lies. Thank you for watching.")
    assert texts(anchor_to_hint(refined, hint)) == "Making a famine where abundance lies. Thank"


def test_anchor_keeps_corrections_inside_the_segment() -> None:
    hint = words("and only herald to the godly spring")
    refined = words("and only herald to the gaudy spring")
    assert texts(anchor_to_hint(refined, hint)) == "and only herald to the gaudy spring"


def test_anchor_keeps_the_words_of_a_phrase_the_drafts_garbled() -> None:
    """The FLEURS English talk: the drafts heard "town of Sintra and which was made famous"
    as "town of in the". Room for six words after "of" (the speech after it) keeps what the
    refine read, where two hint words plus one would have cut "made famous." off, and the
    next segment's refine then stopped after those two words."""
    hint = words("within easy reach is a romantic and fascinating town of in the")
    refined = words(
        "within easy reach is a romantic and fascinating town of Sintra and which was made famous."
    )
    room = [1] * len(hint)
    assert texts(anchor_to_hint(refined, hint, room)).endswith("of Sintra and which")
    room[hint.index(next(w for w in hint if w.text.strip() == "of"))] = 6
    assert texts(anchor_to_hint(refined, hint, room)).endswith(
        "of Sintra and which was made famous."
    )


def test_anchor_gives_no_room_after_the_speech_ended() -> None:
    hint = words("making a famine where abundance lies")
    refined = words("Making a famine where abundance lies. Thank you for watching.")
    room = [4, 4, 3, 2, 2, 1]  # the speech ends with "lies"
    assert (
        texts(anchor_to_hint(refined, hint, room)) == "Making a famine where abundance lies. Thank"
    )
