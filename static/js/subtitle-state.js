// Subtitle layout, as state: what lines a caption view shows, with no DOM and no clock of its
// own (every call takes `now`, in milliseconds). Shared by the listener page, the venue screen
// and the stream overlay; ./subtitles.js draws it. Tested through real Chromium
// (e2e/test_subtitle_state.py).
//
// Rules (docs/protocol.md for the events):
// - Lines hold at most `maxChars` columns (42 by default: a Latin letter takes one, a kanji,
//   kana or hangul syllable two), a speaker's name label included. A line breaks at a phrase
//   boundary where one is near: after a sentence end, after a comma or colon, before a
//   conjunction or preposition, never right after an article; Japanese and Chinese between
//   words, never before a closing mark (./line-breaks.js); a line is at least half full
//   before it breaks early.
// - Roll-up: finals are laid into lines in the order they arrive; new text enters on the last
//   line and earlier lines move up. Only the last line takes more words, and only words of new
//   finals: a line that has moved up never changes, except by a person's correction (a final
//   with a higher `rev`), which re-lays the lines of that caption and marks them `corrected`.
// - Drafts appear only on the last line: after the last final words if they fit there (their
//   newest words after an ellipsis if that line is less than half full), otherwise on a line
//   of their own holding the newest words of the open segments' drafts (that closes the line
//   above: it takes no more words). A draft never lays a line.
// - A final that would end on a short orphan line ("die.") shares its last two lines more
//   evenly, at a phrase boundary (words already shown never move).
// - A translation final names the source segments it covers (`sources`): it replaces the
//   drafts of all of them, and later drafts of those segments are ignored.
// - `speaker`: a change of speaker starts a new line labelled with the name; `speakerIndex`
//   numbers speakers in the order they first spoke (for a colour).
// - Each line stays on screen at least `minLineMs` (1.5 s) when the view shows `visible`
//   lines: a line that would push one out sooner waits, and `view()` says when to look again.
//   With `visible: Infinity` (a scrolling history) every line shows at once.
// - A view never runs more than `maxLagMs` (10 s) behind: when more lines wait than it can
//   show in that time at `minLineMs` each, the oldest of them are passed over. A screen
//   opened an hour into a session, or back from a dropped connection, gets the session's
//   finals at once; it shows the newest lines within seconds instead of replaying the hour at
//   reading pace. A live burst (a long final lays a few lines) is held as before.

import {
  MAX_CHARS, breakScore, chooseBreak, joinWords, joinedLength, labelLength, newestThatFit, textWidth,
  words,
} from './line-breaks.js';

export const MIN_LINE_MS = 1500;
// Longer than the holds of a live burst (a final of 20 s of fast speech lays six lines).
export const MAX_LAG_MS = 10_000;

/** `text` broken into lines of at most `maxChars` at phrase boundaries (a one-shot layout). */
export function breakLines(text, maxChars = MAX_CHARS) {
  const state = new SubtitleState({ lang: 'x', maxChars, visible: Infinity });
  state.apply({ type: 'caption', lang: 'x', state: 'final', segment: 0, seq: 1, text }, 0);
  return state.view(0).lines.map((line) => line.text);
}

export class SubtitleState {
  /**
   * @param {{lang: string, maxChars?: number, visible?: number, minLineMs?: number,
   *          maxLagMs?: number, keep?: number}} options
   *   lang: the language shown (captions of other languages are ignored). visible: lines on
   *   screen (Infinity: a scrolling history). keep: lines remembered (the oldest go first).
   */
  constructor({
    lang, maxChars = MAX_CHARS, visible = 3, minLineMs = MIN_LINE_MS, maxLagMs = MAX_LAG_MS,
    keep = 1000,
  }) {
    this.lang = lang;
    this.maxChars = Math.max(8, maxChars);
    this.visible = visible;
    this.minLineMs = minLineMs;
    this.maxWaiting = minLineMs > 0 ? Math.max(1, Math.floor(maxLagMs / minLineMs)) : Infinity;
    this.keep = keep;
    this.lines = []; // {id, words: [{w, key}], speaker, label, closed, corrected, revealedAt}
    this.finals = new Map(); // key (the final's segment) -> {text, rev, speaker}
    this.drafts = new Map(); // segment -> {text, seq, speaker}
    this.covered = new Set(); // segments a final covers: their drafts are done
    this.speakers = new Map(); // speaker id -> index, in order of first appearance
    this.nextId = 1;
    this.revealed = 0; // lines[0 .. revealed) have been shown
    this.sealed = { id: null, count: 0 }; // words of a shown line that stay on it
  }

