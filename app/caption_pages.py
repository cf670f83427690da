"""The caption displays: the venue screen ``/s/{code}/screen`` and the stream overlay
``/s/{code}/overlay`` (static/js/screen.js draws them with the shared subtitle layout).

Query parameters (docs/protocol.md, "Additions for events"): ``lang`` (one language or two
stacked, ``es,en``; default the spoken language), ``lines`` (1-6, default 3), ``size`` (``s``,
``m``, ``l``, ``xl`` or a height in pixels 12-200), ``position`` (``bottom`` or ``top``),
``theme`` (``dark`` or ``light``, both high contrast), ``chars`` (characters a line, 16-80,
default 42); the overlay also ``bg`` (``transparent``, ``green`` or ``black``). A malformed
parameter answers 400 with what is wrong, so an organiser sees it while setting up.

Both pages may be framed by the server's own pages (the console's preview): they send their
own ``frame-ancestors 'self'``, which the security middleware keeps.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.templating import Jinja2Templates

from app.security import CONTENT_SECURITY_POLICY
from app.services import Services
from engine import languages
from engine.session import Session

Mode = Literal["screen", "overlay"]

SIZES = {"s": "4vh", "m": "5.5vh", "l": "7vh", "xl": "9vh"}
"""Caption heights by keyword, as a share of the window's height (a projector's pixels vary)."""

FRAMEABLE_CSP = CONTENT_SECURITY_POLICY.replace("frame-ancestors 'none'", "frame-ancestors 'self'")
FRAMEABLE_HEADERS = {"Content-Security-Policy": FRAMEABLE_CSP, "X-Frame-Options": "SAMEORIGIN"}


class BadDisplay(ValueError):
    """A query parameter the display cannot use (the message says which and why)."""


@dataclass(frozen=True, slots=True)
class Display:
    """How a caption display looks."""

    langs: tuple[str, ...]
    lines: int = 3
    size: str = SIZES["m"]
    position: Literal["bottom", "top"] = "bottom"
    theme: Literal["dark", "light"] = "dark"
    bg: Literal["transparent", "green", "black"] = "transparent"
    chars: int = 42


def _choice(params: dict[str, str], name: str, allowed: tuple[str, ...], default: str) -> str:
    value = params.get(name, default)
    if value not in allowed:
        raise BadDisplay(f"{name} must be one of {', '.join(allowed)}, not {value!r}")
    return value


def _number(params: dict[str, str], name: str, low: int, high: int, default: int) -> int:
    text = params.get(name, str(default))
    if not text.isdigit() or not low <= int(text) <= high:
        raise BadDisplay(f"{name} must be a whole number from {low} to {high}, not {text!r}")
    return int(text)


def parse_display(params: dict[str, str], session: Session, mode: Mode) -> Display:
    """The display a query asks for (:class:`BadDisplay` if it asks for something wrong)."""
    offered = session.offered
    wanted = [part.strip() for part in params.get("lang", offered[0]).split(",") if part.strip()]
    if not 1 <= len(wanted) <= 2:
        raise BadDisplay("lang names one language, or two separated by a comma")
    langs: list[str] = []
    for lang in wanted:
        if not languages.is_known(lang) or languages.normalise(lang) not in offered:
            raise BadDisplay(f"lang must be among {', '.join(offered)}, not {lang!r}")
        if languages.normalise(lang) not in langs:
            langs.append(languages.normalise(lang))
    size_text = params.get("size", "m")
    if size_text in SIZES:
        size = SIZES[size_text]
    elif size_text.isdigit() and 12 <= int(size_text) <= 200:
        size = f"{int(size_text)}px"
    else:
        raise BadDisplay(
            f"size must be s, m, l, xl or a height in pixels 12-200, not {size_text!r}"
        )
    background = "transparent" if mode == "overlay" else "black"
    return Display(
        langs=tuple(langs),
        lines=_number(params, "lines", 1, 6, 3),
        size=size,
        position=_choice(params, "position", ("bottom", "top"), "bottom"),  # type: ignore[arg-type]
        theme=_choice(params, "theme", ("dark", "light"), "dark"),  # type: ignore[arg-type]
        bg=_choice(params, "bg", ("transparent", "green", "black"), background),  # type: ignore[arg-type]
        chars=_number(params, "chars", 16, 80, 42),
    )


async def display_page(request: Request, templates: Jinja2Templates, mode: Mode) -> Response:
    """``/s/{code}/screen`` or ``/s/{code}/overlay``."""
    services: Services = request.state.services
    session = await services.engine().registry.get(request.path_params["code"])
    if session is None:
        return PlainTextResponse("No session with that code.", status_code=404)
    try:
        display = parse_display(dict(request.query_params), session, mode)
    except BadDisplay as exc:
        return PlainTextResponse(f"This caption display cannot start: {exc}.", status_code=400)
    record = session.record
    names = {code: languages.get(code).english_name for code in session.offered}
    return templates.TemplateResponse(
        request,
        "screen.html",
        {
            "mode": mode,
            "code": record.code,
            "title": "Private session" if record.private else record.title,
            "private": record.private,
            "source_language": record.source_language,
            "display": display,
            "names": names,
            "state": "private" if record.private else session.state,
        },
        headers=FRAMEABLE_HEADERS,
    )
