"""Untrusted JSON: the one parse of every request body and every socket or data-channel
message a client sends, so each of them refuses bad text the same way."""

from __future__ import annotations

import json


class NotJson(ValueError):
    """The text is not JSON this server will read."""


def parse(text: str | bytes) -> object:
    """The value ``text`` holds, or :class:`NotJson`.

    Besides malformed text this refuses bytes that are not UTF-8, integers past the
    interpreter's digit limit, nesting deeper than its recursion limit (the decoder raises
    RecursionError there, which is not a ValueError) and strings holding a lone surrogate
    (``"\\ud800"`` is valid JSON, but no UTF-8 store, socket or page can carry it)."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        raise NotJson("not valid JSON") from None
    if not _encodable(value):
        raise NotJson("a string holds a lone surrogate")
    return value


def is_seq(value: object) -> bool:
    """Whether a parsed ``value`` is an event ``seq`` (a ``since``): an integer of at least 0,
    not a boolean (``true`` is an ``int`` to Python)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _encodable(value: object) -> bool:
    """Whether every string in ``value`` (keys too) encodes as UTF-8; a loop, not
    recursion, since ``value`` may nest as deep as the decoder allows."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
        elif isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return False
    return True
