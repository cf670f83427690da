// The editor's state, apart from its drawing (static/js/edit-panel.js draws it): the source
// finals of a session as they arrive, which line is selected and which one is being fixed,
// and what a fix taught. Pure: no DOM, no network; tests drive it with scripted events.
//
// A line is a source final (docs/protocol.md). A correction is a new final of the same
// segment with a higher `rev`; of equal revisions the later `seq` wins (last write wins).
// Lines stand where their first final came (its `seq`), as in the transcripts: segment
// numbers are unique but not in spoken order across the processes of a shared server.

/** Whether caption `a` replaces caption `b` as the text of its line. */
export function isNewer(a, b) {
  const revA = a.rev || 0;
  const revB = b.rev || 0;
  if (revA !== revB) return revA > revB;
  return (a.seq || 0) > (b.seq || 0);
}

const WORD = /[\p{L}\p{N}'’-]+/gu;

/** Words of `after` that `before` did not have (a fixed capital counts), each once. */
export function changedWords(before, after) {
  const old = new Set(before.match(WORD) || []);
  const seen = [];
  for (const word of after.match(WORD) || []) {
    if (!old.has(word) && !seen.includes(word)) seen.push(word);
  }
  return seen;
}

/** The words of a fix worth offering as terms: names, numbers, anything not all lower case
 * or longer than three letters. */
export function termCandidates(before, after) {
  return changedWords(before, after).filter(
    (word) => /\p{Lu}|\p{N}/u.test(word) || word.length > 3,
  );
}

/**
 * A pasted term list, as the API takes it: one term a line, or separated by commas or
 * semicolons; a line `churn = es: bajas, fr: attrition` gives translations.
 * @returns {Array<string|{text: string, translations: Object<string, string>}>}
 */
export function parseTerms(text) {
  const terms = [];
  const seen = new Set();
  const add = (term) => {
    const key = (typeof term === 'string' ? term : term.text).toLocaleLowerCase();
    if (!key || seen.has(key)) return;
    seen.add(key);
    terms.push(term);
  };
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line) continue;
    if (line.includes('=')) {
      const [source, rest] = [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)];
      const translations = {};
      for (const pair of rest.split(/[,;]/)) {
        const colon = pair.indexOf(':');
        if (colon < 0) continue;
        const lang = pair.slice(0, colon).trim();
        const target = pair.slice(colon + 1).trim();
        if (lang && target) translations[lang] = target;
      }
      const name = source.trim().replace(/\s+/g, ' ');
      if (name) add(Object.keys(translations).length ? { text: name, translations } : name);
    } else {
      for (const part of line.split(/[,;]/)) {
        const name = part.trim().replace(/\s+/g, ' ');
        if (name) add(name);
      }
    }
  }
  return terms;
}

/** A term list as a person pastes it (the inverse of parseTerms). */
export function formatTerms(terms) {
  return terms
    .map((term) => {
      if (typeof term === 'string') return term;
      const pairs = Object.entries(term.translations || {}).map(([lang, text]) => `${lang}: ${text}`);
      return pairs.length ? `${term.text} = ${pairs.join(', ')}` : term.text;
    })
    .join('\n');
}

export class EditState {
  constructor() {
    this.lines = new Map(); // segment -> {segment, lang, text, rev, seq, first, start, end}
    this.selected = null; // segment
    this.editing = null; // segment being fixed
    this.terms = [];
  }

  /**
   * Take one server event. Returns the segment whose line changed (a new final, or a
   * correction by anyone), 'terms' when the term list changed, or null.
   */
  apply(event) {
    if (!event) return null;
    if (event.type === 'terms' && Array.isArray(event.terms)) {
      this.terms = event.terms;
      return 'terms';
    }
    if (event.type !== 'caption' || !event.source || event.state !== 'final') return null;
    const current = this.lines.get(event.segment);
    if (current && !isNewer(event, current)) return null;
    this.lines.set(event.segment, {
      segment: event.segment,
      lang: event.lang,
      text: event.text || '',
      rev: event.rev || 0,
      seq: event.seq || 0,
      first: current ? current.first : event.seq || 0, // where the line stands
      start: event.start,
      end: event.end,
    });
    if (this.selected === null) this.selected = event.segment;
    return event.segment;
  }

  /** Segments in the order their lines stand (their first finals' `seq`). */
  order() {
    return [...this.lines.values()].sort((a, b) => a.first - b.first).map((line) => line.segment);
  }

  select(segment) {
    if (this.lines.has(segment)) this.selected = segment;
    return this.selected;
  }

  /** Move the selection `delta` lines (clamped); returns the selected segment. */
  move(delta) {
    const order = this.order();
    if (order.length === 0) return null;
    const at = order.indexOf(this.selected);
    const next = at < 0 ? order.length - 1 : Math.min(order.length - 1, Math.max(0, at + delta));
    this.selected = order[next];
    return this.selected;
  }

  /** Start fixing the selected line (or `segment`); returns its text. */
  begin(segment = this.selected) {
    if (!this.lines.has(segment)) return null;
    this.selected = segment;
    this.editing = segment;
    return this.lines.get(segment).text;
  }

  cancel() {
    this.editing = null;
  }

  /**
   * Finish the fix with `text`: null when nothing changed (nothing to send), otherwise what
   * to send and the words worth offering as terms.
   */
  finish(text) {
    const segment = this.editing;
    this.editing = null;
    if (segment === null) return null;
    const line = this.lines.get(segment);
    const fixed = text.replace(/\s+/g, ' ').trim();
    if (!line || fixed === line.text) return null;
    const known = new Set(this.terms.map((t) => (typeof t === 'string' ? t : t.text).toLocaleLowerCase()));
    const offers = termCandidates(line.text, fixed).filter((w) => !known.has(w.toLocaleLowerCase()));
    return { segment, text: fixed, offers };
  }

  /** The term list with `word` added (unless it is there already, in any case). */
  withTerm(word) {
    const known = this.terms.some(
      (t) => (typeof t === 'string' ? t : t.text).toLocaleLowerCase() === word.toLocaleLowerCase(),
    );
    return known ? this.terms : [...this.terms, word];
  }
}
