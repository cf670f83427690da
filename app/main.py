"""``create_app(settings)``: the whole application composed in one visible place."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator
from pathlib import Path

from prometheus_client import CollectorRegistry
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Mount, Route, WebSocketRoute
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from app import access_api, api, edit_api, panel_api, push_api
from app.caption_pages import display_page
from app.errors import EXCEPTION_HANDLERS
from app.listen import listen_endpoint
from app.metrics import LiveCollector, PrometheusObserver, metrics_endpoint
from app.nodes import backends, follow_other_nodes
from app.present import present_endpoint
from app.route_summary import organiser_rows
from app.security import SecurityHeaders
from app.sendwatch import SendWatch
from app.services import (
    Services,
    TranscriberFactory,
    build_services,
    check_settings,
    load_engine,
    whisper_factory,
)
from app.settings import Settings
from app.webrtc import config_endpoint, offer_endpoint
from app.webrtc_peer import PeerRegistry
from engine import languages

log = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parent.parent
templates = Jinja2Templates(directory=str(ROOT / "templates"))


def services_of(request: Request) -> Services:
    services: Services = request.state.services
    return services


async def index(request: Request) -> Response:
    engine = services_of(request).engine()
    langs = [
        {"code": lang.code, "name": lang.english_name} for lang in engine.recognition.languages()
    ]
    return templates.TemplateResponse(
        request,
        "index.html",
        {
            "languages": langs,
            "default_language": "en",
            "route_rows": organiser_rows(engine.routes),
        },
    )


async def present_page(request: Request) -> Response:
    session = await services_of(request).engine().registry.get(request.path_params["code"])
    if session is None:
        return PlainTextResponse("No session with that code.", status_code=404)
    record = session.record
    return templates.TemplateResponse(
        request,
        "present.html",
        {
            "code": record.code,
            # A private session's title is shown once the console has shown its token.
            "title": "Private session" if record.private else record.title,
            "private": record.private,
            "source_language": record.source_language,
            "languages": [
                {"code": c, "name": languages.get(c).english_name} for c in session.offered
            ],
            "listen_url": f"/s/{record.code}",
        },
    )


async def edit_page(request: Request) -> Response:
    """The editor page (static/js/edit.js): the session's finals, fixed by a person."""
    session = await services_of(request).engine().registry.get(request.path_params["code"])
    if session is None:
        return templates.TemplateResponse(
            request, "missing.html", {"code": request.path_params["code"]}, status_code=404
        )
    record = session.record
    return templates.TemplateResponse(
        request,
        "edit.html",
        {
            "code": record.code,
            # A private session's title needs a token (the page takes it from the fragment).
            "title": "Private session" if record.private else record.title,
            "private": record.private,
            "source_language": record.source_language,
            "languages": [record.source_language, *record.target_languages],
        },
    )


async def listen_page(request: Request) -> Response:
    session = await services_of(request).engine().registry.get(request.path_params["code"])
    if session is None:
        return templates.TemplateResponse(
            request, "missing.html", {"code": request.path_params["code"]}, status_code=404
        )
    record = session.record
    # A private session's page shows nothing but that it is private until the reader gives
    # the passcode or brings a token (static/js/listen.js fills in the rest).
    offered = [] if record.private else session.offered
    return templates.TemplateResponse(
        request,
        "listen.html",
        {
            "code": record.code,
            "title": "Private session" if record.private else record.title,
            "private": record.private,
            "source_language": "" if record.private else record.source_language,
            "languages": [{"code": c, "name": languages.get(c).english_name} for c in offered],
            "state": "private" if record.private else session.state,
        },
    )


async def screen_page(request: Request) -> Response:
    """The venue screen: full-window captions for a projector (app/caption_pages.py)."""
    return await display_page(request, templates, "screen")


async def overlay_page(request: Request) -> Response:
    """The stream overlay: captions only, for an OBS browser source (app/caption_pages.py)."""
    return await display_page(request, templates, "overlay")


async def talk_page(request: Request) -> Response:
    """Traveller mode (``/talk``, static/js/talk.js): two people, two languages, one phone.
    The page creates its own session, or continues the one named by ``?code=`` (its presenter
    token in the ``#token=`` fragment or in the tab's storage).

    Offered: every language a translation route touches that the loaded models recognise;
    ``pairs`` says which translate both ways, ``routes`` every one-way route (to explain a pair
    that does not work), ``spoken`` the languages a voice speaks."""
    services = services_of(request)
    engine = services.engine()
    recognised = {lang.code for lang in engine.recognition.languages()}
    routes = {(route.source, route.target) for route in engine.routes}
    codes = sorted({code for pair in routes for code in pair if code in recognised})
    pairs = {a: [b for b in codes if b != a and {(a, b), (b, a)} <= routes] for a in codes}
    names = {code: languages.get(code) for code in codes}
    if "es" in pairs.get("en", []):
        default = ["en", "es"]
    else:
        first = next((a for a in codes if pairs[a]), None)
        default = [first, pairs[first][0]] if first else []
    options = [
        {"code": code, "name": names[code].english_name, "native": names[code].native_name}
        for code in sorted(codes, key=lambda c: names[c].english_name)
    ]
    config = {
        "ready": services.ready,
        "names": {o["code"]: {"name": o["name"], "native": o["native"]} for o in options},
        "pairs": pairs,
        "routes": sorted(f"{a}>{b}" for a, b in routes),
        "spoken": sorted(engine.spoken),
        "default": default,
    }
    return templates.TemplateResponse(
        request,
        "talk.html",
        {
            "config": config,
            "two_way": [o for o in options if pairs[o["code"]]],
            "one_way": [o for o in options if not pairs[o["code"]]],
        },
    )


