"""Each presenter stream's recogniser, made from the session's recognition port.

A stream in a named language gets a :class:`StreamingRecognizer` for it; a stream in
``"auto"`` a :class:`DetectingRecognizer`, which makes the streaming recogniser of whichever
offered language it detects from the first speech. Either goes on from the session's audio
time, numbers its segments in the session's sequence and is prompted with the speaker's
recent text in its language (engine/continuity.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np

from engine.continuity import Continuity
from engine.recognition.language_id import DetectingRecognizer
from engine.recognition.recognizer import StreamingRecognizer
from engine.recognition.resources import Recognition
from engine.recognition.vad import StreamingVad
from engine.refusals import Refusal, Refused

AUTO = "auto"
"""The presenter's ``language`` that asks for detection among the session's languages."""


class StreamRecognizers:
    """Makes the recogniser of each stream of one session."""

    def __init__(
        self,
        recognition: Recognition,
        continuity: Continuity,
        offered: Sequence[str],
        *,
        keep_final_audio: bool,
        hint: Callable[[], str],
    ) -> None:
        """``offered``: the session's languages (what ``"auto"`` detects among).
        ``keep_final_audio``: finals keep their audio (the session translates, and its
        translator may ask for it). ``hint``: the session's term list as recognition hint
        text at the moment a recogniser is made (engine/terms.py)."""
        self._recognition = recognition
        self._continuity = continuity
        self._offered = list(offered)
        self._keep_final_audio = keep_final_audio
        self._hint = hint

    def open(
        self, speaker_id: str, language: str, fast_finals: bool = False
    ) -> StreamingRecognizer | DetectingRecognizer:
        """The recogniser of a new stream of ``speaker_id`` in ``language`` or ``"auto"``;
        raises :class:`Refused` where no model can recognise it."""
        if language == AUTO:
            return self._detecting_recognizer(speaker_id, fast_finals)
        return self._recognizer(speaker_id, language, self._continuity.audio_time, fast_finals)

    def _recognizer(
        self, speaker_id: str, language: str, start_time: float, fast_finals: bool = False
    ) -> StreamingRecognizer:
        recognition = self._recognition
        transcriber = recognition.transcriber_for(language)
        if transcriber is None:
            raise Refused(Refusal.NO_MODEL, f"no recognition model for language {language!r}")
        config = recognition.config(language)
        if self._keep_final_audio:
            config = replace(config, keep_final_audio=True)
        if fast_finals:
            config = replace(config, refine_full_window=False)
        return StreamingRecognizer(
            transcriber,
            StreamingVad(recognition.vad),
            recognition.pool.run,
            self._continuity.next_segment,
            config,
            start_time=start_time,
            context=self._continuity.context(speaker_id, language),
            terms=self._hint(),
            run_first=recognition.pool.run_first,
            crowded=recognition.pool.crowded,
        )

    def _detecting_recognizer(
        self, speaker_id: str, fast_finals: bool = False
    ) -> DetectingRecognizer:
        recognition = self._recognition
        candidates = [c for c in self._offered if recognition.can_recognise(c)]
        identifier = recognition.identifier
        if len(candidates) < 2 or identifier is None:
            raise Refused(
                Refusal.NO_MODEL,
                "automatic language detection needs a session offering two or more "
                "languages and the multilingual recognition model",
            )
        vad = StreamingVad(recognition.vad)
        pool = recognition.pool

        async def identify(audio: np.ndarray, among: Sequence[str]) -> dict[str, float]:
            return await pool.run(identifier.identify, audio, among)

        async def score(audio: np.ndarray) -> np.ndarray:
            return await pool.run_first(vad.process, audio)

        make: Callable[[str, float], StreamingRecognizer] = lambda language, start: (  # noqa: E731
            self._recognizer(speaker_id, language, start, fast_finals)
        )
        return DetectingRecognizer(
            candidates, identify, make, score, start_time=self._continuity.audio_time
        )
