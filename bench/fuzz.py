"""The fuzz benchmark: malformed input against a real server. Does every refusal stay a
refusal, and does the server stay up?

The bench starts a server (or takes ``--url``) and sends, from :mod:`bench.fuzz_cases`:

- **http**: every route with a session's code (public and private), its lower case and
  (``--other-codes``) unknown and odd ones; no token, the presenter's, a wrong one; GETs with
  odd queries; bodies that are not JSON, nested past the decoder, hold lone surrogates, and
  ``--random-bodies`` objects of the API's keys with values of every wrong kind;
- **webrtc**: one real aiortc offer with each line dropped or changed, as presenter and
  listener, into a new session and into one that is live (``--offers 0`` skips them);
- **sockets**: refused presenter ``start`` messages, odd audio after a good one, bad control
  messages of presenters and listeners, bad listener queries.

A **failure** is a 5xx whose body is not the documented ``{"error": ...}`` JSON (a bare 500),
a request the server drops without an answer, a socket closed without a close frame or with
1011, a socket left open, an exception the server logged as unhandled, or a server not ready at
the end. Every other answer counts by its
status. Definitions: docs/security.md, "Malformed input".
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import random
import shlex
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import websockets
from aiortc.mediastreams import AudioStreamTrack

from bench import fuzz_cases as cases
from bench.fuzz_report import write_report
from bench.paths import RESULTS
from bench.server import server_arguments, server_under_test
from bench.webrtc_replay import new_peer

SOCKET_TIMEOUT_S = 30.0
"""How long a socket case waits for ``ended`` or a close before it counts as left open."""
MAX_LISTED = 50
"""Failures listed one by one in the report (all are counted)."""


@dataclass
class Tally:
    """What one part sent and how the server answered."""

    sent: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)
    failed: int = 0

    def count(self, outcome: str) -> None:
        self.sent += 1
        self.outcomes[outcome] += 1

    def fail(self, what: str) -> None:
        self.sent += 1
        self.failed += 1
        self.outcomes["failure"] += 1
        if len(self.failures) < MAX_LISTED:
            self.failures.append(what)


@dataclass(frozen=True, slots=True)
class FuzzSettings:
    out: Path
    seed: int = 1
    random_bodies: int = 8
    targets: tuple[str, ...] = ("es",)
    """The caption languages of the sessions the bench makes (the server must offer them)."""
    other_codes: bool = True
    offers: bool = True
    ready_timeout: float = 120.0


@dataclass
class FuzzRun:
    parts: dict[str, Tally]
    ready_at_end: bool
    server_errors: int | None
    """Unhandled exceptions the server logged (None for a server at ``--url``)."""


ASGI_ERROR = "Exception in ASGI application"
"""What uvicorn logs for an exception an endpoint did not handle."""


def server_errors(log_path: Path) -> int:
    """How many unhandled exceptions the server's log holds."""
    if not log_path.exists():
        return 0
    return log_path.read_text(errors="replace").count(ASGI_ERROR)


def http_outcome(response: httpx.Response) -> str | None:
    """``"2xx"``, ``"4xx"``, ``"503 refused"``...; ``None`` for a failure (a 5xx that is not
    the documented JSON refusal)."""
    status = response.status_code
    if status < 500:
        return f"{status // 100}xx"
    try:
        documented = isinstance(response.json().get("error"), str)
    except ValueError:
        documented = False
    return f"{status} refused" if documented else None


async def _request(
    client: httpx.AsyncClient, tally: Tally, method: str, url: str, **kwargs: Any
) -> None:
    sent = kwargs.get("content", kwargs.get("json", b""))
    what = f"{method} {url[:80]} {str(sent)[:60]!r}"
    try:
        response = await client.request(method, url, **kwargs)
    except httpx.TransportError as error:
        tally.fail(f"{what}: no answer ({type(error).__name__})")
        return
    outcome = http_outcome(response)
    if outcome is None:
        tally.fail(f"{what}: {response.status_code} {response.text[:60]!r}")
    else:
        tally.count(outcome)


async def _session(
    client: httpx.AsyncClient, settings: FuzzSettings, **body: object
) -> dict[str, Any]:
    targets = list(settings.targets)
    response = await client.post("/api/sessions", json={"target_languages": targets, **body})
    response.raise_for_status()
    session: dict[str, Any] = response.json()
    return session


