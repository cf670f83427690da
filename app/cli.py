"""``interp``: the command line (``interp serve``, ``interp prepare``)."""

from __future__ import annotations

import argparse
import logging
import sys

from app.settings import Settings, SettingsError
from engine.telemetry import session_code


class SessionFilter(logging.Filter):
    """Stamps every log record with the session it belongs to (``-`` for none)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.session = session_code.get()
        return True


def _prepare(settings: Settings) -> None:
    """Resolve and checksum every configured model (joins Whisper base's and Kokoro's parts
    once)."""
    from models.catalog import BUNDLED, resolve_whisper, silero_vad_path

    print(f"vad: {silero_vad_path()}")
    for language, spec in settings.asr_models.items():
        if spec in BUNDLED or "/" in spec:
            resolved = resolve_whisper(spec, settings.cache_dir)
            print(f"asr {language}: {resolved.label} at {resolved.model}")
    if settings.speech:
        from models.kokoro import kokoro_files
        from models.voices import verify_voice, voice_plan

        plan = voice_plan(settings.voices, natural=settings.natural_voices)
        for language, voice in sorted(plan.items()):
            if voice.backend == "piper":
                verify_voice(voice)
                print(f"voice {language}: {voice.name} at {voice.model}")
        kokoro = sorted(lang for lang, voice in plan.items() if voice.backend == "kokoro")
        if kokoro:
            files = kokoro_files(settings.cache_dir)
            print(f"voice {', '.join(kokoro)}: Kokoro at {files.model}")


def _serve(args: argparse.Namespace) -> int:
    """Check the settings, then serve until interrupted."""
    overrides: dict[str, object] = {}
    if args.host:
        overrides["host"] = args.host
    if args.port:
        overrides["port"] = args.port
    settings = Settings.from_env(None, **overrides)

    from app.main import create_app

    app = create_app(settings)  # refuses bad settings before anything starts

    import uvicorn

    handler = logging.StreamHandler()
    handler.addFilter(SessionFilter())
    handler.setFormatter(
        logging.Formatter("%(asctime)s %(levelname)s %(name)s session=%(session)s: %(message)s")
    )
    logging.basicConfig(level=args.log_level.upper(), handlers=[handler])
    uvicorn.run(
        app,
        host=settings.host,
        port=settings.port,
        log_level=args.log_level,
        ws_max_size=settings.limits.max_message_bytes + 1024,
        # Compressing each caption once per listener cost more CPU than it saved bytes.
        ws_per_message_deflate=False,
        ws=settings.websocket_impl,  # type: ignore[arg-type]
        timeout_graceful_shutdown=30,
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="interp", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run the web server")
    serve.add_argument("--host")
    serve.add_argument("--port", type=int)
    serve.add_argument("--log-level", default="info")
    sub.add_parser("prepare", help="verify and prepare the offline models")
    args = parser.parse_args(argv)
    try:
        if args.command == "prepare":
            _prepare(Settings.from_env())
            return 0
        return _serve(args)
    except SettingsError as error:
        print(f"interp: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
