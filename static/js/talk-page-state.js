// Traveller mode's page state, pure (no DOM, no sockets, no storage, no clock): the counters
// the page reports (`window.interpTalk`), the options as kept on this device, what the turn
// being spoken makes of the page's state, the words for a failure and for a refused socket,
// the page's address for a conversation and the link to continue it on another phone (the
// token travels in the fragment, which browsers never send to a server), and the exported
// transcript's date and file name. Used by ./talk.js and its parts; tested through real
// Chromium (e2e/test_talk_state.py).

import { refusalWords } from './listener-socket.js';

/** A shorter press in hold mode is a tap, not a turn. */
export const HOLD_MIN_MS = 350;
/** Frames of speech (9 s) held while the previous turn finishes (the server's burst: 10 s). */
export const PENDING_FRAMES = 90;

/**
 * The counters of a page that has done nothing yet (`window.interpTalk`): {phase, code, langs,
 * options (hold, auto, facing, speak), state, canTalk, turns, errors, sockets, unmatchedAudio,
 * audioNotPlayed}.
 */
export function newStats() {
  return {
    phase: 'setup', // setup | starting | conversation | ended
    code: null,
    langs: { a: null, b: null },
    hold: false,
    auto: false,
    facing: false,
    speak: true,
    state: 'idle', // idle | connecting | recording (the turn being spoken now)
    canTalk: false,
    turns: [],
    errors: [],
    sockets: { a: 'closed', b: 'closed' },
    unmatchedAudio: 0, // audio of a segment this page never saw a caption of
    audioNotPlayed: 0, // chunks not played: speaking aloud off, or arriving while someone talks
  };
}

/** The page's options, each kept on this device as `talk.<name>`. */
export const OPTIONS = ['hold', 'auto', 'facing', 'speak'];

/** An option as this device kept it (`saved`: '1', '0' or null): speaking aloud is on unless
 * turned off, every other option off unless turned on. */
export function optionFromPreference(name, saved) {
  return name === 'speak' ? saved !== '0' : saved === '1';
}

/** How an option's value is kept on this device. */
export function preferenceOf(value) {
  return value ? '1' : '0';
}

/** The page's state (`stats.state`) while `active` ({turn}, or null) is being spoken. */
export function speakingState(active) {
  if (!active) return 'idle';
  return active.turn.state === 'connecting' ? 'connecting' : 'recording';
}

/** The words for a failure: the browser's microphone errors by name, any other by its message. */
export function describeError(error) {
  if (error && error.name === 'NotAllowedError') {
    return 'Microphone access was blocked. Allow it in the browser’s site settings and tap again.';
  }
  if (error && error.name === 'NotFoundError') return 'No microphone was found.';
  if (error && error.name === 'NotReadableError') {
    return 'The microphone is in use by another application or could not be opened.';
  }
  return (error && error.message) || String(error);
}

/** Why a listener socket failed, from its close (`detail`: {code, reason}). */
export function refusalText(detail) {
  return refusalWords(detail.code, detail.reason, 'conversation');
}

/** The words for an `error` event from the server. */
export function serverProblem(event) {
  return event.message || 'The server reported a problem.';
}

/** The page's address for the conversation `code`. */
export function talkPath(code) {
  return `/talk?code=${encodeURIComponent(code)}`;
}

/** The link that continues the conversation on another phone, the token in its fragment. */
export function continueLink(origin, code, token) {
  return `${origin}${talkPath(code)}#token=${encodeURIComponent(token)}`;
}

/** The presenter token in an address's fragment (`hash`: "#token=..."), or null. */
export function tokenFromFragment(hash) {
  return new URLSearchParams(hash.slice(1)).get('token');
}

/** The two sides' languages of a session's facts (the HTTP API's): {a, b}. */
export function languagesOf(facts) {
  return { a: facts.source_language, b: facts.target_languages[0] || null };
}

/** The date heading an exported transcript, from an ISO time: "2026-12-06 09:00" (UTC). */
export function transcriptDate(iso) {
  return iso.slice(0, 16).replace('T', ' ');
}

/** The exported transcript's file name, from the code (if any) and an ISO time. */
export function transcriptFileName(code, iso) {
  return `conversation-${code || 'talk'}-${iso.slice(0, 10)}.txt`;
}
