// Traveller mode's button words (./talk.js, ./talk-view.js) in the speaker's own language,
// English where none is written here.

const WORDS = {
  en: {
    tap: 'Tap to talk', hold: 'Hold to talk', stop: 'Tap when done', release: 'Release when done',
    wait: 'Wait…', listening: 'Listening…', translating: 'Translating…',
  },
  es: {
    tap: 'Toca para hablar', hold: 'Mantén pulsado para hablar', stop: 'Toca al terminar',
    release: 'Suelta al terminar', wait: 'Espera…', listening: 'Escuchando…',
    translating: 'Traduciendo…',
  },
  fr: {
    tap: 'Touchez pour parler', hold: 'Maintenez pour parler', stop: 'Touchez pour finir',
    release: 'Relâchez pour finir', wait: 'Patientez…', listening: 'J’écoute…',
    translating: 'Traduction…',
  },
  pt: {
    tap: 'Toque para falar', hold: 'Mantenha premido para falar', stop: 'Toque ao terminar',
    release: 'Solte ao terminar', wait: 'Aguarde…', listening: 'A ouvir…',
    translating: 'A traduzir…',
  },
  it: {
    tap: 'Tocca per parlare', hold: 'Tieni premuto per parlare', stop: 'Tocca quando hai finito',
    release: 'Rilascia quando hai finito', wait: 'Attendi…', listening: 'Ascolto…',
    translating: 'Traduzione…',
  },
  ca: {
    tap: 'Toca per parlar', hold: 'Mantén premut per parlar', stop: 'Toca quan acabis',
    release: 'Deixa anar quan acabis', wait: 'Espera…', listening: 'Escoltant…',
    translating: 'Traduint…',
  },
  gl: {
    tap: 'Toca para falar', hold: 'Mantén premido para falar', stop: 'Toca ao rematar',
    release: 'Solta ao rematar', wait: 'Agarda…', listening: 'Escoitando…',
    translating: 'Traducindo…',
  },
  de: {
    tap: 'Tippen zum Sprechen', hold: 'Gedrückt halten zum Sprechen', stop: 'Tippen, wenn fertig',
    release: 'Loslassen, wenn fertig', wait: 'Bitte warten…', listening: 'Ich höre zu…',
    translating: 'Übersetze…',
  },
};

/** Every word for `lang`, English where the language has none of its own. */
export function words(lang) {
  return { ...WORDS.en, ...(WORDS[lang] || {}) };
}

/** The language the words for `lang` are written in (for the element's `lang`). */
export function wordsLang(lang) {
  return WORDS[lang] ? lang : 'en';
}
