"""Property-based fuzzing of every client-facing protocol against the shared real server.

Whatever a client sends, the server answers only with documented outcomes (close codes and
HTTP statuses of docs/protocol.md, never a 500), stays up, and a real session streaming at
the same time gets the transcript it would have got anyway.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from urllib.parse import quote, urlencode

import httpx
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from tests.data import SONNET
from tests.support import (
    PresenterRun,
    ServerProcess,
    create_session,
    normalise_for_wer,
    read_wav,
    stream_recording,
)

pytestmark = pytest.mark.model

CLOSE_CODES = {1000, 1003, 1008, 1009, 1013}
HTTP_STATUSES = {200, 201, 400, 401, 403, 404, 409, 413, 422, 429, 503}
FUZZ = settings(
    deadline=None,
    database=None,
    phases=[Phase.explicit, Phase.generate],  # report the failing example; no slow shrinking
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

EXAMPLES_SCALE = float(os.environ.get("INTERP_FUZZ_SCALE", "1"))
"""Multiplies every fuzzer's example count (raise it for a long fuzzing run)."""


def scaled(n: int) -> int:
    return max(1, int(n * EXAMPLES_SCALE))


SENT: Counter[str] = Counter()
"""Messages and requests sent by the fuzzers, by protocol (checked by the last test)."""

# --- strategies -------------------------------------------------------------------------

# Integers stay below Python's 4300-digit conversion limit here; the limit itself is
# tested on its own below.
scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**100), max_value=10**100)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=40)
)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=12), inner),
    max_leaves=12,
)
keys = st.sampled_from(["type", "token", "sample_rate", "encoding", "language", "lang", "enabled"])
protocol_like = st.dictionaries(
    keys,
    json_values | st.sampled_from(["start", "stop", "ping", "language", "audio", "pcm_s16le"]),
    max_size=6,
)
text_messages = (
    st.builds(json.dumps, json_values)
    | st.builds(json.dumps, protocol_like)
    | st.text(max_size=200)
    | st.builds(lambda raw: raw.decode("latin-1"), st.binary(max_size=200))
)
binary_messages = st.binary(max_size=1000)


@st.composite
def quiet_audio(draw: st.DrawFn) -> bytes:
    """A short binary message of well-formed, very quiet PCM (the VAD hears silence, so
    the fuzzers cost the shared server little recognition work)."""
    samples = draw(st.lists(st.integers(-40, 40), min_size=1, max_size=320))
    return b"".join(s.to_bytes(2, "little", signed=True) for s in samples)


# --- helpers ----------------------------------------------------------------------------


@dataclass
class Concurrent:
    """A real presenter streaming a real recording while the fuzzers run."""

    thread: threading.Thread
    result: list[PresenterRun] = field(default_factory=list)
    errors: list[BaseException] = field(default_factory=list)


@pytest.fixture(scope="module")
def concurrent(server: ServerProcess) -> Iterator[Concurrent]:
    pcm, rate = read_wav(SONNET)
    piece = pcm[: rate * 15 * 2]

    def run() -> None:
        try:
            holder.result.append(asyncio.run(stream_recording(server.url, piece, rate, speed=1.0)))
        except BaseException as exc:  # reported by the last test
            holder.errors.append(exc)

    holder = Concurrent(threading.Thread(target=run, name="concurrent-presenter"))
    holder.thread.start()
    yield holder
    holder.thread.join(120)


@pytest.fixture(scope="module")
def targets(server: ServerProcess) -> list[str]:
    routes = httpx.get(f"{server.url}/api/routes", timeout=10).json()["routes"]
    return sorted({r["target"] for r in routes if r["source"] == "en"})[:1]


@pytest.fixture(scope="module")
def fuzz_sessions(server: ServerProcess, targets: list[str]) -> list[dict[str, str]]:
    return [create_session(server.url, target_languages=targets) for _ in range(3)]


def ws(server: ServerProcess, path: str) -> ClientConnection:
    url = server.url.replace("http://", "ws://") + path
    return connect(url, max_size=2**22, open_timeout=10, close_timeout=5)


def read_until_closed(conn: ClientConnection) -> None:
    while True:
        conn.recv(timeout=60)


def assert_documented_close(conn: ClientConnection) -> None:
    """The server closed ``conn`` with a documented code and a reason."""
    code, reason = conn.close_code, conn.close_reason
    assert code in CLOSE_CODES, (code, reason)
    assert reason, code


def server_closes(conn: ClientConnection, messages: list[str | bytes], label: str) -> bool:
    """Send ``messages``; True if the server closed the socket (checked to be documented)."""
    try:
        for message in messages:
            conn.send(message)
            SENT[label] += 1
        return False
    except ConnectionClosed:
        assert_documented_close(conn)
        return True


def start(token: str, **extra: object) -> str:
    return json.dumps({"type": "start", "token": token, "sample_rate": 16000, **extra})


