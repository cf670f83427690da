// A live caption view, shared by the presenter console and the listener page.
//
// Feed it caption events (docs/protocol.md) with `apply(event)`. One row per segment
// (`.caption-row`), holding one line per language (`p.caption`): the source line first, then the
// translation into the chosen language, if any. A draft is shown in place (grey; the part past
// `stable` in italics) and every later draft or the final rewrites that same line, so text never
// jumps to another line. Finals are marked `data-state="final"` and change only by a person's
// correction (a final with a higher `rev`), which replaces the line in place, marked
// `data-rev`. A row
// that holds a translation is marked `data-translated`; the stylesheet decides whether the source
// line above it shows (bilingual view) or not. The view follows the newest caption while the
// reader is at the bottom; scrolling up pauses that and shows the optional "jump to live" button.

import { markLanguage } from './text-direction.js';

const FOLLOW_SLACK_PX = 48;

export class CaptionView {
  /**
   * @param {HTMLElement} container the scrollable element that holds the captions
   * @param {{lang?: string|null, source?: boolean|null, translation?: string|null,
   *          jumpButton?: HTMLElement|null}} options
   *   lang / source: only show events for this language / only source or only translations
   *   (null shows all). translation: the one language whose translations are shown (defaults to
   *   `lang`; translations into other languages are ignored). jumpButton: shown while the reader
   *   has scrolled away from live.
   */
  constructor(container, { lang = null, source = null, translation = null, jumpButton = null } = {}) {
    this.container = container;
    this.lang = lang;
    this.source = source;
    this.translation = translation ?? lang;
    this.jumpButton = jumpButton;
    this.lines = new Map(); // key -> {element, row, stable, tail, seq, final}
    this.rows = new Map(); // segment -> row element
    this.lastSegment = -Infinity; // the newest segment with a row (rows are in segment order)
    this.following = true;
    this.scrollFrame = null; // the animation frame that will scroll to the newest line
    container.addEventListener('scroll', () => this.#onScroll(), { passive: true });
    // The box itself can shrink or grow (text size, a rotated phone, a banner appearing): stay
    // on the newest line if the reader was following it.
    if ('ResizeObserver' in window) {
      new ResizeObserver(() => {
        if (this.following) this.container.scrollTop = this.container.scrollHeight;
      }).observe(container);
    }
    if (jumpButton) jumpButton.addEventListener('click', () => this.jumpToLive());
  }

  /**
   * Show translations into `lang` (null: none) from now on. Lines of the previous translation
   * are removed; source lines stay. The server backfills the new language's finals.
   */
  setTranslation(lang) {
    if (lang === this.translation) return;
    this.translation = lang;
    for (const [key, entry] of this.lines) {
      if (!key.startsWith('t:')) continue;
      this.#removeLine(key, entry);
    }
    this.#afterChange();
  }

  /** Remove every caption. */
  clear() {
    for (const row of this.rows.values()) row.remove();
    this.rows.clear();
    this.lines.clear();
    this.lastSegment = -Infinity;
  }

  /**
   * Apply one server event. Returns true when it changed the view (events of other types or
   * languages, stale drafts and repeats of a final are ignored).
   * @param {{type: string, seq: number, segment: number, lang: string, source: boolean,
   *          state: 'draft'|'final', text: string, start: number, end: number, stable?: number}} event
   */
  apply(event) {
    if (!this.accepts(event)) return false;
    const key = CaptionView.key(event);
    let entry = this.lines.get(key);
    if (entry && entry.final && !CaptionView.corrects(event, entry)) return false;
    if (entry && !entry.final && typeof event.seq === 'number' && event.seq <= entry.seq) {
      return false;
    }
    const final = event.state === 'final';
    const text = (event.text || '').trim();
    if (!text && !entry) return false; // nothing to show (yet), or a segment that was silence

    if (!entry) entry = this.#create(key, event, final);
    entry.seq = typeof event.seq === 'number' ? event.seq : entry.seq;
    entry.final = final;
    entry.rev = event.rev || 0;
    if (entry.rev > 0) entry.element.dataset.rev = String(entry.rev);
    const state = final ? 'final' : 'draft';
    if (entry.element.dataset.state !== state) entry.element.dataset.state = state;
    if (typeof event.end === 'number') entry.element.dataset.end = String(event.end);

    let stableLength = text.length;
    if (!final) {
      stableLength = Number.isInteger(event.stable) ? Math.min(Math.max(event.stable, 0), text.length) : 0;
    }
    entry.stable.textContent = text.slice(0, stableLength);
    entry.tail.textContent = text.slice(stableLength);
    if (final && !text) {
      // A segment that turned out to be silence; remember it as final so repeats stay ignored.
      entry.element.remove();
      this.#dropEmptyRow(entry.row);
    }
    this.#afterChange();
    return true;
  }

  /** Whether `event` is a caption this view shows (its language and kind). */
  accepts(event) {
    if (!event || event.type !== 'caption') return false;
    if (this.lang !== null && event.lang !== this.lang) return false;
    if (this.source !== null && Boolean(event.source) !== this.source) return false;
    if (!event.source && event.lang !== this.translation) return false;
    return true;
  }

  /** Whether final `event` is a correction of the line `entry` shows (a higher `rev`; of
   * equal ones, the later `seq`). */
  static corrects(event, entry) {
    if (event.state !== 'final') return false;
    const rev = event.rev || 0;
    if (rev !== (entry.rev || 0)) return rev > (entry.rev || 0);
    return rev > 0 && typeof event.seq === 'number' && event.seq > entry.seq;
  }

  /** The identity of a caption line: source or translation, language, segment. */
  static key(event) {
    return `${event.source ? 's' : 't'}:${event.lang}:${event.segment}`;
  }

  /** Final text of every line shown, in order, one line each. */
  get finalText() {
    return [...this.container.querySelectorAll('.caption[data-state="final"]')]
      .map((element) => element.textContent.trim())
      .filter(Boolean)
      .join('\n');
  }

  /** Scroll to the newest caption and follow it again. */
  jumpToLive() {
    this.following = true;
    this.container.scrollTop = this.container.scrollHeight;
    this.#updateJumpButton();
  }

  #create(key, event, final) {
    const row = this.#row(event.segment);
    const element = document.createElement('p');
    element.className = event.source ? 'caption caption-source' : 'caption caption-translation';
    element.dataset.state = final ? 'final' : 'draft';
    element.dataset.segment = String(event.segment);
    element.dataset.lang = event.lang;
    if (typeof event.start === 'number') element.dataset.start = String(event.start);
    markLanguage(element, event.lang);
    const stable = document.createElement('span');
    stable.className = 'caption-stable';
    const tail = document.createElement('span');
    tail.className = 'caption-tail';
    element.append(stable, tail);
    // The source line sits above its translation.
    if (event.source) row.prepend(element);
    else {
      row.append(element);
      row.dataset.translated = '';
    }
    const entry = { element, row, stable, tail, seq: -Infinity, final: false, rev: 0 };
    this.lines.set(key, entry);
    return entry;
  }

