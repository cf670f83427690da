"""The fuzz benchmark: how it judges an answer, the offers it makes, and a short real run
against the app (a fake recogniser) that must find no failure."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from bench import fuzz_cases as cases
from bench.fuzz import FuzzSettings, http_outcome, run_fuzz
from bench.fuzz_report import report_json, report_markdown
from tests.app.inprocess import SlowTranscriber, in_process_server, uvicorn_log


def test_a_bare_500_fails_and_a_documented_refusal_does_not() -> None:
    assert http_outcome(httpx.Response(500, text="Internal Server Error")) is None
    assert http_outcome(httpx.Response(503, json={"oops": 1})) is None
    assert http_outcome(httpx.Response(503, json={"error": "at most 12 speakers"})) == (
        "503 refused"
    )
    assert http_outcome(httpx.Response(404, json={"error": "no session"})) == "4xx"
    assert http_outcome(httpx.Response(201, json={})) == "2xx"


def test_every_line_of_an_offer_is_dropped_and_changed() -> None:
    sdp = "v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\nm=audio 9 UDP/TLS/RTP/SAVPF 111\r\na=rtpmap:111 opus"
    made = list(cases.mutations(sdp))
    # Each line dropped and changed each way, but "v=0" has no space to double.
    assert len(made) == 4 * (1 + len(cases.LINE_CHANGES)) - 1 + 5
    assert all(m.sdp != sdp for m in made)
    assert "v=0" not in made[0].sdp and "dropped" in made[0].name


async def test_a_short_run_finds_no_failure(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings = FuzzSettings(
        out=tmp_path, random_bodies=1, targets=(), other_codes=False, offers=False
    )
    async with in_process_server(tmp_path, transcriber=SlowTranscriber(0.05)) as server:
        with uvicorn_log(caplog):
            run = await run_fuzz(settings, server.url)
    unhandled = [r.getMessage() for r in caplog.records if r.name == "uvicorn.error"]
    assert unhandled == [], unhandled[:3]
    report = report_json(run, "test")
    assert report["sent"] > 3000 and run.ready_at_end
    http, sockets = run.parts["http"], run.parts["sockets"]
    assert http.failed == 0, http.failures
    assert sockets.failed == 0, sockets.failures
    # Each refused start and bad message closed with a code; odd audio ended cleanly.
    assert sockets.outcomes["close 1003"] >= 20 and sockets.outcomes["ended"] >= 5
    assert sockets.outcomes["left at once"] == 3
    assert "| http |" in report_markdown(report)
