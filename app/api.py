"""The HTTP JSON API of docs/protocol.md."""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from app.errors import error
from app.services import Services
from engine import languages, transcript
from engine.presenting import check_credentials
from engine.registry import TooManySessions
from engine.session import Session

MAX_TITLE = 200
MAX_BODY = 16 * 1024


def services_of(request: Request) -> Services:
    services: Services = request.state.services
    return services


async def session_or_404(request: Request) -> Session | JSONResponse:
    """The session named in the path (raises NotReady while the models load)."""
    session = await services_of(request).engine().registry.get(request.path_params["code"])
    if session is None:
        return error(404, "no session with that code")
    return session


async def json_body(request: Request) -> dict[str, Any] | JSONResponse:
    body = await request.body()
    if len(body) > MAX_BODY:
        return error(413, f"request body over {MAX_BODY} bytes")
    try:
        data = json.loads(body or b"null")
    except ValueError:  # JSONDecodeError, UnicodeDecodeError, integers past 4300 digits
        return error(400, "body is not valid JSON")
    if not isinstance(data, dict):
        return error(400, "body must be a JSON object")
    return data


def session_facts(session: Session, services: Services) -> dict[str, Any]:
    record = session.record
    return {
        "code": record.code,
        "title": record.title,
        "source_language": record.source_language,
        "target_languages": list(record.target_languages),
        "languages": [record.source_language, *record.target_languages],
        "state": session.state,
        "listeners": services.hub.listener_count(record.code),
        "listen_url": f"/s/{record.code}",
        "voices": _voices(record.target_languages, services),
    }


def _voices(targets: Sequence[str], services: Services) -> dict[str, str]:
    """The kind of voice (``natural`` or ``fast``) each spoken target language has."""
    engine = services.loading.engine
    if engine is None:
        return {}
    return {lang: engine.voices[lang] for lang in targets if lang in engine.voices}


async def create_session(request: Request) -> Response:
    services = services_of(request)
    engine = services.engine()
    data = await json_body(request)
    if isinstance(data, JSONResponse):
        return data
    title = data.get("title", "")
    source = data.get("source_language", "en")
    targets = data.get("target_languages", [])
    if not isinstance(title, str) or len(title) > MAX_TITLE:
        return error(422, f"title must be a string of at most {MAX_TITLE} characters")
    if not isinstance(source, str) or not languages.is_known(source):
        return error(422, f"unknown source_language {source!r}")
    source = languages.normalise(source)
    if not engine.recognition.can_recognise(source):
        return error(422, f"no recognition model for {source!r} is loaded on this server")
    if not isinstance(targets, list) or not all(isinstance(t, str) for t in targets):
        return error(422, "target_languages must be a list of language codes")
    if len(targets) > 16:
        return error(422, "at most 16 target languages")
    normalised: list[str] = []
    for target in targets:
        if not languages.is_known(target):
            return error(422, f"unknown target language {target!r}")
        code = languages.normalise(target)
        if code != source and code not in normalised:
            normalised.append(code)
    unsupported = [t for t in normalised if t not in engine.routes.targets(source)]
    if unsupported:
        return error(
            422,
            f"no translation route from {source} to {', '.join(unsupported)} on this server",
            routes=engine.routes.targets(source),
        )
    # Counted only for well-formed requests: refusals cost the server nothing.
    client = request.client.host if request.client else "unknown"
    wait = services.creation_limit.allow(client)
    if wait is not None:
        return JSONResponse(
            {
                "error": "too many sessions created from this address; try again later",
                "retry_after": round(wait, 1),
            },
            status_code=429,
            headers={"Retry-After": str(max(1, round(wait)))},
        )
    try:
        session, token = await engine.registry.create(
            title.strip() or "Untitled session", source, tuple(normalised)
        )
    except TooManySessions as exc:
        return error(503, str(exc))
    code = session.code
    return JSONResponse(
        {
            "id": session.record.id,
            "code": code,
            "presenter_token": token,
            "present_url": f"/p/{code}#token={token}",
            "listen_url": f"/s/{code}",
        },
        status_code=201,
    )


async def get_session(request: Request) -> Response:
    session = await session_or_404(request)
    if isinstance(session, JSONResponse):
        return session
    return JSONResponse(session_facts(session, services_of(request)))


def _bearer(request: Request) -> str:
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


