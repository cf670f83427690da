// The listener page's state as words, with no DOM (templates/listen.html): what the status pill
// says of the session and its connection, what the empty caption box says, how many people
// follow, why the server refused the page, and which caption language is chosen among those
// offered. Drawn by ./listen-status.js and ./listen-display.js, wired by ./listen.js; tested in
// real Chromium (e2e/test_listen_state.py).

import { refusalWords } from './listener-socket.js';

const STATE_TEXT = { waiting: 'Waiting', live: 'Live', paused: 'Paused', ended: 'Ended' };
// The pill's words: the session's states, and the page's own state before a private session's
// passcode (the template's "private", which says the same).
const PILL_TEXT = { ...STATE_TEXT, private: 'Private' };
const CONNECTION_TEXT = { reconnecting: 'Reconnecting…', offline: 'Offline', failed: 'Disconnected' };
const EMPTY_TEXT = {
  waiting: 'The session has not started yet. Captions appear here as soon as the presenter speaks.',
  live: 'Listening… captions appear as soon as the presenter speaks.',
  paused: 'The presenter paused. Captions continue here when they start again.',
  ended: 'This session has ended.',
};

export const PRIVATE_NOTICE = 'This session is private: enter its passcode to follow it.';
export const PROBLEM_NOTICE = 'The session reported a problem.';

/** Whether `state` is a state of a session this page knows (a `state` event's). */
export function isSessionState(state) {
  return state in STATE_TEXT;
}

/**
 * The status pill: trouble with the connection while the session is not over, else the
 * session's state. `shown` is the pill's `data-state`, `text` its words.
 */
export function statusPill(state, connection) {
  const trouble = state !== 'ended' && CONNECTION_TEXT[connection];
  return { shown: trouble ? connection : state, text: trouble || PILL_TEXT[state] || state };
}

/** What the caption box says before its first line. */
export function emptyText(state) {
  return EMPTY_TEXT[state] || '';
}

/** The listener count's label. */
export function followersText(count) {
  return count === 1 ? '1 person is following' : `${count} people are following`;
}

/** Why the page stopped following, from a refusal's close code and reason (not a private gate). */
export function refusalText(code, reason) {
  return refusalWords(code, reason, 'session');
}

/** The language to show first: the first of `wanted` that is offered, else the original. */
export function initialLanguage(offered, wanted, source) {
  for (const candidate of wanted) {
    if (candidate && offered.includes(candidate)) return candidate;
  }
  return source;
}

/**
 * The caption languages a session offers, their names, its original, and the one chosen.
 * `offered`: [{code, name}] in the page's order; `wanted`: codes asked for (the link's, the
 * one chosen last time), the first offered one wins.
 */
export class LanguageChoice {
  constructor(offered, source, wanted) {
    this.offer(offered, source, wanted);
  }

  /** Start again from what a private session told once unlocked. */
  offer(offered, source, wanted) {
    this.codes = offered.map((language) => language.code);
    this.names = Object.fromEntries(offered.map((language) => [language.code, language.name]));
    this.source = source;
    this.lang = initialLanguage(this.codes, wanted, source);
  }

  /** The name of `code` (the chosen language by default), or the code where none is known. */
  nameOf(code = this.lang) {
    return this.names[code] || code;
  }

  /** Whether the chosen language is a translation: only those are spoken, and only they have
   * an original to show above them. */
  get translated() {
    return this.lang !== this.source;
  }

  /** Choose `next`; false where it is not offered or already chosen. */
  choose(next) {
    if (!this.codes.includes(next) || next === this.lang) return false;
    this.lang = next;
    return true;
  }
}
