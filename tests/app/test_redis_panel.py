"""A panel across two real server processes sharing one real Redis.

- A speaker added through one node is known to another that already held the session, for
  their token (the console, the stream, a private session's captions) and in the session's
  facts. Before, a node knew only the speakers it had loaded or added itself, and refused
  the token of one added elsewhere as "wrong presenter token".
- A question from the floor asked through one node is listed and decided through the other.
  Before, the moderator's list on the other node was empty and accepting it answered 404.
"""

from __future__ import annotations

import asyncio
import json

import httpx
import websockets

from engine.panel import REFRESH_S
from tests.data import ENGLISH
from tests.support import ServerProcess, create_session, read_wav, stream_recording


async def test_a_speaker_added_on_one_node_is_known_on_another(
    nodes: list[ServerProcess],
) -> None:
    a, b = nodes
    session = create_session(a.url, listener_passcode="tulip 42")
    code, token = session["code"], session["presenter_token"]
    for node in (a, b):  # both nodes hold the session before the speaker is added
        facts = httpx.get(
            f"{node.url}/api/sessions/{code}", headers={"Authorization": f"Bearer {token}"}
        )
        assert [s["name"] for s in facts.json()["speakers"]] == ["Presenter"]
    added = httpx.post(
        f"{b.url}/api/sessions/{code}/speakers",
        json={"name": "Ana", "language": "en"},
        headers={"Authorization": f"Bearer {token}"},
    )
    assert added.status_code == 201, added.text
    ana = added.json()["token"]
    auth = {"Authorization": f"Bearer {ana}"}
    for node in (a, b):
        who = httpx.get(f"{node.url}/api/sessions/{code}/whoami", headers=auth).json()
        assert who["role"] == "speaker" and who["speaker"]["name"] == "Ana", node.url
        facts = httpx.get(f"{node.url}/api/sessions/{code}", headers=auth)
        assert facts.status_code == 200 and facts.json().get("speakers"), facts.text
        assert [s["name"] for s in facts.json()["speakers"]] == ["Presenter", "Ana"], node.url
    # Ana streams into A, which held the session before she was added.
    run = await stream_recording(
        a.url, *read_wav(ENGLISH), speed=4.0, session={"code": code, "presenter_token": ana}
    )
    assert run.close_code == 1000, run.close_reason
    said = run.finals("en")
    assert said and {e["speaker"]["name"] for e in said} == {"Ana"}
    # A second speaker added on A counts B's (positions and the limit are the store's), and
    # B's facts list him within REFRESH_S.
    second = httpx.post(
        f"{a.url}/api/sessions/{code}/speakers",
        json={"name": "Ben", "language": "en"},
        headers={"Authorization": f"Bearer {token}"},
    )
    assert second.status_code == 201, second.text
    await asyncio.sleep(REFRESH_S + 0.5)  # B's facts read the store again by then
    names = [
        s["name"]
        for s in httpx.get(f"{b.url}/api/sessions/{code}", headers=auth).json()["speakers"]
    ]
    assert names == ["Presenter", "Ana", "Ben"]


async def test_a_question_asked_on_one_node_is_decided_on_another(
    nodes: list[ServerProcess],
) -> None:
    a, b = nodes
    session = create_session(a.url, target_languages=["es"])
    code, token = session["code"], session["presenter_token"]
    auth = {"Authorization": f"Bearer {token}"}
    api = {node.url: f"{node.url}/api/sessions/{code}" for node in (a, b)}
    for node in (a, b):  # both nodes hold the session
        assert httpx.get(api[node.url]).status_code == 200
    asked = httpx.post(f"{api[b.url]}/questions", json={"text": "Where is the exit", "lang": "en"})
    assert asked.status_code == 202, asked.text
    question = asked.json()["id"]

    def held(node: ServerProcess) -> list[str]:
        listed = httpx.get(f"{api[node.url]}/questions", headers=auth).json()["questions"]
        return [q["id"] for q in listed]

    async with asyncio.timeout(10):
        while held(a) != [question]:
            await asyncio.sleep(0.1)
    events: list[dict[str, object]] = []
    listen = b.url.replace("http://", "ws://") + f"/ws/listen/{code}?lang=en"
    async with websockets.connect(listen) as ws:
        accepted = httpx.post(f"{api[a.url]}/questions/{question}/accept", headers=auth)
        assert accepted.status_code == 200, accepted.text
        async with asyncio.timeout(10):
            while not any(e.get("type") == "caption" for e in events):
                events.append(json.loads(await ws.recv()))
    said = next(e for e in events if e.get("type") == "caption")
    assert said["text"] == "Where is the exit?" and said["speaker"] == {
        "id": "audience",
        "name": "Audience",
    }
    async with asyncio.timeout(10):  # B follows the decision: held no more, decided once
        while held(b):
            await asyncio.sleep(0.1)
    again = httpx.post(f"{api[b.url]}/questions/{question}/accept", headers=auth)
    assert again.status_code == 409, again.text
