// The listener page (templates/listen.html): live captions of one session, on a phone first.
//
// One ListenerSocket follows the session and backfills after any drop; one CaptionView shows
// the source captions and, when the chosen language is a translation, that translation (in
// place of the source line, or below it in the bilingual view). Display preferences (theme,
// text size, bilingual view, language) are remembered on this device.
//
// `window.interpStats` exposes counters for tests and for debugging in the console.

import { CaptionView } from './captions.js';
import { ListenerSocket } from './listener-socket.js';
import { loadPreference, savePreference } from './preferences.js';
import { ScreenWakeLock } from './wake-lock.js';

const ANNOUNCE_COALESCE_MS = 300;

const root = document.getElementById('listener');
const code = root.dataset.code;
const sourceLanguage = root.dataset.sourceLanguage;

const ui = {
  state: document.getElementById('state'),
  stateText: document.getElementById('state-text'),
  listenerCount: document.getElementById('listener-count'),
  listenerNumber: document.getElementById('listener-number'),
  language: document.getElementById('language'),
  bilingualOption: document.getElementById('bilingual-option'),
  bilingual: document.getElementById('bilingual'),
  displayMenu: document.getElementById('display-menu'),
  transcriptMenu: document.getElementById('transcript-menu'),
  transcriptLinks: [...document.querySelectorAll('.transcript-link')],
  transcriptLanguage: document.querySelector('.transcript-language'),
  notice: document.getElementById('notice'),
  captions: document.getElementById('captions'),
  empty: document.getElementById('captions-empty'),
  jumpLive: document.getElementById('jump-live'),
  endedNote: document.getElementById('ended-note'),
  announcer: document.getElementById('announcer'),
  fontChoices: [...document.querySelectorAll('input[name="font"]')],
  themeChoices: [...document.querySelectorAll('input[name="theme"]')],
};

const offered = [...ui.language.options].map((option) => option.value);
const languageNames = Object.fromEntries(
  [...ui.language.options].map((option) => [option.value, option.textContent.trim()]),
);

function initialLanguage() {
  const fromUrl = new URLSearchParams(window.location.search).get('lang');
  for (const candidate of [fromUrl, loadPreference('listen.lang')]) {
    if (candidate && offered.includes(candidate)) return candidate;
  }
  return sourceLanguage;
}

let lang = initialLanguage();

const stats = {
  connected: false,
  connection: 'connecting', // connecting | open | reconnecting | offline | failed | closed
  reconnects: 0,
  lastSeq: 0,
  captions: { draft: 0, final: 0 },
  duplicateFinals: 0,
  state: root.dataset.state,
  listeners: null,
  lang,
  wakeLock: 'off', // off | held | released | refused | unsupported (live, see below)
  lastClose: null,
};
window.interpStats = stats;

const view = new CaptionView(ui.captions, {
  translation: translationFor(lang),
  jumpButton: ui.jumpLive,
});
const finalsShown = new Set(); // CaptionView keys of finals on screen: a repeat is a duplicate
const wakeLock = new ScreenWakeLock();
Object.defineProperty(stats, 'wakeLock', { get: () => wakeLock.state, enumerable: true });
let socket = null;

function translationFor(language) {
  return language === sourceLanguage ? null : language;
}

// ---------------------------------------------------------------- status

const STATE_TEXT = { waiting: 'Waiting', live: 'Live', ended: 'Ended' };
const CONNECTION_TEXT = { reconnecting: 'Reconnecting…', offline: 'Offline', failed: 'Disconnected' };
const EMPTY_TEXT = {
  waiting: 'The session has not started yet. Captions appear here as soon as the presenter speaks.',
  live: 'Listening… captions appear as soon as the presenter speaks.',
  ended: 'This session has ended.',
};

function renderStatus() {
  const trouble = stats.state !== 'ended' && CONNECTION_TEXT[stats.connection];
  const shown = trouble ? stats.connection : stats.state;
  ui.state.dataset.state = shown;
  ui.stateText.textContent = trouble || STATE_TEXT[stats.state] || stats.state;
  root.dataset.state = stats.state;
  ui.endedNote.hidden = stats.state !== 'ended';
  if (view.rows.size === 0) {
    ui.empty.textContent = EMPTY_TEXT[stats.state] || '';
    if (!ui.empty.isConnected) ui.captions.prepend(ui.empty);
  }
}

function renderListeners() {
  if (typeof stats.listeners !== 'number') return;
  const n = stats.listeners;
  ui.listenerNumber.textContent = String(n);
  ui.listenerCount.title = n === 1 ? '1 person is following' : `${n} people are following`;
  ui.listenerCount.setAttribute('aria-label', ui.listenerCount.title);
  ui.listenerCount.hidden = false;
}

function showNotice(message) {
  ui.notice.textContent = message;
  ui.notice.hidden = !message;
}

// ---------------------------------------------------------------- events

function onEvent(event) {
  stats.lastSeq = socket.lastSeq;
  switch (event.type) {
    case 'caption':
      onCaption(event);
      break;
    case 'state':
      if (typeof event.listeners === 'number') {
        stats.listeners = event.listeners;
        renderListeners();
      }
      setSessionState(event.state);
      break;
    case 'error':
      showNotice(event.message || 'The session reported a problem.');
      break;
    default:
      break; // event types of later protocol versions
  }
}

