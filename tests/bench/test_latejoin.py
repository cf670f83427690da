"""The late-join benchmark: the seeded session as the server reads it, and a short real run
(a server the bench starts on the seeded store, 10 joiners)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench.__main__ import main
from bench.latejoin import seed
from engine.store.sqlite import SqliteSessionStore


def test_the_seeded_session_is_live_with_every_final_and_its_spanish(tmp_path: Path) -> None:
    code = seed(tmp_path, 40)
    with SqliteSessionStore(tmp_path / "sessions.sqlite3") as store:
        record = store.get(code)
        assert record is not None and record.state == "live"
        assert record.target_languages == ("es",)
        finals = store.finals(code)
    assert [c.seq for c in finals] == list(range(1, 81))
    assert [c.segment for c in finals if c.lang == "es"] == list(range(40))
    assert all(c.sources == (c.segment,) for c in finals if c.lang == "es")
    assert [c.start for c in finals if c.lang == "en"] == [3.0 * i for i in range(40)]


@pytest.mark.model
def test_ten_real_joiners_hold_every_final(tmp_path: Path) -> None:
    args = ["--listeners", "10", "--segments", "600", "--out", str(tmp_path)]
    assert main(["latejoin", *args]) == 0
    report: dict[str, Any] = json.loads((tmp_path / "latejoin.json").read_text())
    assert report["command"] == f"python -m bench latejoin {' '.join(args)}"
    (round_,) = report["rounds"]
    # 1200 finals for a Spanish listener: more than a listener queue's bound.
    assert round_["listeners"] == 10 and round_["failed"] == 0, round_["failures"]
    assert round_["joined"]["count"] == 10 and round_["joined"]["max"] > 0
    markdown = (tmp_path / "latejoin.md").read_text()
    assert markdown.startswith("# Late joiners") and "| 10 | " in markdown
