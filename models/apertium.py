"""Offline text translation with Apertium, streamed through persistent pipelines.

The ``apertium`` wrapper does not stream (in text mode it holds input until end of file), so
each translation direction runs its mode's tool chain directly, with null flush on every stage
(``apertium-wblank-mode -z``), started once and kept. A request is one line of text escaped
for Apertium's stream format followed by ``"\\n\\0"``; the answer is everything up to the NUL
the chain echoes back. That costs 3-8 ms per sentence on 2 cores (FLORES-200, median; p95
about 7-12 ms), against 250-450 ms for a new ``apertium`` process per sentence.

Directions without a direct pair are chained through a pivot language (Spanish by default:
``en -> fr`` is ``eng-spa`` then ``es-fr``). Each chain is guarded by its own lock, restarted
once if it dies, and bounded by a timeout so a hung chain never blocks a worker thread forever.

Calls block: run them in the project's model executor, never on the event loop.
"""

from __future__ import annotations

import logging
import os
import re
import selectors
import shlex
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO, Self

from engine import languages
from models.catalog import ModelError

log = logging.getLogger(__name__)

MODES_DIR = Path("/usr/share/apertium/modes")
DEFAULT_PIVOTS: tuple[str, ...] = ("es",)
DEFAULT_TIMEOUT_S = 10.0
# Longest text sent in one request; longer sentences are cut at a space. Keeps every request's
# memory and time bounded (Apertium needs about 1 ms per 20 characters here).
MAX_REQUEST_CHARS = 2000

_TOOL_HINT = (
    "install the Debian package 'apertium' and a pair, e.g. apt-get install apertium-eng-spa"
)
_MODE_NAME = re.compile(r"^(?P<source>[a-z]{2,3})-(?P<target>[a-z]{2,3})(?:_(?P<variant>\w+))?$")
# Characters that Apertium's stream format reserves; each is sent backslash-escaped.
_RESERVED = frozenset("\\^$/@[]<>{}")
_UNKNOWN_MARKS = "*#@"
# lrx-proc (lexical selection) reads an escaped caret as the start of a word and looks for its
# closing "$": a "\\^" with no word after it swallows the request's NUL and the chain hangs.
# Carets therefore travel as a private-use character, which every stage passes as a blank.
_CARET_STAND_IN = "\ue000"


class ApertiumUnavailable(ModelError):
    """Apertium, one of its tools, or the language pair asked for is not installed."""


class ApertiumError(RuntimeError):
    """A pipeline failed while translating (died twice in a row, or was closed)."""


class ApertiumTimeout(ApertiumError):
    """A pipeline neither took input nor gave output for the timeout; it has been stopped."""


@dataclass(frozen=True, slots=True)
class Mode:
    """One installed Apertium mode: a translation direction, maybe a regional variant."""

    name: str
    path: Path
    source: str
    target: str
    variant: str | None


@dataclass(frozen=True, slots=True)
class ModeChain:
    """How to translate ``source`` into ``target``: one mode, or two through a pivot."""

    source: str
    target: str
    modes: tuple[Mode, ...]

    @property
    def mode_names(self) -> list[str]:
        return [mode.name for mode in self.modes]


def parse_mode(path: Path) -> Mode | None:
    """The :class:`Mode` a ``*.mode`` file provides, or ``None`` when its name is not a plain
    ``src-tgt[_variant]`` direction between languages of the table (e.g. ``eco-es-fr``)."""
    match = _MODE_NAME.match(path.stem)
    if match is None:
        return None
    try:
        source = languages.by_apertium(match["source"]).code
        target = languages.by_apertium(match["target"]).code
    except languages.UnknownLanguage:
        return None
    return Mode(path.stem, path, source, target, match["variant"])


def installed_modes(modes_dir: Path = MODES_DIR) -> list[Mode]:
    """Every usable mode installed in ``modes_dir``, sorted by name."""
    if not modes_dir.is_dir():
        return []
    parsed = (parse_mode(path) for path in sorted(modes_dir.glob("*.mode")))
    return [mode for mode in parsed if mode is not None]


def _best_modes(modes: Iterable[Mode]) -> dict[tuple[str, str], Mode]:
    """One mode per direction: the plain one when installed, else the first variant."""
    best: dict[tuple[str, str], Mode] = {}
    for mode in modes:
        key = (mode.source, mode.target)
        current = best.get(key)
        if current is None or (current.variant is not None and mode.variant is None):
            best[key] = mode
    return best


