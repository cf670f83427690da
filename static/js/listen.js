// The listener page (templates/listen.html): live captions of one session, on a phone first.
//
// This module wires the page's parts together. ./listen-connection.js follows the session over
// one socket at a time, backfilling after any drop; the captions are laid out as subtitles
// (./listen-captions.js, the layout every caption view shares): a scrolling history in the
// chosen language, and in the bilingual view the original's newest lines above it. The
// toolbar is ./listen-display.js and ./listen-transcript.js, the status ./listen-status.js,
// the spoken translation ./listen-audio.js; their words are pure state (./listen-state.js,
// ./listen-audio-state.js). A private session first asks for its passcode (or takes the token
// of the link, ./listen-private.js), then fills in what the page could not show before.
//
// `window.interpStats` exposes counters for tests and for debugging in the console, and
// `window.interpAudio` the spoken translation's (received, played, underruns, dropped, ...).

import { AskPanel } from './ask.js';
import { ListenerAudio, audioElements } from './listen-audio.js';
import { ListenerCaptions } from './listen-captions.js';
import {
  ListenerDisplay, displayElements, fittingChars, offeredIn,
} from './listen-display.js';
import { askAgain, passcodeGate, unlockSession } from './listen-private.js';
import { ListenerConnection } from './listen-connection.js';
import { LanguageChoice } from './listen-state.js';
import { ListenerStatus, statusElements } from './listen-status.js';
import { TranscriptLinks, transcriptElements } from './listen-transcript.js';
import { loadPreference, savePreference } from './preferences.js';
import { ScreenWakeLock } from './wake-lock.js';

const byId = (id) => document.getElementById(id);
const root = byId('listener');
const code = root.dataset.code;
const isPrivate = root.dataset.private === '1';
let token = null; // a private session's listener token

/** The languages asked for, first match wins: the link's `?lang=`, then the last one chosen. */
function wantedLanguages() {
  return [new URLSearchParams(window.location.search).get('lang'), loadPreference('listen.lang')];
}

const languages = new LanguageChoice(
  offeredIn(byId('language')), root.dataset.sourceLanguage, wantedLanguages(),
);

const stats = {
  connected: false,
  connection: 'connecting', // connecting | open | reconnecting | offline | failed | closed
  reconnects: 0,
  lastSeq: 0,
  captions: { draft: 0, final: 0 },
  duplicateFinals: 0,
  state: root.dataset.state,
  listeners: null,
  wakeLock: 'off', // off | held | released | refused | unsupported (live, see below)
  lastClose: null,
};
Object.defineProperty(stats, 'lang', { get: () => languages.lang, enumerable: true });
window.interpStats = stats;

const captionBox = byId('captions');
const captions = new ListenerCaptions({
  main: captionBox,
  original: byId('captions-original'),
  announcer: byId('announcer'),
  jumpButton: byId('jump-live'),
  source: languages.source,
  maxChars: () => fittingChars(captionBox),
});
Object.defineProperty(stats, 'duplicateFinals', {
  get: () => captions.duplicateFinals,
  enumerable: true,
});
stats.captions = captions.counts; // every draft and final taken, in any language
window.interpCaptions = captions;
window.interpSubtitles = captions.stats;
const wakeLock = new ScreenWakeLock();
Object.defineProperty(stats, 'wakeLock', { get: () => wakeLock.state, enumerable: true });

const status = new ListenerStatus({
  elements: statusElements(document), root, session: stats, captions,
});
const audio = new ListenerAudio({
  elements: audioElements(document),
  root,
  session: stats,
  languages,
  captions,
  onWanted: (enabled) => connection.setAudio(enabled),
});
window.interpAudio = audio.stats;
const display = new ListenerDisplay({
  elements: displayElements(document), languages, captions, onLanguage: setLanguage,
});
const transcript = new TranscriptLinks({
  elements: transcriptElements(document),
  code,
  token: () => token,
  onError: (message) => status.showNotice(message),
});

const connection = new ListenerConnection({
  code,
  stats,
  languages,
  captions,
  status,
  audio,
  wakeLock,
  token: () => token,
  askToken: isPrivate ? askToken : null,
});

// ---------------------------------------------------------------- language

function renderLanguage() {
  display.renderLanguage();
  transcript.show(languages.lang, languages.nameOf());
}

function setLanguage(next) {
  if (!languages.choose(next)) return;
  savePreference('listen.lang', languages.lang);
  captions.show(languages.lang, display.bilingual);
  connection.setLanguage(languages.lang);
  renderLanguage();
  audio.languageChanged();
}

// ---------------------------------------------------------------- a private session

/** The server refused the token: ask for the passcode again. */
async function askToken() {
  token = await askAgain(code, passcodeGate(document));
}

/** What a private session's page could not show before its token: title, languages, state. */
function applyFacts(facts) {
  byId('listen-title').textContent = facts.title;
  document.title = `${facts.title} · live captions`;
  root.dataset.sourceLanguage = facts.source_language;
  captions.source = facts.source_language;
  const names = facts.language_names || {};
  const offered = facts.languages.map((lang) => ({ code: lang, name: names[lang] || lang }));
  display.offer(offered);
  languages.offer(offered, facts.source_language, wantedLanguages());
  stats.state = facts.state;
}

// ---------------------------------------------------------------- the page

window.addEventListener('pagehide', () => {
  connection.leave();
  audio.pageHidden(); // back from the cache, it needs a tap again
  wakeLock.disable();
});
window.addEventListener('pageshow', (event) => {
  // Back from the back-forward cache: pick up where the closed socket left off.
  if (!event.persisted || stats.state === 'ended') return;
  connection.connect();
  wakeLock.enable();
  audio.render();
});

async function main() {
  display.init();
  if (isPrivate) {
    status.render();
    const unlocked = await unlockSession(code, passcodeGate(document));
    token = unlocked.token;
    applyFacts(unlocked.facts);
  }
  audio.init();
  window.interpAsk = new AskPanel({ code, language: () => languages.lang, token: () => token });
  captions.show(languages.lang, display.bilingual);
  renderLanguage();
  status.render();
  connection.connect(0);
  if (stats.state !== 'ended') wakeLock.enable();
}

main();
