// Draws a subtitle state (./subtitle-state.js) into the page: the listener page, the venue
// screen, the stream overlay and the console's preview all use it.
//
// Each line is one element, `<p class="caption-line">`: the documented hook for custom CSS in
// OBS (README, "At an event"; docs/protocol.md, "Additions for events"). Inside it: `.caption-speaker` (a speaker's name, on a change
// of speaker), `.caption-text` (final words) and `.caption-draft` (words still being
// recognised, only ever on the last line). Attributes: `data-state` (`final`, `draft` when the
// line holds only a draft), `data-corrected` (a person corrected it), `data-speaker` (0, 1, ...
// for a colour). Screen readers hear each finished caption once, as a new paragraph of an
// `aria-live` log (`announcer`), never a draft; the lines themselves are hidden from them
// (except a history the reader scrolls, which they may browse; it is never live).
//
// `stats` (exposed by the pages as `window.interpSubtitles`) measures what docs/metrics.md,
// "Subtitles", reports: the time from a final reaching the page to its first line drawn (the
// animation frame after the DOM change), lines whose text changed after they moved up (other
// than corrections), and the longest line drawn.

import { joinWords, spaced, textWidth } from './line-breaks.js';
import { setText } from './set-text.js';
import { SubtitleState } from './subtitle-state.js';
import { markLanguage } from './text-direction.js';

const FOLLOW_SLACK_PX = 48;
const ANNOUNCED_KEPT = 30;
const DRAW_TIMES_KEPT = 5000;

export class SubtitleView {
  /**
   * @param {HTMLElement} container where the lines go
   * @param {{lang: string, maxChars?: number, visible?: number, minLineMs?: number,
   *          announcer?: HTMLElement|null, scroll?: boolean, jumpButton?: HTMLElement|null,
   *          stats?: object}} options
   *   visible: lines on screen (Infinity with `scroll`: a history the reader can scroll back
   *   through, following the newest line unless they scrolled away). announcer: the live
   *   region finished captions are read from (null: this view announces nothing). hidden:
   *   the lines are hidden from screen readers (by default, unless it is a history they may
   *   browse; either way only the announcer speaks).
   */
  constructor(container, {
    lang, maxChars, visible = 3, minLineMs, announcer = null, scroll = false,
    jumpButton = null, stats = null, hidden = !scroll,
  }) {
    this.container = container;
    this.state = new SubtitleState({ lang, maxChars, visible, minLineMs });
    this.announcer = announcer;
    this.scroll = scroll;
    this.jumpButton = jumpButton;
    this.following = true;
    this.elements = new Map(); // line id -> element
    this.frozen = new Map(); // line id -> its text once it was no longer the last line
    this.pending = new Map(); // final key -> when it reached the page (performance.now)
    this.timer = null;
    this.frame = null; // the animation frame that will draw what apply() took
    this.stats = stats || newStats();
    container.classList.add('subtitles');
    if (hidden) container.setAttribute('aria-hidden', 'true');
    markLanguage(container, lang);
    if (scroll) {
      container.addEventListener('scroll', () => this.#onScroll(), { passive: true });
      if (jumpButton) jumpButton.addEventListener('click', () => this.jumpToLive());
      if ('ResizeObserver' in window) {
        new ResizeObserver(() => {
          if (this.following) this.container.scrollTop = this.container.scrollHeight;
        }).observe(container);
      }
    }
  }

  get lang() {
    return this.state.lang;
  }

  /** Apply one server event; draws it in the next animation frame, with every other event
   * taken before that frame (a late joiner's backfill of an hour's lines is drawn once, not
   * once per line: drawing the whole history each time grew with the square of the lines).
   * Returns what changed (see SubtitleState.apply). */
  apply(event, receivedAt = performance.now()) {
    const kind = this.state.apply(event, receivedAt);
    if (kind === null) return null;
    if (kind === 'final' || kind === 'correction') {
      this.stats.finals += 1;
      if (String(event.text || '').trim()) this.pending.set(Number(event.segment), receivedAt);
      this.#announce(String(event.text || '').trim(), kind === 'correction');
    } else {
      this.stats.drafts += 1;
    }
    if (this.frame === null) {
      this.frame = window.requestAnimationFrame(() => {
        this.frame = null;
        this.render();
      });
    }
    return kind;
  }

  /** Draw the state's lines as of now; a held line schedules the next draw. */
  render() {
    window.clearTimeout(this.timer);
    this.timer = null;
    window.cancelAnimationFrame(this.frame);
    this.frame = null;
    const now = performance.now();
    const { lines, nextChangeAt } = this.state.view(now);
    this.#draw(lines);
    if (nextChangeAt !== null) {
      this.timer = window.setTimeout(() => this.render(), Math.max(0, nextChangeAt - now));
    }
    this.#measure(lines, now);
    if (this.scroll && this.following) this.container.scrollTop = this.container.scrollHeight;
    this.#updateJumpButton();
  }

  /** Scroll to the newest line and follow it again. */
  jumpToLive() {
    this.following = true;
    this.container.scrollTop = this.container.scrollHeight;
    this.#updateJumpButton();
  }

  /** The final text of every caption, in the order laid (for tests and stats). */
  finalTexts() {
    return this.state.finalTexts();
  }

  /** Remove every line and stop (the view is replaced, e.g. on a language switch). */
  destroy() {
    window.clearTimeout(this.timer);
    window.cancelAnimationFrame(this.frame);
    this.frame = null;
    for (const element of this.elements.values()) element.remove();
    this.elements.clear();
  }

  #draw(lines) {
    const keep = new Set(lines.map((line) => String(line.id)));
    for (const [id, element] of this.elements) {
      if (!keep.has(id)) {
        element.remove();
        this.elements.delete(id);
      }
    }
    let previous = null;
    lines.forEach((line, index) => {
      const id = String(line.id);
      let element = this.elements.get(id);
      if (!element) {
        element = createLine();
        this.elements.set(id, element);
      }
      updateLine(element, line);
      const wanted = previous ? previous.nextSibling : this.container.firstChild;
      if (element !== wanted) this.container.insertBefore(element, wanted);
      previous = element;
      if (index < lines.length - 1 && line.final) this.#checkFrozen(line);
    });
  }

