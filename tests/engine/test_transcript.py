"""Transcript exports, checked by independent parsers (``srt``, ``webvtt-py``) and hypothesis."""

from __future__ import annotations

import html
import itertools
import json
from collections.abc import Sequence
from datetime import timedelta

import pytest
import srt  # type: ignore[import-untyped]
import webvtt
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.events import Caption, Speaker
from engine.line_width import width
from engine.transcript import (
    FORMATS,
    MAX_CUE_LINES,
    MAX_LINE_CHARS,
    MIN_CUE_MS,
    Cue,
    clean_text,
    cues,
    render,
)


def final(segment: int, text: str, start: float, end: float, lang: str = "en") -> Caption:
    return Caption(
        segment=segment,
        lang=lang,
        source=True,
        state="final",
        text=text,
        start=start,
        end=end,
        seq=segment + 1,
    )


def vtt_ms(timestamp: str) -> int:
    hours, minutes, seconds = timestamp.split(":")
    whole, millis = seconds.split(".")
    return ((int(hours) * 60 + int(minutes)) * 60 + int(whole)) * 1000 + int(millis)


def srt_ms(time: timedelta) -> int:
    return time // timedelta(milliseconds=1)


def parse_srt(text: str) -> list[srt.Subtitle]:
    return list(srt.parse(text))


def parse_vtt(text: str) -> list[tuple[int, int, str]]:
    """(start ms, end ms, unescaped text) of every cue; strict parsing raises on a bad cue."""
    return [
        (vtt_ms(c.start), vtt_ms(c.end), html.unescape(c.raw_text))
        for c in webvtt.from_string(text, strict=True).captions
    ]


def test_unknown_format_raises() -> None:
    with pytest.raises(ValueError, match="docx"):
        render([final(0, "hi", 0, 1)], "docx")


def test_mixed_languages_and_drafts_are_refused() -> None:
    with pytest.raises(ValueError, match="one language"):
        render([final(0, "hi", 0, 1), final(1, "hola", 1, 2, lang="es")], "txt")
    draft = Caption(segment=0, lang="en", source=True, state="draft", text="h", start=0, end=1)
    with pytest.raises(ValueError, match="final"):
        render([draft], "srt")


def test_media_types() -> None:
    media = {fmt: render([final(0, "hi", 0, 1)], fmt)[1] for fmt in FORMATS}
    assert media == {
        "txt": "text/plain; charset=utf-8",
        "srt": "application/x-subrip; charset=utf-8",
        "vtt": "text/vtt; charset=utf-8",
        "json": "application/json",
    }


def test_empty_transcript_in_every_format() -> None:
    assert render([], "txt")[0] == ""
    assert render([], "srt")[0] == ""
    assert parse_vtt(render([], "vtt")[0]) == []
    assert json.loads(render([], "json")[0]) == []


def test_txt_is_one_line_per_segment() -> None:
    finals = [
        final(0, "Hello  world.", 0, 1),
        final(1, "Two\nlines\r\nhere", 1, 2),
        final(2, "   ", 2, 3),
        final(3, "Last\x00one\t.", 3, 4),
    ]
    text, _ = render(finals, "txt")
    assert text.splitlines() == ["Hello world.", "Two lines here", "Lastone ."]
    assert text.endswith("\n")


def test_srt_layout_and_timestamps() -> None:
    finals = [final(0, "Good morning.", 62.345, 64.5), final(1, "Welcome!", 3723.0, 3725.25)]
    text, _ = render(finals, "srt")
    assert text == (
        "1\n00:01:02,345 --> 00:01:04,500\nGood morning.\n\n"
        "2\n01:02:03,000 --> 01:02:05,250\nWelcome!\n"
    )
    subs = parse_srt(text)
    assert [(s.start, s.end, s.content) for s in subs] == [
        (timedelta(seconds=62.345), timedelta(seconds=64.5), "Good morning."),
        (timedelta(seconds=3723), timedelta(seconds=3725.25), "Welcome!"),
    ]


def test_vtt_layout_timestamps_and_escaping() -> None:
    finals = [final(0, "a --> b & <i>c</i>", 62.345, 64.5)]
    text, _ = render(finals, "vtt")
    assert text == (
        "WEBVTT\n\n00:01:02.345 --> 00:01:04.500\na --&gt; b &amp; &lt;i&gt;c&lt;/i&gt;\n"
    )
    assert parse_vtt(text) == [(62_345, 64_500, "a --> b & <i>c</i>")]


