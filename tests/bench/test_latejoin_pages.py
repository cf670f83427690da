"""The late joiners' pages bench: a short real run (a server on a seeded store, real
Chromium) that reports a time for each page, and the seeded session's presenter token."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench.__main__ import main
from bench.latejoin import seed
from engine.store.base import hash_token
from engine.store.sqlite import SqliteSessionStore


def test_the_seeded_session_takes_the_given_presenter_token(tmp_path: Path) -> None:
    code = seed(tmp_path, 3, presenter_token="a-known-token")
    with SqliteSessionStore(tmp_path / "sessions.sqlite3") as store:
        record = store.get(code)
    assert record is not None and record.token_hash == hash_token("a-known-token")


@pytest.mark.model
@pytest.mark.browser
def test_each_page_draws_a_backfilled_session(tmp_path: Path) -> None:
    args = ["--segments", "120", "--out", str(tmp_path)]
    assert main(["latejoin-pages", *args]) == 0
    report: dict[str, Any] = json.loads((tmp_path / "latejoin-pages.json").read_text())
    assert report["command"] == f"python -m bench latejoin-pages {' '.join(args)}"
    (round_,) = report["rounds"]
    assert round_["segments"] == 120
    assert all(round_[page] > 0 for page in ("phone_s", "screen_s", "console_s")), round_
    markdown = (tmp_path / "latejoin-pages.md").read_text()
    assert markdown.startswith("# Late joiners' pages") and "| 120 (240) | " in markdown
