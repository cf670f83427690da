"""Why the engine refuses a presenter, an editor or a listener: typed reasons, mapped to a
close code or an HTTP status by each transport in one table at its edge (app/errors.py,
app/present.py, app/listen.py)."""

from __future__ import annotations

import enum


class Refusal(enum.Enum):
    """A reason a stream cannot start or continue, an edit cannot be made, or a listener
    cannot follow."""

    NO_CREDENTIALS = "no credentials"
    BAD_CREDENTIALS = "bad credentials"
    UNKNOWN_LANGUAGE = "unknown language"
    NO_MODEL = "no model"
    """No recognition model for the language (or detection without the multilingual one)."""
    BAD_AUDIO = "bad audio"
    """Undecodable PCM, an unsupported encoding or sample rate."""
    MESSAGE_TOO_BIG = "message too big"
    TOO_FAST = "too fast"
    """Audio arrives faster than real time allows."""
    TOO_LONG = "too long"
    SESSION_ENDED = "session ended"
    ALREADY_LIVE = "already live"
    """Another stream is presenting in this session."""
    AT_CAPACITY = "at capacity"
    """The server (or the session) has as many of something as it allows."""
    BAD_REQUEST = "bad request"
    """What was asked is malformed (an empty question, a name too long)."""
    NOT_FOUND = "not found"
    ALREADY_DECIDED = "already decided"
    """A question the moderator already accepted or rejected."""
    UNKNOWN_SEGMENT = "unknown segment"
    """A correction named a segment that has no source final (yet)."""
    BAD_EDIT = "bad edit"
    """A correction or term list that cannot be taken (engine/editing.py)."""
    WRONG_PASSCODE = "wrong passcode"
    """A private session's listener passcode was wrong (engine/access.py)."""
    NOT_PRIVATE = "not private"
    """A passcode was asked of a public session."""


class Refused(Exception):
    """The engine refused a presenter or a listener: ``reason`` says why, ``message`` says
    it to a person."""

    def __init__(self, reason: Refusal, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message
