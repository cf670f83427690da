"""The home page's "Languages on this server" table, said the way an organiser would say it:
"Spanish captions: good for gist", with the measured numbers one click away.

The verdict comes from the BLEU score the route's default final translation measured on the
FLEURS clips (``python -m bench routes``, models/route_quality.json; docs/metrics.md,
"Translation routes"). The bands follow common readings of BLEU: under 10 hard to follow,
10-20 the gist, 20-30 understandable, 30 and over good.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass

from engine import languages
from engine.translation.routes import TranslationRoute

BANDS: tuple[tuple[float, str], ...] = (
    (30.0, "good: most sentences read well"),
    (20.0, "understandable, with mistakes"),
    (10.0, "good for gist: the topic and the main points"),
    (0.0, "rough: keywords and topics only"),
)
"""Verdicts by the lowest BLEU they need, best first."""

NOT_MEASURED = "not measured on this server"


@dataclass(frozen=True, slots=True)
class RouteRow:
    """One row: who speaks, what listeners read, the verdict, how soon, and the numbers."""

    source: str
    target: str
    verdict: str
    timing: str
    numbers: str


def final_bleu(route: TranslationRoute) -> float | None:
    """The BLEU the route's default final translation measured (None: not measured)."""
    quality = route.final_quality
    return None if quality is None else quality.bleu


def verdict(bleu: float | None) -> str:
    if bleu is None:
        return NOT_MEASURED
    return next(text for floor, text in BANDS if bleu >= floor)


def _name(code: str) -> str:
    return languages.get(code).english_name if languages.is_known(code) else code


def _timing(route: TranslationRoute) -> str:
    if route.draft_backend is None:
        return "each sentence once the speaker pauses"
    return "word by word, then each sentence refined"


def _numbers(route: TranslationRoute) -> str:
    draft = route.draft_backend.label if route.draft_backend else "none (the original shows)"
    return f"Final: {route.final_backend.label}. Draft: {draft}. Measured: {route.note}."


def organiser_rows(routes: Iterable[TranslationRoute]) -> list[RouteRow]:
    """One row per text route; the many speech-only routes into one language (Whisper
    translate, no draft) folded into one row per target."""
    rows: list[RouteRow] = []
    folded: dict[str, list[TranslationRoute]] = {}
    for route in routes:
        if route.draft_backend is None and route.speech_final:
            folded.setdefault(route.target, []).append(route)
            continue
        rows.append(
            RouteRow(
                source=_name(route.source),
                target=f"{_name(route.target)} captions",
                verdict=verdict(final_bleu(route)),
                timing=_timing(route),
                numbers=_numbers(route),
            )
        )
    for target, group in folded.items():
        names = sorted(_name(route.source) for route in group)
        scores = sorted(b for b in (final_bleu(route) for route in group) if b is not None)
        notes = sorted({route.note for route in group})
        rows.append(
            RouteRow(
                source=f"{len(names)} more: {', '.join(names)}",
                target=f"{_name(target)} captions",
                verdict=verdict(statistics.median(scores) if scores else None),
                timing=_timing(group[0]),
                numbers=f"Final: {group[0].final_backend.label}. Draft: none (the original "
                f"shows). Measured: {' | '.join(notes)}.",
            )
        )
    return rows
