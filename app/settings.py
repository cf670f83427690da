"""One immutable settings object, read from the environment only when asked."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from app.ice import IceServer, parse_ice_servers
from engine.stream import StreamLimits


def _parse_map(text: str) -> dict[str, str]:
    """``"en=tiny.en,*=base"`` -> ``{"en": "tiny.en", "*": "base"}``."""
    result: dict[str, str] = {}
    for item in text.split(","):
        if item.strip():
            key, _, value = item.partition("=")
            if not value:
                raise ValueError(f"expected LANG=MODEL, got {item!r}")
            result[key.strip()] = value.strip()
    return result


def _at_least_one(text: str) -> int:
    value = int(text)
    if value < 1:
        raise ValueError(f"expected a whole number of at least 1, got {text!r}")
    return value


class SettingsError(ValueError):
    """An environment variable holds a value the server cannot use; the message names it."""


@dataclass(frozen=True, slots=True)
class Settings:
    host: str = "127.0.0.1"
    port: int = 8000
    data_dir: Path = Path("var")
    cache_dir: Path | None = None
    asr_models: Mapping[str, str] = field(default_factory=lambda: {"en": "tiny.en", "*": "base"})
    """Recognition model per spoken language; ``*`` is every other language Whisper knows."""
    load_multilingual: bool = True
    ct2_models: Mapping[str, str] = field(default_factory=dict)
    """CTranslate2 text-translation models by pair (``{"en-de": path}``; ``{"*": path}`` for
    an NLLB or M2M100 model covering every pair it knows)."""
    apertium: bool = True
    whisper_translate: bool = True
    """Translate non-English speech into English with Whisper base (needs ``*`` loaded)."""
    speech_finals_full_window: bool = False
    """Whisper-translate finals decode in Whisper's full 30 s window (off: measured worse;
    engine/translation/stage.py, ``TranslationConfig``)."""
    speech_drafts: bool = True
    """Where Whisper-translate is a pair's only route (German into English), draft the open
    sentence from its audio as it is heard, while someone reads the language
    (engine/translation/stage.py); off, such a reader sees nothing until the sentence's
    final."""
    cpu_threads: int = 1
    """CTranslate2 threads a Whisper decode runs on. One is fastest on 2 cores: with two,
    tiny.en's beam-5 decoder steps took 14 ms a token instead of 3.7 (base: 22 instead of
    10). docs/metrics.md, "Whisper threads"."""
    asr_workers: int = 2
    """Whisper calls that may run at once, each decode on ``cpu_threads``: the ``asr`` worker
    pool's threads and CTranslate2's replicas of each model (faster-whisper's
    ``num_workers``). With one, two presenters' decodes queued behind each other while a core
    stood idle. docs/metrics.md, "Parallel decodes"."""
    encoder_threads: int = 2
    """Threads of Whisper's encoder, which does gain from two (30 s with tiny.en: 0.20 s
    instead of 0.36); more than ``cpu_threads`` loads a second copy of the model for it."""
    websocket_impl: str = "auto"
    """uvicorn's WebSocket implementation: auto, websockets, websockets-sansio or wsproto."""
    short_window: bool = True
    """Encode only the audio plus padding instead of Whisper's full 30 s window."""
    warm_models: bool = True
    refine: bool = True
    recognizer: Mapping[str, str] = field(default_factory=dict)
    """Overrides of engine.recognition.config.RecognizerConfig fields
    (``{"min_silence_s": "0.4"}``)."""
    speech: bool = True
    """Speak final captions to listeners who turn audio on."""
    voices: Mapping[str, str] = field(default_factory=dict)
    """Voices by language besides the defaults: a Piper ``.onnx`` path, ``kokoro:STYLE``
    (or ``kokoro``) or ``espeak:NAME`` (models/voices.py)."""
    pace: Mapping[str, str] = field(default_factory=dict)
    """Overrides of engine.speech.config.PaceConfig fields (``{"fallback_gap_s": "2"}``)."""
    natural_voices: bool = True
    """Speak the languages Kokoro knows with Kokoro (off: espeak-ng, as before it)."""
    tts_threads: int = 2
    """Threads of one Kokoro synthesis. Two: on one, Kokoro is slower than real time on this
    project's machine; its threads run under ``tts_idle`` (or at ``tts_nice``), so they use
    the cores recognition leaves idle and yield them when it needs them (docs/metrics.md,
    "Natural voices / Synthesis on idle cores")."""
    tts_nice: int = 10
    """How far below the rest of the process the ``tts`` thread runs (its nice value, added;
    0: the same priority as recognition)."""
    tts_idle: bool = True
    """Run the ``tts`` thread under Linux's ``SCHED_IDLE`` policy: only on cores that nothing
    else wants, yielding them at once (engine/workers.py; docs/metrics.md, "Natural voices /
    Synthesis on idle cores"). Off: ``tts_nice`` alone."""
    limits: StreamLimits = field(default_factory=StreamLimits)
    max_sessions: int = 200
    max_live_streams: int = 4
    max_listeners_per_session: int = 2000
    max_webrtc_listeners: int = 200
    """Listeners' WebRTC peer connections one process holds (each costs a UDP socket, DTLS
    and an Opus encoder); presenters' are bounded by ``max_live_streams`` instead, so
    listener offers cannot keep a presenter from starting."""
    session_create_per_minute: int = 30
    """Sessions one client address may create per minute (0: unlimited)."""
    passcode_guesses_per_minute: int = 10
    """Wrong passcodes of private sessions one client address may give per minute before
    every join from it is answered 429 (0: unlimited)."""
    listener_queue: int = 1000
    listener_send_timeout: float = 10.0
    retention_days: float = 30.0
    ended_grace_s: float = 300.0
    """An ended session leaves memory this long after it ended (its transcript stays in the
    store: a late listener or a download loads it again)."""
    push_hosts: tuple[str, ...] = ("upload.youtube.com", "www.youtube.com", "*.zoom.us")
    """Hosts a presenter may push captions to (``INTERP_PUSH_HOSTS``, comma-separated;
    ``*.`` covers subdomains): YouTube Live's caption ingestion and Zoom's caption API.
    Anything else is refused, so a presenter cannot make the server post to the inside of
    its network."""
    push_timeout_s: float = 10.0
    """How long one caption POST to YouTube or Zoom may take before it is retried."""
    redis_url: str | None = None
    """Share sessions with other processes and machines through this Redis (``REDIS_URL``,
    e.g. ``redis://127.0.0.1:6379/0``); unset: one process, SQLite and an in-process hub."""
    allowed_origins: tuple[str, ...] = ()
    """Extra origins allowed to open WebSockets; the server's own origin always is."""
    ice_servers: tuple[IceServer, ...] = ()
    """STUN/TURN servers for WebRTC peers (app/ice.py); none: host candidates only."""

    @property
    def database(self) -> Path:
        return self.data_dir / "sessions.sqlite3"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: object) -> Settings:
        """Settings from ``INTERP_*`` variables (and ``HOST``/``PORT``); ``overrides`` win."""
        env = os.environ if env is None else env
        values: dict[str, object] = {}
        for name, (field_name, parse) in ENVIRONMENT.items():
            if name in env:
                try:
                    values[field_name] = parse(env[name])
                except ValueError as error:
                    raise SettingsError(f"{name}={env[name]!r}: {error}") from error
        values.update(overrides)
        return cls(**values)  # type: ignore[arg-type]


