// A live caption view, shared by the presenter console and the listener page.
//
// Feed it caption events (docs/protocol.md) with `apply(event)`. One element per segment: a
// draft is shown in place (grey; the part past `stable` in italics) and every later draft or the
// final rewrites that same element, so text never jumps to another line. Finals are marked
// `data-state="final"` and never change again. The view follows the newest caption while the
// reader is at the bottom; scrolling up pauses that and shows the optional "jump to live" button.

const FOLLOW_SLACK_PX = 48;

export class CaptionView {
  /**
   * @param {HTMLElement} container the scrollable element that holds the captions
   * @param {{lang?: string|null, source?: boolean|null, jumpButton?: HTMLElement|null}} options
   *   lang / source: only show events for this language / only source or only translations
   *   (null shows all). jumpButton: shown while the reader has scrolled away from live.
   */
  constructor(container, { lang = null, source = null, jumpButton = null } = {}) {
    this.container = container;
    this.lang = lang;
    this.source = source;
    this.jumpButton = jumpButton;
    this.segments = new Map(); // key -> {element, stable, tail, seq, final}
    this.following = true;
    container.addEventListener('scroll', () => this.#onScroll(), { passive: true });
    if (jumpButton) jumpButton.addEventListener('click', () => this.jumpToLive());
  }

  /** Show captions for another language (the listener's language switch). Clears the view. */
  setLanguage(lang) {
    this.lang = lang;
    this.clear();
  }

  /** Remove every caption. */
  clear() {
    for (const entry of this.segments.values()) entry.element.remove();
    this.segments.clear();
  }

  /**
   * Apply one server event. Returns true when it changed the view (events of other types or
   * languages, stale drafts and repeats of a final are ignored).
   * @param {{type: string, seq: number, segment: number, lang: string, source: boolean,
   *          state: 'draft'|'final', text: string, start: number, end: number, stable?: number}} event
   */
  apply(event) {
    if (!event || event.type !== 'caption') return false;
    if (this.lang !== null && event.lang !== this.lang) return false;
    if (this.source !== null && Boolean(event.source) !== this.source) return false;
    const key = `${event.lang}:${event.segment}`;
    let entry = this.segments.get(key);
    if (entry && (entry.final || (typeof event.seq === 'number' && event.seq <= entry.seq))) {
      return false;
    }
    const final = event.state === 'final';
    const text = (event.text || '').trim();
    if (!text && !final && !entry) return false; // nothing to show yet

    if (!entry) entry = this.#create(key, event, final);
    entry.seq = typeof event.seq === 'number' ? event.seq : entry.seq;
    entry.final = final;
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
      entry.element.remove(); // a segment that turned out to be silence
    }
    this.#afterChange();
    return true;
  }

  /** Final text of every segment shown, in order, one line each. */
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
    const element = document.createElement('p');
    element.className = 'caption';
    element.dataset.state = final ? 'final' : 'draft';
    element.dataset.segment = String(event.segment);
    element.dataset.lang = event.lang;
    if (typeof event.start === 'number') element.dataset.start = String(event.start);
    element.lang = event.lang;
    const stable = document.createElement('span');
    stable.className = 'caption-stable';
    const tail = document.createElement('span');
    tail.className = 'caption-tail';
    element.append(stable, tail);

    for (const placeholder of this.container.querySelectorAll('.captions-empty')) placeholder.remove();
    // Keep segment order even if an event for an earlier segment arrives late.
    const next = [...this.container.querySelectorAll('.caption')].find(
      (other) => other.dataset.lang === event.lang && Number(other.dataset.segment) > event.segment,
    );
    this.container.insertBefore(element, next || null);
    const entry = { element, stable, tail, seq: -Infinity, final: false };
    this.segments.set(key, entry);
    return entry;
  }

  #afterChange() {
    if (this.following) this.container.scrollTop = this.container.scrollHeight;
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
