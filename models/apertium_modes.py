"""Which Apertium translations this machine has: its installed modes, the route (one mode,
or two through a pivot language) for each direction, and each mode's tool chain.

Directions without a direct pair are chained through a pivot language (Spanish by default:
``en -> fr`` is ``eng-spa`` then ``es-fr``). models/apertium.py runs the chains.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from engine import languages
from models.catalog import ModelError

MODES_DIR = Path("/usr/share/apertium/modes")
DEFAULT_PIVOTS: tuple[str, ...] = ("es",)

_TOOL_HINT = (
    "install the Debian package 'apertium' and a pair, e.g. apt-get install apertium-eng-spa"
)
_MODE_NAME = re.compile(r"^(?P<source>[a-z]{2,3})-(?P<target>[a-z]{2,3})(?:_(?P<variant>\w+))?$")


class ApertiumUnavailable(ModelError):
    """Apertium, one of its tools, or the language pair asked for is not installed."""


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
