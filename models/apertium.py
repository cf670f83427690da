"""Offline text translation with Apertium, streamed through persistent pipelines.

The ``apertium`` wrapper does not stream (in text mode it holds input until end of file), so
each translation direction runs its mode's tool chain directly, with null flush on every stage
(``apertium-wblank-mode -z``), started once and kept. A request is one line of text escaped
for Apertium's stream format followed by ``"\\n\\0"``; the answer is everything up to the NUL
the chain echoes back. That costs 3-8 ms per sentence on 2 cores (FLORES-200, median; p95
about 7-12 ms), against 250-450 ms for a new ``apertium`` process per sentence.

Which directions exist, through which modes and pivots, is models/apertium_modes.py; the
stream format and the shaping of the text are models/apertium_text.py. Each chain is
guarded by its own lock, restarted once if it dies, and bounded by a timeout so a hung
chain never blocks a worker thread forever.

Calls block: run them in the project's model executor, never on the event loop.
"""

from __future__ import annotations

import logging
import os
import selectors
import subprocess
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, Self

from models.apertium_modes import (
    DEFAULT_PIVOTS,
    MODES_DIR,
    ApertiumUnavailable,
    Mode,
    find_route,
    pipeline_stages,
)
from models.apertium_text import (
    drop_unknown_marks,
    escape,
    flatten,
    match_initial_case,
    pack_requests,
    restore_inverted_marks,
    tidy,
    unescape,
)

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S = 10.0


class ApertiumError(RuntimeError):
    """A pipeline failed while translating (died twice in a row, or was closed)."""


class ApertiumTimeout(ApertiumError):
    """A pipeline neither took input nor gave output for the timeout; it has been stopped."""


class _PipelineDied(Exception):
    """Internal: the chain hung up (EOF, broken pipe or a stage exited) during a request."""


