// A traveller-mode conversation, as state: its turns, which turn each caption's segment belongs
// to, and each turn's text and translation. No DOM, no sockets and no clock of its own (what
// stamps a time takes `now`). ./talk.js and ./talk-turns.js drive it, ./talk-view.js draws it;
// the spoken translation held while someone talks is ./talk-audio-state.js. Tested through real
// Chromium (e2e/test_talk_state.py).
//
// Rules (docs/protocol.md for the events):
// - Turns and segments: the server numbers segments in order across streams, so a turn owns the
//   segments numbered from one past the highest seen when its stream opened (`open`, which the
//   page calls only once the previous stream has ended, when all its segments are known).
// - A caption the presenter socket replays (a segment from before the turn) belongs to no turn
//   there: the listener sockets bring it.
// - Segments nobody on this page spoke (the history backfilled on load, or a second phone in the
//   same conversation) become turns of their own, by language: consecutive segments in one
//   language join one turn.
// - A caption repeated (a sequence number not above the last, or anything after a final) changes
//   nothing; a "translation" into the turn's own language is not one here.
// - A translation final covers its whole sentence (`sources`): it replaces the drafts of every
//   segment it covers, and its text stays on its first segment.
// - A turn spoken with automatic detection takes the language of its first source caption.

/** Whether a turn is being spoken on this page now (its stream not yet ended). */
export function isOpen(turn) {
  return turn.live && (turn.state === 'connecting' || turn.state === 'recording'
    || turn.state === 'finishing');
}

export class Conversation {
  /** `langs`: {a, b}, the languages of the two sides. */
  constructor(langs) {
    this.langs = { a: langs.a, b: langs.b };
    this.turns = [];
    this.segments = new Map(); // segment number -> {turn, source, translation}
    this.maxSegment = -1;
    this.nextTurnId = 1;
  }

  otherLang(lang) {
    if (lang === this.langs.a) return this.langs.b;
    if (lang === this.langs.b) return this.langs.a;
    return null;
  }

  sideOf(lang) {
    if (lang === this.langs.a) return 'a';
    if (lang === this.langs.b) return 'b';
    return null;
  }

  /**
   * A new turn at the end of the conversation. `state`: connecting | recording | finishing |
   * done | failed | remote; `live`: spoken on this page; `startedAt`: wall-clock ms.
   */
  newTurn({ side, lang, live, auto = false, state, startedAt }) {
    const turn = {
      id: this.nextTurnId,
      side,
      lang,
      text: '',
      translation: '',
      translationLang: lang ? this.otherLang(lang) : null,
      state,
      live,
      auto,
      final: false, // every segment's source caption is final
      translationFinal: false, // ... and so is its translation
      audioChunks: 0,
      audioSeconds: 0,
      segments: [],
      minSegment: null,
      startedAt,
      timing: { stoppedAt: null, translationShownAt: null, translationFinalAt: null, firstAudioAt: null },
    };
    this.nextTurnId += 1;
    this.turns.push(turn);
    return turn;
  }

  /** The turn's stream opens: it owns every segment from here on. */
  open(turn) {
    turn.minSegment = this.maxSegment + 1;
  }

  /** Forget a turn too short to be one (nothing recognised), else mark it done. */
  cancel(turn) {
    const index = this.turns.indexOf(turn);
    if (index >= 0 && turn.segments.length === 0) this.turns.splice(index, 1);
    else turn.state = 'done';
  }

  /**
   * The entry of a caption's segment, assigning it to a turn on first sight (null: none). A
   * turn made for it starts at `wall` (wall-clock ms).
   */
  claim(event, fromTurn, wall) {
    const number = event.segment;
    const known = this.segments.get(number);
    if (known) return known;
    let turn = null;
    if (fromTurn && fromTurn.minSegment !== null && number >= fromTurn.minSegment) {
      turn = fromTurn;
    } else {
      for (const candidate of this.turns) {
        if (isOpen(candidate) && candidate.minSegment !== null && number >= candidate.minSegment
          && (turn === null || candidate.minSegment > turn.minSegment)) turn = candidate;
      }
    }
    if (turn === null) {
      if (fromTurn) return null; // replayed history on the presenter socket: the listeners have it
      turn = this.remoteTurn(event, wall);
    }
    const entry = { turn, source: null, translation: null };
    this.segments.set(number, entry);
    turn.segments.push(number);
    turn.segments.sort((x, y) => x - y);
    if (number > this.maxSegment) this.maxSegment = number;
    return entry;
  }

