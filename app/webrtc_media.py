"""Audio in and out of aiortc tracks: the presenter's track to 16 kHz PCM, and a listener's
spoken translation as a track paced against the clock.

Incoming: aiortc decodes Opus to 48 kHz stereo ``s16`` frames of 20 ms; each is resampled with
``av.AudioResampler`` to 16 kHz mono ``s16`` (what :class:`engine.session.PresenterStream`
takes) and handed on in 100 ms pieces, the size the WebSocket path's browsers send.

Outgoing: :class:`SpeechTrack` plays :class:`engine.events.SpeechAudio` chunks of one language
as 20 ms frames of 48 kHz mono, one frame per 20 ms of wall clock (the way aiortc's own
``AudioStreamTrack`` paces), with silence whenever no sentence is waiting.
"""

from __future__ import annotations

import asyncio
import contextlib
import fractions
import logging
import time
from collections.abc import Awaitable, Callable

import av
import numpy as np
from aiortc.mediastreams import MediaStreamError, MediaStreamTrack

from engine.delivery.hub import ListenerTooSlow, Subscription, SubscriptionClosed
from engine.events import SpeechAudio, StateChange

log = logging.getLogger(__name__)

INGEST_RATE = 16000
FEED_BYTES = INGEST_RATE * 2 // 10
"""100 ms of 16 kHz s16: the size of each piece handed to the presenter stream."""

OUT_RATE = 48000
FRAME_SECONDS = 0.02
FRAME_SAMPLES = int(OUT_RATE * FRAME_SECONDS)
MAX_QUEUED_SECONDS = 30.0
"""Speech waiting to be played beyond this is dropped from the front (the speech stage keeps
each language within its own bound of the speaker, so this only guards memory)."""


def frame_to_pcm(resampler: av.AudioResampler, frame: av.AudioFrame | None) -> bytes:
    """Resample one decoded frame (``None`` flushes) to the resampler's format as bytes."""
    return b"".join(out.to_ndarray().tobytes() for out in resampler.resample(frame))


def ingest_resampler() -> av.AudioResampler:
    return av.AudioResampler(format="s16", layout="mono", rate=INGEST_RATE)


async def read_presenter_track(
    track: MediaStreamTrack,
    feed: Callable[[bytes], None],
    on_first_frame: Callable[[], Awaitable[None]] | None = None,
) -> None:
    """Read ``track`` until it ends (``MediaStreamError``), feeding 16 kHz mono s16 PCM to
    ``feed`` in 100 ms pieces; the remainder goes out when the track ends."""
    resampler = ingest_resampler()
    pending = bytearray()
    first = True
    try:
        while True:
            frame = await track.recv()
            if first and on_first_frame is not None:
                first = False
                await on_first_frame()
            pending += frame_to_pcm(resampler, frame)  # type: ignore[arg-type]
            while len(pending) >= FEED_BYTES:
                feed(bytes(pending[:FEED_BYTES]))
                del pending[:FEED_BYTES]
    except MediaStreamError:
        pass
    pending += frame_to_pcm(resampler, None)
    if len(pending) >= 2:
        feed(bytes(pending[: len(pending) // 2 * 2]))


async def drain_track(track: MediaStreamTrack) -> None:
    """Read and discard a track nobody uses, so its decoded frames do not pile up."""
    with contextlib.suppress(MediaStreamError):
        while True:
            await track.recv()


def pcm_to_frame(pcm: bytes, rate: int) -> av.AudioFrame:
    """s16le mono ``pcm`` at ``rate`` as an ``av.AudioFrame``."""
    samples = np.frombuffer(pcm, dtype="<i2").reshape(1, -1)
    frame = av.AudioFrame.from_ndarray(samples, format="s16", layout="mono")
    frame.sample_rate = rate
    return frame


class SpeechTrack(MediaStreamTrack):
    """One listener's spoken translation in ``lang``, fed from its hub subscription.

    :meth:`start` begins reading the subscription; ``on_end`` is called once when the
    session ends or the subscription closes (the peer connection is then closed by its owner).
    """

    kind = "audio"

    def __init__(
        self,
        subscription: Subscription,
        lang: str,
        on_end: Callable[[], None] | None = None,
    ) -> None:
        super().__init__()
        self.subscription = subscription
        self.lang = lang
        self.on_end = on_end
        """Called once when the session ends or the subscription closes."""
        self._queued = bytearray()
        self._resamplers: dict[int, av.AudioResampler] = {}
        self._reader: asyncio.Task[None] | None = None
        self._start: float | None = None
        self._timestamp = 0
        self.sentences = 0
        """SpeechAudio chunks received in this track's language."""
        self.dropped_seconds = 0.0

    def start(self) -> None:
        self._reader = asyncio.create_task(self._read(), name=f"speech-{self.lang}")

    def add(self, event: SpeechAudio) -> None:
        """Queue one chunk of speech (resampled to 48 kHz) behind what is waiting."""
        resampler = self._resamplers.get(event.sample_rate)
        if resampler is None:
            resampler = av.AudioResampler(format="s16", layout="mono", rate=OUT_RATE)
            self._resamplers[event.sample_rate] = resampler
        if event.pcm:
            self._queued += frame_to_pcm(resampler, pcm_to_frame(event.pcm, event.sample_rate))
        if event.last:  # end of the sentence: let the resampler give back its tail
            self._queued += frame_to_pcm(resampler, None)
            del self._resamplers[event.sample_rate]
        self.sentences += 1
        excess = len(self._queued) - int(MAX_QUEUED_SECONDS * OUT_RATE) * 2
        if excess > 0:
            del self._queued[:excess]
            self.dropped_seconds += excess / 2 / OUT_RATE

    async def _read(self) -> None:
        try:
            while True:
                event = await self.subscription.get()
                if isinstance(event, SpeechAudio) and event.lang == self.lang:
                    self.add(event)
                elif isinstance(event, StateChange) and event.state == "ended":
                    break
        except (SubscriptionClosed, ListenerTooSlow):
            pass
        if self.on_end is not None:
            self.on_end()

    async def recv(self) -> av.AudioFrame:
        """The next 20 ms: queued speech, or silence; returned on the 20 ms wall-clock grid."""
        if self.readyState != "live":
            raise MediaStreamError
        if self._start is None:
            self._start = time.monotonic()
        else:
            self._timestamp += FRAME_SAMPLES
            wait = self._start + self._timestamp / OUT_RATE - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
        size = FRAME_SAMPLES * 2
        chunk = bytes(self._queued[:size])
        del self._queued[:size]
        if len(chunk) < size:
            chunk += bytes(size - len(chunk))
        frame = pcm_to_frame(chunk, OUT_RATE)
        frame.pts = self._timestamp
        frame.time_base = fractions.Fraction(1, OUT_RATE)
        return frame

    def stop(self) -> None:
        super().stop()
        if self._reader is not None:
            self._reader.cancel()
