"""WhisperLiveKit's server, started offline from its own virtual environment (``.venv-peer``).

It is installed apart from the project's ``.venv`` so that its dependencies (torch among them)
cannot change ours: ``python3 -m venv .venv-peer``, ``.venv-peer/bin/pip install torch==2.13.0``,
then ``whisperlivekit`` without its dependencies plus those it needs for the faster-whisper
backend (docs/metrics.md, "Peer comparison", lists the exact commands).
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import wave
from dataclasses import dataclass
from pathlib import Path

import httpx

from bench.recordings import Recording
from bench.server import READY_POLL_INTERVAL_S, REPO_ROOT, ServerError, ServerHandle, ServerProcess

PEER_VENV = REPO_ROOT / ".venv-peer"
WARMUP_SECONDS = 5.0

OFFLINE_ENV = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "PYTHONPATH": "",
    "PYTHONNOUSERSITE": "1",
    "OMP_NUM_THREADS": "2",
}
"""No hub look-ups, none of our packages on its path, and the two CPU threads our server's
recogniser uses too."""


@dataclass(frozen=True, slots=True)
class PeerSettings:
    """How WhisperLiveKit is started: the same CTranslate2 model directory as ours, English,
    faster-whisper with the LocalAgreement policy, raw PCM over the socket, and a local warm-up
    file (without one it downloads a sample). Everything else is its default, VAC (its Silero
    voice-activity controller, shipped inside the package) included."""

    model_dir: Path
    warmup_wav: Path
    venv: Path = PEER_VENV
    language: str = "en"
    backend: str = "faster-whisper"
    policy: str = "localagreement"
    log_level: str = "INFO"

    @property
    def executable(self) -> Path:
        return self.venv / "bin" / "whisperlivekit-server"

    def arguments(self) -> list[str]:
        """Command-line options after ``--host`` and ``--port``."""
        return [
            "--model_dir",
            str(self.model_dir),
            "--backend",
            self.backend,
            "--backend-policy",
            self.policy,
            "--lan",
            self.language,
            "--pcm-input",
            "--warmup-file",
            str(self.warmup_wav),
            "--log-level",
            self.log_level,
        ]


def peer_installed(venv: Path = PEER_VENV) -> bool:
    """Whether WhisperLiveKit's server script exists in ``venv``."""
    return (venv / "bin" / "whisperlivekit-server").is_file()


PEER_PACKAGES = ("whisperlivekit", "faster-whisper", "ctranslate2", "torch", "onnxruntime")


def peer_versions(venv: Path = PEER_VENV) -> dict[str, str | None]:
    """Installed versions of WhisperLiveKit and the packages that decide its speed, read from
    ``venv``'s site-packages (``None`` for one that is not there)."""
    paths = [str(p) for p in sorted((venv / "lib").glob("python*/site-packages"))]
    found = {
        (dist.metadata["Name"] or "").lower(): dist.version
        for dist in importlib.metadata.distributions(path=paths)
    }
    return {name: found.get(name) for name in PEER_PACKAGES}


def write_warmup_wav(recording: Recording, path: Path, seconds: float = WARMUP_SECONDS) -> Path:
    """Write the first ``seconds`` of ``recording`` as a WAV file (WhisperLiveKit's warm-up
    decodes it once at start-up; sessions start from a clean state)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    samples = min(recording.samples, round(seconds * recording.sample_rate))
    with wave.open(str(path), "wb") as writer:
        writer.setnchannels(1)
        writer.setsampwidth(2)
        writer.setframerate(recording.sample_rate)
        writer.writeframes(recording.pcm[: 2 * samples])
    return path


async def wait_healthy(base_url: str, process: asyncio.subprocess.Process) -> None:
    """Return once ``GET /health`` reports ``ready`` (the caller bounds the wait). The server
    is another process with no readiness push, so this polls, like ``bench.server``."""
    async with httpx.AsyncClient(base_url=base_url, timeout=5.0) as client:
        while True:
            if process.returncode is not None:
                raise ServerError(f"WhisperLiveKit exited with status {process.returncode}")
            try:
                response = await client.get("/health")
                if response.status_code == 200 and response.json().get("ready"):
                    return
            except httpx.TransportError:
                pass  # not listening yet
            await asyncio.sleep(READY_POLL_INTERVAL_S)


class PeerServer(ServerProcess):
    """``whisperlivekit-server`` on a free loopback port, logging to ``log_path``; stopped like
    our server (SIGINT, then kill after a grace period)."""

    def __init__(self, log_path: Path, settings: PeerSettings) -> None:
        super().__init__(log_path, python=str(settings.venv / "bin" / "python"), env=OFFLINE_ENV)
        self.settings = settings

    @property
    def command(self) -> list[str]:
        host = ["--host", "127.0.0.1", "--port", str(self.port)]
        return [str(self.settings.executable), *host, *self.settings.arguments()]

    async def start(self, ready_timeout: float) -> ServerHandle:
        """Start WhisperLiveKit and wait until ``/health`` says ready."""
        if not self.settings.executable.is_file():
            raise ServerError(
                f"WhisperLiveKit is not installed: no {self.settings.executable} "
                "(see docs/metrics.md, 'Peer comparison')"
            )
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("wb") as log:
            self._process = await asyncio.create_subprocess_exec(
                *self.command,
                cwd=REPO_ROOT,
                env=self._env,
                stdout=log,
                stderr=asyncio.subprocess.STDOUT,
            )
        process = self._process
        try:
            async with asyncio.timeout(ready_timeout):
                await wait_healthy(self.base_url, process)
        except (ServerError, TimeoutError) as error:
            await self.stop()
            reason = str(error) or f"/health not ready after {ready_timeout:.0f} s"
            raise ServerError(f"{reason}; see {self.log_path}:\n{self.log_tail()}") from error
        return ServerHandle(self.base_url, process.pid)