  /** Whether `event` is a caption this view shows. */
  accepts(event) {
    return Boolean(event) && event.type === 'caption' && event.lang === this.lang;
  }

  /**
   * Apply one caption event at time `now`. Returns what changed: 'final', 'correction',
   * 'draft', or null (another language or kind, a repeat, a stale draft, an empty draft).
   */
  apply(event, now) {
    if (!this.accepts(event)) return null;
    const segment = Number(event.segment);
    if (event.state === 'final') return this.#final(event, segment, now);
    return this.#draft(event, segment);
  }

  /**
   * The lines to show at `now`: `lines` in order, each {id, text, draft, label, speaker,
   * speakerIndex, corrected, final, keys (the segments of the finals on it)};
   * `nextChangeAt`: when a held line may show (or null).
   */
  view(now) {
    const { draftText, draftSpeaker, inline } = this.#draftPlacement();
    let nextChangeAt = null;
    if (Number.isFinite(this.visible)) {
      while (this.lines.length - this.revealed > this.maxWaiting) {
        this.lines[this.revealed].revealedAt = -Infinity; // passed over: holds nothing back
        this.revealed += 1;
      }
    }
    while (this.revealed < this.lines.length) {
      const wait = this.#waitFor(this.revealed + 1, now);
      if (wait > now) {
        nextChangeAt = wait;
        break;
      }
      this.lines[this.revealed].revealedAt = now;
      this.revealed += 1;
    }
    if (this.revealed > 0) {
      const last = this.lines[this.revealed - 1];
      this.sealed = { id: last.id, count: last.words.length };
    }
    const shown = this.lines.slice(0, this.revealed).map((line) => this.#present(line, ''));
    const allShown = this.revealed === this.lines.length;
    if (draftText && allShown) {
      if (inline && shown.length > 0) {
        shown[shown.length - 1].draft = draftText;
      } else {
        const wait = this.#waitFor(this.revealed + 1, now);
        if (wait <= now) {
          shown.push({
            id: 'draft',
            text: '',
            draft: draftText,
            label: this.#labelFor(draftSpeaker),
            speaker: draftSpeaker,
            speakerIndex: this.#speakerIndex(draftSpeaker),
            corrected: false,
            final: false,
            keys: [],
          });
        } else if (nextChangeAt === null || wait < nextChangeAt) {
          nextChangeAt = wait;
        }
      }
    }
    const lines = Number.isFinite(this.visible) ? shown.slice(-this.visible) : shown;
    return { lines, nextChangeAt };
  }

  /** Each final as laid, in the order received: [{segment, text, rev}] (for tests and stats). */
  finalTexts() {
    return [...this.finals].map(([segment, final]) => ({ segment, text: final.text, rev: final.rev }));
  }

  // ------------------------------------------------------------------ finals

  #final(event, segment, now) {
    const rev = Number.isInteger(event.rev) ? event.rev : 0;
    const known = this.finals.get(segment);
    if (known && rev <= known.rev) return null; // a repeat (a backfill after a reconnect)
    const sources = Array.isArray(event.sources) && event.sources.length > 0 ? event.sources : [segment];
    for (const covered of [segment, ...sources]) {
      this.covered.add(Number(covered));
      this.drafts.delete(Number(covered));
    }
    const text = String(event.text || '').trim();
    const speaker = event.speaker && event.speaker.id !== undefined ? event.speaker : null;
    this.finals.set(segment, { text, rev, speaker });
    if (known && this.#relay(segment, text, speaker, now)) return 'correction';
    if (text) this.#lay(segment, text, speaker, rev > 0);
    this.#settleDraft();
    this.#forget();
    return rev > 0 ? 'correction' : 'final';
  }

  /** Append a final's words to the last line and below it, breaking as the rules say. */
  #lay(key, text, speaker, corrected) {
    let line = this.lines[this.lines.length - 1];
    let sealed = line && line.id === this.sealed.id ? this.sealed.count : 0;
    if (!line || line.closed || !this.#sameSpeaker(line.speaker, speaker)) {
      if (line) line.closed = true;
      line = this.#newLine(speaker, corrected, line ? line.speaker : undefined);
      sealed = 0;
    }
    let previous = null; // the line before `line` laid by this call, and its fixed words
    let previousFixed = 0;
    for (const w of words(text, this.maxChars)) {
      const token = { w, key };
      const length = labelLength(line) + joinedLength([...line.words, token]);
      if (line.words.length === 0 || length <= this.maxChars) {
        line.words.push(token);
        continue;
      }
      const keep = chooseBreak(line.words, w, sealed, this.maxChars, labelLength(line));
      const moved = line.words.splice(keep);
      line.closed = true;
      previous = line;
      previousFixed = sealed;
      line = this.#newLine(speaker, corrected, speaker);
      line.words.push(...moved, token);
      sealed = 0;
    }
    if (previous) this.#balance(previous, previousFixed, line);
    if (corrected) line.corrected = true;
  }

