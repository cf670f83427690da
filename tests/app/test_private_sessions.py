"""Private sessions (docs/protocol.md, docs/security.md): a passcode gives a listener token;
the token opens the listener socket, transcripts, the glossary, the QR code and the facts;
wrong passcodes answer 401 and, repeated, 429; a new passcode keeps those who joined.

Against the real app with a fake recogniser, in this event loop (tests/app/inprocess.py)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
import websockets
from websockets.exceptions import ConnectionClosed

from engine.access import hash_passcode, valid_passcode, verify_passcode
from engine.events import Caption
from tests.app.inprocess import http, in_process_server, new_session


def ws_url(url: str, code: str, **query: str) -> str:
    params = "&".join(f"{k}={v}" for k, v in {"lang": "en", **query}.items())
    return url.replace("http://", "ws://") + f"/ws/listen/{code}?{params}"


async def listen_close(url: str) -> tuple[int | None, str]:
    """Open a listener socket and return how the server closed it."""
    async with websockets.connect(url) as ws:
        with pytest.raises(ConnectionClosed):
            while True:
                await asyncio.wait_for(ws.recv(), 5)
        return ws.close_code, ws.close_reason or ""


async def first_event(url: str, kind: str | None = None) -> dict[str, Any]:
    """The first event the listener socket sends, or the first of type ``kind`` (the
    backfill comes in ``seq`` order, so a state announced before a caption comes first)."""
    async with websockets.connect(url) as ws:
        async with asyncio.timeout(5):
            while True:
                event: dict[str, Any] = json.loads(await ws.recv())
                if kind is None or event["type"] == kind:
                    return event


async def post_from(address: str, url: str, body: dict[str, Any]) -> httpx.Response:
    """A POST whose connection comes from ``address`` (any 127.x.y.z is loopback), so each
    check has its own guess allowance."""
    transport = httpx.AsyncHTTPTransport(local_address=address)
    async with httpx.AsyncClient(transport=transport, timeout=10) as client:
        return await client.post(url, json=body)


def test_passcodes_are_hashed_with_a_salt_and_checked() -> None:
    stored = hash_passcode("open sesame")
    assert stored.startswith("scrypt$") and "open sesame" not in stored
    assert stored != hash_passcode("open sesame")  # a fresh salt each time
    assert verify_passcode(stored, "open sesame")
    assert verify_passcode(stored, "  open sesame ")  # as typed, spaces around forgiven
    assert not verify_passcode(stored, "open sesam")
    assert not verify_passcode("garbage", "open sesame")
    assert [valid_passcode(p) for p in ("1234", "abc", 1234, "x" * 129, "tab\there")] == [
        True,
        False,
        False,
        False,
        False,
    ]


async def test_a_private_session_opens_only_with_a_token(tmp_path: Path) -> None:
    async with in_process_server(tmp_path) as server:
        url = server.url
        created = await new_session(url, title="Board meeting", listener_passcode="tulip 42")
        code, presenter = created["code"], created["presenter_token"]
        token = created["listener_token"]
        assert created["private"] is True
        assert created["listen_url"] == f"/s/{code}#token={token}"

        # The facts say only that it exists and is private, unless a token comes along.
        assert (await http("GET", f"{url}/api/sessions/{code}")).json() == {
            "code": code,
            "private": True,
        }
        for credential in (token, presenter):
            facts = await http(
                "GET",
                f"{url}/api/sessions/{code}",
                headers={"Authorization": f"Bearer {credential}"},
            )
            assert facts.json()["title"] == "Board meeting" and facts.json()["private"] is True

        # Joining: a wrong passcode 401, the right one a fresh token.
        wrong = await http("POST", f"{url}/api/sessions/{code}/join", json={"passcode": "tulip"})
        assert wrong.status_code == 401 and wrong.json()["error"]
        joined = await http(
            "POST", f"{url}/api/sessions/{code}/join", json={"passcode": "tulip 42"}
        )
        assert joined.status_code == 200
        mine = joined.json()["listener_token"]
        assert mine != token and joined.json()["listen_url"] == f"/s/{code}#token={mine}"
        malformed = await http("POST", f"{url}/api/sessions/{code}/join", json={"passcode": 7})
        assert malformed.status_code == 422

        # The listener socket: 1008 without a valid token, the session's events with one.
        assert (await listen_close(ws_url(url, code)))[0] == 1008
        assert (await listen_close(ws_url(url, code, token="x" * 32)))[0] == 1008
        assert (await first_event(ws_url(url, code, token=mine)))["type"] == "state"

        # Transcripts, the glossary: 401 without, 403 with a wrong token, 200 with one.
        live = await server.state["services"].engine().registry.get(code)
        await live.publish(Caption(0, "en", True, "final", "Secret plans.", 0, 1))
        transcript = f"{url}/api/sessions/{code}/transcript"
        assert (await http("GET", transcript)).status_code == 401
        assert (await http("GET", f"{transcript}?token=nope")).status_code == 403
        by_query = await http("GET", f"{transcript}?token={mine}")
        by_header = await http("GET", transcript, headers={"Authorization": f"Bearer {mine}"})
        assert by_query.text == by_header.text == "Secret plans.\n"
        glossary = f"{url}/api/sessions/{code}/glossary"
        assert (await http("GET", glossary)).status_code == 401
        assert (await http("GET", f"{glossary}?token={mine}")).status_code == 200

        # The QR code carries the token it was asked with; never the presenter's.
        qr = f"{url}/api/sessions/{code}/qr.svg"
        assert (await http("GET", qr)).status_code == 401
        svg = await http("GET", qr, headers={"Authorization": f"Bearer {mine}"})
        assert svg.status_code == 200 and f"/s/{code}#token={mine}" in svg.text
        assert "no-store" in svg.headers["cache-control"]
        as_presenter = await http("GET", qr, headers={"Authorization": f"Bearer {presenter}"})
        assert as_presenter.status_code == 400

        # The presenter gets a token for the share link.
        share = f"{url}/api/sessions/{code}/listener-token"
        assert (await http("POST", share)).status_code == 401
        assert (await http("POST", share, headers={"Authorization": "Bearer x"})).status_code == 403
        granted = await http("POST", share, headers={"Authorization": f"Bearer {presenter}"})
        assert await first_event(ws_url(url, code, token=granted.json()["listener_token"]))

        # A new passcode: the old one stops working, those who joined keep their tokens.
        rotate = f"{url}/api/sessions/{code}/passcode"
        body = {"passcode": "rose 77"}
        assert (await http("PUT", rotate, json=body)).status_code == 401
        # The token is checked first: without it nothing is said of the passcode's rules.
        assert (
            await http(
                "PUT", rotate, json={"passcode": "no"}, headers={"Authorization": "Bearer x"}
            )
        ).status_code == 403
        for malformed in ("no", 1234, None):
            refused = await http(
                "PUT",
                rotate,
                json={"passcode": malformed},
                headers={"Authorization": f"Bearer {presenter}"},
            )
            assert refused.status_code == 422, malformed
        rotated = await http(
            "PUT", rotate, json=body, headers={"Authorization": f"Bearer {presenter}"}
        )
        assert rotated.status_code == 200
        old = await http("POST", f"{url}/api/sessions/{code}/join", json={"passcode": "tulip 42"})
        assert old.status_code == 401
        new = await http("POST", f"{url}/api/sessions/{code}/join", json={"passcode": "rose 77"})
        assert new.status_code == 200
        caption = await first_event(ws_url(url, code, token=mine), "caption")
        assert caption["text"] == "Secret plans."
        assert (await http("GET", f"{transcript}?token={mine}")).status_code == 200


async def test_its_speakers_and_editors_follow_a_private_session(tmp_path: Path) -> None:
    """The people a private session lets speak or fix lines follow it with their own token:
    the listener socket, the transcript and the term list (which the code alone no longer
    reads)."""
    async with in_process_server(tmp_path) as server:
        url = server.url
        created = await new_session(url, listener_passcode="tulip 42")
        code, presenter = created["code"], created["presenter_token"]
        auth = {"Authorization": f"Bearer {presenter}"}
        api = f"{url}/api/sessions/{code}"
        speaker = await http("POST", f"{api}/speakers", json={"name": "Ana"}, headers=auth)
        editor = await http("POST", f"{api}/editors", headers=auth)
        assert speaker.status_code == editor.status_code == 201
        tokens = {"speaker": speaker.json()["token"], "editor": editor.json()["editor_token"]}
        terms = await http("PUT", f"{api}/terms", json={"terms": ["Kubernetes"]}, headers=auth)
        assert terms.status_code == 200
        live = await server.state["services"].engine().registry.get(code)
        await live.publish(Caption(0, "en", True, "final", "Secret plans.", 0, 1))

        for who, token in tokens.items():
            caption = await first_event(ws_url(url, code, token=token), "caption")
            assert caption["text"] == "Secret plans.", who
            transcript = await http("GET", f"{api}/transcript?token={token}")
            assert transcript.text == "Secret plans.\n", who
            listed = await http("GET", f"{api}/terms", headers={"Authorization": f"Bearer {token}"})
            assert listed.json()["terms"] == ["Kubernetes"], who
        assert (await http("GET", f"{api}/terms")).status_code == 401
        assert (await http("GET", f"{api}/terms?token=nope")).status_code == 403
        # Who may speak may invite: a speaker's console gets a listener token for its share
        # link; an editor's page has none to make.
        share = f"{api}/listener-token"
        granted = await http(
            "POST", share, headers={"Authorization": f"Bearer {tokens['speaker']}"}
        )
        assert granted.status_code == 200
        caption = await first_event(
            ws_url(url, code, token=granted.json()["listener_token"]), "caption"
        )
        assert caption["text"] == "Secret plans."
        as_editor = await http(
            "POST", share, headers={"Authorization": f"Bearer {tokens['editor']}"}
        )
        assert as_editor.status_code == 403
        # An editor's token is still no presenter's: it adds no speaker.
        refused = await http(
            "POST",
            f"{api}/speakers",
            json={"name": "X"},
            headers={"Authorization": f"Bearer {tokens['editor']}"},
        )
        assert refused.status_code == 403
        # Editor links revoked: the editor's token opens nothing more; the speaker's still does.
        revoked = await http("DELETE", f"{api}/editors", headers=auth)
        assert revoked.status_code == 200 and revoked.json()["revoked"] == 1
        assert (await listen_close(ws_url(url, code, token=tokens["editor"])))[0] == 1008
        gone = await http("GET", f"{api}/transcript?token={tokens['editor']}")
        assert gone.status_code == 403
        caption = await first_event(ws_url(url, code, token=tokens["speaker"]), "caption")
        assert caption["text"] == "Secret plans."


async def test_repeated_wrong_passcodes_are_refused_per_client(tmp_path: Path) -> None:
    """Past the limit of different wrong passcodes, a client address is refused; the same
    wrong passcode typed again (a venue's attendees behind one address making the same typo)
    counts once."""
    async with in_process_server(tmp_path, passcode_guesses_per_minute=3) as server:
        created = await new_session(server.url, listener_passcode="9876")
        join = f"{server.url}/api/sessions/{created['code']}/join"
        typos = [
            (await post_from("127.0.0.2", join, {"passcode": passcode})).status_code
            for passcode in ("9867", "9867", " 9867", "9867", "9867")
        ]
        assert typos == [401] * 5
        statuses = [
            (await post_from("127.0.0.2", join, {"passcode": f"{n:04d}"})).status_code
            for n in range(3)
        ]
        assert statuses == [401, 401, 429]
        limited = await post_from("127.0.0.2", join, {"passcode": "9876"})
        assert limited.status_code == 429 and int(limited.headers["retry-after"]) >= 1
        assert limited.json()["retry_after"] > 0
        # Another client is not held back by the first one's guesses.
        assert (await post_from("127.0.0.3", join, {"passcode": "9876"})).status_code == 200


async def test_a_public_session_needs_no_token_and_has_no_passcode(tmp_path: Path) -> None:
    async with in_process_server(tmp_path) as server:
        url = server.url
        created = await new_session(url)
        code = created["code"]
        assert created["private"] is False and "listener_token" not in created
        assert created["listen_url"] == f"/s/{code}"
        assert (await http("GET", f"{url}/api/sessions/{code}")).json()["private"] is False
        join = await http("POST", f"{url}/api/sessions/{code}/join", json={"passcode": "1234"})
        assert join.status_code == 409
        assert (await first_event(ws_url(url, code)))["type"] == "state"
        bad = await http(
            "POST", f"{url}/api/sessions", json={"title": "t", "listener_passcode": "12"}
        )
        assert bad.status_code == 422


async def test_a_private_sessions_webrtc_listener_needs_the_token(tmp_path: Path) -> None:
    from bench.webrtc_replay import new_peer, post_offer

    async with in_process_server(tmp_path) as server:
        created = await new_session(server.url, listener_passcode="tulip 42")
        pc = new_peer()
        pc.addTransceiver("audio", direction="recvonly")
        await pc.setLocalDescription(await pc.createOffer())
        offer = {"sdp": pc.localDescription.sdp, "type": "offer", "role": "listen", "lang": "en"}
        await pc.close()
        code = created["code"]
        assert (await post_offer(server.url, code, offer)).status_code == 401
        wrong = await post_offer(server.url, code, {**offer, "token": "x" * 32})
        assert wrong.status_code == 403
        right = await post_offer(server.url, code, {**offer, "token": created["listener_token"]})
        assert right.status_code == 200, right.text
