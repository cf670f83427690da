"""The home page's language table in an organiser's words (app/route_summary.py)."""

from __future__ import annotations

from pathlib import Path

from app.route_summary import NOT_MEASURED, final_bleu, organiser_rows, verdict
from engine.translation.routes import Backend, TranslationRoute

APERTIUM = Backend("apertium", "eng-spa")
WHISPER = Backend("whisper", "base")


def test_verdicts_follow_the_final_translations_bleu() -> None:
    note = "final: Apertium eng-spa: FLORES-200 BLEU 12.1, chrF 44.1; draft: Apertium x: BLEU 40"
    assert final_bleu(note) == 12.1  # the final's, not the draft's
    assert final_bleu("final: CTranslate2 model m: quality not measured here") is None
    assert verdict(12.1).startswith("good for gist")
    assert verdict(7.4).startswith("rough")
    assert verdict(20.7).startswith("understandable")
    assert verdict(31).startswith("good:")
    assert verdict(None) == NOT_MEASURED


def test_rows_speak_plainly_and_keep_the_numbers_one_click_away() -> None:
    routes = [
        TranslationRoute(
            "en", "es", APERTIUM, APERTIUM, "final: Apertium eng-spa: FLORES-200 devtest BLEU 12.1"
        ),
        TranslationRoute("fr", "en", None, WHISPER, "final: Whisper base: FLEURS BLEU 7.4"),
        TranslationRoute("de", "en", None, WHISPER, "final: Whisper base: FLEURS BLEU 18.7"),
        TranslationRoute("pt", "en", None, WHISPER, "final: Whisper base: FLEURS BLEU 20.7"),
    ]
    spanish, folded = organiser_rows(routes)
    assert (spanish.source, spanish.target) == ("English", "Spanish captions")
    assert spanish.verdict == "good for gist: the topic and the main points"
    assert spanish.timing.startswith("word by word")
    assert "apertium" not in spanish.verdict and "BLEU 12.1" in spanish.numbers
    assert folded.source == "3 more: French, German, Portuguese"
    assert folded.target == "English captions"
    assert folded.verdict.startswith("good for gist")  # the median of 7.4, 18.7, 20.7
    assert folded.timing == "each sentence once the speaker pauses"
    assert "FLEURS BLEU 7.4" in folded.numbers and "FLEURS BLEU 20.7" in folded.numbers


async def test_the_home_page_shows_the_table_once(tmp_path: Path) -> None:
    from tests.app.inprocess import http, in_process_server

    async with in_process_server(tmp_path, apertium=True) as server:
        page = await http("GET", f"{server.url}/")
    assert page.status_code == 200
    assert page.text.count('<table class="routes-table">') == 1
    assert "Spanish captions" in page.text and "good for gist" in page.text
    assert "apertium:eng-spa" not in page.text.split("<details")[0]  # jargon one click away
    assert len(page.text) < 300_000