async def _presenter_session(request: Request) -> Session | JSONResponse:
    """The session named in the path, if the request carries its presenter token as
    ``Authorization: Bearer`` (refusals answer 401 or 403, app/errors.py)."""
    session = await session_or_404(request)
    if isinstance(session, JSONResponse):
        return session
    check_credentials(session, _bearer(request))
    return session


MAX_GLOSSARY_TERMS = 200
MAX_TERM_CHARS = 100


async def set_glossary(request: Request) -> Response:
    """``PUT /api/sessions/{code}/glossary`` ``{"es": {"source term": "target term"}}``:
    the presenter's terms, applied to every draft and final translation from now on."""
    session = await _presenter_session(request)
    if isinstance(session, JSONResponse):
        return session
    data = await json_body(request)
    if isinstance(data, JSONResponse):
        return data
    glossary: dict[str, dict[str, str]] = {}
    for lang, terms in data.items():
        if (
            not languages.is_known(lang)
            or languages.normalise(lang) not in session.record.target_languages
        ):
            return error(422, f"{lang!r} is not a translation language of this session")
        if not isinstance(terms, dict) or len(terms) > MAX_GLOSSARY_TERMS:
            return error(422, f"terms must be an object of at most {MAX_GLOSSARY_TERMS} entries")
        if not all(
            isinstance(k, str)
            and isinstance(v, str)
            and 0 < len(k.strip()) <= MAX_TERM_CHARS
            and len(v) <= MAX_TERM_CHARS
            for k, v in terms.items()
        ):
            return error(
                422, f"terms and translations are strings of 1-{MAX_TERM_CHARS} characters"
            )
        glossary[languages.normalise(lang)] = {k.strip(): v.strip() for k, v in terms.items()}
    if not session.translators:
        return error(409, "this session offers no translation")
    session.set_glossary(glossary)
    return JSONResponse({"code": session.code, "glossary": glossary})


async def get_glossary(request: Request) -> Response:
    session = await session_or_404(request)
    if isinstance(session, JSONResponse):
        return session
    return JSONResponse({"code": session.code, "glossary": session.glossary})


async def end_session(request: Request) -> Response:
    session = await session_or_404(request)
    if isinstance(session, JSONResponse):
        return session
    await services_of(request).engine().presenting.end(session, _bearer(request))
    return JSONResponse({"code": session.code, "state": session.state})


async def get_transcript(request: Request) -> Response:
    services = services_of(request)
    session = await session_or_404(request)
    if isinstance(session, JSONResponse):
        return session
    record = session.record
    lang = request.query_params.get("lang", record.source_language)
    fmt = request.query_params.get("format", "txt")
    if fmt not in transcript.FORMATS:
        return error(400, f"format must be one of {', '.join(transcript.FORMATS)}")
    offered = [record.source_language, *record.target_languages]
    if not languages.is_known(lang) or languages.normalise(lang) not in offered:
        return error(400, f"language must be one of {', '.join(offered)}")
    lang = languages.normalise(lang)
    finals = await services.workers.pool("store").run(
        services.backends.store.finals, session.code, lang
    )
    # Everything said in ``lang``: recognised in it, or translated into it (in a two-way
    # conversation both happen, turn by turn; a segment is never both).
    body, media_type = transcript.render(finals, fmt)
    filename = f"{session.code}-{lang}.{fmt}"
    return Response(
        body,
        media_type=media_type,
        headers={"Content-Disposition": f'attachment; filename="{filename}"'},
    )


async def qr_code(request: Request) -> Response:
    """The session's share link as an SVG QR code (for a slide or the presenter console)."""
    import segno

    session = await session_or_404(request)
    if isinstance(session, JSONResponse):
        return session
    link = f"{request.base_url}".rstrip("/") + f"/s/{session.code}"
    buffer = io.BytesIO()
    segno.make(link, error="m").save(buffer, kind="svg", scale=8, border=2, title=link)
    return Response(
        buffer.getvalue(), media_type="image/svg+xml", headers={"Cache-Control": "max-age=3600"}
    )


async def list_routes(request: Request) -> Response:
    """The translation routes this server offers (computed from what is installed)."""
    engine = services_of(request).engine()
    data = engine.routes.as_json()
    data["recognition"] = [lang.code for lang in engine.recognition.languages()]
    return JSONResponse(data)