function onCaption(event) {
  if (!view.accepts(event)) return;
  const key = CaptionView.key(event);
  const final = event.state === 'final';
  if (final && finalsShown.has(key)) {
    stats.duplicateFinals += 1;
    return;
  }
  if (!view.apply(event)) return;
  if (!final) {
    stats.captions.draft += 1;
    return;
  }
  finalsShown.add(key);
  stats.captions.final += 1;
  // Announce what this reader reads: translations when a translation is chosen.
  if (Boolean(event.source) === (translationFor(lang) === null)) announce(event.text);
}

let pendingAnnouncement = null;

/** Hand a final to screen readers; a burst (a backfill) is announced as its newest line only. */
function announce(text) {
  const first = pendingAnnouncement === null;
  pendingAnnouncement = text.trim();
  if (!first) return;
  window.setTimeout(() => {
    ui.announcer.textContent = pendingAnnouncement;
    pendingAnnouncement = null;
  }, ANNOUNCE_COALESCE_MS);
}

function setSessionState(state) {
  if (!(state in STATE_TEXT)) return;
  stats.state = state;
  if (state === 'ended') {
    // The session is over: nothing more will come, so free the connection and the screen.
    if (socket) socket.close('session ended');
    stats.connected = false;
    stats.connection = 'closed';
    wakeLock.disable();
  }
  renderStatus();
}

function onStatus(status, detail) {
  stats.connection = status;
  stats.connected = status === 'open';
  if (status === 'open') {
    if (detail.reconnect) stats.reconnects += 1;
    showNotice('');
  } else if (status === 'reconnecting' || status === 'offline' || status === 'failed') {
    stats.lastClose = { code: detail.code, reason: detail.reason || '' };
  }
  if (status === 'failed') {
    showNotice(
      detail.code === 1008
        ? 'This session is not available any more.'
        : `The server refused the connection: ${detail.reason || detail.code}`,
    );
  }
  renderStatus();
}

function connect(since) {
  socket = new ListenerSocket({ code, lang, since, onEvent, onStatus });
  socket.start();
}

// ---------------------------------------------------------------- language

function renderLanguage() {
  ui.language.value = lang;
  ui.bilingualOption.hidden = translationFor(lang) === null;
  ui.transcriptLanguage.textContent = languageNames[lang] || lang;
  for (const link of ui.transcriptLinks) {
    const format = link.dataset.format;
    const query = new URLSearchParams({ lang, format });
    link.href = `/api/sessions/${encodeURIComponent(code)}/transcript?${query}`;
    link.download = `${code}-${lang}.${format}`;
  }
}

function setLanguage(next) {
  if (!offered.includes(next) || next === lang) return;
  lang = next;
  stats.lang = lang;
  savePreference('listen.lang', lang);
  for (const key of [...finalsShown]) {
    if (key.startsWith('t:')) finalsShown.delete(key); // the server backfills the new language
  }
  view.setTranslation(translationFor(lang));
  if (socket) socket.setLanguage(lang);
  renderLanguage();
}

// ---------------------------------------------------------------- display preferences

function choose(inputs, value) {
  const match = inputs.find((input) => input.value === value) || inputs[0];
  match.checked = true;
  return match.value;
}

function setDisplay(name, value) {
  if (value === 'auto' || (name === 'font' && value === 'm')) {
    delete document.documentElement.dataset[name];
  } else {
    document.documentElement.dataset[name] = value;
  }
  savePreference(name, value);
  if (view.following) view.jumpToLive(); // a new text size moves the newest line
}

function initDisplay() {
  choose(ui.themeChoices, document.documentElement.dataset.theme || 'auto');
  choose(ui.fontChoices, document.documentElement.dataset.font || 'm');
  for (const input of [...ui.themeChoices, ...ui.fontChoices]) {
    input.addEventListener('change', () => {
      if (input.checked) setDisplay(input.name, input.value);
    });
  }
  const bilingual = loadPreference('listen.bilingual') === '1';
  ui.bilingual.checked = bilingual;
  ui.captions.dataset.view = bilingual ? 'bilingual' : 'single';
  ui.bilingual.addEventListener('change', () => {
    ui.captions.dataset.view = ui.bilingual.checked ? 'bilingual' : 'single';
    savePreference('listen.bilingual', ui.bilingual.checked ? '1' : '0');
  });
}

// Menus: one open at a time; a tap outside or Escape closes them.
function initMenus() {
  const menus = [ui.displayMenu, ui.transcriptMenu];
  for (const menu of menus) {
    menu.addEventListener('toggle', () => {
      if (!menu.open) return;
      for (const other of menus) if (other !== menu) other.open = false;
    });
  }
  document.addEventListener('click', (event) => {
    for (const menu of menus) if (menu.open && !menu.contains(event.target)) menu.open = false;
  });
  document.addEventListener('keydown', (event) => {
    if (event.key !== 'Escape') return;
    for (const menu of menus) {
      if (!menu.open) continue;
      menu.open = false;
      menu.querySelector('summary').focus();
    }
  });
}

// ---------------------------------------------------------------- wiring

ui.language.addEventListener('change', () => setLanguage(ui.language.value));
window.addEventListener('pagehide', () => {
  if (socket) socket.close('page closed');
  wakeLock.disable();
});
window.addEventListener('pageshow', (event) => {
  // Back from the back-forward cache: pick up where the closed socket left off.
  if (!event.persisted || stats.state === 'ended') return;
  connect(socket ? socket.lastSeq : 0);
  wakeLock.enable();
});

initDisplay();
initMenus();
renderLanguage();
renderStatus();
connect(0);
if (stats.state !== 'ended') wakeLock.enable();
