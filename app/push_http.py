"""The HTTP port of captions pushed out (engine/delivery/push.py): one httpx client for the
process, closed at shutdown. It follows no redirects (a caption URL that moves is an error to
show, not a place to send the stream's captions blindly)."""

from __future__ import annotations

import httpx

from engine.delivery.push import PostFailed
from engine.delivery.push_formats import PushRequest


class HttpPoster:
    """:class:`engine.delivery.push.Poster` over httpx; the caller bounds each wait."""

    def __init__(self, transport: httpx.AsyncBaseTransport | None = None) -> None:
        self._client = httpx.AsyncClient(
            transport=transport,
            follow_redirects=False,
            timeout=httpx.Timeout(None),  # the pusher cancels a post past its timeout
            headers={"User-Agent": "live-interp captions"},
        )

    async def post(self, request: PushRequest) -> int:
        try:
            response = await self._client.post(
                request.url, content=request.body, headers={"Content-Type": request.content_type}
            )
        except httpx.HTTPError as exc:
            raise PostFailed(f"{type(exc).__name__}: {exc}") from exc
        return response.status_code

    async def aclose(self) -> None:
        await self._client.aclose()
