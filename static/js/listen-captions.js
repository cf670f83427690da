// The listener page's captions (templates/listen.html): the shared subtitle layout
// (./subtitles.js) as a scrolling history in the language the reader chose, and, in the
// bilingual view, the original's newest lines in a small pane above it.
//
// Every caption event the page received is kept (finals, and the newest draft of each open
// segment; bounded), so a switch of language or of view draws the new one at once from what
// is known; the server backfills a newly chosen translation's finals on top (repeats are
// ignored by the layout). Finished captions in the chosen language are announced to screen
// readers once each (the view's live log), never drafts.

import { SubtitleView, newStats } from './subtitles.js';

const KEPT_EVENTS = 5000;
const ORIGINAL_LINES = 2;

export class ListenerCaptions {
  /**
   * @param {{main: HTMLElement, original: HTMLElement, announcer: HTMLElement,
   *          jumpButton: HTMLElement, source: string, maxChars: () => number}} options
   */
  constructor({ main, original, announcer, jumpButton, source, maxChars }) {
    this.mainContainer = main;
    this.originalContainer = original;
    this.announcer = announcer;
    this.jumpButton = jumpButton;
    this.source = source;
    this.maxChars = maxChars;
    this.events = []; // finals, and the newest draft per (lang, segment)
    this.drafts = new Map(); // `${lang}:${segment}` -> index in events
    this.finalsSeen = new Set(); // `${lang}:${segment}:${rev}`
    this.duplicateFinals = 0;
    this.counts = { draft: 0, final: 0 }; // every caption taken, in any language
    this.stats = newStats();
    this.lang = source;
    this.bilingual = false;
    this.main = null;
    this.original = null;
  }

  /** Lay every line out again (the text size or the width changed what fits a line). */
  relayout() {
    const following = this.following;
    if (this.main) this.main.destroy();
    if (this.original) this.original.destroy();
    this.main = null;
    this.original = null;
    this.show(this.lang, this.bilingual, following);
  }

  /** Show `lang` (and, with `bilingual`, the original above a translation). */
  show(lang, bilingual, following = this.following) {
    if (lang !== this.lang || !this.main) {
      this.lang = lang;
      if (this.main) this.main.destroy();
      this.main = new SubtitleView(this.mainContainer, {
        lang,
        maxChars: this.maxChars(),
        visible: Infinity,
        minLineMs: 0,
        scroll: true,
        jumpButton: this.jumpButton,
        announcer: this.announcer,
        stats: this.stats,
      });
      this.#replay(this.main);
    }
    this.bilingual = bilingual;
    const wantOriginal = bilingual && lang !== this.source;
    this.originalContainer.hidden = !wantOriginal;
    if (wantOriginal && !this.original) {
      this.original = new SubtitleView(this.originalContainer, {
        lang: this.source,
        maxChars: this.maxChars(),
        visible: ORIGINAL_LINES,
        minLineMs: 0,
      });
      this.#replay(this.original);
    } else if (!wantOriginal && this.original) {
      this.original.destroy();
      this.original = null;
    }
    // A change of view never moves a reader who was following live away from it.
    if (following) this.main.jumpToLive();
  }

  /**
   * One caption event from the server. Returns 'final', 'draft', 'correction', or null (not
   * this reader's language, a repeat, stale).
   */
  apply(event) {
    if (!event || event.type !== 'caption') return null;
    const receivedAt = performance.now();
    if (event.state === 'final') {
      const key = `${event.lang}:${event.segment}:${Number.isInteger(event.rev) ? event.rev : 0}`;
      if (this.finalsSeen.has(key)) {
        if (event.lang === this.lang) this.duplicateFinals += 1;
        return null;
      }
      this.finalsSeen.add(key);
    }
    this.counts[event.state === 'final' ? 'final' : 'draft'] += 1;
    this.#keep(event);
    if (this.original) this.original.apply(event, receivedAt);
    return this.main ? this.main.apply(event, receivedAt) : null;
  }

  /** Lines drawn in the main view. */
  get lineCount() {
    return this.main ? this.main.elements.size : 0;
  }

  get following() {
    return !this.main || this.main.following;
  }

  jumpToLive() {
    if (this.main) this.main.jumpToLive();
  }

  /** [[segment, text]] of every final in `lang` known to the page, in order received. */
  finals(lang) {
    return this.events
      .filter((e) => e && e.state === 'final' && e.lang === lang && String(e.text || '').trim())
      .map((e) => [e.segment, String(e.text).trim()]);
  }

  /** Source segments covered by the finals in `lang` (a translation's `sources`). */
  covered(lang) {
    const segments = new Set();
    for (const e of this.events) {
      if (!e || e.state !== 'final' || e.lang !== lang) continue;
      const sources = Array.isArray(e.sources) && e.sources.length ? e.sources : [e.segment];
      for (const segment of sources) segments.add(segment);
    }
    return [...segments];
  }

  #keep(event) {
    const key = `${event.lang}:${event.segment}`;
    if (event.state !== 'final') {
      const at = this.drafts.get(key);
      if (at !== undefined) {
        this.events[at] = event;
        return;
      }
      this.drafts.set(key, this.events.length);
    } else {
      const at = this.drafts.get(key);
      if (at !== undefined) this.events[at] = null;
      this.drafts.delete(key);
    }
    this.events.push(event);
    if (this.events.length > KEPT_EVENTS) this.#compact();
  }

  #compact() {
    const kept = this.events.filter(Boolean).slice(-Math.floor(KEPT_EVENTS * 0.8));
    this.events = kept;
    this.drafts.clear();
    kept.forEach((event, index) => {
      if (event.state !== 'final') this.drafts.set(`${event.lang}:${event.segment}`, index);
    });
  }

  #replay(view) {
    const announcer = view.announcer;
    view.announcer = null; // what is replayed was announced already, or is history
    for (const event of this.events) {
      if (event) view.state.apply(event, 0);
    }
    view.announcer = announcer;
    view.render();
    this.events = this.events.filter(Boolean);
    this.drafts.clear();
    this.events.forEach((event, index) => {
      if (event.state !== 'final') this.drafts.set(`${event.lang}:${event.segment}`, index);
    });
  }
}
