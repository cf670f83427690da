"""The HTTP JSON API of docs/protocol.md."""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from app import json_text
from app.errors import error
from app.services import Services
from engine import languages, transcript
from engine.access import valid_passcode
from engine.presenting import check_credentials
from engine.refusals import Refused
from engine.registry import TooManySessions
from engine.session import Session
from engine.store.base import SpeakerRecord, verify_token
from engine.terms import TermError, parse_terms

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
        data = json_text.parse(body or b"null")
    except json_text.NotJson:
        return error(400, "body is not valid JSON")
    if not isinstance(data, dict):
        return error(400, "body must be a JSON object")
    return data


def credential(request: Request) -> str:
    """The token a request carries: ``Authorization: Bearer``, else the ``token`` query
    parameter (a download link cannot set a header)."""
    return bearer(request) or request.query_params.get("token", "")


async def follower_session(request: Request) -> Session | JSONResponse:
    """The session named in the path, if the request may follow it: any request for a
    public session; one with a listener or presenter token for a private one (refusals
    answer 401 or 403, app/errors.py)."""
    session = await session_or_404(request)
    if isinstance(session, JSONResponse):
        return session
    await services_of(request).engine().access.check(session, credential(request))
    return session


def listen_url(code: str, listener_token: str | None) -> str:
    """The share link: a private session's carries a listener token in the fragment."""
    return f"/s/{code}" + (f"#token={listener_token}" if listener_token else "")


def session_facts(
    session: Session, services: Services, speakers: Sequence[SpeakerRecord]
) -> dict[str, Any]:
    """What anyone who may follow the session learns of it (``speakers``: its speakers as
    :meth:`engine.panel.Speakers.current` has them)."""
    record = session.record
    live = {stream.speaker_id for stream in session.live_streams}
    speakers_json = [
        {"id": s.id, "name": s.name, "language": s.language, "live": s.id in live} for s in speakers
    ]
    return {
        "speakers": speakers_json,
        "code": record.code,
        "title": record.title,
        "source_language": record.source_language,
        "target_languages": list(record.target_languages),
        "languages": [record.source_language, *record.target_languages],
        "language_names": {code: languages.get(code).english_name for code in session.offered},
        "state": session.state,
        "listeners": services.hub.listener_count(record.code),
        "by_language": dict(services.hub.listeners_by_language(record.code)),
        "listen_url": f"/s/{record.code}",
        "private": record.private,
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
    passcode = data.get("listener_passcode")
    if passcode is not None and not valid_passcode(passcode):
        return error(422, "listener_passcode must be 4-128 printable characters")
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
    try:
        terms = parse_terms(data.get("terms", []))
    except TermError as exc:
        return error(422, str(exc))
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
    passcode_hash = None if passcode is None else await engine.access.passcode_hash(passcode)
    try:
        session, token = await engine.registry.create(
            title.strip() or "Untitled session",
            source,
            tuple(normalised),
            terms,
            passcode_hash=passcode_hash,
        )
    except TooManySessions as exc:
        return error(503, str(exc))
    code = session.code
    listener_token = None if passcode is None else await engine.access.grant(session, token)
    body = {
        "id": session.record.id,
        "code": code,
        "presenter_token": token,
        "present_url": f"/p/{code}#token={token}",
        "listen_url": listen_url(code, listener_token),
        "private": session.record.private,
    }
    if listener_token is not None:
        body["listener_token"] = listener_token
    return JSONResponse(body, status_code=201)


async def get_session(request: Request) -> Response:
    """The session's public facts; of a private session, only that it exists and is private
    unless the request carries a listener or presenter token."""
    session = await session_or_404(request)
    if isinstance(session, JSONResponse):
        return session
    if session.record.private:
        try:
            await services_of(request).engine().access.check(session, credential(request))
        except Refused:
            return JSONResponse({"code": session.code, "private": True})
    speakers = await session.speakers.current()
    return JSONResponse(session_facts(session, services_of(request), speakers))


def bearer(request: Request) -> str:
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


async def presenter_session(request: Request) -> Session | JSONResponse:
    """The session named in the path, if the request carries its presenter token as
    ``Authorization: Bearer`` (refusals answer 401 or 403, app/errors.py)."""
    session = await session_or_404(request)
    if isinstance(session, JSONResponse):
        return session
    check_credentials(session, bearer(request))
    return session


MAX_GLOSSARY_TERMS = 200
MAX_TERM_CHARS = 100


async def set_glossary(request: Request) -> Response:
    """``PUT /api/sessions/{code}/glossary`` ``{"es": {"source term": "target term"}}``:
    the presenter's terms, applied to every draft and final translation from now on."""
    session = await presenter_session(request)
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
    session = await follower_session(request)
    if isinstance(session, JSONResponse):
        return session
    return JSONResponse({"code": session.code, "glossary": session.glossary})


async def end_session(request: Request) -> Response:
    session = await session_or_404(request)
    if isinstance(session, JSONResponse):
        return session
    await services_of(request).engine().presenting.end(session, bearer(request))
    return JSONResponse({"code": session.code, "state": session.state})


async def get_transcript(request: Request) -> Response:
    services = services_of(request)
    session = await follower_session(request)
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
    """The session's share link as an SVG QR code (for a slide or the presenter console). A
    private session's needs a listener token (``Authorization: Bearer``), which the link in
    the code then carries in its fragment."""
    import segno

    session = await follower_session(request)
    if isinstance(session, JSONResponse):
        return session
    token = credential(request) if session.record.private else None
    if token is not None and verify_token(session.record, token):
        return error(400, "a private session's QR code carries a listener token, not yours")
    link = f"{request.base_url}".rstrip("/") + listen_url(session.code, token)
    buffer = io.BytesIO()
    segno.make(link, error="m").save(buffer, kind="svg", scale=8, border=2, title=link)
    cache = "private, no-store" if session.record.private else "max-age=3600"
    return Response(buffer.getvalue(), media_type="image/svg+xml", headers={"Cache-Control": cache})


async def list_routes(request: Request) -> Response:
    """The translation routes this server offers (computed from what is installed)."""
    engine = services_of(request).engine()
    data = engine.routes.as_json()
    data["recognition"] = [lang.code for lang in engine.recognition.languages()]
    return JSONResponse(data)
