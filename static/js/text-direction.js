// Which way a language's text runs. An element showing words in a known language (a caption,
// a traveller's turn, a question) says so with `lang` and `dir`: text in a language written
// right to left (Arabic, Hebrew, Persian, Urdu, and others a user's translation model may
// write) runs from the right edge, its punctuation where its readers expect it; everything
// else runs left to right. Text whose language is not known finds its own way (`dir=auto`).

const RIGHT_TO_LEFT = new Set([
  'ar', 'arc', 'ckb', 'dv', 'fa', 'he', 'iw', 'ks', 'ps', 'sd', 'syr', 'ug', 'ur', 'yi',
]);

/** 'rtl' or 'ltr' for a language code ('ar', 'ar-EG', 'fa_AF'); 'auto' for none. */
export function directionOf(lang) {
  const primary = String(lang || '').toLowerCase().split(/[-_]/u)[0];
  if (!primary) return 'auto';
  return RIGHT_TO_LEFT.has(primary) ? 'rtl' : 'ltr';
}

/** Mark `element` as holding text in `lang` (none: not known). */
export function markLanguage(element, lang) {
  element.lang = lang || '';
  element.dir = directionOf(lang);
}