def test_json_keeps_segments_and_rounds_times() -> None:
    finals = [final(4, "Line one\nand two", 1.23456, 2.5), final(5, "Ñandú 🦤", 2.5, 3.0)]
    items = json.loads(render(finals, "json")[0])
    assert items == [
        {"segment": 4, "start": 1.235, "end": 2.5, "text": "Line one\nand two"},
        {"segment": 5, "start": 2.5, "end": 3.0, "text": "Ñandú 🦤"},
    ]


def said(
    segment: int,
    text: str,
    seq: int,
    *,
    rev: int = 0,
    speaker: Speaker | None = None,
    sources: tuple[int, ...] = (),
) -> Caption:
    return Caption(
        segment, "en", True, "final", text, segment, segment + 1, seq=seq, rev=rev,
        speaker=speaker, sources=sources,
    )  # fmt: skip


ADA = Speaker("s1", "Ada")
BO = Speaker("s2", "Bo")


def test_a_corrected_line_appears_once_in_its_newest_revision_where_it_was_said() -> None:
    finals = [
        said(0, "We use team view.", 1),
        said(1, "It works.", 2),
        said(0, "We use TeamView.", 3, rev=1),
        said(0, "We use TeamViewer.", 4, rev=2),
    ]
    assert render(finals, "txt")[0] == "We use TeamViewer.\nIt works.\n"
    assert [s.content for s in parse_srt(render(finals, "srt")[0])] == [
        "We use TeamViewer.",
        "It works.",
    ]
    assert [text for *_, text in parse_vtt(render(finals, "vtt")[0])] == [
        "We use TeamViewer.",
        "It works.",
    ]
    first, second = json.loads(render(finals, "json")[0])
    assert first == {
        "segment": 0,
        "start": 0,
        "end": 1,
        "text": "We use TeamViewer.",
        "rev": 2,
        "history": [
            {"rev": 0, "text": "We use team view."},
            {"rev": 1, "text": "We use TeamView."},
        ],
    }
    assert second == {"segment": 1, "start": 1, "end": 2, "text": "It works."}


def test_speakers_are_named_as_subtitles_do() -> None:
    finals = [
        said(0, "Welcome to the panel.", 1, speaker=ADA),
        said(1, "Our first question.", 2, speaker=ADA),
        said(2, "Thank you, Ada.", 3, speaker=BO),
        said(3, "Gracias.", 4, speaker=Speaker("s3", "Zoë <chair>"), sources=(3, 4)),
    ]
    assert render(finals, "txt")[0].splitlines() == [
        "Ada: Welcome to the panel.",
        "Our first question.",
        "Bo: Thank you, Ada.",
        "Zoë <chair>: Gracias.",
    ]
    assert [s.content for s in parse_srt(render(finals, "srt")[0])] == [
        "Ada: Welcome to the panel.",
        "Our first question.",
        "Bo: Thank you, Ada.",
        "Zoë <chair>: Gracias.",
    ]
    vtt = render(finals, "vtt")[0]
    assert "<v Ada>Welcome to the panel.\n" in vtt and "<v Ada>Our first question.\n" in vtt
    assert "<v Zoë &lt;chair&gt;>Gracias.\n" in vtt
    voices = [c.voice for c in webvtt.from_string(vtt, strict=True).captions]
    assert voices == ["Ada", "Ada", "Bo", "Zoë &lt;chair&gt;"]
    items = json.loads(render(finals, "json")[0])
    assert items[0]["speaker"] == {"id": "s1", "name": "Ada"}
    assert items[3]["sources"] == [3, 4]


def test_a_speaker_label_counts_towards_the_line_length() -> None:
    long_name = Speaker("s9", "Professor Doctor Maximiliane Mustermann")
    finals = [said(0, "So the short answer is yes, with caveats.", 1, speaker=long_name)]
    (cue, *rest) = cues(finals, label_speakers=True)
    assert all(len(line) <= MAX_LINE_CHARS for c in (cue, *rest) for line in c.lines)
    assert cue.lines[0].startswith("Professor Doctor Maximiliane Mustermann:")


