"""The home page's language table in an organiser's words (app/route_summary.py)."""

from __future__ import annotations

from pathlib import Path

from app.route_summary import NOT_MEASURED, final_bleu, organiser_rows, verdict
from engine.translation.routes import Backend, Candidate, Quality, TranslationRoute

APERTIUM = Backend("apertium", "eng-spa")
WHISPER = Backend("whisper", "base")


def _route(source: str, target: str, backend: Backend, bleu: float | None) -> TranslationRoute:
    quality = None if bleu is None else Quality(bleu=bleu, chrf=40.0, clips=10)
    draft = backend if backend.kind == "apertium" else None
    return TranslationRoute(
        source, target, draft, backend, f"measured BLEU {bleu}", (Candidate(backend, quality),)
    )


def test_verdicts_follow_the_final_translations_bleu() -> None:
    assert final_bleu(_route("en", "es", APERTIUM, 12.1)) == 12.1
    assert final_bleu(_route("en", "es", APERTIUM, None)) is None
    assert verdict(12.1).startswith("good for gist")
    assert verdict(7.4).startswith("rough")
    assert verdict(20.7).startswith("understandable")
    assert verdict(31).startswith("good:")
    assert verdict(None) == NOT_MEASURED


def test_rows_speak_plainly_and_keep_the_numbers_one_click_away() -> None:
    routes = [
        _route("en", "es", APERTIUM, 12.1),
        _route("fr", "en", WHISPER, 7.4),
        _route("de", "en", WHISPER, 18.7),
        _route("pt", "en", WHISPER, 20.7),
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
    assert "BLEU 7.4" in folded.numbers and "BLEU 20.7" in folded.numbers


async def test_the_home_page_shows_the_table_once(tmp_path: Path) -> None:
    from tests.app.inprocess import http, in_process_server

    async with in_process_server(tmp_path, apertium=True) as server:
        page = await http("GET", f"{server.url}/")
    assert page.status_code == 200
    assert page.text.count('<table class="routes-table">') == 1
    assert "Spanish captions" in page.text and "good for gist" in page.text
    assert "apertium:eng-spa" not in page.text.split("<details")[0]  # jargon one click away
    assert len(page.text) < 300_000
