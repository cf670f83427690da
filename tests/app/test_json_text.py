"""Every body and socket message a client sends is parsed by app/json_text.py."""

from __future__ import annotations

import pytest

from app import json_text


@pytest.mark.parametrize(
    "text",
    [
        "{nope",
        b"\xff\xfe",
        "1" * 5000,
        "[" * 20000 + "]" * 20000,
        '{"a":' + "{" * 5000,
        '{"title": "\\ud800"}',
        '{"\\udfff": 1}',
        '[[["a", "\\ud83d"]]]',
    ],
)
def test_bad_text_is_refused_as_not_json(text: str | bytes) -> None:
    with pytest.raises(json_text.NotJson):
        json_text.parse(text)


def test_json_is_read() -> None:
    assert json_text.parse(b'{"type": "start", "rate": 16000}') == {"type": "start", "rate": 16000}
    nested: object = []
    for _ in range(49):
        nested = [nested]
    assert json_text.parse('"\\ud83d\\ude00"') == "\U0001f600"  # a pair is one character
    assert json_text.parse("[" * 50 + "]" * 50) == nested
