"""The editing endpoints of docs/protocol.md ("Terms and corrections"): editor links, the
term list, corrections of final captions. Each is a thin adapter to engine/editing.py;
refusals answer through app/errors.py's table."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from app.api import bearer, follower_session, json_body, services_of, session_or_404
from app.errors import error
from engine.events import to_dict
from engine.terms import TermError, parse_terms, terms_json


async def create_editor(request: Request) -> Response:
    """``POST /api/sessions/{code}/editors`` (presenter token): a new editor link."""
    session = await session_or_404(request)
    if isinstance(session, JSONResponse):
        return session
    editing = services_of(request).engine().editing
    token = await editing.add_editor(session, bearer(request))
    return JSONResponse(
        {"editor_token": token, "edit_url": f"/e/{session.code}#token={token}"}, status_code=201
    )


async def revoke_editors(request: Request) -> Response:
    """``DELETE /api/sessions/{code}/editors`` (presenter token): every editor link stops
    working; ``{"revoked": n}``."""
    session = await session_or_404(request)
    if isinstance(session, JSONResponse):
        return session
    editing = services_of(request).engine().editing
    revoked = await editing.revoke_editors(session, bearer(request))
    return JSONResponse({"code": session.code, "revoked": revoked})


async def get_terms(request: Request) -> Response:
    """``GET /api/sessions/{code}/terms``: whoever may follow the session (a private one's
    token, as for the glossary)."""
    session = await follower_session(request)
    if isinstance(session, JSONResponse):
        return session
    return JSONResponse({"code": session.code, "terms": terms_json(session.terms)})


async def set_terms(request: Request) -> Response:
    """``PUT /api/sessions/{code}/terms`` (presenter or editor token) ``{"terms": [...]}``."""
    session = await session_or_404(request)
    if isinstance(session, JSONResponse):
        return session
    editing = services_of(request).engine().editing
    await editing.check(session, bearer(request))
    data = await json_body(request)
    if isinstance(data, JSONResponse):
        return data
    try:
        terms = parse_terms(data.get("terms"))
    except TermError as exc:
        return error(422, str(exc))
    event = await editing.set_terms(session, bearer(request), terms)
    return JSONResponse({"code": session.code, "terms": terms_json(event.terms)})


async def correct_segment(request: Request) -> Response:
    """``PUT /api/sessions/{code}/segments/{segment}`` (presenter or editor token)
    ``{"text": ...}``: the corrected final, as listeners get it."""
    session = await session_or_404(request)
    if isinstance(session, JSONResponse):
        return session
    editing = services_of(request).engine().editing
    await editing.check(session, bearer(request))
    segment_text = request.path_params["segment"]
    if not segment_text.isdigit() or len(segment_text) > 9:
        return error(404, "no such segment")
    data = await json_body(request)
    if isinstance(data, JSONResponse):
        return data
    text = data.get("text")
    if not isinstance(text, str):
        return error(422, "text must be a string")
    caption = await editing.correct(session, bearer(request), int(segment_text), text)
    return JSONResponse(to_dict(caption))