async def healthz(request: Request) -> Response:
    return JSONResponse({"status": "ok"})


async def readyz(request: Request) -> Response:
    services = services_of(request)
    hub_problem = services.hub.unavailable_reason()
    if services.ready and hub_problem is None:
        return JSONResponse({"status": "ready"})
    if services.ready:  # models loaded; the shared hub (Redis) is unreachable
        return JSONResponse({"status": "unavailable", "error": hub_problem}, status_code=503)
    error = services.loading.error
    body = {"status": "loading" if error is None else "failed"}
    if error:
        body["error"] = error
    return JSONResponse(body, status_code=503)


def create_app(
    settings: Settings | None = None, *, transcriber_factory: TranscriberFactory | None = None
) -> Starlette:
    settings = settings or Settings.from_env()
    check_settings(settings)
    factory = transcriber_factory or whisper_factory

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[dict[str, object]]:
        metrics = CollectorRegistry()
        services = build_services(settings, backends(settings), PrometheusObserver(metrics))
        peers = PeerRegistry(settings.max_webrtc_listeners)
        send_watch = SendWatch(settings.listener_send_timeout)
        metrics.register(LiveCollector(services))
        store = services.backends.store
        purged = store.purge_ended_before(time.time() - settings.retention_days * 86400)
        if purged:
            log.info("purged %d expired sessions", purged)
        loader = asyncio.create_task(_load(services, factory), name="load-engine")
        await services.hub.start()
        try:
            yield {
                "services": services,
                "peers": peers,
                "send_watch": send_watch,
                "metrics_registry": metrics,
            }
        finally:
            # WebRTC peers first: closing one finalises its presenter stream like Stop.
            with contextlib.suppress(Exception):
                await peers.close_all()
            engine = services.loading.engine
            if engine is not None:
                # Graceful shutdown: finalise every open stream so nothing said is lost.
                await engine.presenting.shutdown()
            await send_watch.close()
            loader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await loader
            services.translators.close()
            await services.poster.aclose()
            await services.hub.close()
            services.workers.shutdown()
            store.close()

    routes = [
        Route("/", index),
        Route("/p/{code}", present_page),
        Route("/s/{code}", listen_page),
        Route("/e/{code}", edit_page),
        Route("/s/{code}/screen", screen_page),
        Route("/s/{code}/overlay", overlay_page),
        Route("/talk", talk_page),
        Route("/healthz", healthz),
        Route("/readyz", readyz),
        Route("/metrics", metrics_endpoint),
        Route("/api/routes", api.list_routes),
        Route("/api/sessions", api.create_session, methods=["POST"]),
        Route("/api/sessions/{code}", api.get_session),
        Route("/api/sessions/{code}/end", api.end_session, methods=["POST"]),
        Route("/api/sessions/{code}/join", access_api.join, methods=["POST"]),
        Route("/api/sessions/{code}/listener-token", access_api.listener_token, methods=["POST"]),
        Route("/api/sessions/{code}/passcode", access_api.set_passcode, methods=["PUT"]),
        Route("/api/sessions/{code}/push", push_api.get_push),
        Route(
            "/api/sessions/{code}/push/{service}", push_api.push_target, methods=["PUT", "DELETE"]
        ),
        Route("/api/sessions/{code}/glossary", api.set_glossary, methods=["PUT"]),
        Route("/api/sessions/{code}/glossary", api.get_glossary, methods=["GET"]),
        Route("/api/sessions/{code}/terms", edit_api.set_terms, methods=["PUT"]),
        Route("/api/sessions/{code}/terms", edit_api.get_terms, methods=["GET"]),
        Route("/api/sessions/{code}/editors", edit_api.create_editor, methods=["POST"]),
        Route("/api/sessions/{code}/editors", edit_api.revoke_editors, methods=["DELETE"]),
        Route("/api/sessions/{code}/segments/{segment}", edit_api.correct_segment, methods=["PUT"]),
        Route("/api/sessions/{code}/transcript", api.get_transcript),
        Route("/api/sessions/{code}/speakers", panel_api.add_speaker, methods=["POST"]),
        Route("/api/sessions/{code}/whoami", panel_api.whoami),
        Route("/api/sessions/{code}/questions", panel_api.ask, methods=["POST"]),
        Route("/api/sessions/{code}/questions", panel_api.list_questions, methods=["GET"]),
        Route(
            "/api/sessions/{code}/questions/{question}/{decision:str}",
            panel_api.decide,
            methods=["POST"],
        ),
        Route("/api/sessions/{code}/qr.svg", api.qr_code),
        Route("/api/sessions/{code}/webrtc/offer", offer_endpoint, methods=["POST"]),
        Route("/api/webrtc/config", config_endpoint),
        WebSocketRoute("/ws/present/{code}", present_endpoint),
        WebSocketRoute("/ws/listen/{code}", listen_endpoint),
        Mount("/static", StaticFiles(directory=str(ROOT / "static")), name="static"),
    ]
    return Starlette(
        routes=routes,
        middleware=[Middleware(SecurityHeaders)],
        exception_handlers=EXCEPTION_HANDLERS,  # type: ignore[arg-type]
        lifespan=lifespan,
    )


async def _load(services: Services, factory: TranscriberFactory) -> None:
    """Load the engine, then follow other nodes for the life of the process."""
    try:
        engine = await load_engine(services, factory)
    except Exception as exc:
        services.loading.failed(f"{type(exc).__name__}: {exc}")
        log.exception("loading models failed")
        raise
    services.loading.ready(engine)
    await follow_other_nodes(services.hub, engine.registry)
