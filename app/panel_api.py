"""The panel's HTTP API (docs/protocol.md, "Panels"): speakers, and questions from the floor.

Refusals are the engine's typed ones (engine/refusals.py), answered through app/errors.py's
table; the presenter token is checked by the engine (``check_credentials``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from app.api import bearer, follower_session, json_body, services_of, session_or_404
from app.errors import error
from engine import languages
from engine.audio import AudioFormatError, decode_pcm16
from engine.events import Question
from engine.panel import MAX_NAME
from engine.presenting import check_credentials
from engine.refusals import Refusal, Refused
from engine.session import Session
from engine.session_questions import MAX_QUESTION_S
from engine.store.base import SpeakerRecord

MAX_QUESTION_BYTES = MAX_QUESTION_S * 16000 * 2


def speaker_json(session: Session, speaker: SpeakerRecord) -> dict[str, Any]:
    """``live``: a stream of the speaker carries audio now (an abandoned one would give way
    to a new one: engine/stream.py ``idle_takeover_s``)."""
    stream = session.streams.get(speaker.id)
    return {
        "id": speaker.id,
        "name": speaker.name,
        "language": speaker.language,
        "live": stream is not None and not stream.finished and not stream.abandoned,
    }


def question_json(question: Question) -> dict[str, Any]:
    return {
        "id": question.id,
        "lang": question.lang,
        "text": question.text,
        "translation": question.translation,
        "state": question.state,
    }


def _language(session: Session, value: object) -> str:
    if not isinstance(value, str) or not languages.is_known(value):
        raise Refused(Refusal.UNKNOWN_LANGUAGE, f"language must be one of {session.offered}")
    code = languages.normalise(value)
    if code not in session.offered:
        raise Refused(
            Refusal.UNKNOWN_LANGUAGE,
            f"{code} is not a language of this session; it offers {', '.join(session.offered)}",
        )
    return code


async def add_speaker(request: Request) -> Response:
    """``POST /api/sessions/{code}/speakers`` (presenter token) ``{"name", "language"}``."""
    session = await session_or_404(request)
    if isinstance(session, JSONResponse):
        return session
    check_credentials(session, bearer(request))
    data = await json_body(request)
    if isinstance(data, JSONResponse):
        return data
    name = data.get("name", "")
    if not isinstance(name, str) or len(name) > MAX_NAME:
        return error(422, f"name must be a string of at most {MAX_NAME} characters")
    language = _language(session, data.get("language", session.record.source_language))
    if not services_of(request).engine().recognition.can_recognise(language):
        return error(422, f"no recognition model for {language!r} on this server")
    speaker, token = await session.speakers.add(name, language)
    return JSONResponse(
        {
            **speaker_json(session, speaker),
            "token": token,
            "present_url": f"/p/{session.code}#token={token}",
        },
        status_code=201,
    )


async def whoami(request: Request) -> Response:
    """``GET /api/sessions/{code}/whoami`` with a token: which speaker it is and whether that
    speaker is streaming now (another device); ``{"role": null}`` for a token that is nobody's,
    so a console can say its link is wrong before Start without a failed request."""
    session = await session_or_404(request)
    if isinstance(session, JSONResponse):
        return session
    token = bearer(request)
    speaker = await session.speakers.find(token) if token else None
    if not token:
        raise Refused(Refusal.NO_CREDENTIALS, "a presenter or speaker token is required")
    if speaker is None:
        return JSONResponse({"role": None, "speaker": None})
    role = "presenter" if speaker.position == 0 else "speaker"
    return JSONResponse({"role": role, "speaker": speaker_json(session, speaker)})


async def ask(request: Request) -> Response:
    """``POST /api/sessions/{code}/questions`` ``{"text", "lang"}``, or a spoken question:
    16 kHz 16-bit mono PCM as the body (``Content-Type: audio/L16``, ``?lang=xx``). Whoever may
    follow the session may ask (a private one's listeners carry their token)."""
    session = await follower_session(request)
    if isinstance(session, JSONResponse):
        return session
    asker = request.client.host if request.client else "unknown"
    if request.headers.get("content-type", "").startswith("audio/"):
        lang = _language(session, request.query_params.get("lang"))
        body = bytearray()
        async for chunk in request.stream():  # read no more than a question may hold
            body += chunk
            if len(body) > MAX_QUESTION_BYTES:
                return error(413, f"a spoken question lasts at most {MAX_QUESTION_S} s")
        try:
            samples = decode_pcm16(bytes(body))
        except AudioFormatError as exc:
            return error(400, str(exc))
        text = await session.hear(lang, np.ascontiguousarray(samples))
    else:
        data = await json_body(request)
        if isinstance(data, JSONResponse):
            return data
        lang = _language(session, data.get("lang"))
        typed = data.get("text")
        if not isinstance(typed, str):
            return error(422, "text must be a string")
        text = typed
    question = await session.ask(asker, lang, text)
    return JSONResponse(question_json(question), status_code=202)


async def list_questions(request: Request) -> Response:
    """``GET /api/sessions/{code}/questions`` (presenter token): the held ones."""
    session = await session_or_404(request)
    if isinstance(session, JSONResponse):
        return session
    check_credentials(session, bearer(request))
    return JSONResponse({"questions": [question_json(q) for q in session.questions.held()]})


async def decide(request: Request) -> Response:
    """``POST /api/sessions/{code}/questions/{id}/accept`` or ``.../reject``."""
    session = await session_or_404(request)
    if isinstance(session, JSONResponse):
        return session
    check_credentials(session, bearer(request))
    decision = request.path_params["decision"]
    if decision not in ("accept", "reject"):
        return error(404, "decide with .../accept or .../reject")
    accept = decision == "accept"
    question = await session.decide(request.path_params["question"], accept)
    return JSONResponse(question_json(question))