def assert_alive(server: ServerProcess) -> None:
    assert httpx.get(f"{server.url}/healthz", timeout=10).status_code == 200


# --- presenter socket -------------------------------------------------------------------


@settings(FUZZ, max_examples=scaled(400))
@given(first=text_messages | binary_messages | st.builds(json.dumps, protocol_like))
def test_presenter_random_first_message(
    server: ServerProcess,
    concurrent: Concurrent,
    fuzz_sessions: list[dict[str, str]],
    first: str | bytes,
) -> None:
    with ws(server, f"/ws/present/{fuzz_sessions[0]['code']}") as conn:
        if not server_closes(conn, [first], "present"):
            try:
                conn.send(bytes(640))  # audio: accepted only after a valid start
                read_until_closed(conn)
            except ConnectionClosed:
                assert_documented_close(conn)


@settings(FUZZ, max_examples=scaled(150))
@given(
    body=st.lists(quiet_audio() | st.just(json.dumps({"type": "ping"})), min_size=20, max_size=80),
    last=text_messages | binary_messages | st.sampled_from(["stop-now", "leave"]),
    extra=st.dictionaries(st.sampled_from(["encoding", "language", "sample_rate"]), scalars),
    which=st.integers(0, 2),
)
def test_presenter_valid_start_then_random_messages(
    server: ServerProcess,
    concurrent: Concurrent,
    fuzz_sessions: list[dict[str, str]],
    body: list[str | bytes],
    last: str | bytes,
    extra: dict[str, object],
    which: int,
) -> None:
    session = fuzz_sessions[which]
    with ws(server, f"/ws/present/{session['code']}") as conn:
        begin = start(session["presenter_token"], **extra)
        if server_closes(conn, [begin], "present"):
            return
        if last == "leave":  # the presenter vanishes mid-stream
            server_closes(conn, body, "present")
            return
        # ``last`` may be valid too (even-length binary is audio); stop ends the stream then.
        ending = [] if last == "stop-now" else [last]
        if server_closes(conn, [*body, *ending, json.dumps({"type": "stop"})], "present"):
            return
        try:
            read_until_closed(conn)
        except ConnectionClosed:
            assert_documented_close(conn)


# --- listener socket --------------------------------------------------------------------

query_values = (
    st.text(max_size=20)
    | st.integers(-5, 10**20).map(str)
    | st.sampled_from(["en", "es", "EN", "0", "1", "true"])
)


@settings(FUZZ, max_examples=scaled(150))
@given(
    query=st.dictionaries(
        st.sampled_from(["lang", "since", "audio"]) | st.text(max_size=8), query_values, max_size=4
    ),
    controls=st.lists(
        st.sampled_from(
            [
                {"type": "language", "lang": "en"},
                {"type": "audio", "enabled": True},
                {"type": "audio", "enabled": False},
                {"type": "ping"},
            ]
        ).map(json.dumps),
        min_size=40,
        max_size=120,
    ),
    last=text_messages | binary_messages | st.just("leave"),
    which=st.integers(0, 2),
)
def test_listener_random_queries_and_controls(
    server: ServerProcess,
    concurrent: Concurrent,
    fuzz_sessions: list[dict[str, str]],
    query: dict[str, str],
    controls: list[str],
    last: str | bytes,
    which: int,
) -> None:
    code = fuzz_sessions[which]["code"]
    with ws(server, f"/ws/listen/{code}?{urlencode(query)}") as conn:
        SENT["listen"] += 1  # the query is a message too
        messages: list[str | bytes] = [*controls] if last == "leave" else [*controls, last]
        if server_closes(conn, messages, "listen") or last == "leave":
            return
        try:
            conn.send(json.dumps({"type": "ping"}))
            conn.recv(timeout=0.05)
        except TimeoutError:
            return  # still open: the last message was a valid control
        except ConnectionClosed:
            assert_documented_close(conn)


# --- HTTP API ---------------------------------------------------------------------------

invalid_creation = st.one_of(
    st.builds(
        lambda bad, rest: {**rest, **bad},
        st.sampled_from(
            [
                {"title": 7},
                {"title": "x" * 201},
                {"source_language": "xx-nope"},
                {"source_language": None},
                {"target_languages": "es"},
                {"target_languages": ["zz-bad"]},
                {"target_languages": [1]},
            ]
        ),
        st.dictionaries(st.text(max_size=10), json_values, max_size=4),
    ),
    st.builds(json.dumps, json_values).filter(lambda s: not s.startswith("{")),
)
# Not empty, "." or "..": those are other paths (``/api/sessions`` is POST only: 405).
codes = st.text(
    alphabet=st.characters(blacklist_characters="/", codec="utf-8"), min_size=1, max_size=12
).filter(lambda c: c.strip(".") != "")


def check_status(response: httpx.Response) -> None:
    assert response.status_code in HTTP_STATUSES, (response.status_code, response.text[:300])


