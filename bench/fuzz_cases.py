"""What the fuzz benchmark sends (bench/fuzz.py): bad bodies, queries, codes, socket messages
and mutated WebRTC offers. Pure: no I/O, the same cases for the same seed."""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass

NESTED_BODY = "[" * 6000 + "]" * 6000
"""JSON nested past the decoder's recursion limit, under the 16 KiB a body may have."""
NESTED_MESSAGE = "[" * 20000 + "]" * 20000
"""The same for a socket message (under the 64 KiB a frame may have)."""

ROUTES: tuple[tuple[str, str], ...] = (
    ("POST", "/api/sessions"),
    ("GET", "/api/sessions/{code}"),
    ("POST", "/api/sessions/{code}/end"),
    ("POST", "/api/sessions/{code}/join"),
    ("POST", "/api/sessions/{code}/listener-token"),
    ("PUT", "/api/sessions/{code}/passcode"),
    ("GET", "/api/sessions/{code}/push"),
    ("PUT", "/api/sessions/{code}/push/youtube"),
    ("DELETE", "/api/sessions/{code}/push/zoom"),
    ("PUT", "/api/sessions/{code}/glossary"),
    ("GET", "/api/sessions/{code}/glossary"),
    ("PUT", "/api/sessions/{code}/terms"),
    ("GET", "/api/sessions/{code}/terms"),
    ("POST", "/api/sessions/{code}/editors"),
    ("DELETE", "/api/sessions/{code}/editors"),
    ("PUT", "/api/sessions/{code}/segments/{id}"),
    ("GET", "/api/sessions/{code}/transcript"),
    ("POST", "/api/sessions/{code}/speakers"),
    ("GET", "/api/sessions/{code}/whoami"),
    ("POST", "/api/sessions/{code}/questions"),
    ("GET", "/api/sessions/{code}/questions"),
    ("POST", "/api/sessions/{code}/questions/{id}/accept"),
    ("GET", "/api/sessions/{code}/qr.svg"),
    ("POST", "/api/sessions/{code}/webrtc/offer"),
    ("GET", "/api/webrtc/config"),
    ("GET", "/api/routes"),
    ("GET", "/p/{code}"),
    ("GET", "/s/{code}"),
    ("GET", "/e/{code}"),
    ("GET", "/s/{code}/screen"),
    ("GET", "/s/{code}/overlay"),
    ("GET", "/talk"),
    ("GET", "/"),
)
"""Every HTTP route of app/main.py (``{code}`` and ``{id}`` filled by the cases)."""

OTHER_CODES = ("ZZZZZZ", "x" * 300, "%F0%9F%92%A5", "%00", "%ED%A0%80", "%FF")
"""Codes beside a session's own (and its lower case): unknown, long, odd bytes."""
IDS = ("0", "1", "-1", "99999999999999999999999", "abc", "1.5")
QUERIES = (
    "",
    "?token=",
    "?token=%FF",
    "?token=%ED%A0%80",
    "?format=srt",
    "?format=zzz",
    "?format=%00",
    "?lang=zz",
    "?lang=%ED%A0%80",
    "?since=-1",
    "?since=1e999",
    "?size=1e9&lines=-5&theme=%3Cb%3E&bg=x",
)
BAD_BODIES: tuple[bytes, ...] = (
    b"",
    b"{",
    b"[]",
    b"null",
    b'"s"',
    b"\xff\xfe",
    b"1" * 5000,
    NESTED_BODY.encode(),
    b'{"title": "\\ud800", "text": "\\udfff", "name": "a\\ud800b"}',
    b'{"\\ud800": 1}',
)
KEYS = (
    "title",
    "source_language",
    "target_languages",
    "listener_passcode",
    "terms",
    "passcode",
    "token",
    "text",
    "name",
    "language",
    "lang",
    "url",
    "sdp",
    "type",
    "role",
)
VALUES: tuple[object, ...] = (
    None,
    True,
    0,
    -1,
    1e308,
    10**30,
    "",
    "x" * 20000,
    "💥",
    "../../etc",
    "<script>",
    "http://[::1",
    "https://upload.youtube.com:99999/x",
    [],
    {},
    ["es"],
    [[[]]],
    {"a": 1},
    [{"source": "a", "target": {"es": "b"}}],
)


def random_bodies(rng: random.Random, count: int) -> Iterator[bytes]:
    """``count`` JSON objects of the API's own keys with values of every wrong kind."""
    for _ in range(count):
        keys = rng.sample(KEYS, rng.randint(1, 6))
        yield json.dumps({key: rng.choice(VALUES) for key in keys}).encode()


def codes_for(code: str, *, others: bool) -> tuple[str, ...]:
    """A session's code, its lower case and (``others``) :data:`OTHER_CODES`."""
    return (code, code.lower(), *(OTHER_CODES if others else ()))