  #row(segment) {
    const existing = this.rows.get(segment);
    if (existing) return existing;
    if (this.rows.size === 0) {
      for (const placeholder of this.container.querySelectorAll('.captions-empty')) placeholder.remove();
    }
    const row = document.createElement('div');
    row.className = 'caption-row';
    row.dataset.segment = String(segment);
    // Keep segment order even if an event for an earlier segment arrives late; the newest
    // segment (nearly always, and every line of a backfill) goes last without a search.
    let next = null;
    if (segment < this.lastSegment) {
      for (const [other, element] of this.rows) {
        if (other > segment && (next === null || other < Number(next.dataset.segment))) next = element;
      }
    }
    this.lastSegment = Math.max(this.lastSegment, segment);
    // Inserted empty, then filled: observers see the caption line itself being added.
    this.container.insertBefore(row, next);
    this.rows.set(segment, row);
    return row;
  }

  #removeLine(key, entry) {
    entry.element.remove();
    this.lines.delete(key);
    if (!entry.row.querySelector('.caption-translation')) delete entry.row.dataset.translated;
    this.#dropEmptyRow(entry.row);
  }

  #dropEmptyRow(row) {
    if (row.childElementCount > 0) return;
    row.remove();
    const segment = Number(row.dataset.segment);
    if (this.rows.get(segment) === row) this.rows.delete(segment);
  }

  #afterChange() {
    // Scrolled once per frame: reading scrollHeight lays the page out, and a backfill of an
    // hour's lines laid it out once per line (the time grew with the square of the lines).
    if (this.following && this.scrollFrame === null) {
      this.scrollFrame = window.requestAnimationFrame(() => {
        this.scrollFrame = null;
        if (this.following) this.container.scrollTop = this.container.scrollHeight;
      });
    }
    this.#updateJumpButton();
  }

  #onScroll() {
    const { scrollTop, scrollHeight, clientHeight } = this.container;
    this.following = scrollHeight - scrollTop - clientHeight <= FOLLOW_SLACK_PX;
    this.#updateJumpButton();
  }

  #updateJumpButton() {
    if (this.jumpButton) this.jumpButton.hidden = this.following;
  }
}
