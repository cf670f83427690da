"""``python -m bench background``: the report's arithmetic on hand-made samples, and one short
real run (tiny.en and Kokoro) with a row per condition."""

from __future__ import annotations

import re
import sys

import pytest

from bench.background import Sample, main, report
from tests.data import SONNET

ROW = re.compile(
    r"^\| (alone|nice|idle) \| (\d+) \| (\d+\.\d{3}) \| (\d+\.\d{3}) \| (–|\d+\.\d\d) \|$"
)


def test_each_condition_pools_its_rounds_into_one_row() -> None:
    samples = [
        Sample("alone", (0.5, 0.7), 0.0),
        Sample("nice", (0.9, 1.1, 1.0), 0.5),
        Sample("alone", (0.6,), 0.0),
        Sample("nice", (2.0,), 1.5),
    ]
    assert report(samples) == [
        "| alone | 3 | 0.600 | 0.690 | – |",
        "| nice | 4 | 1.050 | 1.865 | 1.00 |",
    ]


@pytest.mark.model
@pytest.mark.skipif(sys.platform != "linux", reason="SCHED_IDLE is Linux's")
def test_a_short_run_decodes_in_every_condition(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--file", str(SONNET), "--seconds", "2", "--decodes", "3", "--rounds", "1"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    rows = {m[1]: m.groups()[1:] for line in out.splitlines() if (m := ROW.match(line))}
    assert list(rows) == ["alone", "nice", "idle"], out
    for condition, (decodes, p50, p95, rate) in rows.items():
        assert int(decodes) == 2  # the first decode of each condition is left out
        assert 0 < float(p50) <= float(p95)
        assert (rate == "–") == (condition == "alone")
