"""Two real server processes sharing one real Redis: a presenter streams a real recording
into process A; listeners on A and on B (one joining late, one moving from A to B with
``since``) all end with the presenter's final transcript; a Spanish listener on B gets
Spanish although nobody on A reads it; Redis is killed and restarted mid-session and no
final is lost."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx
import websockets

from tests.data import SONNET
from tests.support import (
    RedisServer,
    ServerProcess,
    create_session,
    read_wav,
    stream_recording,
)

SPEED = 2.0


@dataclass
class Follower:
    """What one listener received, over all its connections."""

    name: str
    lang: str
    finals: dict[tuple[int, str], str] = field(default_factory=dict)
    """(segment, lang) -> final text."""
    seqs: list[int] = field(default_factory=list)
    last_seq: int = 0

    def source_finals(self) -> dict[int, str]:
        return {seg: text for (seg, lang), text in self.finals.items() if lang == "en"}

    async def follow(self, base: str, code: str, until: Callable[[Follower], bool]) -> None:
        """Connect with ``since=last_seq`` and record events until ``until(self)``."""
        url = base.replace("http://", "ws://") + (
            f"/ws/listen/{code}?lang={self.lang}&since={self.last_seq}"
        )
        async with websockets.connect(url, max_size=2**22) as ws:
            while not until(self):
                try:
                    raw = await asyncio.wait_for(ws.recv(), 0.5)
                except TimeoutError:
                    continue
                if isinstance(raw, bytes):
                    continue
                event = json.loads(raw)
                self.seqs.append(int(event["seq"]))
                self.last_seq = max(self.last_seq, int(event["seq"]))
                if event["type"] == "caption" and event["state"] == "final":
                    self.finals.setdefault((event["segment"], event["lang"]), event["text"])


async def wait_for_status(url: str, status: int, within: float = 20.0) -> dict[str, str]:
    async with httpx.AsyncClient() as client, asyncio.timeout(within):
        while True:
            response = await client.get(f"{url}/readyz")
            if response.status_code == status:
                body: dict[str, str] = response.json()
                return body
            await asyncio.sleep(0.1)


async def test_two_processes_one_session_through_redis(
    nodes: list[ServerProcess], redis_server: RedisServer
) -> None:
    a, b = nodes
    pcm, rate = read_wav(SONNET)
    session = create_session(a.url, target_languages=["es"])
    code = session["code"]
    assert httpx.get(f"{b.url}/api/sessions/{code}").status_code == 200  # B loads it

    done = asyncio.Event()
    expected: dict[int, str] = {}

    def complete(f: Follower) -> bool:
        return done.is_set() and expected.items() <= f.source_finals().items()

    on_a = Follower("on A", "en")
    spanish_on_b = Follower("Spanish on B", "es")
    late_on_b = Follower("late on B", "en")
    mover = Follower("A then B", "en")
    followers = [on_a, spanish_on_b, late_on_b, mover]
    tasks = [
        asyncio.create_task(on_a.follow(a.url, code, complete)),
        asyncio.create_task(spanish_on_b.follow(b.url, code, complete)),
    ]

    async def move() -> None:  # two finals on A, then over to B with since=
        await mover.follow(a.url, code, lambda f: len(f.source_finals()) >= 2)
        await mover.follow(b.url, code, complete)

    async def join_late() -> None:
        await asyncio.sleep(len(pcm) / 2 / rate / SPEED * 0.6)
        await late_on_b.follow(b.url, code, complete)

    tasks += [asyncio.create_task(move()), asyncio.create_task(join_late())]
    await asyncio.sleep(1.0)  # everyone is listening before the first word

    async def restart_redis() -> str:
        await asyncio.sleep(len(pcm) / 2 / rate / SPEED * 0.4)
        await asyncio.to_thread(redis_server.stop, True)  # kill -9
        down = await wait_for_status(b.url, 503)
        await asyncio.sleep(1.0)
        await asyncio.to_thread(redis_server.start)
        return down.get("error", "")

    restarting = asyncio.create_task(restart_redis())
    run = await stream_recording(a.url, pcm, rate, speed=SPEED, session=session)
    outage_reason = await restarting
    assert "Redis unavailable" in outage_reason
    assert run.close_code == 1000, run.close_reason
    expected.update({int(str(e["segment"])): str(e["text"]) for e in run.finals() if e["source"]})
    assert len(expected) >= 5
    done.set()
    try:
        await asyncio.wait_for(asyncio.gather(*tasks), 120)
    except TimeoutError:
        missing = {f.name: sorted(expected.keys() - f.source_finals().keys()) for f in followers}
        raise AssertionError(f"finals missing after the presenter ended: {missing}") from None

    for follower in followers:
        assert follower.source_finals() == expected, follower.name
    assert len(mover.seqs) == len(set(mover.seqs)), "the move to B repeated events"
    assert mover.seqs == sorted(mover.seqs)
    spanish = [seg for (seg, lang) in spanish_on_b.finals if lang == "es"]
    assert len(spanish) >= len(expected) // 2, spanish_on_b.finals
    assert not any(lang == "es" for (_, lang) in on_a.finals)
    # The shared store has every final, whichever process is asked.
    for node in (a, b):
        body = httpx.get(f"{node.url}/api/sessions/{code}/transcript?format=json").json()
        assert {int(c["segment"]): c["text"] for c in body} == expected, node.url
    for node in (a, b):
        await wait_for_status(node.url, 200)


async def test_a_session_ended_through_another_node_finalises_the_open_stream(
    nodes: list[ServerProcess],
) -> None:
    """The presenter streams into A; the session is ended through B (another device, the
    API): A's stream is finalised then, as when it is ended through A. B publishes the
    state before A hears of it, so captions of the speech before the end may still follow
    it, none of what was said after. Before, A went on publishing captions into the ended
    session for as long as audio came."""
    a, b = nodes
    session = create_session(a.url)
    code, token = session["code"], session["presenter_token"]
    pcm, rate = read_wav(SONNET)
    events: list[dict[str, object]] = []
    url = a.url.replace("http://", "ws://") + f"/ws/present/{code}"
    async with websockets.connect(url) as ws:
        await ws.send(json.dumps({"type": "start", "token": token, "sample_rate": rate}))
        assert json.loads(await ws.recv())["type"] == "ready"

        async def receive() -> None:
            async for message in ws:
                events.append(json.loads(message))

        receiver = asyncio.create_task(receive())
        step = rate // 10 * 2
        for n, offset in enumerate(range(0, 16 * rate * 2, step)):  # 16 s, in real time
            await ws.send(pcm[offset : offset + step])
            await asyncio.sleep(0.1)
            if n == 80:  # 8 s in: ended through B
                ended = httpx.post(
                    f"{b.url}/api/sessions/{code}/end",
                    headers={"Authorization": f"Bearer {token}"},
                )
                assert ended.status_code == 200, ended.text
        receiver.cancel()
    states = [i for i, e in enumerate(events) if e.get("type") == "state"]
    end = next(i for i in states if events[i]["state"] == "ended")
    captions = [e for e in events if e.get("type") == "caption"]
    after = [e for e in events[end + 1 :] if e.get("type") == "caption"]
    # Ended 8 s into the audio, sent in real time; A hears of it within a second or so.
    assert all(float(str(e["start"])) < 9.5 for e in after), after
    finals = [e for e in captions if e["state"] == "final"]
    assert {e["segment"] for e in finals} == {e["segment"] for e in captions}  # all final
    assert max(float(str(e["end"])) for e in finals) < 11.0  # nothing of the last 5 s
    stored = httpx.get(f"{a.url}/api/sessions/{code}/transcript").text.split()
    assert stored == " ".join(str(e["text"]) for e in finals).split()