def test_zero_length_and_backwards_captions_never_go_backwards() -> None:
    finals = [
        final(0, "zero length", 5.0, 5.0),
        final(1, "starts before the previous end", 4.0, 5.1),
        final(2, "ends before it starts", 9.0, 8.0),
        final(3, "not a number", float("nan"), float("inf")),
        final(4, "negative", -3.0, -1.0),
    ]
    got = [(c.start_ms, c.end_ms) for c in cues(finals)]
    assert got == [(5000, 5200), (5200, 5400), (9000, 9200), (9200, 9400), (9400, 9600)]
    for fmt in ("srt", "vtt"):
        text, _ = render(finals, fmt)
        spans = (
            [(srt_ms(s.start), srt_ms(s.end)) for s in parse_srt(text)]
            if fmt == "srt"
            else [(start, end) for start, end, _ in parse_vtt(text)]
        )
        assert spans == got


def test_long_segment_is_split_into_cues_sharing_its_time() -> None:
    words = [f"word{i}" for i in range(60)]
    text = " ".join(words)  # 409 characters
    result = cues([final(0, text, 10.0, 30.0)])
    assert len(result) >= 5
    assert all(len(cue.lines) <= MAX_CUE_LINES for cue in result)
    assert all(len(line) <= MAX_LINE_CHARS for cue in result for line in cue.lines)
    assert " ".join(line for cue in result for line in cue.lines) == text
    assert result[0].start_ms == 10_000 and result[-1].end_ms == 30_000
    for before, after in itertools.pairwise(result):
        assert before.end_ms == after.start_ms
    # Time follows characters: each cue's share of the time is within 10% of its text share.
    total_chars = sum(len(line) for cue in result for line in cue.lines)
    for cue in result:
        share_chars = sum(map(len, cue.lines)) / total_chars
        share_time = (cue.end_ms - cue.start_ms) / 20_000
        assert abs(share_time - share_chars) < 0.1 * share_chars
    # No short leftover cue at the end: sizes are even.
    sizes = [len(" ".join(cue.lines)) for cue in result]
    assert max(sizes) - min(sizes) <= 12


def test_two_line_cue_is_balanced() -> None:
    text = "This one fits in a single cue but needs two lines to do it."
    (cue,) = cues([final(0, text, 0, 3)])
    assert cue.lines == ("This one fits in a single cue", "but needs two lines to do it.")


def test_a_word_longer_than_a_line_is_cut() -> None:
    url = "https://example.org/" + "a" * 80
    result = cues([final(0, f"see {url} now", 0, 4)])
    lines = [line for cue in result for line in cue.lines]
    assert all(len(line) <= MAX_LINE_CHARS for line in lines)
    assert "".join(lines).replace(" ", "") == f"see{url}now"


def test_japanese_cues_fit_by_width_and_break_between_characters() -> None:
    """A kanji or kana is about as wide as two Latin letters: a line holds 21 of them, not 42
    (cut every 42 characters, each cue line ran twice the width of a subtitle line, and a
    space was put between the pieces). No line starts with a closing mark or ends with an
    opening one, and the text is as said, without spaces added."""
    said = (
        "今日は会社の過去一年間の業績と今後の計画についてお話しします。"
        "まず最初に、財務部長から「昨年の売上」について説明します。"
    )
    result = cues([final(0, said, 0, 9, lang="ja")])
    lines = [line for cue in result for line in cue.lines]
    assert all(width(line) <= MAX_LINE_CHARS for line in lines), lines
    assert "".join(lines) == said, lines
    assert all(line[0] not in "、。」" and line[-1] != "「" for line in lines), lines
    # Latin words inside keep their spaces to each other, none is added around them.
    (cue,) = cues([final(1, "会議は Microsoft Teams で行います。", 0, 3, lang="ja")])
    assert cue.lines == ("会議はMicrosoft Teamsで行います。",)
    # Korean keeps its spaces.
    korean = "오늘 회의에 오신 것을 환영합니다. 먼저 지난해 실적에 대해 말씀드리겠습니다."
    lines = [line for cue in cues([final(2, korean, 0, 5, lang="ko")]) for line in cue.lines]
    assert " ".join(lines) == korean and all(width(line) <= MAX_LINE_CHARS for line in lines)