def fill(template: str, code: str, ident: str) -> str:
    return template.replace("{code}", code).replace("{id}", ident)


@dataclass(frozen=True, slots=True)
class Mutation:
    """One WebRTC offer changed in one line (or as a whole)."""

    name: str
    sdp: str


LINE_CHANGES: tuple[tuple[str, Callable[[str], str]], ...] = (
    ("emptied", lambda line: ""),
    ("replaced by x", lambda line: "x"),
    ("long number appended", lambda line: line + " " + "9" * 30),
    ("spaces doubled", lambda line: line.replace(" ", "  ")),
    ("cut in half", lambda line: line[: len(line) // 2]),
    ("NUL appended", lambda line: line + "\x00"),
    ("negative after =", lambda line: line.replace("=", "=-1 ", 1)),
    ("tripled", lambda line: line * 3),
)


def mutations(sdp: str) -> Iterator[Mutation]:
    """Each line of ``sdp`` dropped, then changed each way of :data:`LINE_CHANGES` (where that
    changes it), then a few changes of the whole offer."""
    lines = sdp.split("\r\n")
    for index, line in enumerate(lines):
        label = line[:40]
        rest_before, rest_after = lines[:index], lines[index + 1 :]
        yield Mutation(f"{label!r} dropped", "\r\n".join(rest_before + rest_after))
        for what, change in LINE_CHANGES:
            changed = change(line)
            if changed == line:
                continue  # "spaces doubled" on a line without spaces
            yield Mutation(f"{label!r} {what}", "\r\n".join([*rest_before, changed, *rest_after]))
    whole = (
        Mutation("LF line ends", sdp.replace("\r\n", "\n")),
        Mutation("twice", sdp * 2),
        Mutation("video for audio", sdp.replace("audio", "video")),
        Mutation("no codec known", sdp.replace("opus", "xyz").replace("PCMU", "xyz")),
        Mutation("plain RTP profile", sdp.replace("UDP/TLS/RTP/SAVPF", "RTP/AVP")),
    )
    yield from (mutation for mutation in whole if mutation.sdp != sdp)


def start_message(token: str, **extra: object) -> str:
    body = {"type": "start", "token": token, "sample_rate": 16000, "encoding": "pcm_s16le"}
    return json.dumps({**body, **extra})


def bad_starts(token: str) -> tuple[tuple[str, str], ...]:
    """Presenter ``start`` messages that must be refused with a close code."""
    return (
        ("not JSON", "{nope"),
        ("nested past the decoder", NESTED_MESSAGE),
        ("lone surrogate", '{"type": "start", "token": "\\ud800"}'),
        ("rate 10^30", start_message(token, sample_rate=10**30)),
        ("rate as text", start_message(token, sample_rate="16000")),
        ("language a number", start_message(token, language=5)),
        ("encoding opus", start_message(token, encoding="opus")),
        ("finals null", start_message(token, finals=None)),
        ("wrong token", start_message("x" * 32)),
    )


def frame_runs(rng: random.Random) -> tuple[tuple[str, int, list[bytes]], ...]:
    """Audio a started presenter may send (name, sample rate, frames): each must end with
    ``ended`` after ``stop`` or a close with a code."""
    return (
        ("2-byte frames", 16000, [b"\x00\x00"] * 500),
        ("empty frames", 16000, [b""] * 50),
        ("odd byte count", 16000, [b"\x00" * 3201]),
        ("random bytes at 96 kHz", 96000, [rng.randbytes(2 * 9600) for _ in range(10)]),
        ("full scale at 8 kHz", 8000, [b"\xff\x7f" * 800 for _ in range(20)]),
        ("square wave", 16000, [b"\x00\x80\xff\x7f" * 800 for _ in range(20)]),
        ("random sizes", 16000, [rng.randbytes(rng.randrange(1, 3000) * 2) for _ in range(30)]),
        ("rate 8001", 8001, [rng.randbytes(1600) for _ in range(10)]),
    )


def control_messages() -> tuple[tuple[str, str], ...]:
    """Text messages after ``start`` (presenter) or on a listener socket."""
    return (
        ("not JSON", "hello"),
        ("nested past the decoder", NESTED_MESSAGE),
        ("lone surrogate", '{"type": "\\ud800"}'),
        ("a list", "[1]"),
        ("unknown type", '{"type": "dance"}'),
        ("language a number", '{"type": "language", "lang": 5}'),
        ("audio not a boolean", '{"type": "audio", "enabled": "yes"}'),
    )


LISTENER_QUERIES = (
    "?lang=%FF",
    "?lang=%ED%A0%80",
    "?since=99999999999999999999999",
    "?since=1e9",
    "?audio=2",
    "?token=%FF",
    "?preview=1",
    "?lang=es&lang=fr",
    "?since=" + "9" * 5000,
)