  /** A turn for speech nobody on this page spoke: consecutive segments in one language join. */
  remoteTurn(event, wall) {
    const lang = event.source ? event.lang : this.otherLang(event.lang);
    const last = this.turns[this.turns.length - 1];
    if (last && !last.live && last.lang === lang
      && last.segments.length && last.segments[last.segments.length - 1] === event.segment - 1) {
      return last;
    }
    return this.newTurn({ side: this.sideOf(lang), lang, live: false, state: 'remote', startedAt: wall });
  }

  /**
   * Take a caption event: `fromTurn` where the turn's own presenter socket brought it, `now`
   * (monotonic ms) and `wall` (wall-clock ms) its arrival. Returns null where it changes
   * nothing, else {turn, translated}: `translated` is true the once its turn's whole
   * translation has become final.
   */
  caption(event, { fromTurn = null, now, wall }) {
    if (!Number.isInteger(event.segment)) return null;
    const entry = this.claim(event, fromTurn, wall);
    if (entry === null) return null;
    const { turn } = entry;
    const slot = event.source ? 'source' : 'translation';
    if (!event.source && turn.lang && event.lang === turn.lang) return null; // not a translation here
    const current = entry[slot];
    if (current && (current.state === 'final' || current.seq >= event.seq)) return null; // a repeat
    entry[slot] = {
      lang: event.lang, text: String(event.text || ''), state: event.state, seq: event.seq,
    };
    if (!event.source && event.state === 'final' && Array.isArray(event.sources)) {
      for (const covered of event.sources) {
        const other = this.segments.get(covered);
        if (covered === event.segment || !other) continue;
        other.translation = { lang: event.lang, text: '', state: 'final', seq: event.seq };
      }
    }
    if (event.source && turn.lang === null) {
      // Automatic detection: the server says which language it heard.
      turn.lang = event.lang;
      turn.side = this.sideOf(event.lang);
      turn.translationLang = this.otherLang(event.lang);
    }
    return { turn, translated: this.compose(turn, now) };
  }

  /** The turn's text and translation from its segments, in order; true once it is all final. */
  compose(turn, now) {
    const parts = turn.segments.map((number) => this.segments.get(number));
    const spoken = parts.filter((part) => part.source && part.source.text.trim());
    turn.text = spoken.map((part) => part.source.text.trim()).join(' ');
    turn.translation = spoken
      .filter((part) => part.translation && part.translation.text.trim())
      .map((part) => part.translation.text.trim())
      .join(' ');
    turn.final = parts.length > 0 && parts.every((part) => part.source && part.source.state === 'final');
    turn.translationFinal = turn.final && spoken.length > 0
      && spoken.every((part) => part.translation && part.translation.state === 'final');
    if (turn.translation && turn.timing.translationShownAt === null) turn.timing.translationShownAt = now;
    if (turn.translationFinal && turn.timing.translationFinalAt === null) {
      turn.timing.translationFinalAt = now;
      return true;
    }
    return false;
  }

  /** Count spoken audio for its segment's turn; the turn, or null for a segment never seen. */
  audio(segment, seconds, now) {
    const entry = this.segments.get(segment);
    if (!entry) return null;
    const { turn } = entry;
    turn.audioChunks += 1;
    turn.audioSeconds += seconds;
    if (turn.timing.firstAudioAt === null) turn.timing.firstAudioAt = now;
    return turn;
  }

  /** The newest turn to show on each side: one with words, else the one being spoken. */
  latest() {
    const newestFirst = [...this.turns].reverse();
    return newestFirst.find((t) => t.lang && (t.text || isOpen(t))) || newestFirst.find(isOpen) || null;
  }

  /** The turns the history lists: those with words, being spoken, or failed. */
  shown() {
    return this.turns.filter((turn) => turn.text || isOpen(turn) || turn.state === 'failed');
  }

  /**
   * The conversation as plain text: a heading, then each turn with words and its translation.
   * `nameOf(code)` names a language, `timeOf(ms)` writes a turn's start, `date` heads it.
   */
  transcript({ code, nameOf, timeOf, date }) {
    const { a, b } = this.langs;
    const lines = [`Conversation ${code || ''}: ${nameOf(a)} ↔ ${nameOf(b)}`, date, ''];
    for (const turn of this.turns) {
      if (!turn.text) continue;
      lines.push(`[${timeOf(turn.startedAt)}] ${nameOf(turn.lang)}: ${turn.text}`);
      if (turn.translationLang) {
        lines.push(`    ${nameOf(turn.translationLang)}: ${turn.translation || '(no translation)'}`);
      }
      lines.push('');
    }
    return `${lines.join('\n')}\n`;
  }
}
