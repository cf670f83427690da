"""The canonical language table: lookups, normalisation, and codes checked against the real
model families (faster-whisper's language list, FLORES-200 codes, installed Apertium modes)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from faster_whisper.tokenizer import _LANGUAGE_CODES as WHISPER_CODES

from engine import languages
from engine.languages import Language, UnknownLanguage
from tests.data import fleurs_clips

APERTIUM_MODES = Path("/usr/share/apertium/modes")


def test_get_returns_the_language_with_every_models_code() -> None:
    english = languages.get("en")
    assert english == Language("en", "English", "English", "en", ("eng", "en"), "eng_Latn")
    spanish = languages.get("es")
    assert (spanish.english_name, spanish.native_name) == ("Spanish", "Español")
    assert "spa" in spanish.apertium and "es" in spanish.apertium  # eng-spa, but fr-es
    assert spanish.nllb == "spa_Latn"
    assert languages.get("zh").nllb == "zho_Hans"
    assert languages.get("zh").apertium == ()


@pytest.mark.parametrize(
    ("given", "canonical"),
    [
        ("en", "en"),
        ("EN", "en"),
        ("en-US", "en"),
        ("en_GB", "en"),
        (" Es ", "es"),
        ("pt-BR", "pt"),
        ("zh-Hans", "zh"),
        ("zh_TW", "zh"),
        ("eng", "en"),  # Apertium / ISO 639-3
        ("spa_Latn", "es"),  # NLLB / FLORES-200
        ("no", "nb"),  # Whisper's Norwegian
        ("nob", "nb"),
        ("french", "fr"),
        ("iw", "he"),
    ],
)
def test_normalise_maps_variants_to_the_canonical_code(given: str, canonical: str) -> None:
    assert languages.normalise(given) == canonical
    assert languages.get(given).code == canonical


@pytest.mark.parametrize("code", ["", "xx", "x-en", "klingon", "e n"])
def test_unknown_codes_raise_a_key_error_that_names_the_code(code: str) -> None:
    with pytest.raises(UnknownLanguage) as caught:
        languages.get(code)
    assert isinstance(caught.value, KeyError)
    assert caught.value.code == code
    assert repr(code) in str(caught.value) and "en, eo, es" in str(caught.value)
    assert not languages.is_known(code)


def test_table_is_consistent() -> None:
    table = list(languages.all_languages())
    assert [lang.code for lang in table] == list(languages.LANGUAGES)
    assert len({lang.code for lang in table}) == len(table)
    assert len({lang.nllb for lang in table}) == len(table)
    apertium_codes = [code for lang in table for code in lang.apertium]
    assert len(set(apertium_codes)) == len(apertium_codes), "an Apertium code names two languages"
    for lang in table:
        assert re.fullmatch(r"[a-z]{2}", lang.code), lang
        assert re.fullmatch(r"[a-z]{3}_[A-Z][a-z]{3}", lang.nllb), lang
        assert lang.english_name and lang.native_name, lang
        assert all(re.fullmatch(r"[a-z]{2,3}", code) for code in lang.apertium), lang
        assert languages.normalise(lang.code) == lang.code
        assert languages.normalise(lang.nllb) == lang.code
        for code in lang.apertium:
            assert languages.by_apertium(code) is lang
        with pytest.raises(AttributeError):
            lang.code = "xx"  # type: ignore[misc]


def test_whisper_codes_are_ones_faster_whisper_knows() -> None:
    for lang in languages.all_languages():
        if lang.whisper is not None:
            assert lang.whisper in WHISPER_CODES, lang
            assert languages.normalise(lang.whisper) == lang.code
    missing = {"en", "es", "fr", "de", "pt", "it", "zh", "ja", "ko"} - {
        lang.code for lang in languages.all_languages() if lang.whisper is not None
    }
    assert not missing


def test_nllb_codes_are_the_flores_codes() -> None:
    # The FLEURS manifest keys each clip's human translations by FLORES-200 code, the names
    # of the FLORES-200 devtest files: the eight languages of the evaluation set.
    codes = {code for clip in fleurs_clips() for code in clip["translations"]}
    assert len(codes) == 8
    for code in codes:
        assert languages.get(code).nllb == code


# Mode names of the Debian pairs the project installs, and the languages they translate.
KNOWN_MODES = {
    "eng-spa": ("en", "es"),
    "spa-eng": ("es", "en"),
    "fr-es": ("fr", "es"),
    "es-fr": ("es", "fr"),
    "es-pt": ("es", "pt"),
    "pt-es": ("pt", "es"),
    "spa-ita": ("es", "it"),
    "ita-spa": ("it", "es"),
    "eng-cat": ("en", "ca"),
    "cat-eng": ("ca", "en"),
    "en-gl": ("en", "gl"),
    "gl-en": ("gl", "en"),
}


def test_apertium_codes_match_the_installed_mode_names() -> None:
    installed = {path.stem for path in APERTIUM_MODES.glob("*.mode")}
    if not installed & KNOWN_MODES.keys():
        pytest.skip(
            f"no Apertium pair installed in {APERTIUM_MODES}: apt-get install apertium-eng-spa"
        )
    for name in sorted(installed & KNOWN_MODES.keys()):
        source, target = name.split("-")
        assert (languages.by_apertium(source).code, languages.by_apertium(target).code) == (
            KNOWN_MODES[name]
        )