  /** A line no longer last keeps its text, unless a person corrected it. */
  #checkFrozen(line) {
    const text = lineText(line);
    const before = this.frozen.get(line.id);
    if (before !== undefined && before !== text && !line.corrected) this.stats.changedAfterScroll += 1;
    this.frozen.set(line.id, text);
    if (this.frozen.size > 2000) this.frozen.delete(this.frozen.keys().next().value);
  }

  #measure(lines, now) {
    for (const line of lines) {
      const length = textWidth(lineText(line));
      if (length > this.stats.longestLine) {
        this.stats.longestLine = length;
        this.stats.longestText = lineText(line);
      }
    }
    if (this.pending.size === 0) return;
    const drawn = [];
    for (const line of lines) {
      for (const key of line.keys || []) {
        if (this.pending.has(key)) drawn.push([key, this.pending.get(key)]);
      }
    }
    if (drawn.length === 0) return;
    for (const [key] of drawn) this.pending.delete(key);
    const domAt = now;
    window.requestAnimationFrame(() => {
      const frameAt = performance.now();
      for (const [, receivedAt] of drawn) {
        this.stats.drawMs.push(Math.max(0, frameAt - receivedAt));
        this.stats.domMs.push(Math.max(0, domAt - receivedAt));
      }
      if (this.stats.drawMs.length > DRAW_TIMES_KEPT) this.stats.drawMs.splice(0, 1000);
      if (this.stats.domMs.length > DRAW_TIMES_KEPT) this.stats.domMs.splice(0, 1000);
    });
  }

  #announce(text, corrected) {
    if (!this.announcer || !text) return;
    const item = document.createElement('p');
    item.textContent = corrected ? `Correction: ${text}` : text;
    this.announcer.append(item);
    this.stats.announced += 1;
    while (this.announcer.childElementCount > ANNOUNCED_KEPT) this.announcer.firstElementChild.remove();
  }

  #onScroll() {
    const { scrollTop, scrollHeight, clientHeight } = this.container;
    this.following = scrollHeight - scrollTop - clientHeight <= FOLLOW_SLACK_PX;
    this.#updateJumpButton();
  }

  #updateJumpButton() {
    if (this.jumpButton) this.jumpButton.hidden = !this.scroll || this.following;
  }
}

/** Counters of a view (see the header). */
export function newStats() {
  return {
    finals: 0, drafts: 0, announced: 0, changedAfterScroll: 0, longestLine: 0, longestText: '',
    drawMs: [], domMs: [],
  };
}

function lineText(line) {
  const words = [line.label ? `${line.label}:` : '', line.text, line.draft].filter(Boolean);
  return joinWords(words);
}

function createLine() {
  const element = document.createElement('p');
  element.className = 'caption-line';
  const speaker = document.createElement('span');
  speaker.className = 'caption-speaker';
  const text = document.createElement('span');
  text.className = 'caption-text';
  const draft = document.createElement('span');
  draft.className = 'caption-draft';
  element.append(speaker, text, draft);
  return element;
}

function updateLine(element, line) {
  const [speaker, text, draft] = element.children;
  setText(speaker, line.label || '');
  speaker.hidden = !line.label;
  setText(text, line.text);
  setText(draft, line.text && line.draft && spaced(line.text, line.draft) ? ` ${line.draft}` : line.draft);
  const state = line.text ? 'final' : 'draft';
  if (element.dataset.state !== state) element.dataset.state = state;
  if (line.corrected) {
    element.dataset.corrected = '';
    element.title = 'Corrected';
  } else if ('corrected' in element.dataset) {
    delete element.dataset.corrected;
    element.removeAttribute('title');
  }
  if (line.speakerIndex === null || line.speakerIndex === undefined) delete element.dataset.speaker;
  else element.dataset.speaker = String(line.speakerIndex % 4);
}