  /**
   * The last two lines a final laid, when the last is short (an orphan such as "die."): move
   * words down from the line above (none it showed already) so both read as phrases of
   * similar length. Neither line has been shown with these words yet.
   */
  #balance(upper, fixed, lower) {
    const length = (list) => joinedLength(list);
    if (labelLength(lower) + length(lower.words) >= this.maxChars / 3) return;
    const pool = [...upper.words.slice(fixed), ...lower.words];
    const head = upper.words.slice(0, fixed);
    let best = null;
    for (let keep = 1; keep < pool.length; keep += 1) {
      const top = [...head, ...pool.slice(0, keep)];
      const bottom = pool.slice(keep);
      const topLength = labelLength(upper) + length(top);
      const bottomLength = labelLength(lower) + length(bottom);
      if (topLength > this.maxChars || bottomLength > this.maxChars) continue;
      const score = breakScore(pool[keep - 1].w, pool[keep].w);
      if (score === 0) continue;
      const cost = Math.max(topLength, bottomLength) - 4 * score;
      if (best === null || cost < best.cost) best = { cost, keep };
    }
    if (best === null) return;
    upper.words = [...head, ...pool.slice(0, best.keep)];
    lower.words = pool.slice(best.keep);
  }

  /**
   * A correction of final `key`: re-lay the lines holding it, in place, marked corrected.
   * Returns false when no line holds it (it is laid as a new final instead).
   */
  #relay(key, text, speaker, now) {
    const first = this.lines.findIndex((line) => line.words.some((t) => t.key === key));
    if (first < 0) return false;
    let last = first;
    while (last + 1 < this.lines.length && this.lines[last + 1].words.some((t) => t.key === key)) {
      last += 1;
    }
    const range = this.lines.slice(first, last + 1);
    const held = range.flatMap((line) => line.words);
    const from = held.findIndex((t) => t.key === key);
    const to = held.length - [...held].reverse().findIndex((t) => t.key === key);
    const replacement = words(text, this.maxChars).map((w) => ({ w, key }));
    const tokens = [...held.slice(0, from), ...replacement, ...held.slice(to)];
    const wasOpen = last === this.lines.length - 1 && !range[range.length - 1].closed;
    const revealedAt = range[0].revealedAt ?? now;
    const relaid = tokens.length > 0 ? this.#layTokens(tokens, range[0], speaker) : [];
    for (const line of relaid) {
      line.corrected = true;
      line.revealedAt = revealedAt;
      line.closed = true;
    }
    if (wasOpen && relaid.length > 0) relaid[relaid.length - 1].closed = false;
    this.lines.splice(first, range.length, ...relaid);
    const shift = relaid.length - range.length;
    if (this.revealed > last) this.revealed += shift;
    else if (this.revealed > first) this.revealed = first + relaid.length;
    this.sealed = { id: null, count: 0 };
    return true;
  }

  /** Lines for `tokens` from scratch (a correction), the first line like `template`. */
  #layTokens(tokens, template, speaker) {
    const lines = [];
    let line = this.#makeLine(template.speaker ?? speaker, template.label);
    lines.push(line);
    for (const token of tokens) {
      const length = labelLength(line) + joinedLength([...line.words, token]);
      if (line.words.length === 0 || length <= this.maxChars) {
        line.words.push(token);
        continue;
      }
      const keep = chooseBreak(line.words, token.w, 0, this.maxChars, labelLength(line));
      const moved = line.words.splice(keep);
      line = this.#makeLine(line.speaker, null);
      line.words.push(...moved, token);
      lines.push(line);
    }
    return lines;
  }

  #newLine(speaker, corrected, previousSpeaker) {
    const changed = previousSpeaker === undefined
      ? speaker !== null
      : !this.#sameSpeaker(previousSpeaker, speaker);
    const line = this.#makeLine(speaker, changed && speaker ? speaker.name : null);
    line.corrected = corrected;
    this.lines.push(line);
    return line;
  }

  #makeLine(speaker, label) {
    if (speaker) this.#speakerIndex(speaker);
    const id = this.nextId;
    this.nextId += 1;
    return { id, words: [], speaker, label: label || null, closed: false, corrected: false, revealedAt: null };
  }

  #sameSpeaker(a, b) {
    return (a ? a.id : null) === (b ? b.id : null);
  }

  #speakerIndex(speaker) {
    if (!speaker) return null;
    if (!this.speakers.has(speaker.id)) this.speakers.set(speaker.id, this.speakers.size);
    return this.speakers.get(speaker.id);
  }

  #labelFor(speaker) {
    const last = this.lines[this.lines.length - 1];
    if (!speaker) return null;
    return last && this.#sameSpeaker(last.speaker, speaker) ? null : speaker.name;
  }

  /** Drop the oldest lines past `keep` (they have long left any screen). */
  #forget() {
    const extra = this.lines.length - this.keep;
    if (extra <= 0) return;
    this.lines.splice(0, extra);
    this.revealed = Math.max(0, this.revealed - extra);
  }

  // ------------------------------------------------------------------ drafts

  #draft(event, segment) {
    if (this.covered.has(segment)) return null;
    const previous = this.drafts.get(segment);
    const seq = typeof event.seq === 'number' ? event.seq : -Infinity;
    if (previous && seq <= previous.seq) return null;
    const text = String(event.text || '').trim();
    const speaker = event.speaker && event.speaker.id !== undefined ? event.speaker : null;
    if (!text) {
      if (!previous) return null;
      this.drafts.delete(segment);
    } else {
      this.drafts.set(segment, { text, seq, speaker });
    }
    this.#settleDraft();
    return 'draft';
  }

  /** The open segments' drafts as one text, in segment order, and who is speaking. */
  #draftText() {
    const open = [...this.drafts.entries()].sort((a, b) => a[0] - b[0]);
    if (open.length === 0) return { text: '', speaker: null };
    return {
      text: joinWords(open.map(([, d]) => d.text)),
      speaker: open[open.length - 1][1].speaker,
    };
  }

  /** Where the draft goes: after the last line's words if it fits there, else a line of its
   * own showing its newest words that fit. */
  #draftPlacement() {
    const { text, speaker } = this.#draftText();
    if (!text) return { draftText: '', draftSpeaker: null, inline: false };
    const last = this.lines[this.lines.length - 1];
    const tokens = words(text, this.maxChars).map((w) => ({ w }));
    if (last && !last.closed && this.#sameSpeaker(last.speaker, speaker)) {
      const used = labelLength(last) + joinedLength(last.words);
      if (used + 1 + joinedLength(tokens) <= this.maxChars) {
        return { draftText: text, draftSpeaker: speaker, inline: true };
      }
      // A line less than half full keeps taking words: the draft's newest words that fit
      // show after its final words (after an ellipsis), rather than closing it this short.
      const room = this.maxChars - used - 3; // a space, "…" and a space
      if (used < this.maxChars / 2 && room >= 8) {
        const newest = newestThatFit(tokens, room);
        if (newest) return { draftText: `… ${newest}`, draftSpeaker: speaker, inline: true };
      }
    }
    const label = this.#labelFor(speaker);
    const room = this.maxChars - (label ? textWidth(label) + 2 : 0);
    return { draftText: newestThatFit(tokens, room), draftSpeaker: speaker, inline: false };
  }

  /** A draft that needs a line of its own closes the line above it (it takes no more words). */
  #settleDraft() {
    const last = this.lines[this.lines.length - 1];
    if (!last || last.closed) return;
    const placement = this.#draftPlacement();
    if (placement.draftText && !placement.inline) last.closed = true;
  }

  // ------------------------------------------------------------------ timing

  /** When lines[0 .. count) plus nothing else may show without pushing a line out early. */
  #waitFor(count, now) {
    if (!Number.isFinite(this.visible)) return now;
    const leaving = count - this.visible - 1; // the line this would push off the top
    if (leaving < 0) return now;
    const line = this.lines[leaving];
    if (!line || line.revealedAt === null) return now;
    return line.revealedAt + this.minLineMs;
  }

  #present(line, draft) {
    return {
      id: line.id,
      text: joinWords(line.words.map((t) => t.w)),
      draft,
      label: line.label,
      speaker: line.speaker,
      speakerIndex: this.#speakerIndex(line.speaker),
      corrected: line.corrected,
      final: true,
      keys: [...new Set(line.words.map((t) => t.key))],
    };
  }
}