FLAG_WORDS = {
    **dict.fromkeys(("1", "true", "yes", "on"), True),
    **dict.fromkeys(("0", "false", "no", "off"), False),
}


def parse_flag(text: str) -> bool:
    """An on/off setting: ``1``, ``true``, ``yes``, ``on`` or ``0``, ``false``, ``no``,
    ``off`` (any case); anything else is refused, so a typo never flips a switch silently."""
    try:
        return FLAG_WORDS[text.strip().lower()]
    except KeyError:
        raise ValueError(f"expected 1 or 0 (true/false, yes/no, on/off), got {text!r}") from None


def _origins(text: str) -> tuple[str, ...]:
    return tuple(o.strip() for o in text.split(",") if o.strip())


def _speed(text: str) -> StreamLimits:
    return StreamLimits(max_speed=float(text))


ENVIRONMENT: dict[str, tuple[str, Callable[[str], object]]] = {
    "HOST": ("host", str),
    "PORT": ("port", int),
    "INTERP_DATA_DIR": ("data_dir", Path),
    "INTERP_CACHE_DIR": ("cache_dir", Path),
    "INTERP_ASR_MODELS": ("asr_models", _parse_map),
    "INTERP_MULTILINGUAL": ("load_multilingual", parse_flag),
    "INTERP_CT2_MODELS": ("ct2_models", _parse_map),
    "INTERP_APERTIUM": ("apertium", parse_flag),
    "INTERP_WHISPER_TRANSLATE": ("whisper_translate", parse_flag),
    "INTERP_SPEECH_DRAFTS": ("speech_drafts", parse_flag),
    "INTERP_SPEECH_FINALS_FULL_WINDOW": ("speech_finals_full_window", parse_flag),
    "INTERP_WS": ("websocket_impl", str),
    "INTERP_SHORT_WINDOW": ("short_window", parse_flag),
    "INTERP_CPU_THREADS": ("cpu_threads", int),
    "INTERP_ENCODER_THREADS": ("encoder_threads", int),
    "INTERP_ASR_WORKERS": ("asr_workers", _at_least_one),
    "INTERP_REFINE": ("refine", parse_flag),
    "INTERP_RECOGNIZER": ("recognizer", _parse_map),
    "INTERP_SPEECH": ("speech", parse_flag),
    "INTERP_VOICES": ("voices", _parse_map),
    "INTERP_NATURAL_VOICES": ("natural_voices", parse_flag),
    "INTERP_PACE": ("pace", _parse_map),
    "INTERP_TTS_THREADS": ("tts_threads", int),
    "INTERP_TTS_NICE": ("tts_nice", int),
    "INTERP_TTS_IDLE": ("tts_idle", parse_flag),
    "INTERP_ALLOWED_ORIGINS": ("allowed_origins", _origins),
    "REDIS_URL": ("redis_url", str),
    "INTERP_MAX_LIVE_STREAMS": ("max_live_streams", int),
    "INTERP_MAX_LISTENERS": ("max_listeners_per_session", int),
    "INTERP_MAX_WEBRTC_LISTENERS": ("max_webrtc_listeners", int),
    "INTERP_SESSION_RATE": ("session_create_per_minute", int),
    "INTERP_PASSCODE_GUESSES": ("passcode_guesses_per_minute", int),
    "INTERP_RETENTION_DAYS": ("retention_days", float),
    "INTERP_ENDED_GRACE_S": ("ended_grace_s", float),
    "INTERP_MAX_AUDIO_SPEED": ("limits", _speed),
    "INTERP_ICE_SERVERS": ("ice_servers", parse_ice_servers),
    "INTERP_PUSH_HOSTS": ("push_hosts", _origins),
}
"""Every environment variable the server reads: variable -> (settings field, parser)."""