def test_short_segment_split_still_gives_each_cue_its_minimum() -> None:
    text = "x " * 200
    result = cues([final(0, text, 1.0, 1.01)])
    assert len(result) >= 5
    assert all(cue.end_ms - cue.start_ms >= MIN_CUE_MS for cue in result)
    assert result[-1].end_ms == 1000 + MIN_CUE_MS * len(result)


# --- property-based ------------------------------------------------------------------------

TRICKY = [
    "-->",
    "\n",
    "\n\n",
    "\r\n",
    "&",
    "&amp;",
    "<b>",
    "</c>",
    " ",
    "1",
    "é",
    "\u0301",
    "00:00:01,000 --> 00:00:02,000",
    "WEBVTT",
    "NOTE",
    "\u2028",
    "\x00",
    "🦤",
    "中文",
]
texts = st.lists(st.one_of(st.text(max_size=30), st.sampled_from(TRICKY)), max_size=12).map("".join)
ordered_spans = st.lists(
    st.tuples(
        st.floats(min_value=0, max_value=30, allow_nan=False),  # gap before the segment
        st.floats(min_value=0, max_value=20, allow_nan=False),  # its duration
        texts,
    ),
    max_size=15,
)
# Any order, backwards, NaN, infinite; finite times bounded by what timedelta (used by the
# ``srt`` parser) can hold: 1e9 s is 31 years of audio.
any_time = st.one_of(
    st.floats(min_value=-1e9, max_value=1e9),
    st.sampled_from([float("nan"), float("inf"), -float("inf")]),
)
any_spans = st.lists(st.tuples(any_time, any_time, texts), max_size=10)


def build_ordered(spans: Sequence[tuple[float, float, str]]) -> list[Caption]:
    finals = []
    clock = 0.0
    for i, (gap, duration, text) in enumerate(spans):
        start = clock + gap
        clock = start + duration
        finals.append(final(i, text, start, clock))
    return finals


def check_outputs(finals: list[Caption]) -> None:
    expected = cues(finals)
    expected_text = "".join(clean_text(c.text) for c in finals).replace(" ", "")
    assert "".join(line for c in expected for line in c.lines).replace(" ", "") == expected_text
    for cue in expected:
        assert 1 <= len(cue.lines) <= MAX_CUE_LINES
        assert all(0 < len(line) and width(line) <= MAX_LINE_CHARS for line in cue.lines)

    subs = parse_srt(render(finals, "srt")[0])
    vtt = parse_vtt(render(finals, "vtt")[0])
    assert len(subs) == len(vtt) == len(expected)
    srt_spans = [(srt_ms(s.start), srt_ms(s.end)) for s in subs]
    vtt_spans = [(start, end) for start, end, _ in vtt]
    assert srt_spans == vtt_spans == [(c.start_ms, c.end_ms) for c in expected]
    assert [s.content for s in subs] == [text for _, _, text in vtt]
    assert [s.content for s in subs] == ["\n".join(c.lines) for c in expected]

    last_end = vtt_spans[-1][1] if vtt_spans else 0
    previous_end = 0
    for start, end in vtt_spans:
        assert 0 <= start and end <= last_end
        assert end > start and end - start >= MIN_CUE_MS
        assert start >= previous_end  # never backwards, never overlapping
        previous_end = end

    txt_lines = render(finals, "txt")[0].splitlines()
    assert txt_lines == [clean_text(c.text) for c in finals if clean_text(c.text)]
    assert [item["text"] for item in json.loads(render(finals, "json")[0])] == [
        c.text for c in finals
    ]


@settings(max_examples=300, deadline=None)
@given(ordered_spans)
def test_ordered_timings_always_parse_and_never_go_backwards(
    spans: list[tuple[float, float, str]],
) -> None:
    finals = build_ordered(spans)
    check_outputs(finals)
    # With ordered input, a cue starts no earlier than its segment did.
    first_cue_of: dict[int, Cue] = {}
    for cue in cues(finals):
        first_cue_of.setdefault(cue.segment, cue)
    for caption in finals:
        if caption.segment in first_cue_of:
            assert first_cue_of[caption.segment].start_ms >= round(caption.start * 1000)


@settings(max_examples=150, deadline=None)
@given(any_spans)
def test_any_timings_still_parse_and_never_go_backwards(
    spans: list[tuple[float, float, str]],
) -> None:
    finals = [final(i, text, start, end) for i, (start, end, text) in enumerate(spans)]
    check_outputs(finals)
