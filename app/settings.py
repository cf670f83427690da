"""One immutable settings object, read from the environment only when asked."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from engine.session import StreamLimits


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
    cpu_threads: int = 2
    websocket_impl: str = "auto"
    """uvicorn's WebSocket implementation: auto, websockets, websockets-sansio or wsproto."""
    short_window: bool = True
    """Encode only the audio plus padding instead of Whisper's full 30 s window."""
    warm_models: bool = True
    refine: bool = True
    recognizer: Mapping[str, str] = field(default_factory=dict)
    """Overrides of engine.recognizer.RecognizerConfig fields (``{"min_silence_s": "0.4"}``)."""
    limits: StreamLimits = field(default_factory=StreamLimits)
    max_sessions: int = 200
    max_live_streams: int = 4
    max_listeners_per_session: int = 2000
    session_create_per_minute: int = 30
    """Sessions one client address may create per minute (0: unlimited)."""
    listener_queue: int = 1000
    listener_send_timeout: float = 10.0
    retention_days: float = 30.0
    allowed_origins: tuple[str, ...] = ()
    """Extra origins allowed to open WebSockets; the server's own origin always is."""

    @property
    def database(self) -> Path:
        return self.data_dir / "sessions.sqlite3"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: object) -> Settings:
        env = os.environ if env is None else env
        values: dict[str, object] = {}
        if "HOST" in env:
            values["host"] = env["HOST"]
        if "PORT" in env:
            values["port"] = int(env["PORT"])
        if "INTERP_DATA_DIR" in env:
            values["data_dir"] = Path(env["INTERP_DATA_DIR"])
        if "INTERP_CACHE_DIR" in env:
            values["cache_dir"] = Path(env["INTERP_CACHE_DIR"])
        if "INTERP_ASR_MODELS" in env:
            values["asr_models"] = _parse_map(env["INTERP_ASR_MODELS"])
        if "INTERP_MULTILINGUAL" in env:
            values["load_multilingual"] = env["INTERP_MULTILINGUAL"] not in ("0", "false", "no")
        if "INTERP_CT2_MODELS" in env:
            values["ct2_models"] = _parse_map(env["INTERP_CT2_MODELS"])
        if "INTERP_APERTIUM" in env:
            values["apertium"] = env["INTERP_APERTIUM"] not in ("0", "false", "no")
        if "INTERP_WHISPER_TRANSLATE" in env:
            values["whisper_translate"] = env["INTERP_WHISPER_TRANSLATE"] not in (
                "0",
                "false",
                "no",
            )
        if "INTERP_WS" in env:
            values["websocket_impl"] = env["INTERP_WS"]
        if "INTERP_SHORT_WINDOW" in env:
            values["short_window"] = env["INTERP_SHORT_WINDOW"] not in ("0", "false", "no")
        if "INTERP_CPU_THREADS" in env:
            values["cpu_threads"] = int(env["INTERP_CPU_THREADS"])
        if "INTERP_REFINE" in env:
            values["refine"] = env["INTERP_REFINE"] not in ("0", "false", "no")
        if "INTERP_RECOGNIZER" in env:
            values["recognizer"] = _parse_map(env["INTERP_RECOGNIZER"])
        if "INTERP_ALLOWED_ORIGINS" in env:
            values["allowed_origins"] = tuple(
                o.strip() for o in env["INTERP_ALLOWED_ORIGINS"].split(",") if o.strip()
            )
        if "INTERP_MAX_LIVE_STREAMS" in env:
            values["max_live_streams"] = int(env["INTERP_MAX_LIVE_STREAMS"])
        if "INTERP_MAX_LISTENERS" in env:
            values["max_listeners_per_session"] = int(env["INTERP_MAX_LISTENERS"])
        if "INTERP_SESSION_RATE" in env:
            values["session_create_per_minute"] = int(env["INTERP_SESSION_RATE"])
        if "INTERP_RETENTION_DAYS" in env:
            values["retention_days"] = float(env["INTERP_RETENTION_DAYS"])
        if "INTERP_MAX_AUDIO_SPEED" in env:
            values["limits"] = StreamLimits(max_speed=float(env["INTERP_MAX_AUDIO_SPEED"]))
        values.update(overrides)
        return cls(**values)  # type: ignore[arg-type]
