"""What a caption looks like when it is posted to YouTube Live or to Zoom.

Both services take closed captions as a sequence of HTTP POSTs to a URL they hand out (the
presenter pastes it into the console). Their documented formats:

- **YouTube Live**, "Closed Captions over HTTP for YouTube Live Streams"
  (https://support.google.com/youtube/answer/6077032, "Live Caption Vendor info"): the body
  is a time line then the text, ``<UTC time>\\n<TEXT>\\n``, the time as in the page's
  example (``2012-12-24T00:00:06.873``, UTC, milliseconds); a line break inside the text is
  written ``<br>``. Every POST adds ``&seq=N`` to the URL YouTube gave: a counter that
  increases by one for each POST of new caption data and is not increased for retries.
- **Zoom**, "Closed Captioning with REST API" / "Integrating a third-party closed captioning
  service" (https://support.zoom.us/hc/en-us/articles/115002212983): the caption URL (the
  "API token" the host copies in the meeting) gets ``&seq=N`` (same rule as YouTube) and
  ``&lang=en-US`` (language code and ISO country code, the page's examples: de-DE, en-US,
  jp-JP, es-ES, fr-FR, zh-CN); the content type is ``text/plain``, UTF-8, not form-encoded;
  the body is the caption text. Zoom recommends retrying every failure (405, 400, 403, 408,
  5xx) and putting a timeout on every request.

Both are sent as ``text/plain; charset=utf-8``. This module only builds requests; sending,
retries and the queue are :mod:`engine.delivery.push`'s.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Literal, get_args
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

Service = Literal["youtube", "zoom"]
SERVICES: tuple[Service, ...] = get_args(Service)
CONTENT_TYPE = "text/plain; charset=utf-8"

ZOOM_LANGUAGES = {
    "de": "de-DE",
    "en": "en-US",
    "es": "es-ES",
    "fr": "fr-FR",
    "it": "it-IT",
    "ja": "jp-JP",  # Zoom's own example writes Japanese as jp-JP
    "ko": "ko-KR",
    "nl": "nl-NL",
    "pt": "pt-PT",
    "ru": "ru-RU",
    "uk": "uk-UA",
    "zh": "zh-CN",
}
"""Zoom's ``lang`` for a caption language: the documented examples first, then each
language with its main country; any other language code is sent as it is."""


@dataclass(frozen=True, slots=True)
class PushRequest:
    """One POST: where, what, and as which content type."""

    url: str
    body: bytes
    content_type: str = CONTENT_TYPE


def with_params(url: str, **params: str) -> str:
    """``url`` with ``params`` set in its query (replacing any of the same name)."""
    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k not in params]
    query.extend(params.items())
    return urlunsplit(parts._replace(query=urlencode(query)))


def youtube_time(at: float) -> str:
    """``at`` (unix seconds) as YouTube's time line: ``YYYY-MM-DDTHH:MM:SS.mmm``, UTC."""
    moment = dt.datetime.fromtimestamp(at, tz=dt.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}"


def youtube_request(url: str, text: str, at: float, seq: int) -> PushRequest:
    """A caption for YouTube Live: the time line, then the text (line breaks as ``<br>``)."""
    body = f"{youtube_time(at)}\n{'<br>'.join(_lines(text))}\n"
    return PushRequest(with_params(url, seq=str(seq)), body.encode("utf-8"))


def zoom_request(url: str, text: str, lang: str, seq: int) -> PushRequest:
    """A caption for Zoom: the text alone, ``seq`` and ``lang`` in the URL."""
    body = "\n".join(_lines(text))
    language = ZOOM_LANGUAGES.get(lang, lang)
    return PushRequest(with_params(url, seq=str(seq), lang=language), body.encode("utf-8"))


def request_for(
    service: Service, url: str, text: str, lang: str, at: float, seq: int
) -> PushRequest:
    """The POST of one caption to ``service``."""
    if service == "youtube":
        return youtube_request(url, text, at, seq)
    return zoom_request(url, text, lang, seq)


def _lines(text: str) -> list[str]:
    return [" ".join(line.split()) for line in text.splitlines() if line.strip()] or [""]
