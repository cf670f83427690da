"""WhisperLiveKit's ``/asr`` messages mapped onto the bench's caption events (pure, no I/O).

WhisperLiveKit (``mode=full``) sends, after every change, the whole transcript so far:
``lines`` (each ``{"speaker", "text", "start", "end"}``) hold the words its LocalAgreement
policy has committed, and ``buffer_transcription`` the newest hypothesis beyond them, which
later passes may still change. A client shows the lines followed by the buffer.

The bench's metrics (``bench.metrics``) read segment-numbered ``draft`` / ``final`` events, so
each snapshot becomes:

- a ``final`` for a new segment holding the committed words that extend those already
  finalised (committed words only ever grow under LocalAgreement; a snapshot whose committed
  words do not extend the previous ones is counted in ``rewrites``, and only words beyond the
  count already finalised are added);
- a ``draft`` of the open segment (the one after the last final) holding the buffer's words.

The displayed transcript (finals then the open draft) is then exactly the lines followed by the
buffer, and the final-only transcript exactly the committed words, so draft latency, final
latency, WER and time to first caption mean the same for both systems. Segment-wise erasure
would not: a commit that takes the first words of the buffer closes the draft's segment with
fewer words than it showed, although the rest stays on screen in the next segment. Erasure is
therefore compared on the whole displayed transcript (:func:`display_erasure`), for both
systems alike.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from bench.metrics import CaptionUpdate, Erasure, erasure, transcript_snapshots
from bench.textnorm import normalise_words


class PeerProtocolError(RuntimeError):
    """WhisperLiveKit reported an error, or sent something that is not a transcript."""


@dataclass(frozen=True, slots=True)
class PeerSnapshot:
    """One WhisperLiveKit transcript message: committed text, then the tentative buffer."""

    arrival: float
    committed: str
    buffer: str


@dataclass(frozen=True, slots=True)
class MappedCaptions:
    """The caption events made from a run of snapshots, and what did not fit the mapping."""

    updates: tuple[CaptionUpdate, ...]
    rewrites: int
    """Snapshots whose committed words did not extend the previous snapshot's."""
    uncommitted_words: int
    """Buffer words of the last snapshot, never committed (not part of the final transcript)."""


def parse_snapshot(arrival: float, message: dict[str, Any]) -> PeerSnapshot | None:
    """The transcript in one WhisperLiveKit message, or ``None`` for a message that carries none
    (``{"type": "config"}``, ``{"type": "ready_to_stop"}``).

    Raises :class:`PeerProtocolError` for ``status: error`` and ``type: error`` messages.
    """
    if message.get("type") == "error" or message.get("status") == "error":
        raise PeerProtocolError(f"WhisperLiveKit error: {message.get('error', message)!r}")
    if "type" in message or "lines" not in message:
        return None
    lines = message["lines"]
    if not isinstance(lines, list):
        raise PeerProtocolError(f"'lines' is not a list: {lines!r}")
    texts = [str(line["text"]).strip() for line in lines if line.get("text")]
    return PeerSnapshot(
        arrival=arrival,
        committed=" ".join(t for t in texts if t),
        buffer=str(message.get("buffer_transcription") or "").strip(),
    )


def caption_updates(snapshots: Iterable[PeerSnapshot]) -> MappedCaptions:
    """Map snapshots (in arrival order) to segment-numbered ``draft`` / ``final`` events.

    Texts are normalised words (``bench.textnorm``) joined by spaces; normalising them again
    changes nothing. Snapshots that change neither the committed words nor the buffer make no
    event.
    """
    updates: list[CaptionUpdate] = []
    finalised = 0  # committed words already sent as finals
    previous: list[str] = []  # committed words of the previous snapshot
    segment = 0  # the open segment: the next final or draft goes here
    draft: tuple[str, ...] | None = None  # newest draft of the open segment
    rewrites = 0
    buffer: list[str] = []
    for snap in snapshots:
        committed = normalise_words(snap.committed)
        buffer = normalise_words(snap.buffer)
        if committed[: len(previous)] != previous:
            rewrites += 1
        previous = committed
        if len(committed) > finalised:
            updates.append(
                CaptionUpdate(snap.arrival, segment, "final", " ".join(committed[finalised:]))
            )
            finalised = len(committed)
            segment += 1
            draft = None
        if tuple(buffer) != (draft if draft is not None else ()):
            updates.append(CaptionUpdate(snap.arrival, segment, "draft", " ".join(buffer)))
            draft = tuple(buffer)
    return MappedCaptions(updates=tuple(updates), rewrites=rewrites, uncommitted_words=len(buffer))


def caption_messages(updates: Sequence[CaptionUpdate]) -> list[dict[str, Any]]:
    """The events as the bench's own server would send them (docs/protocol.md), so a
    :class:`bench.replay.Replay` can carry them and every bench function reads them unchanged."""
    return [
        {
            "type": "caption",
            "segment": u.segment,
            "lang": "en",
            "source": True,
            "state": u.state,
            "text": u.text,
        }
        for u in updates
    ]


def display_updates(updates: Sequence[CaptionUpdate]) -> list[CaptionUpdate]:
    """The whole displayed transcript as one segment: a draft for every distinct displayed
    transcript (events that arrived at the same instant count as one), then a final holding the
    final-only transcript after the last event. Empty for no events."""
    snapshots = transcript_snapshots(updates)
    out: list[CaptionUpdate] = []
    for index, snap in enumerate(snapshots):
        later = snapshots[index + 1] if index + 1 < len(snapshots) else None
        if later is not None and later.arrival == snap.arrival:
            continue  # an intermediate state no client could have drawn
        text = " ".join(snap.displayed)
        if not out or out[-1].text != text:
            out.append(CaptionUpdate(snap.arrival, 0, "draft", text))
    if snapshots:
        last = snapshots[-1]
        out.append(CaptionUpdate(last.arrival, 0, "final", " ".join(last.finals)))
    return out


def display_erasure(updates: Sequence[CaptionUpdate]) -> Erasure:
    """``bench.metrics.erasure`` of the whole displayed transcript: words taken off the screen
    (beyond the longest common word prefix of consecutive displayed transcripts, and whatever
    is displayed at the end but not final), over the words of the final transcript."""
    return erasure(display_updates(updates))
