"""The translation benchmark: metric helpers on hand-made cases, then one short real run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import wave
from pathlib import Path

import pytest

from bench.metrics import Erasure
from bench.replay import Received
from bench.translation import FleursClip, build_talk, flores_lines
from bench.translation_metrics import (
    ClipSpan,
    Heard,
    clip_of,
    clip_texts,
    heard_captions,
    segment_timings,
    source_erasure,
    text_score,
    translation_erasure,
)
from tests.data import DATA, ENGLISH_FLEURS_ID, FLORES

REPO_ROOT = Path(__file__).resolve().parents[2]


def caption(
    arrival: float,
    segment: int,
    state: str,
    text: str,
    *,
    lang: str = "en",
    source: bool = True,
    start: float = 0.0,
    end: float = 1.0,
    ts: float = 0.0,
    sources: list[int] | None = None,
) -> Received:
    message: dict[str, object] = {
        "type": "caption",
        "seq": 0,
        "ts": ts,
        "segment": segment,
        "lang": lang,
        "source": source,
        "state": state,
        "text": text,
        "start": start,
        "end": end,
        **({"sources": sources} if sources is not None else {}),
    }
    return Received(arrival, message)


def es(
    arrival: float,
    segment: int,
    state: str,
    text: str,
    *,
    start: float = 0.0,
    end: float = 1.0,
    ts: float = 0.0,
    sources: list[int] | None = None,
) -> Received:
    """A Spanish translation event."""
    return caption(
        arrival,
        segment,
        state,
        text,
        lang="es",
        source=False,
        start=start,
        end=end,
        ts=ts,
        sources=sources,
    )


# --- text scores -----------------------------------------------------------------------------


def test_text_score_is_perfect_for_identical_text_and_low_for_unrelated_text() -> None:
    refs = ["The cat sat on the mat today.", "It rained all day in the city."]
    same = text_score(refs, refs)
    assert same.bleu == pytest.approx(100.0) and same.chrf == pytest.approx(100.0)
    assert same.segments == 2
    other = text_score(["Completely different words here.", "Nothing alike at all."], refs)
    assert other.bleu < 10 and other.chrf < 30


def test_text_score_needs_one_reference_per_hypothesis() -> None:
    with pytest.raises(ValueError):
        text_score(["a"], ["a", "b"])
    with pytest.raises(ValueError):
        text_score([], [])


# --- listener events -------------------------------------------------------------------------


def test_heard_captions_keeps_captions_only_with_their_fields() -> None:
    received = [
        Received(0.5, {"type": "state", "seq": 1, "state": "live", "listeners": 2}),
        es(1.0, 3, "final", "hola", start=2.0, end=3.5, ts=100.25),
    ]
    (heard,) = heard_captions(received)
    assert heard == Heard(1.0, 100.25, 3, "es", False, "final", "hola", 2.0, 3.5)


def test_segment_timings_measure_translation_against_the_source_on_one_socket() -> None:
    heard = heard_captions(
        [
            caption(1.0, 0, "draft", "hello", ts=10.0),
            es(1.2, 0, "draft", "hola", ts=10.2),
            caption(2.0, 0, "final", "hello there", start=0.5, end=2.5, ts=11.0),
            es(2.1, 0, "final", "hola allí", ts=11.08),
            caption(3.0, 1, "final", "bye", start=3.0, end=4.0, ts=12.0),  # no draft before
            es(3.5, 1, "final", "adiós", ts=12.4),
            caption(4.0, 2, "final", "again", start=5.0, end=6.0),  # translation never came
            caption(5.0, 3, "final", "  ", start=7.0, end=7.5),  # empty: not a segment
        ]
    )
    zero, one, two = segment_timings(heard, "es")
    assert (zero.segment, zero.words) == (0, 2)
    assert zero.source_seconds == pytest.approx(2.0)
    assert zero.final_delay_s == pytest.approx(0.1)
    assert zero.final_delay_server_s == pytest.approx(0.08)
    assert zero.first_shown_delay_s == pytest.approx(0.2)
    assert zero.had_draft
    assert one.final_delay_s == pytest.approx(0.5)
    assert one.first_shown_delay_s == pytest.approx(0.5)
    assert not one.had_draft
    assert two.final_delay_s is None and two.first_shown_delay_s is None


def test_translation_erasure_counts_retracted_words_of_the_target_language_only() -> None:
    heard = heard_captions(
        [
            caption(1.0, 0, "draft", "alpha beta gamma delta"),  # source: ignored
            caption(1.5, 0, "draft", "epsilon"),
            es(1.1, 0, "draft", "el gato negro"),
            es(1.6, 0, "draft", "el perro"),  # retracts "gato negro": 2
            es(2.0, 0, "final", "el perro negro duerme"),  # retracts nothing
            es(2.5, 0, "draft", "late draft ignored"),
            caption(2.2, 1, "final", "x", lang="fr", source=False),
        ]
    )
    assert translation_erasure(heard, "es") == Erasure(retracted_words=2, final_words=4)
    assert translation_erasure(heard, "es").normalised == pytest.approx(0.5)
    # The source captions' own erasure: "alpha beta gamma delta" -> "epsilon" retracts 4.
    assert source_erasure(heard) == Erasure(retracted_words=4, final_words=0)


def test_a_sentence_final_covers_each_of_its_source_segments() -> None:
    heard = heard_captions(
        [
            caption(1.0, 3, "final", "The colour of", start=0.0, end=1.0),
            es(1.1, 3, "draft", "El color de", sources=[3]),
            caption(2.0, 4, "final", "red cabbage changes.", start=1.2, end=2.5),
            es(2.1, 4, "draft", "la col cambia", sources=[4]),
            es(2.6, 3, "final", "El color de la col lombarda cambia.", sources=[3, 4]),
        ]
    )
    three, four = segment_timings(heard, "es")
    assert three.final_delay_s == pytest.approx(1.6)  # waits for its sentence's end
    assert four.final_delay_s == pytest.approx(0.6)
    # Only the segment that completed the sentence times the translator itself.
    assert (three.completes_sentence, four.completes_sentence) == (False, True)
    assert four.had_draft and four.first_shown_delay_s == pytest.approx(0.1)
    # The reader saw the sentence's drafts on one line, "El color de la col cambia", and the
    # final replaced it: only "cambia" was taken back.
    erased = translation_erasure(heard, "es")
    assert erased == Erasure(retracted_words=1, final_words=7)


def test_a_sentence_shows_its_segments_drafts_together_and_counts_once() -> None:
    heard = heard_captions(
        [
            es(1.0, 5, "draft", "uno dos", sources=[5]),
            es(1.5, 6, "draft", "tres cuatro", sources=[6]),  # shown: uno dos tres cuatro
            es(1.8, 5, "draft", "uno diez", sources=[5]),  # takes back dos tres cuatro: 3
            es(2.0, 7, "draft", "otra frase", sources=[7]),  # a sentence of its own
            es(2.5, 5, "final", "uno diez tres", sources=[5, 6]),  # takes back cuatro: 1
            es(2.6, 6, "draft", "late", sources=[6]),  # after its sentence's final: ignored
            es(3.0, 7, "final", "otra", sources=[7]),  # takes back frase: 1
        ]
    )
    assert translation_erasure(heard, "es") == Erasure(retracted_words=5, final_words=4)


# --- talks of several clips ------------------------------------------------------------------


def test_clip_of_takes_the_clip_containing_the_midpoint_else_the_nearest() -> None:
    clips = [ClipSpan("a", 0.0, 5.0), ClipSpan("b", 6.0, 10.0)]
    assert clip_of(1.0, 3.0, clips) == 0
    assert clip_of(4.0, 7.0, clips) == 0  # midpoint 5.5 is in the gap, 0.5 from each: first
    assert clip_of(4.5, 7.9, clips) == 1  # midpoint 6.2
    assert clip_of(11.0, 12.0, clips) == 1
    with pytest.raises(ValueError):
        clip_of(0.0, 1.0, [])


def test_clip_texts_joins_each_clips_finals_in_segment_order() -> None:
    clips = [ClipSpan("a", 0.0, 5.0), ClipSpan("b", 6.0, 10.0), ClipSpan("c", 11.0, 12.0)]
    finals = heard_captions(
        [
            es(3.0, 1, "final", "segundo", start=2.5, end=4.5),
            es(2.0, 0, "final", "primero", start=0.0, end=2.0),
            es(4.0, 2, "final", "tercero", start=6.5, end=9.0),
            es(4.5, 2, "final", "repetido", start=6.5, end=9.0),  # a final never changes
            es(5.0, 3, "final", " ", start=6.5, end=9.0),
        ]
    )
    assert clip_texts(finals, clips) == ["primero segundo", "tercero", ""]


def _write_wav(path: Path, samples: int, value: int, rate: int = 16000) -> None:
    with wave.open(str(path), "wb") as writer:
        writer.setnchannels(1)
        writer.setsampwidth(2)
        writer.setframerate(rate)
        writer.writeframes(value.to_bytes(2, "little", signed=True) * samples)


def test_build_talk_puts_silence_between_clips_and_records_their_spans(tmp_path: Path) -> None:
    _write_wav(tmp_path / "a.wav", 8000, 100)
    _write_wav(tmp_path / "b.wav", 4000, -100)
    clips = [
        FleursClip("a", "es", tmp_path / "a.wav", {"en": "A"}),
        FleursClip("b", "es", tmp_path / "b.wav", {"en": "B"}),
    ]
    recording, spans = build_talk("talk", clips, gap_s=1.0)
    assert recording.duration == pytest.approx(0.5 + 1.0 + 0.25)
    assert spans == (ClipSpan("a", 0.0, 0.5), ClipSpan("b", 1.5, 1.75))
    gap = recording.pcm[2 * 8000 : 2 * 24000]
    assert gap == bytes(len(gap))
    assert recording.pcm[2 * 24000 : 2 * 24001] == (-100).to_bytes(2, "little", signed=True)


# --- a short real run ------------------------------------------------------------------------


@pytest.mark.model
def test_short_run_report_has_every_field(tmp_path: Path) -> None:
    command = [
        "translation",
        "--sentences", "20",
        "--routes", "en-es", "fr-en",
        "--speech", "en",
        "--clips", "1",
        "--english-targets", "es",
        "--latency-file", "none",
        "--out", str(tmp_path),
    ]  # fmt: skip
    completed = subprocess.run(
        [sys.executable, "-m", "bench", *command],
        cwd=REPO_ROOT,
        env={**os.environ, "INTERP_SHARED_DIR": str(DATA)},  # the FLORES and FLEURS of tests/data
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    report = json.loads((tmp_path / "translation.json").read_text())
    markdown = (tmp_path / "translation.md").read_text()
    assert markdown.startswith("# Translation benchmark")
    assert (tmp_path / "traces" / "translation-fleurs-en-talk.json").is_file()
    assert report["command"].startswith("python -m bench translation --sentences 20")
    assert {"cpu_model", "usable_cores", "load_average_1_5_15m"} <= report["machine"].keys()
    assert report["server"]["started_by_bench"] is True
    assert set(report["goals_met"]) == {
        "apertium_final_delay_p95",
        "whisper_final_delay_p50",
        "translation_erasure",
    }
    assert report["goals_met"]["apertium_final_delay_p95"] is None  # no long-form talk run

    en_es, fr_en = report["text"]
    assert (en_es["source"], en_es["target"], en_es["modes"]) == ("en", "es", ["eng-spa"])
    assert fr_en["modes"] == ["fr-es", "spa-eng"]  # the pivot route
    reference = flores_lines("es", 20, FLORES)
    assert len(reference) == en_es["sentences"] == 20
    for route in (en_es, fr_en):
        # Apertium is weak but not random: FLORES scores are far above unrelated text.
        assert 3.0 < route["bleu"] < 60.0 and 25.0 < route["chrf"] < 80.0
        assert 0.0 < route["ms_per_sentence"]["p50"] <= route["ms_per_sentence"]["p95"]

    (lane,) = report["speech"]
    assert (lane["source"], lane["target"]) == ("en", "es")
    assert lane["final_backend"].startswith("apertium:")
    (clip,) = lane["clips"]
    assert clip["clip"] == ENGLISH_FLEURS_ID
    assert clip["hypothesis"].strip() and clip["reference"].strip()
    assert lane["bleu"] is not None and lane["chrf"] > 10.0
    assert lane["segments"] >= 1 and lane["missing_finals"] == 0
    assert lane["final_delay_s"]["count"] == lane["segments"]
    assert lane["final_delay_s"]["p50"] is not None and lane["final_delay_s"]["p50"] < 5.0
    assert lane["final_words"] > 0 and lane["erasure"] is not None
    assert lane["source_erasure"] is not None
    # LAAL of the one real-time clip: its finals arrive after the clip began
    assert lane["laal_s"]["count"] == 1 and clip["laal_s"] > 0
    assert report["overall"]["laal_s"]["apertium"]["count"] == 1