@settings(FUZZ, max_examples=scaled(300))
@given(body=invalid_creation, raw=st.binary(max_size=300) | st.none())
def test_http_random_session_creation(
    server: ServerProcess, concurrent: Concurrent, body: object, raw: bytes | None
) -> None:
    with httpx.Client(base_url=server.url, timeout=10) as client:
        content = raw if raw is not None else (body if isinstance(body, str) else json.dumps(body))
        response = client.post("/api/sessions", content=content)
        SENT["http"] += 1
        check_status(response)
        assert response.status_code != 201, "an invalid request created a session"


@settings(FUZZ, max_examples=scaled(300))
@given(
    code=codes,
    tail=st.sampled_from(["", "/transcript", "/glossary", "/qr.svg"]),
    params=st.dictionaries(
        st.sampled_from(["lang", "format", "since"]) | st.text(max_size=6),
        query_values | st.sampled_from(["txt", "srt", "vtt", "json", "pdf"]),
        max_size=3,
    ),
    real=st.booleans(),
)
def test_http_random_gets(
    server: ServerProcess,
    concurrent: Concurrent,
    fuzz_sessions: list[dict[str, str]],
    code: str,
    tail: str,
    params: dict[str, str],
    real: bool,
) -> None:
    code = fuzz_sessions[0]["code"] if real else code
    with httpx.Client(base_url=server.url, timeout=10) as client:
        response = client.get(f"/api/sessions/{quote(code, safe='')}{tail}", params=params)
        SENT["http"] += 1
        check_status(response)


@settings(FUZZ, max_examples=scaled(200))
@given(
    body=st.dictionaries(
        st.sampled_from(["es", "fr", "en", "de"]) | st.text(max_size=6),
        st.dictionaries(st.text(max_size=120), st.text(max_size=120) | scalars, max_size=4)
        | json_values,
        max_size=3,
    ),
    auth=st.sampled_from(["right", "wrong", "none", "garbage"]),
)
def test_http_random_glossary(
    server: ServerProcess,
    concurrent: Concurrent,
    fuzz_sessions: list[dict[str, str]],
    body: dict[str, object],
    auth: str,
) -> None:
    session = fuzz_sessions[1]
    headers = {
        "right": {"Authorization": f"Bearer {session['presenter_token']}"},
        "wrong": {"Authorization": "Bearer " + "A" * 32},
        "none": {},
        "garbage": {"Authorization": "Basic Zm9vOmJhcg=="},
    }[auth]
    with httpx.Client(base_url=server.url, timeout=10) as client:
        response = client.put(
            f"/api/sessions/{session['code']}/glossary", json=body, headers=headers
        )
        SENT["http"] += 1
        check_status(response)
        if auth != "right":
            assert response.status_code in (401, 403), response.text


# --- integers beyond Python's conversion limit (json.loads raises ValueError) ----------

HUGE = (
    "9" * 5000
)  # over Python 3.11's 4300-digit int conversion limit: json.loads raises ValueError


def test_http_integer_over_conversion_limit_is_a_400(server: ServerProcess) -> None:
    response = httpx.post(
        f"{server.url}/api/sessions", content=b'{"title": ' + HUGE.encode() + b"}"
    )
    assert response.status_code == 400, response.status_code


def test_presenter_integer_over_conversion_limit_is_a_1003(
    server: ServerProcess, fuzz_sessions: list[dict[str, str]]
) -> None:
    with ws(server, f"/ws/present/{fuzz_sessions[2]['code']}") as conn:
        conn.send('{"type": "start", "sample_rate": ' + HUGE + "}")
        with pytest.raises(ConnectionClosed):
            read_until_closed(conn)
        assert conn.close_code == 1003, (conn.close_code, conn.close_reason)


def test_listener_integer_over_conversion_limit_is_a_1003(
    server: ServerProcess, fuzz_sessions: list[dict[str, str]]
) -> None:
    with ws(server, f"/ws/listen/{fuzz_sessions[2]['code']}") as conn:
        conn.send('{"type": "ping", "n": ' + HUGE + "}")
        with pytest.raises(ConnectionClosed):
            read_until_closed(conn)
        assert conn.close_code == 1003, (conn.close_code, conn.close_reason)


# --- afterwards ---------------------------------------------------------------------------


def test_server_up_and_concurrent_session_unaffected(
    server: ServerProcess, concurrent: Concurrent
) -> None:
    assert_alive(server)
    concurrent.thread.join(120)
    assert not concurrent.errors, concurrent.errors
    (run,) = concurrent.result
    assert run.close_code == 1000, (run.close_code, run.close_reason)
    text = normalise_for_wer(run.final_text())
    assert run.finals() and "winters" in text and "brow" in text, text
    assert not [e for e in run.events if e.get("type") == "error"]
    total = sum(SENT.values())
    assert total >= 10_000 * min(1.0, EXAMPLES_SCALE), SENT
