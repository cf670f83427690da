"""``python -m bench threads`` with the real tiny.en: one row per thread count and window,
each with an encode time and per-token decode times that a real decode produced."""

from __future__ import annotations

import re

import pytest

from bench.threads import main
from tests.data import SONNET

DECODE = r"(\d+\.\d) \((\d+) tokens\)"
ROW = re.compile(rf"^\| (\d+) \| (\d+) \| (\d+\.\d{{3}}) \| {DECODE} \| {DECODE} \|$")


@pytest.mark.model
def test_one_row_per_thread_count_and_window(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["--file", str(SONNET), "--threads", "1", "2", "--windows", "10", "--repeat", "1"])
        == 0
    )
    out = capsys.readouterr().out
    assert out.startswith("Whisper tiny.en (int8) on ")
    rows = [m.groups() for line in out.splitlines() if (m := ROW.match(line))]
    assert [(r[0], r[1]) for r in rows] == [("1", "10"), ("2", "10")], out
    for row in rows:
        encode_s, beam_ms, beam_tokens, greedy_ms, greedy_tokens = map(float, row[2:])
        assert 0 < encode_s < 10 and beam_ms > 0 and greedy_ms > 0
        # 10 s of a read sonnet (its first two lines) is more than a handful of tokens.
        assert beam_tokens >= 10 and greedy_tokens >= 10