class ModePipeline:
    """One mode's tool chain, started once and kept: one request at a time, under a lock.

    :meth:`process` restarts a chain that died (once per request) and stops one that hangs
    past ``timeout_s``; a stopped chain starts again on the next request."""

    def __init__(self, mode: Mode, *, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self.mode = mode
        self.timeout_s = timeout_s
        self._stages = pipeline_stages(mode)
        self._lock = threading.Lock()
        self._procs: list[subprocess.Popen[bytes]] = []
        self._selector: selectors.BaseSelector | None = None
        self._stderr: IO[bytes] | None = None
        self._closed = False
        self.starts = 0

    @property
    def pids(self) -> list[int]:
        """Process ids of the running stages, first to last (empty when stopped)."""
        return [proc.pid for proc in self._procs]

    def process(self, line: str) -> str:
        """Send one escaped request line; return the chain's raw stream output for it.

        Raises :class:`ApertiumTimeout` if the chain stalls, :class:`ApertiumError` if it dies
        again right after a restart or the pipeline is closed."""
        payload = (line + "\n\0").encode("utf-8")
        with self._lock:
            for attempt in (1, 2):
                if self._closed:
                    raise ApertiumError(f"Apertium pipeline {self.mode.name} is closed")
                if not self._healthy():
                    if self._procs:
                        log.warning("Apertium pipeline %s died; restarting", self.mode.name)
                    self._stop()
                    self._start()
                try:
                    return self._exchange(payload).decode("utf-8", errors="replace")
                except _PipelineDied as died:
                    detail = f"{died}; stderr: {self._stderr_tail() or '(empty)'}"
                    self._stop()
                    if attempt == 2:
                        raise ApertiumError(
                            f"Apertium pipeline {self.mode.name} died twice in a row: {detail}"
                        ) from None
                    log.warning(
                        "Apertium pipeline %s died (%s); restarting", self.mode.name, detail
                    )
        raise AssertionError("unreachable")

    def close(self) -> None:
        """Stop the chain (waiting for a request in flight); later requests raise."""
        with self._lock:
            self._closed = True
            self._stop()

    def _start(self) -> None:
        self._stderr = tempfile.TemporaryFile(prefix=f"apertium-{self.mode.name}-")
        procs: list[subprocess.Popen[bytes]] = []
        try:
            for index, argv in enumerate(self._stages):
                stdin = procs[-1].stdout if procs else subprocess.PIPE
                procs.append(
                    subprocess.Popen(
                        argv,
                        stdin=stdin,
                        stdout=subprocess.PIPE,
                        stderr=self._stderr,
                        bufsize=0,
                        # All stages in one new process group, away from the terminal's Ctrl+C.
                        process_group=procs[0].pid if procs else 0,
                    )
                )
                if index > 0 and procs[-2].stdout is not None:
                    # Only the next stage holds this pipe now, so a dead reader means SIGPIPE.
                    procs[-2].stdout.close()
        except OSError as exc:
            self._procs = procs
            self._stop()
            raise ApertiumUnavailable(
                f"cannot start Apertium mode {self.mode.name}: {exc}"
            ) from exc
        self._procs = procs
        first_in, last_out = procs[0].stdin, procs[-1].stdout
        assert first_in is not None and last_out is not None
        os.set_blocking(first_in.fileno(), False)
        self._selector = selectors.DefaultSelector()
        self._selector.register(last_out, selectors.EVENT_READ)
        self.starts += 1

    def _healthy(self) -> bool:
        if not self._procs or any(proc.poll() is not None for proc in self._procs):
            return False
        assert self._selector is not None
        # An idle chain owes no output: anything readable now is an EOF or stale bytes.
        return not self._selector.select(timeout=0)

    def _exchange(self, payload: bytes) -> bytes:
        assert self._selector is not None
        first_in, last_out = self._procs[0].stdin, self._procs[-1].stdout
        assert first_in is not None and last_out is not None
        pending = memoryview(payload)
        self._selector.register(first_in, selectors.EVENT_WRITE)
        received = bytearray()
        try:
            while True:
                events = self._selector.select(timeout=self.timeout_s)
                if not events:
                    self._stop()
                    raise ApertiumTimeout(
                        f"Apertium pipeline {self.mode.name} gave no output for "
                        f"{self.timeout_s:g} s; stopped it"
                    )
                for key, _ in events:
                    if key.fileobj is first_in:
                        try:
                            sent = os.write(first_in.fileno(), pending)
                        except BrokenPipeError:
                            raise _PipelineDied("broken pipe while writing") from None
                        pending = pending[sent:]
                        if not pending:
                            self._selector.unregister(first_in)
                    else:
                        chunk = os.read(last_out.fileno(), 1 << 16)
                        if not chunk:
                            raise _PipelineDied("end of output")
                        received += chunk
                        end = received.find(b"\0")
                        if end >= 0:
                            self._check_answer(received, end)
                            return bytes(received[:end])
        finally:
            if self._selector is not None and first_in in self._selector.get_map():
                self._selector.unregister(first_in)

    def _check_answer(self, received: bytearray, end: int) -> None:
        # A stage that dies makes every later stage flush and exit, each writing a NUL: such a
        # NUL is no answer. The dead stage has exited before the flush reaches us.
        if end + 1 < len(received) or any(proc.poll() is not None for proc in self._procs):
            raise _PipelineDied("a stage exited during the request")

    def _stderr_tail(self, limit: int = 500) -> str:
        if self._stderr is None:
            return ""
        self._stderr.seek(0, os.SEEK_END)
        size = self._stderr.tell()
        self._stderr.seek(max(0, size - limit))
        return self._stderr.read().decode("utf-8", errors="replace").strip()

    def _stop(self) -> None:
        procs, self._procs = self._procs, []
        if self._selector is not None:
            self._selector.close()
            self._selector = None
        if procs and procs[0].stdin is not None:
            procs[0].stdin.close()  # a live chain drains and exits on end of input
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
        for proc in procs:
            proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None


class ApertiumTranslator:
    """Translates text from ``source`` to ``target`` through persistent Apertium pipelines.

    Thread-safe: each pipeline has its own lock, so two threads can be in the two halves of a
    pivot route at once. :meth:`translate` blocks; call it from a worker thread."""

    def __init__(
        self,
        source: str,
        target: str,
        *,
        modes_dir: Path = MODES_DIR,
        pivots: Sequence[str] = DEFAULT_PIVOTS,
        timeout_s: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        self.route = find_route(source, target, modes_dir, pivots)
        self.source = self.route.source
        self.target = self.route.target
        self.pipelines = tuple(ModePipeline(mode, timeout_s=timeout_s) for mode in self.route.modes)

    def translate(self, text: str) -> str:
        """``text`` translated, as one line (newlines and runs of spaces collapse).

        Long text goes in requests of whole sentences up to ``MAX_REQUEST_CHARS``. Returns ``""``
        for text without words. Raises :class:`ApertiumTimeout` or :class:`ApertiumError` when
        a pipeline fails (after one restart)."""
        flat = flatten(text)
        return " ".join(
            out for request in pack_requests(flat) if (out := self._translate_request(request))
        )

    def warm_up(self) -> float:
        """Start every pipeline and push one sentence through it (the first sentence through a
        new chain costs 250-450 ms); returns the seconds it took."""
        began = time.perf_counter()
        self.translate("This is a short sentence to warm up the translator.")
        return time.perf_counter() - began

    def close(self) -> None:
        """Stop every pipeline; later calls to :meth:`translate` raise :class:`ApertiumError`."""
        for pipeline in self.pipelines:
            pipeline.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _translate_request(self, request: str) -> str:
        text = request
        for pipeline in self.pipelines:
            line = escape(text)
            if not line:
                return ""
            raw = unescape(pipeline.process(line))
            text = tidy(drop_unknown_marks(raw, text), pipeline.mode.target)
        if self.target == "es":
            text = restore_inverted_marks(text)
        return match_initial_case(text, request)


class ApertiumBackend:
    """:class:`ApertiumTranslator` as an :class:`engine.translation.backends.Translator`
    (context unused: Apertium is rule-based and sentence by sentence)."""

    passes_placeholders = True

    def __init__(self, translator: ApertiumTranslator) -> None:
        self._translator = translator
        self.name = "apertium:" + "+".join(translator.route.mode_names)

    @classmethod
    def open(cls, source: str, target: str) -> ApertiumBackend:
        """Start (lazily) the pipelines for ``source -> target``; raises
        :class:`ApertiumUnavailable` if no installed route connects them."""
        return cls(ApertiumTranslator(source, target))

    def translate(self, text: str, context: str | None = None) -> str:
        return self._translator.translate(text)

    def warm_up(self) -> float:
        return self._translator.warm_up()

    def close(self) -> None:
        self._translator.close()
