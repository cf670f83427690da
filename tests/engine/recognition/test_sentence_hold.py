"""SentenceHold: a final waits for its pause, over a real SpeechTimeline fed VAD scores."""

from __future__ import annotations

import numpy as np

from engine.events import Caption
from engine.recognition.sentence_hold import HeldFinal, SentenceHold
from engine.recognition.vad import WINDOW_SECONDS, SpeechTimeline

PAUSE_S = 0.4


def windows(seconds: float) -> int:
    return round(seconds / WINDOW_SECONDS)


class Stream:
    """A timeline at origin 0 and the hold over it; ``speak``/``pause`` extend the audio."""

    def __init__(self, language: str = "en") -> None:
        self.timeline = SpeechTimeline(0.0)
        self.hold = SentenceHold(self.timeline, language, PAUSE_S)
        self.segment = 0

    def speak(self, seconds: float) -> None:
        self.timeline.extend(np.full(windows(seconds), 0.9))

    def pause(self, seconds: float) -> None:
        self.timeline.extend(np.full(windows(seconds), 0.01))

    def final(self, text: str, *, silence_before_cut: float = 0.0) -> HeldFinal:
        """The final of the segment cut now (``silence_before_cut`` of its end was quiet)."""
        self.segment += 1
        cut = self.timeline.end
        caption = Caption(
            segment=self.segment,
            lang="en",
            source=True,
            state="final",
            text=text,
            start=0.0,
            end=cut,
            stable=len(text),
        )
        return HeldFinal(caption, cut, silence_before_cut)


def texts(captions: list[Caption]) -> list[str]:
    return [c.text for c in captions]


def test_a_final_that_can_end_a_sentence_waits_for_its_pause_then_keeps_its_mark() -> None:
    stream = Stream()
    stream.speak(2.0)
    stream.pause(0.1)
    assert stream.hold.hold(stream.final("It rained all day.", silence_before_cut=0.1)) == []
    stream.pause(0.1)
    assert stream.hold.release() == []  # 0.2 s of pause: not yet told
    stream.pause(0.3)
    released = stream.hold.release()
    assert texts(released) == ["It rained all day."]
    assert released[0].stable == len("It rained all day.")
    assert stream.hold.shaped("The next day") == "The next day"


def test_the_speaker_going_on_drops_the_mark_and_the_next_final_continues() -> None:
    stream = Stream()
    stream.speak(2.0)
    stream.pause(0.1)
    assert stream.hold.hold(stream.final("Further.", silence_before_cut=0.1)) == []
    stream.speak(0.5)  # speech resumes before the pause says "end"
    released = stream.hold.release()
    assert texts(released) == ["Further"]
    assert released[0].stable == len("Further")
    assert stream.hold.shaped("More of our profile.") == "more of our profile."


def test_a_final_that_cannot_end_a_sentence_goes_at_once_without_its_mark() -> None:
    stream = Stream()
    stream.speak(2.0)
    assert texts(stream.hold.hold(stream.final("We did it because."))) == ["We did it because"]
    assert stream.hold.shaped("It paid.") == "it paid."


def test_a_later_final_releases_the_held_one_even_before_its_pause_is_told() -> None:
    # Never lost: a final still waiting when the next segment's final comes goes out first,
    # as a piece of a sentence the speaker went on with.
    stream = Stream()
    stream.speak(2.0)
    first = stream.final("We grew.", silence_before_cut=0.0)
    assert stream.hold.hold(first) == []
    second = stream.final("Then we hired.", silence_before_cut=0.0)
    assert texts(stream.hold.hold(second)) == ["We grew"]
    stream.pause(0.5)
    # It continues the sentence the first one turned out not to end.
    assert texts(stream.hold.release()) == ["then we hired."]


def test_a_segment_with_nothing_to_show_leaves_the_held_final_waiting() -> None:
    stream = Stream()
    stream.speak(1.0)
    assert stream.hold.hold(stream.final("Come here.")) == []
    assert stream.hold.hold(None) == []
    stream.pause(0.5)
    assert texts(stream.hold.release()) == ["Come here."]


def test_the_stream_ending_in_a_pause_ends_the_sentence() -> None:
    stream = Stream()
    stream.speak(1.0)
    assert stream.hold.hold(stream.final("Come here.")) == []
    assert texts(stream.hold.end()) == ["Come here."]
    assert stream.hold.end() == []


def test_a_final_the_stream_ended_with_keeps_its_mark_whatever_its_last_word() -> None:
    stream = Stream()
    stream.speak(1.0)
    assert texts(stream.hold.hold(stream.final("Come in."), ended=True)) == ["Come in."]