def routes(modes_dir: Path = MODES_DIR, pivots: Sequence[str] = DEFAULT_PIVOTS) -> list[ModeChain]:
    """Every direction the installed modes can translate: direct ones, then one-pivot chains
    (``source -> pivot -> target``) for directions without a direct mode."""
    direct = _best_modes(installed_modes(modes_dir))
    found: dict[tuple[str, str], ModeChain] = {
        key: ModeChain(key[0], key[1], (mode,)) for key, mode in sorted(direct.items())
    }
    for pivot in (languages.normalise(code) for code in pivots):
        for (source, middle), first in sorted(direct.items()):
            if middle != pivot:
                continue
            for (start, target), second in sorted(direct.items()):
                if start != pivot or target == source or (source, target) in found:
                    continue
                found[(source, target)] = ModeChain(source, target, (first, second))
    return list(found.values())


def available_routes(
    modes_dir: Path = MODES_DIR, pivots: Sequence[str] = DEFAULT_PIVOTS
) -> list[tuple[str, str, list[str]]]:
    """``(source, target, mode names)`` for every direction the installed modes allow."""
    return [(route.source, route.target, route.mode_names) for route in routes(modes_dir, pivots)]


def find_route(
    source: str,
    target: str,
    modes_dir: Path = MODES_DIR,
    pivots: Sequence[str] = DEFAULT_PIVOTS,
) -> ModeChain:
    """The route from ``source`` to ``target`` (codes in any form languages.normalise accepts).

    Raises :class:`ApertiumUnavailable` when no installed mode or pivot chain connects them."""
    src, tgt = languages.normalise(source), languages.normalise(target)
    for route in routes(modes_dir, pivots):
        if (route.source, route.target) == (src, tgt):
            return route
    have = ", ".join(f"{r.source}->{r.target}" for r in routes(modes_dir, pivots)) or "none"
    raise ApertiumUnavailable(
        f"no installed Apertium route {src}->{tgt} (installed: {have}); "
        f"install a pair package such as apertium-{src}-{tgt}"
    )


def pipeline_stages(mode: Mode) -> list[list[str]]:
    """The argv of each stage of ``mode``'s tool chain with null flush on every stage.

    Uses ``apertium-wblank-mode -z``; ``$1`` (the generator's mark flag) becomes ``-n`` (no
    unknown-word marks) and ``$2`` (the tagger's option) is dropped."""
    tool = shutil.which("apertium-wblank-mode")
    if tool is None:
        raise ApertiumUnavailable(f"apertium-wblank-mode not found: {_TOOL_HINT}")
    printed = subprocess.run(
        [tool, "-z", str(mode.path)], capture_output=True, text=True, timeout=30, check=False
    )
    if printed.returncode != 0 or not printed.stdout.strip():
        raise ApertiumUnavailable(
            f"apertium-wblank-mode failed on {mode.path}: {printed.stderr.strip()}"
        )
    lexer = shlex.shlex(printed.stdout.strip(), posix=True, punctuation_chars="|&;<>()")
    lexer.whitespace_split = True
    stages: list[list[str]] = [[]]
    for token in lexer:
        if token == "|":
            stages.append([])
        elif token in {"&", "&&", "||", ";", "<", ">", ">>", "(", ")"}:
            raise ApertiumUnavailable(f"mode {mode.name} is not a plain pipeline: {token!r}")
        elif token == "$1":
            stages[-1].append("-n")
        elif token != "$2":
            stages[-1].append(token)
    for argv in stages:
        if not argv:
            raise ApertiumUnavailable(f"mode {mode.name} has an empty stage")
        if shutil.which(argv[0]) is None:
            raise ApertiumUnavailable(f"{argv[0]} (needed by mode {mode.name}) not found")
    return stages


def escape(text: str) -> str:
    """``text`` as one request line of Apertium's stream format: whitespace and control
    characters collapsed to single spaces, reserved characters backslash-escaped, ``~`` kept
    as a superblank (Apertium has no escape for it), ``^`` sent as a stand-in character."""
    flat = " ".join("".join(" " if _is_control(ch) else ch for ch in text).split())
    out: list[str] = []
    for ch in flat:
        if ch == "^":
            out.append(_CARET_STAND_IN)
        elif ch == _CARET_STAND_IN:
            continue
        elif ch == "~":
            out.append("[~]")
        elif ch in _RESERVED:
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)


def _is_control(ch: str) -> bool:
    code = ord(ch)
    return code < 0x20 or 0x7F <= code < 0xA0 or ch in "\u2028\u2029"


def unescape(stream: str) -> str:
    """Plain text from a chain's output: unescaped ``[`` and ``]`` (superblank brackets)
    dropped, backslash escapes resolved, carets restored."""
    out: list[str] = []
    chars = iter(stream)
    for ch in chars:
        if ch == "\\":
            out.append(next(chars, ""))
        elif ch == _CARET_STAND_IN:
            out.append("^")
        elif ch not in "[]":
            out.append(ch)
    return "".join(out)


