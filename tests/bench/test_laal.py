"""Length-adaptive average lagging (bench.metrics.laal) on cases worked on paper."""

from __future__ import annotations

import json
import wave
from pathlib import Path
from typing import Any

import pytest

from bench.metrics import laal
from bench.translation_laal import backfill
from bench.translation_metrics import ClipSpan, Heard, clip_laal


def test_laal_of_a_translation_that_keeps_pace_is_its_constant_lag() -> None:
    # 4 s of source, 4 words (= reference length): rate 1 s per word. Word i appears at i s,
    # so each lags 1 s behind the ideal (i - 1) s; the 4th is emitted at the source's end
    # (tau = 4): (1 + 1 + 1 + 1) / 4 = 1.
    assert laal([1.0, 2.0, 3.0, 4.0], 4.0, 4) == pytest.approx(1.0)


def test_laal_uses_the_longer_of_hypothesis_and_reference() -> None:
    # 4 s of source, reference 3 words, hypothesis 6 words: rate 4 / max(6, 3) = 2/3 s.
    # The 3rd word comes at 4 s, the end of the source, so tau = 3:
    # (2 - 0) + (2 - 2/3) + (4 - 4/3) = 6, / 3 = 2. (Average lagging, with the reference's
    # rate 4/3, would give (2 + 2/3 + 4/3) / 3 = 4/3: it rewards the over-long output.)
    assert laal([2.0, 2.0, 4.0, 4.0, 4.0, 4.0], 4.0, 3) == pytest.approx(2.0)


def test_laal_stops_at_the_first_word_after_the_source_ended() -> None:
    # Everything emitted after a 3 s source: tau = 1, LAAL = the first delay.
    assert laal([5.0, 5.0, 6.0], 3.0, 3) == pytest.approx(5.0)


def test_laal_of_nothing_is_none() -> None:
    assert laal([], 3.0, 3) is None
    assert laal([1.0], 0.0, 3) is None


def _final(segment: int, arrival: float, start: float, end: float, text: str) -> Heard:
    return Heard(arrival, 0.0, segment, "en", False, "final", text, start, end)


def test_clip_laal_gives_each_final_to_its_clip_and_times_words_from_the_clip_start() -> None:
    clips = [ClipSpan("a", 0.0, 4.0), ClipSpan("b", 5.0, 8.0)]
    finals = [
        # clip a: "one two" arrives 2 s after audio time 0 was spoken (origin 10), "three
        # four" at 4 s; reference 4 words, rate 1 s/word. Delays 2, 2, 4, 4; tau = 3 (the
        # first at >= 4 s): (2 + 1 + 2) / 3 = 5/3.
        _final(0, 12.0, 0.0, 2.0, "one two"),
        _final(1, 14.0, 2.0, 4.0, "three four"),
        # clip b starts at 15 on the wall clock; one final 4 s later, after its 3 s: tau = 1.
        _final(2, 19.0, 5.0, 8.0, "five six"),
        _final(3, 20.0, 9.0, 9.5, "  "),  # empty: no words
    ]
    result = clip_laal(finals, clips, ["w w w w", "w w"], audio_origin=10.0)
    assert result == pytest.approx([5 / 3, 4.0])


def test_clip_laal_is_none_for_a_clip_without_finals() -> None:
    clips = [ClipSpan("a", 0.0, 4.0), ClipSpan("b", 5.0, 8.0)]
    assert clip_laal([_final(0, 3.0, 0.0, 2.0, "x")], clips, ["x", "y"], 0.0) == [3.0, None]


def _caption(segment: int, text: str, start: float, end: float) -> dict[str, Any]:
    return {
        "type": "caption",
        "segment": segment,
        "lang": "en",
        "source": False,
        "state": "final",
        "text": text,
        "start": start,
        "end": end,
        "ts": 0.0,
    }


def test_backfill_computes_laal_from_a_trace_written_before_laal_existed(tmp_path: Path) -> None:
    fleurs = tmp_path / "fleurs"
    (fleurs / "audio").mkdir(parents=True)
    rows: list[dict[str, object]] = []
    for clip in ("a", "b"):  # two clips of 2 s at 100 Hz: spans 0-2 s and 3-5 s (1 s gap)
        with wave.open(str(fleurs / "audio" / f"{clip}.wav"), "wb") as w:
            w.setnchannels(1)
            w.setsampwidth(2)
            w.setframerate(100)
            w.writeframes(bytes(400))
        rows.append({"id": clip, "lang": "es", "audio": f"audio/{clip}.wav", "translations": {}})
    (fleurs / "manifest.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    results = tmp_path / "results"
    (results / "traces").mkdir(parents=True)
    lane = {
        "talk": "fleurs-es-talk",
        "source": "es",
        "target": "en",
        "mode": "realtime",
        "final_backend": "whisper:base",
        "clips": [
            {"clip": "a", "hypothesis": "one two", "reference": "w w"},
            {"clip": "b", "hypothesis": "three", "reference": "w w"},
        ],
    }
    report = {"settings": {"clip_gap_s": 1.0}, "overall": {}, "speech": [lane]}
    (results / "translation.json").write_text(json.dumps(report))
    (results / "translation.md").write_text("# Translation benchmark\n")
    trace = {
        "presenter": [[0.5, {"type": "ready"}]],  # audio time 0 at 0.5 s
        "listeners": {
            "en": [
                # clip a began at 0.5: both words at 3.0 s, after its 2 s: tau = 1, LAAL 3
                [3.5, _caption(0, "one two", 0.0, 2.0)],
                # clip b began at 0.5 + 3 = 3.5: its word at 4.0 s: LAAL 4
                [7.5, _caption(1, "three", 3.0, 5.0)],
            ]
        },
    }
    (results / "traces" / "translation-fleurs-es-talk.json").write_text(json.dumps(trace))

    backfill(results, fleurs)

    written = json.loads((results / "translation.json").read_text())
    (done,) = written["speech"]
    assert [c["laal_s"] for c in done["clips"]] == pytest.approx([3.0, 4.0])
    assert done["laal_s"]["p50"] == pytest.approx(3.5)
    assert written["overall"]["laal_s"]["whisper"]["count"] == 2
    assert written["overall"]["laal_s"]["apertium"]["count"] == 0
    assert "ready" in written["laal_source"]
    assert "| fleurs-es-talk | es->en | whisper:base | 2 | 3.50 / 3.95 | 3.50 |" in (
        (results / "translation.md").read_text()
    )
    # a second run finds nothing to add and changes nothing
    before = (results / "translation.md").read_text()
    backfill(results, fleurs)
    assert (results / "translation.md").read_text() == before
