"""The CTranslate2 adapter end to end on tiny models these tests build themselves.

No real Marian/NLLB model can be obtained offline, so each test model is a 1-layer
Transformer (d_model 16) with random weights, written with CTranslate2's own spec API (no
torch needed), and a SentencePiece model trained here on FLORES-200 sentences. Its output is
garbage, but it proves the loading, tokenising, translating and detokenising code works on the
directory layouts real converted models have.
"""

from __future__ import annotations

import io
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pytest

from models.ct2_translator import CT2Model, CT2ModelError, CT2Translator, inspect_model
from tests.data import flores_lines

Layout = Literal["marian", "nllb", "m2m100", "hf"]
NLLB_CODES = ["eng_Latn", "spa_Latn", "fra_Latn", "deu_Latn"]
M2M_CODES = ["__en__", "__es__", "__fr__", "__de__"]
SPECIALS = ["<unk>", "<s>", "</s>", "<pad>"]


def train_sentencepiece(vocab_size: int = 200, sentences: int = 100) -> bytes:
    """A small unigram SentencePiece model trained on FLORES English and Spanish."""
    import sentencepiece as spm

    lines = []
    for code in ("eng_Latn", "spa_Latn"):
        lines += flores_lines(code, sentences)
    buffer = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines),
        model_writer=buffer,
        vocab_size=vocab_size,
        model_type="unigram",
        character_coverage=1.0,
        unk_id=0,
        bos_id=-1,
        eos_id=-1,
        pad_id=-1,
        minloglevel=2,
    )
    return buffer.getvalue()


def _tiny_weights(vocab: list[str], favourite: str, d: int = 16, ffn: int = 32) -> Any:
    """A 1+1-layer Transformer spec with random weights; the output projection's bias makes
    ``favourite`` the most likely token at every step, so the output is predictable."""
    from ctranslate2.specs import TransformerSpec, model_spec

    rng = np.random.default_rng(0)
    size = len(vocab)
    spec = TransformerSpec.from_config((1, 1), 2)

    def fill(layer: Any, name: str, value: Any) -> None:
        if value is not None:
            return
        leaf = name.rsplit("/", 1)[-1]
        if leaf == "gamma":
            setattr(layer, leaf, np.ones(d, np.float32))
            return
        if leaf == "beta":
            setattr(layer, leaf, np.zeros(d, np.float32))
            return
        if "embeddings" in name or "projection" in name:
            shape: tuple[int, ...] = (size, d)
        elif "self_attention/linear_0" in name:
            shape = (3 * d, d)
        elif "/attention/linear_1" in name:
            shape = (2 * d, d)
        elif "ffn/linear_0" in name:
            shape = (ffn, d)
        elif "ffn/linear_1" in name:
            shape = (d, ffn)
        else:
            shape = (d, d)
        setattr(layer, leaf, (rng.standard_normal(shape) * 0.1).astype(np.float32))

    model_spec.visit_spec(spec, fill)
    bias = np.zeros(size, np.float32)
    bias[vocab.index(favourite)] = 50.0
    spec.decoder.projection.bias = bias
    spec.register_source_vocabulary(vocab)
    spec.register_target_vocabulary(vocab)
    return spec


def build_tiny_model(directory: Path, layout: Layout = "marian", favourite: str = "▁la") -> Path:
    """Write a tiny CTranslate2 translation model in the directory layout of ``layout``."""
    import sentencepiece as spm

    proto = train_sentencepiece()
    processor = spm.SentencePieceProcessor(model_proto=proto)
    pieces = [processor.id_to_piece(i) for i in range(processor.get_piece_size())]
    vocab = SPECIALS + [p for p in pieces if p not in SPECIALS]
    if layout == "nllb":
        vocab += NLLB_CODES
    elif layout == "m2m100":
        vocab += M2M_CODES
    directory.mkdir(parents=True, exist_ok=True)
    spec = _tiny_weights(vocab, favourite)
    spec.validate()
    spec.optimize(quantization=None)
    spec.save(str(directory))
    if layout == "marian":
        (directory / "source.spm").write_bytes(proto)
        (directory / "target.spm").write_bytes(proto)
    elif layout in ("nllb", "m2m100"):
        (directory / "sentencepiece.bpe.model").write_bytes(proto)
    else:
        _write_hf_tokenizer(directory, proto)
    return directory


def _write_hf_tokenizer(directory: Path, proto: bytes) -> None:
    """A Hugging Face fast tokenizer (tokenizer.json + tokenizer_config.json) with the
    SentencePiece model's pieces and scores, as AutoTokenizer reads it from a model directory."""
    import sentencepiece as spm
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    processor = spm.SentencePieceProcessor(model_proto=proto)
    pieces = [
        (processor.id_to_piece(i), float(processor.get_score(i)))
        for i in range(processor.get_piece_size())
    ]
    tokenizer = Tokenizer(models.Unigram(pieces, unk_id=processor.unk_id()))
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace()
    tokenizer.decoder = decoders.Metaspace()
    fast = PreTrainedTokenizerFast(  # type: ignore[no-untyped-call]
        tokenizer_object=tokenizer, unk_token="<unk>", eos_token="</s>"
    )
    fast.save_pretrained(str(directory))