_SPACE_BEFORE = re.compile(r"\s+([,.;:!?%…)\]}»”])")
_SPACE_AFTER = re.compile(r"([(\[{¿¡«“])\s+")
# French typography keeps a space before ; : ! ? » and after «.
_SPACE_BEFORE_FR = re.compile(r"\s+([,.%…)\]}”])")
_SPACE_AFTER_FR = re.compile(r"([(\[{“])\s+")


def tidy(text: str, target: str) -> str:
    """Collapse repeated spaces and remove spaces before closing punctuation (and after
    opening punctuation), keeping French spacing for ``target == "fr"``."""
    text = " ".join(text.split())
    if target == "fr":
        return _SPACE_AFTER_FR.sub(r"\1", _SPACE_BEFORE_FR.sub(r"\1", text))
    return _SPACE_AFTER.sub(r"\1", _SPACE_BEFORE.sub(r"\1", text))


def drop_unknown_marks(output: str, source: str) -> str:
    """Remove Apertium's unknown-word marks (``*``, ``#``, ``@`` before a word).

    The chains run with ``-n`` so marks should not appear; a mark character that also occurs
    in the source text is kept, since there it is more likely the speaker's own."""
    for mark in _UNKNOWN_MARKS:
        if mark not in source and mark in output:
            output = re.sub(rf"(?<!\w){re.escape(mark)}(?=\w)", "", output)
    return output


def match_initial_case(output: str, source: str) -> str:
    """Upper-case the first letter of ``output`` when the source's first letter is upper-case
    (Apertium sometimes moves the capital: ``She doesn't`` -> ``no Le gusta``)."""
    first_src = next((ch for ch in source if ch.isalpha()), "")
    for index, ch in enumerate(output):
        if ch.isalpha():
            if first_src.isupper() and ch.islower():
                return output[:index] + ch.upper() + output[index + 1 :]
            return output
    return output


_SENTENCE_END = re.compile(r"(?<=[.!?…。！？])[\"'”’»)\]]*\s+")
_OPENING = "\"'“‘«([—-– "


def split_sentences(text: str) -> list[str]:
    """``text`` cut after sentence-final punctuation (and any closing quotes) and a space."""
    pieces: list[str] = []
    start = 0
    for match in _SENTENCE_END.finditer(text):
        pieces.append(text[start : match.end()].strip())
        start = match.end()
    pieces.append(text[start:].strip())
    return [piece for piece in pieces if piece]


def pack_requests(text: str, max_chars: int = MAX_REQUEST_CHARS) -> list[str]:
    """``text`` as few request lines of at most ``max_chars`` as whole sentences allow; a
    sentence longer than that is cut at its last space before the limit (or at the limit).

    Whole lines are faster than one request per sentence (one round trip instead of several)
    and translate identically on FLORES-200, since Apertium's own stages work sentence by
    sentence; the limit keeps each request's time and memory bounded."""
    requests: list[str] = []
    current = ""
    for sentence in split_sentences(text):
        while len(sentence) > max_chars:
            cut = sentence.rfind(" ", 0, max_chars + 1)
            cut = cut if cut > 0 else max_chars
            head, sentence = sentence[:cut].strip(), sentence[cut:].strip()
            if current:
                requests.append(current)
                current = ""
            requests.append(head)
        if current and len(current) + 1 + len(sentence) > max_chars:
            requests.append(current)
            current = ""
        current = f"{current} {sentence}" if current else sentence
    if current:
        requests.append(current)
    return requests


def restore_inverted_marks(text: str) -> str:
    """Spanish: put the opening ``¿``/``¡`` Apertium leaves out at the start of each sentence
    that ends with ``?``/``!`` and has none."""
    out: list[str] = []
    for sentence in split_sentences(text):
        end = sentence.rstrip("\"'”’»)]")
        for closing, opening in (("?", "¿"), ("!", "¡")):
            if end.endswith(closing) and opening not in sentence:
                lead = len(sentence) - len(sentence.lstrip(_OPENING))
                sentence = sentence[:lead] + opening + sentence[lead:]
        out.append(sentence)
    return " ".join(out)


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

    @staticmethod
    def available_routes(
        modes_dir: Path = MODES_DIR, pivots: Sequence[str] = DEFAULT_PIVOTS
    ) -> list[tuple[str, str, list[str]]]:
        """``(source, target, mode names)`` for every direction the installed modes allow."""
        return available_routes(modes_dir, pivots)

    def translate(self, text: str) -> str:
        """``text`` translated, as one line (newlines and runs of spaces collapse).

        Long text goes in requests of whole sentences up to ``MAX_REQUEST_CHARS``. Returns ``""``
        for text without words. Raises :class:`ApertiumTimeout` or :class:`ApertiumError` when
        a pipeline fails (after one restart)."""
        flat = " ".join("".join(" " if _is_control(ch) else ch for ch in text).split())
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
