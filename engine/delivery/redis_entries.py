"""How an event travels as one entry of a session's Redis stream, and back.

An entry's id is ``<seq>-0`` and it has these fields:

- ``e``: the event's wire JSON (:func:`engine.events.to_dict`). The hub sends
  :func:`entry_body`, the JSON without ``seq`` and ``ts``; its emit script
  (:mod:`engine.delivery.redis`) numbers the event and prepends both;
- ``n``: the node that emitted it (a node does not feed its own events back to itself as
  other nodes' changes);
- ``pcm``: in the audio stream only, the spoken translation's PCM as bytes (the JSON of a
  :class:`engine.events.SpeechAudio` carries the header).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from engine.events import Event, SpeechAudio, from_dict, to_dict


def entry_body(event: Event) -> str:
    """The event's wire JSON without its leading ``{`` and without ``seq``/``ts`` (the emit
    script prepends them)."""
    data = to_dict(event)
    del data["seq"], data["ts"]
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))[1:]


def decode_entry(fields: Mapping[bytes, bytes]) -> Event:
    """The event of one stream entry."""
    event = from_dict(json.loads(fields[b"e"]))
    if isinstance(event, SpeechAudio):
        event = dataclasses.replace(event, pcm=fields.get(b"pcm", b""))
    return event


def stream_items(reply: Any) -> Iterable[tuple[bytes, Sequence[tuple[bytes, Any]]]]:
    """XREAD's reply as (stream key, entries), for RESP2 (list) and RESP3 (dict)."""
    if not reply:
        return []
    if isinstance(reply, dict):
        return [(k, v[0] if v and isinstance(v[0], list) else v) for k, v in reply.items()]
    return [(k, v) for k, v in reply]
