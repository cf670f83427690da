"""Neural text translation with a CTranslate2 model from the user's own disk.

Any Marian (opus-mt), NLLB-200 or M2M100 model converted to CTranslate2 works, given by the
path of its directory. The tokenizer comes from files in that directory, never from a hub:

- Marian: ``source.spm`` and ``target.spm`` (copy them when converting:
  ``ct2-transformers-converter --model Helsinki-NLP/opus-mt-en-de --output_dir DIR
  --copy_files source.spm target.spm``); a multi-target model's ``>>xx<<`` token is added;
- NLLB / M2M100: ``sentencepiece.bpe.model`` (or ``spm.model``); the source starts with the
  source language token and the target with the target language token (NLLB: the FLORES-200
  code from :mod:`engine.languages`, ``spa_Latn``; M2M100: ``__es__``);
- otherwise a Hugging Face ``tokenizer.json`` / ``tokenizer_config.json``, read with
  ``transformers.AutoTokenizer`` (``pip install transformers``).

Which family a model belongs to is read from its vocabulary (NLLB and M2M100 language tokens).
Text is split into sentences and translated as one batch. Calls block: run them in the
model's own worker pool, never on the event loop.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from engine import languages
from models.apertium_text import split_sentences
from models.catalog import ModelError

log = logging.getLogger(__name__)

Family = Literal["marian", "nllb", "m2m100"]

_EOS = "</s>"
_SPECIAL = frozenset({"<s>", "</s>", "<pad>", "<unk>"})
_CONVERT_HINT = (
    "convert a model with e.g. 'ct2-transformers-converter --model Helsinki-NLP/opus-mt-en-de "
    "--output_dir DIR --copy_files source.spm target.spm' (NLLB/M2M100: --copy_files "
    "sentencepiece.bpe.model)"
)


class CT2ModelError(ModelError):
    """A CTranslate2 translation model directory is missing, incomplete or unreadable."""


class Tokenizer(Protocol):
    """Source text to model tokens, model tokens to target text."""

    def encode(self, text: str) -> list[str]: ...

    def decode(self, tokens: Sequence[str]) -> str: ...


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """What a model directory holds, read without loading the weights."""

    path: Path
    family: Family
    languages: frozenset[str]
    """Language codes a multilingual model (NLLB, M2M100) knows; empty for Marian."""
    tokenizer: Literal["sentencepiece", "transformers"]


def _read_vocabulary(path: Path) -> list[str]:
    for stem in ("shared_vocabulary", "target_vocabulary"):
        json_file, txt_file = path / f"{stem}.json", path / f"{stem}.txt"
        if json_file.is_file():
            tokens = json.loads(json_file.read_text(encoding="utf-8"))
            if not isinstance(tokens, list):
                raise CT2ModelError(f"{json_file} is not a JSON list of tokens")
            return [str(token) for token in tokens]
        if txt_file.is_file():
            return txt_file.read_text(encoding="utf-8").splitlines()
    raise CT2ModelError(f"{path} has no vocabulary file (shared_vocabulary.json); {_CONVERT_HINT}")


def _m2m_token(lang: languages.Language) -> list[str]:
    codes = [lang.code] + ([lang.whisper] if lang.whisper and lang.whisper != lang.code else [])
    return [f"__{code}__" for code in codes]


def _family_and_languages(vocabulary: Sequence[str]) -> tuple[Family, frozenset[str]]:
    tokens = set(vocabulary)
    nllb = {lang.code for lang in languages.all_languages() if lang.nllb in tokens}
    m2m = {
        lang.code
        for lang in languages.all_languages()
        if any(token in tokens for token in _m2m_token(lang))
    }
    if len(nllb) >= 2:
        return "nllb", frozenset(nllb)
    if len(m2m) >= 2:
        return "m2m100", frozenset(m2m)
    return "marian", frozenset()


def _spm_files(path: Path, family: Family) -> tuple[Path, Path] | None:
    if family == "marian":
        source, target = path / "source.spm", path / "target.spm"
        return (source, target) if source.is_file() and target.is_file() else None
    for name in ("sentencepiece.bpe.model", "spm.model", "sentencepiece.model"):
        if (path / name).is_file():
            return path / name, path / name
    return None


def inspect_model(path: str | Path) -> ModelInfo:
    """Check a CTranslate2 translation model directory and describe it (cheap: reads the
    vocabulary, not the weights). Raises :class:`CT2ModelError` saying what is missing."""
    directory = Path(path).expanduser()
    if not directory.is_dir():
        raise CT2ModelError(f"CTranslate2 model directory {directory} does not exist")
    if not (directory / "model.bin").is_file():
        raise CT2ModelError(
            f"{directory} is not a CTranslate2 model (no model.bin); {_CONVERT_HINT}"
        )
    family, known = _family_and_languages(_read_vocabulary(directory))
    if _spm_files(directory, family) is not None:
        kind: Literal["sentencepiece", "transformers"] = "sentencepiece"
    elif (directory / "tokenizer.json").is_file() or (
        directory / "tokenizer_config.json"
    ).is_file():
        kind = "transformers"
    else:
        wanted = "source.spm and target.spm" if family == "marian" else "sentencepiece.bpe.model"
        raise CT2ModelError(
            f"{directory} has no tokenizer: expected {wanted} or tokenizer.json; {_CONVERT_HINT}"
        )
    return ModelInfo(directory, family, known, kind)


class _SentencePieceTokenizer:
    def __init__(self, source: Path, target: Path) -> None:
        try:
            import sentencepiece as spm
        except ImportError as exc:
            raise CT2ModelError(
                "sentencepiece is not installed: pip install sentencepiece"
            ) from exc
        try:
            self._source: Any = spm.SentencePieceProcessor(model_file=str(source))
            self._target: Any = (
                self._source
                if target == source
                else spm.SentencePieceProcessor(model_file=str(target))
            )
        except (OSError, RuntimeError) as exc:
            raise CT2ModelError(f"cannot read SentencePiece model {source}: {exc}") from exc

    def encode(self, text: str) -> list[str]:
        return [str(piece) for piece in self._source.encode(text, out_type=str)]

    def decode(self, tokens: Sequence[str]) -> str:
        return str(self._target.decode_pieces([t for t in tokens if t not in _SPECIAL]))


class _TransformersTokenizer:
    def __init__(self, path: Path) -> None:
        try:
            from transformers import AutoTokenizer
        except ImportError as exc:
            raise CT2ModelError(
                f"{path} needs transformers for its tokenizer.json: pip install transformers"
            ) from exc
        try:
            self._tokenizer: Any = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
        except (OSError, ValueError, KeyError) as exc:
            raise CT2ModelError(f"cannot load the tokenizer in {path}: {exc}") from exc

    def encode(self, text: str) -> list[str]:
        ids = self._tokenizer(text, add_special_tokens=False)["input_ids"]
        return [str(token) for token in self._tokenizer.convert_ids_to_tokens(ids)]

    def decode(self, tokens: Sequence[str]) -> str:
        ids = self._tokenizer.convert_tokens_to_ids([t for t in tokens if t not in _SPECIAL])
        return str(self._tokenizer.decode(ids, skip_special_tokens=True))


class CT2Model:
    """One CTranslate2 translation model, loaded once and shared by every direction it serves.

    Thread-safe (CTranslate2 serialises calls to one model replica); :meth:`translate` blocks.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        device: str = "cpu",
        compute_type: str = "int8",
        intra_threads: int = 1,
        max_input_tokens: int = 400,
    ) -> None:
        self.info = inspect_model(path)
        try:
            import ctranslate2
        except ImportError as exc:  # pragma: no cover - a dependency of the project
            raise CT2ModelError("ctranslate2 is not installed: pip install ctranslate2") from exc
        self._vocabulary = frozenset(_read_vocabulary(self.info.path))
        self.tokenizer: Tokenizer = (
            _SentencePieceTokenizer(*spm)
            if (spm := _spm_files(self.info.path, self.info.family)) is not None
            else _TransformersTokenizer(self.info.path)
        )
        try:
            self._translator: Any = ctranslate2.Translator(
                str(self.info.path),
                device=device,
                compute_type=compute_type,
                intra_threads=intra_threads,
            )
        except (RuntimeError, ValueError) as exc:
            raise CT2ModelError(f"cannot load CTranslate2 model {self.info.path}: {exc}") from exc
        self.max_input_tokens = max_input_tokens
        self._closed = threading.Event()

    @property
    def name(self) -> str:
        return self.info.path.name

    def source_tokens(self, text: str, source: str) -> list[str]:
        """The model input for one sentence: language token (NLLB/M2M100) or ``>>xx<<``
        target token handled by :meth:`target_prefix`, pieces, then ``</s>``."""
        pieces = self.tokenizer.encode(text)[: self.max_input_tokens]
        family = self.info.family
        if family == "nllb":
            return [self._language_token(source), *pieces, _EOS]
        if family == "m2m100":
            return [self._language_token(source), *pieces, _EOS]
        return [*pieces, _EOS]

    def target_prefix(self, target: str) -> list[str] | None:
        """The tokens the decoder must start with (the target language token), if any."""
        if self.info.family in ("nllb", "m2m100"):
            return [self._language_token(target)]
        return None

    def marian_target_token(self, target: str) -> str | None:
        """A multi-target Marian model's ``>>xx<<`` token for ``target``, if it has one."""
        lang = languages.get(target)
        for code in (lang.code, *lang.apertium, lang.nllb.split("_")[0], lang.nllb):
            token = f">>{code}<<"
            if token in self._vocabulary:
                return token
        return None

    def _language_token(self, code: str) -> str:
        lang = languages.get(code)
        candidates = [lang.nllb] if self.info.family == "nllb" else _m2m_token(lang)
        for token in candidates:
            if token in self._vocabulary:
                return token
        raise CT2ModelError(f"model {self.info.path} does not know language {lang.code!r}")

    def translate(self, text: str, source: str, target: str, *, beam_size: int = 4) -> str:
        """``text`` from ``source`` into ``target``: sentences translated as one batch."""
        if self._closed.is_set():
            raise CT2ModelError(f"model {self.info.path} is closed")
        sentences = split_sentences(" ".join(text.split()))
        if not sentences:
            return ""
        batch = [self.source_tokens(sentence, source) for sentence in sentences]
        marian_token = self.marian_target_token(target) if self.info.family == "marian" else None
        if marian_token is not None:
            batch = [[marian_token, *tokens] for tokens in batch]
        prefix = self.target_prefix(target)
        longest = max(len(tokens) for tokens in batch)
        results = self._translator.translate_batch(
            batch,
            target_prefix=[prefix] * len(batch) if prefix else None,
            beam_size=beam_size,
            # Bounds every call: a translation is rarely over twice its source's length.
            max_decoding_length=2 * longest + 10,
        )
        skip = len(prefix) if prefix else 0
        outputs = [self.tokenizer.decode(result.hypotheses[0][skip:]) for result in results]
        return " ".join(" ".join(out.split()) for out in outputs if out.strip())

    def pair(self, source: str, target: str, *, beam_size: int = 4) -> CT2Translator:
        """A :class:`CT2Translator` for one direction of this model."""
        return CT2Translator(self, source, target, beam_size=beam_size)

    def warm_up(self) -> float:
        """Translate one short sentence (first calls allocate buffers); returns seconds."""
        began = time.perf_counter()
        source, target = self._warm_pair()
        self.translate("This is a short sentence.", source, target, beam_size=1)
        return time.perf_counter() - began

    def _warm_pair(self) -> tuple[str, str]:
        known = sorted(self.info.languages)
        if len(known) >= 2:
            return ("en", "es") if {"en", "es"} <= self.info.languages else (known[0], known[1])
        return "en", "en"

    def close(self) -> None:
        """Release the model; later calls raise :class:`CT2ModelError`."""
        self._closed.set()
        self._translator.unload_model()


class CT2Translator:
    """One direction of a :class:`CT2Model`, with the interface of
    :class:`engine.translation.backends.Translator`."""

    passes_placeholders = False
    """Private-use placeholders become unknown tokens in a neural model."""

    def __init__(self, model: CT2Model, source: str, target: str, *, beam_size: int = 4) -> None:
        self.model = model
        self.source = languages.normalise(source)
        self.target = languages.normalise(target)
        if model.info.family != "marian":
            for code in (self.source, self.target):
                if code not in model.info.languages:
                    raise CT2ModelError(f"model {model.info.path} does not know language {code!r}")
        self.beam_size = beam_size
        self.name = f"ct2:{model.name}:{self.source}-{self.target}"

    def translate(self, text: str, context: str | None = None) -> str:
        """``text`` translated; ``context`` (the previous sentence) is not used: a prefix
        would change the output's sentence split, and sentence-level models gain little."""
        return self.model.translate(text, self.source, self.target, beam_size=self.beam_size)
