"""The canonical table of languages and the codes each model family uses for them.

Every language in the project is named by one short BCP-47 style code (``"en"``, ``"es"``,
``"nb"``, ``"zh"``); :func:`normalise` turns what a client or a model sends (``"EN"``, ``"en-US"``,
``"pt_BR"``, ``"eng"``, ``"spa_Latn"``, Whisper's ``"no"``) into that code, and :func:`get`
gives the :class:`Language` with the code each backend expects:

- Whisper's language token (``whisper``; ``None`` where Whisper has none),
- the codes Apertium's mode names use (``apertium``: both the three-letter and the two-letter
  form, since installed pairs mix them: ``eng-spa`` but ``fr-es`` and ``en-gl``),
- the NLLB-200 / FLORES-200 code (``nllb``: ``eng_Latn``, ``zho_Hans``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType


class UnknownLanguage(KeyError):
    """A language code that is not in the table; ``code`` is what was asked for."""

    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code

    def __str__(self) -> str:
        return f"unknown language code {self.code!r}; known: {', '.join(sorted(LANGUAGES))}"


@dataclass(frozen=True, slots=True)
class Language:
    """One language: its canonical code, names, and the code each model family uses."""

    code: str
    english_name: str
    native_name: str
    whisper: str | None
    apertium: tuple[str, ...]
    nllb: str

    @property
    def apertium_codes(self) -> frozenset[str]:
        """Every code that may stand for this language in an Apertium mode name."""
        return frozenset(self.apertium)


def _lang(
    code: str,
    english: str,
    native: str,
    nllb: str,
    *,
    apertium: tuple[str, ...] = (),
    whisper: str | None = "",
) -> Language:
    # whisper="" means "same as the code", None means Whisper does not know the language.
    return Language(code, english, native, code if whisper == "" else whisper, apertium, nllb)


_TABLE: tuple[Language, ...] = (
    _lang("en", "English", "English", "eng_Latn", apertium=("eng", "en")),
    _lang("es", "Spanish", "Español", "spa_Latn", apertium=("spa", "es")),
    _lang("fr", "French", "Français", "fra_Latn", apertium=("fra", "fr")),
    _lang("de", "German", "Deutsch", "deu_Latn", apertium=("deu", "de")),
    _lang("pt", "Portuguese", "Português", "por_Latn", apertium=("por", "pt")),
    _lang("it", "Italian", "Italiano", "ita_Latn", apertium=("ita", "it")),
    _lang("ca", "Catalan", "Català", "cat_Latn", apertium=("cat", "ca")),
    _lang("gl", "Galician", "Galego", "glg_Latn", apertium=("glg", "gl")),
    _lang("eu", "Basque", "Euskara", "eus_Latn", apertium=("eus", "eu")),
    _lang("oc", "Occitan", "Occitan", "oci_Latn", apertium=("oci", "oc")),
    _lang("ro", "Romanian", "Română", "ron_Latn", apertium=("ron", "ro")),
    _lang("nl", "Dutch", "Nederlands", "nld_Latn", apertium=("nld", "nl")),
    _lang("af", "Afrikaans", "Afrikaans", "afr_Latn", apertium=("afr", "af")),
    _lang("da", "Danish", "Dansk", "dan_Latn", apertium=("dan", "da")),
    _lang("sv", "Swedish", "Svenska", "swe_Latn", apertium=("swe", "sv")),
    _lang(
        "nb", "Norwegian Bokmål", "Norsk bokmål", "nob_Latn", apertium=("nob", "nor"), whisper="no"
    ),
    _lang("nn", "Norwegian Nynorsk", "Norsk nynorsk", "nno_Latn", apertium=("nno",)),
    _lang("is", "Icelandic", "Íslenska", "isl_Latn", apertium=("isl", "is")),
    _lang("eo", "Esperanto", "Esperanto", "epo_Latn", apertium=("epo", "eo"), whisper=None),
    _lang("pl", "Polish", "Polski", "pol_Latn", apertium=("pol", "pl")),
    _lang("cs", "Czech", "Čeština", "ces_Latn", apertium=("ces", "cs")),
    _lang("ru", "Russian", "Русский", "rus_Cyrl", apertium=("rus", "ru")),
    _lang("uk", "Ukrainian", "Українська", "ukr_Cyrl", apertium=("ukr", "uk")),
    _lang("be", "Belarusian", "Беларуская", "bel_Cyrl", apertium=("bel", "be")),
    _lang("bg", "Bulgarian", "Български", "bul_Cyrl", apertium=("bul", "bg")),
    _lang("mk", "Macedonian", "Македонски", "mkd_Cyrl", apertium=("mkd", "mk")),
    _lang("el", "Greek", "Ελληνικά", "ell_Grek", apertium=("ell", "el")),
    _lang("tr", "Turkish", "Türkçe", "tur_Latn", apertium=("tur", "tr")),
    _lang("ar", "Arabic", "العربية", "arb_Arab", apertium=("ara", "ar")),
    _lang("he", "Hebrew", "עברית", "heb_Hebr", apertium=("heb", "he")),
    _lang("fa", "Persian", "فارسی", "pes_Arab", apertium=("fas", "fa")),
    _lang("hi", "Hindi", "हिन्दी", "hin_Deva", apertium=("hin", "hi")),
    _lang("ur", "Urdu", "اردو", "urd_Arab", apertium=("urd", "ur")),
    _lang("id", "Indonesian", "Bahasa Indonesia", "ind_Latn", apertium=("ind", "id")),
    _lang("ms", "Malay", "Bahasa Melayu", "zsm_Latn", apertium=("zlm", "msa", "ms")),
    _lang("vi", "Vietnamese", "Tiếng Việt", "vie_Latn"),
    _lang("zh", "Chinese", "中文", "zho_Hans"),
    _lang("ja", "Japanese", "日本語", "jpn_Jpan"),
    _lang("ko", "Korean", "한국어", "kor_Hang"),
)

LANGUAGES: Mapping[str, Language] = MappingProxyType({lang.code: lang for lang in _TABLE})
"""Every known language by canonical code, in table order."""


def _aliases() -> dict[str, str]:
    aliases: dict[str, str] = {}
    for lang in _TABLE:
        aliases[lang.english_name.lower()] = lang.code
        aliases[lang.nllb.lower()] = lang.code
        aliases[lang.nllb.split("_")[0].lower()] = lang.code
        for apertium_code in lang.apertium:
            aliases[apertium_code] = lang.code
        if lang.whisper is not None:
            aliases[lang.whisper] = lang.code
    # Canonical codes win over any alias that happens to collide with one.
    aliases.update({lang.code: lang.code for lang in _TABLE})
    # ISO 639-1 codes that name a macrolanguage or an older code for a language in the table.
    aliases.update({"no": "nb", "iw": "he", "in": "id", "cmn": "zh", "yue": "zh", "zlm": "ms"})
    return aliases


_ALIASES: Mapping[str, str] = MappingProxyType(_aliases())


def normalise(code: str) -> str:
    """The canonical code for ``code``: ``"EN"``, ``"en-US"``, ``"pt_BR"``, ``"eng"``,
    ``"spa_Latn"``, ``"english"`` and Whisper's ``"no"`` all resolve to a table code.

    Raises :class:`UnknownLanguage` (a ``KeyError``) when the code names no language here."""
    key = code.strip().lower().replace("_", "-")
    if key in _ALIASES:
        return _ALIASES[key]
    nllb_key = key.replace("-", "_")
    if nllb_key in _ALIASES:
        return _ALIASES[nllb_key]
    primary = key.split("-", 1)[0]
    if primary in _ALIASES:
        return _ALIASES[primary]
    raise UnknownLanguage(code)


def get(code: str) -> Language:
    """The :class:`Language` for ``code`` (any form :func:`normalise` accepts).

    Raises :class:`UnknownLanguage` (a ``KeyError``) for a code that is not in the table."""
    return LANGUAGES[normalise(code)]


def is_known(code: str) -> bool:
    """Whether ``code`` (any form :func:`normalise` accepts) names a language in the table."""
    try:
        normalise(code)
    except UnknownLanguage:
        return False
    return True


def by_apertium(code: str) -> Language:
    """The language an Apertium mode-name code (``"eng"``, ``"es"``, ``"nob"``) stands for.

    Raises :class:`UnknownLanguage` when no language in the table uses that code."""
    for lang in _TABLE:
        if code in lang.apertium:
            return lang
    raise UnknownLanguage(code)


def all_languages() -> Iterator[Language]:
    """Every language in the table, in table order."""
    return iter(_TABLE)