async def _end(client: httpx.AsyncClient, session: dict[str, Any]) -> None:
    auth = {"Authorization": f"Bearer {session['presenter_token']}"}
    await client.post(f"/api/sessions/{session['code']}/end", headers=auth)


async def fuzz_http(client: httpx.AsyncClient, settings: FuzzSettings) -> Tally:
    tally = Tally()
    rng = random.Random(settings.seed)
    public = await _session(client, settings, title="fuzz")
    private = await _session(client, settings, title="fuzz", listener_passcode="fuzz-pass")
    for session in (public, private):
        for method, url, headers in _targets(session, settings):
            if method == "GET":
                for query in cases.QUERIES:
                    await _request(client, tally, method, url + query, headers=headers)
                continue
            bodies = [*cases.BAD_BODIES, *cases.random_bodies(rng, settings.random_bodies)]
            for body in bodies:
                await _request(client, tally, method, url, content=body, headers=headers)
    return tally


def _targets(
    session: dict[str, Any], settings: FuzzSettings
) -> Iterator[tuple[str, str, dict[str, str]]]:
    """Every route with each of ``session``'s codes, ids and tokens: method, URL, headers."""
    tokens = ("", session["presenter_token"], "x" * 32)
    codes = cases.codes_for(session["code"], others=settings.other_codes)
    for method, template in cases.ROUTES:
        idents = cases.IDS if "{id}" in template else ("1",)
        for code, ident, token in itertools.product(codes, idents, tokens):
            headers = {"Authorization": f"Bearer {token}"} if token else {}
            yield method, cases.fill(template, code, ident), headers


async def _real_offer() -> str:
    pc = new_peer()
    pc.addTrack(AudioStreamTrack())
    pc.createDataChannel("control")
    await pc.setLocalDescription(await pc.createOffer())
    sdp: str = pc.localDescription.sdp
    await pc.close()
    return sdp


async def _keep_live(base_url: str, session: dict[str, Any], stop: asyncio.Event) -> None:
    """Present silence to ``session`` until ``stop`` (so offers meet a live session)."""
    url = base_url.replace("http", "ws", 1) + f"/ws/present/{session['code']}"
    async with websockets.connect(url) as socket:
        await socket.send(cases.start_message(session["presenter_token"]))
        await socket.recv()
        while not stop.is_set():
            await socket.send(b"\x00\x00" * 320)
            await asyncio.sleep(0.02)
        await socket.send(json.dumps({"type": "stop"}))


async def fuzz_offers(client: httpx.AsyncClient, base_url: str, settings: FuzzSettings) -> Tally:
    tally = Tally()
    sdp = await _real_offer()
    live = await _session(client, settings, title="fuzz live")
    stop = asyncio.Event()
    presenting = asyncio.create_task(_keep_live(base_url, live, stop))
    await asyncio.sleep(1.0)
    try:
        for mutation in cases.mutations(sdp):
            fresh = await _session(client, settings, title="fuzz offer")
            for session in (fresh, live):
                url = f"/api/sessions/{session['code']}/webrtc/offer"
                offer = {"sdp": mutation.sdp, "type": "offer"}
                present = {**offer, "role": "present", "token": session["presenter_token"]}
                listen = {**offer, "role": "listen", "lang": "en"}
                for body in (present, listen):
                    await _request(client, tally, "POST", url, json=body)
            await _end(client, fresh)
    finally:
        stop.set()
        await presenting
    return tally


async def _socket_case(
    tally: Tally, name: str, url: str, messages: Sequence[str | bytes], *, leave: bool = False
) -> None:
    """Send ``messages``; the server must answer ``ended`` or close with a code other than
    1011 within :data:`SOCKET_TIMEOUT_S`. With ``leave`` the client closes right after
    sending (what the server makes of that shows in its log: :func:`server_errors`)."""
    try:
        async with websockets.connect(url, max_size=None) as socket:
            try:
                for message in messages:
                    await socket.send(message)
                if leave:
                    tally.count("left at once")
                    return
                async with asyncio.timeout(SOCKET_TIMEOUT_S):
                    while True:
                        reply = await socket.recv()
                        if isinstance(reply, str) and '"type": "ended"' in reply:
                            tally.count("ended")
                            return
            except websockets.ConnectionClosed as closed:
                received = closed.rcvd
                if received is None or received.code == 1011 or not received.reason:
                    tally.fail(f"{name}: closed without a code and reason ({received})")
                else:
                    tally.count(f"close {received.code}")
            except TimeoutError:
                tally.fail(f"{name}: neither ended nor closed in {SOCKET_TIMEOUT_S:.0f} s")
    except (OSError, websockets.InvalidHandshake) as error:
        tally.fail(f"{name}: no connection ({error!r})")