@pytest.fixture(scope="module")
def tiny_models(tmp_path_factory: pytest.TempPathFactory) -> Callable[[Layout], Path]:
    root = tmp_path_factory.mktemp("ct2")
    built: dict[str, Path] = {}

    def get(layout: Layout) -> Path:
        if layout not in built:
            built[layout] = build_tiny_model(root / layout, layout)
        return built[layout]

    return get


def _expected(model: CT2Model, text: str, source: str, target: str) -> str:
    """What CTranslate2 itself produces for the adapter's tokens, detokenised by hand."""
    import ctranslate2

    direct = ctranslate2.Translator(str(model.info.path), device="cpu")
    tokens = model.source_tokens(text, source)
    prefix = model.target_prefix(target)
    hypothesis = direct.translate_batch(
        [tokens],
        target_prefix=[prefix] if prefix else None,
        beam_size=1,
        max_decoding_length=2 * len(tokens) + 10,
    )[0].hypotheses[0]
    return model.tokenizer.decode(hypothesis[len(prefix or []) :])


SENTENCE = "The hospital has followed protocol for infection control."


@pytest.mark.parametrize("layout", ["marian", "hf"])
def test_marian_layouts_translate_end_to_end(
    tiny_models: Callable[[Layout], Path], layout: Layout
) -> None:
    path = tiny_models(layout)
    info = inspect_model(path)
    assert info.family == "marian"
    assert info.tokenizer == ("sentencepiece" if layout == "marian" else "transformers")
    model = CT2Model(path, compute_type="float32")
    try:
        pieces = model.tokenizer.encode(SENTENCE)
        assert 5 < len(pieces) < len(SENTENCE)
        assert model.tokenizer.decode(pieces) == SENTENCE
        assert model.source_tokens(SENTENCE, "en")[-1] == "</s>"
        translator = model.pair("en", "es", beam_size=1)
        out = translator.translate(SENTENCE, context="Previous sentence.")
        # The favoured token repeats until the length bound: detokenised, not raw pieces.
        assert out.split() and set(out.split()) == {"la"}
        assert out == " ".join(_expected(model, SENTENCE, "en", "es").split())
        assert "▁" not in out and "</s>" not in out
        two = translator.translate(f"{SENTENCE} Yes.")
        assert len(two.split()) > len(out.split())  # two sentences, two outputs joined
        assert translator.translate("   ") == ""
    finally:
        model.close()


@pytest.mark.parametrize("layout", ["nllb", "m2m100"])
def test_multilingual_models_use_language_tokens(
    tiny_models: Callable[[Layout], Path], layout: Layout
) -> None:
    model = CT2Model(tiny_models(layout), compute_type="float32")
    try:
        assert model.info.family == layout
        assert model.info.languages == {"en", "es", "fr", "de"}
        tokens = model.source_tokens(SENTENCE, "en")
        want_src, want_tgt = ("eng_Latn", "deu_Latn") if layout == "nllb" else ("__en__", "__de__")
        assert tokens[0] == want_src and tokens[-1] == "</s>"
        assert model.target_prefix("de") == [want_tgt]
        out = CT2Translator(model, "en", "de", beam_size=1).translate(SENTENCE)
        assert out == " ".join(_expected(model, SENTENCE, "en", "de").split())
        assert want_tgt not in out and set(out.split()) == {"la"}
        with pytest.raises(CT2ModelError, match="does not know language 'pt'"):
            CT2Translator(model, "en", "pt")
        assert model.warm_up() < 5.0
    finally:
        model.close()
    with pytest.raises(CT2ModelError, match="closed"):
        model.translate(SENTENCE, "en", "de")


def test_missing_and_corrupt_models_fail_clearly(
    tiny_models: Callable[[Layout], Path], tmp_path: Path
) -> None:
    with pytest.raises(CT2ModelError, match="does not exist"):
        CT2Model(tmp_path / "nowhere")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(CT2ModelError, match=r"no model\.bin"):
        CT2Model(empty)

    no_tokenizer = tmp_path / "no-tokenizer"
    shutil.copytree(tiny_models("marian"), no_tokenizer)
    (no_tokenizer / "target.spm").unlink()
    with pytest.raises(CT2ModelError, match=r"no tokenizer: expected source\.spm and target\.spm"):
        CT2Model(no_tokenizer)

    corrupt = tmp_path / "corrupt"
    shutil.copytree(tiny_models("marian"), corrupt)
    data = (corrupt / "model.bin").read_bytes()
    (corrupt / "model.bin").write_bytes(data[: len(data) // 3])
    with pytest.raises(CT2ModelError, match="cannot load CTranslate2 model"):
        CT2Model(corrupt)

    bad_vocab = tmp_path / "bad-vocab"
    shutil.copytree(tiny_models("marian"), bad_vocab)
    (bad_vocab / "shared_vocabulary.json").write_text(json.dumps({"not": "a list"}))
    with pytest.raises(CT2ModelError, match="not a JSON list"):
        inspect_model(bad_vocab)