async def fuzz_sockets(client: httpx.AsyncClient, base_url: str, settings: FuzzSettings) -> Tally:
    tally = Tally()
    rng = random.Random(settings.seed)
    ws = base_url.replace("http", "ws", 1)
    stop = json.dumps({"type": "stop"})
    # One session for every refused start: a refused start leaves it as it was.
    session = await _session(client, settings, title="fuzz start")
    for name, message in cases.bad_starts(session["presenter_token"]):
        url = f"{ws}/ws/present/{session['code']}"
        await _socket_case(tally, f"start: {name}", url, [message])
    await _end(client, session)
    for name, rate, frames in cases.frame_runs(rng):
        session = await _session(client, settings, title="fuzz audio")
        start = cases.start_message(session["presenter_token"], sample_rate=rate)
        url = f"{ws}/ws/present/{session['code']}"
        await _socket_case(tally, f"audio: {name}", url, [start, *frames, stop])
        await _end(client, session)
    session = await _session(client, settings, title="fuzz leave")
    start = cases.start_message(session["presenter_token"])
    url = f"{ws}/ws/present/{session['code']}"
    speech_like = [rng.randbytes(3200) for _ in range(20)]
    for _ in range(3):  # stop, then close before "ended" can arrive
        await _socket_case(tally, "stop and leave", url, [start, *speech_like, stop], leave=True)
        await asyncio.sleep(2.0)  # the stream finalises before the next one starts
    await _end(client, session)
    for name, message in cases.control_messages():
        session = await _session(client, settings, title="fuzz control")
        start = cases.start_message(session["presenter_token"])
        url = f"{ws}/ws/present/{session['code']}"
        await _socket_case(tally, f"presenter control: {name}", url, [start, message, stop])
        listen = f"{ws}/ws/listen/{session['code']}"
        await _socket_case(tally, f"listener message: {name}", listen, [message])
        await _end(client, session)
    session = await _session(client, settings, title="fuzz listener")
    for query in cases.LISTENER_QUERIES:
        url = f"{ws}/ws/listen/{session['code']}{query}"
        await _socket_case(tally, f"listener query {query[:40]}", url, [stop])
    await _end(client, session)
    return tally


async def run_fuzz(settings: FuzzSettings, url: str | None = None) -> FuzzRun:
    env = {"INTERP_SESSION_RATE": "0"}
    log_path = settings.out / "fuzz-server.log"
    async with server_under_test(url, None, log_path, settings.ready_timeout, env) as server:
        base = server.base_url
        async with httpx.AsyncClient(base_url=base, timeout=60.0) as client:
            parts = {"http": await fuzz_http(client, settings)}
            parts["sockets"] = await fuzz_sockets(client, base, settings)
            if settings.offers:
                parts["webrtc"] = await fuzz_offers(client, base, settings)
            ready = (await client.get("/readyz")).status_code == 200
    return FuzzRun(parts, ready, None if url is not None else server_errors(log_path))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bench fuzz", description=__doc__)
    server_arguments(parser)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--random-bodies", type=int, default=8, help="random JSON bodies per route, code, token"
    )
    parser.add_argument(
        "--no-other-codes", action="store_true", help="only each session's own code"
    )
    parser.add_argument("--offers", type=int, choices=(0, 1), default=1, help="mutated offers")
    return parser


def main(argv: Sequence[str]) -> int:
    """``python -m bench fuzz [options]``: run, write the report, print it; 1 on a failure."""
    args = build_parser().parse_args(argv)
    settings = FuzzSettings(
        out=args.out,
        seed=args.seed,
        random_bodies=args.random_bodies,
        other_codes=not args.no_other_codes,
        offers=bool(args.offers),
        ready_timeout=args.ready_timeout,
    )
    run = asyncio.run(run_fuzz(settings, args.url))
    command = shlex.join(["python", "-m", "bench", "fuzz", *argv])
    paths, markdown = write_report(run, command, settings.out)
    print(markdown)
    print("wrote " + ", ".join(str(p) for p in paths))
    failed = sum(t.failed for t in run.parts.values()) + (run.server_errors or 0)
    return 0 if failed == 0 and run.ready_at_end else 1
