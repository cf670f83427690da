// The listener page (templates/listen.html): live captions of one session, on a phone first.
//
// One ListenerSocket follows the session and backfills after any drop; one CaptionView shows
// the source captions and, when the chosen language is a translation, that translation (in
// place of the source line, or below it in the bilingual view). Display preferences (theme,
// text size, bilingual view, language) are remembered on this device.
//
// Spoken translation (optional): the Listen button turns it on. Browsers on phones only let a
// page make sound after a tap, so the AudioContext is created (or resumed) in that click handler,
// and audio never starts by itself: the choice is remembered, but each visit needs its own tap.
// The socket then asks for audio (`audio=1`), and each chunk (header + PCM) goes to the
// AudioPlayer (./audio-player.js). Audio-only mode is for listeners who do not watch the screen:
// one large play/pause button, only the newest caption, a dark page (the wake lock still keeps
// the screen on, since some phones stop web audio when the screen locks).
//
// `window.interpStats` exposes counters for tests and for debugging in the console, and
// `window.interpAudio` the spoken translation's (received, played, underruns, dropped, ...).

import { AudioPlayer, audioSupported } from './audio-player.js';
import { CaptionView } from './captions.js';
import { ListenerSocket } from './listener-socket.js';
import { loadPreference, savePreference } from './preferences.js';
import { ScreenWakeLock } from './wake-lock.js';
import { showVoice } from './voice-label.js';

const ANNOUNCE_COALESCE_MS = 300;
const SKIP_NOTICE_MS = 6000;
const AUDIO_TAIL_MS = 4000; // after the session ends, keep listening this long after the last audio
const AUDIO_TAIL_MAX_MS = 60_000;

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
  audioPanel: document.getElementById('audio-panel'),
  audioToggle: document.getElementById('audio-toggle'),
  audioToggleLabel: document.getElementById('audio-toggle-label'),
  audioToggleHint: document.getElementById('audio-toggle-hint'),
  audioControls: document.getElementById('audio-controls'),
  audioMute: document.getElementById('audio-mute'),
  audioVolume: document.getElementById('audio-volume'),
  audioOnly: document.getElementById('audio-only'),
  audioStatus: document.getElementById('audio-status'),
  audioNotice: document.getElementById('audio-notice'),
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

const audioStats = {};
const player = new AudioPlayer({
  stats: audioStats,
  volume: volumePreference(),
  onStats: () => scheduleAudioRender(),
});
Object.assign(audioStats, {
  skippedAnnounced: 0, // sentences the server skipped to keep pace, as told to the listener
  ignoredChunks: 0, // chunks in a language no longer chosen (in flight during a switch)
  spokenSegments: [], // segments whose speech has fully arrived (their `last` chunk), newest 500
  rate: 1,
  supported: audioSupported(),
  audioOnly: false,
});
window.interpAudio = audioStats;
let audioWanted = loadPreference('listen.audio') === '1'; // remembered; still needs a tap
let lastAudioAt = 0;
let endTimer = null;

function volumePreference() {
  const saved = Number.parseInt(loadPreference('listen.volume') ?? '', 10);
  return Number.isFinite(saved) ? Math.min(100, Math.max(0, saved)) / 100 : 1;
}

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
    // The session is over: nothing more will come, so free the connection and the screen
    // (with spoken translation on, once the last sentences have been spoken).
    closeAfterSpeech();
    wakeLock.disable();
  }
  renderStatus();
}

function closeSocket(reason) {
  window.clearInterval(endTimer);
  endTimer = null;
  if (socket) socket.close(reason);
  stats.connected = false;
  stats.connection = 'closed';
  renderStatus();
}

/** Close the socket now, or, while audio is on, once no audio has come for a few seconds:
 * the speech of the last finals may still be on its way when the session ends. */
function closeAfterSpeech() {
  if (!audioStats.enabled) {
    closeSocket('session ended');
    return;
  }
  if (endTimer !== null) return;
  const endedAt = Date.now();
  lastAudioAt = Math.max(lastAudioAt, endedAt);
  endTimer = window.setInterval(() => {
    const now = Date.now();
    const quiet = now - lastAudioAt > AUDIO_TAIL_MS;
    if (!audioStats.enabled || (quiet && !audioStats.playing) || now - endedAt > AUDIO_TAIL_MAX_MS) {
      closeSocket('session ended');
    }
  }, 500);
}

function onStatus(status, detail) {
  if (stats.state === 'ended' && status !== 'open' && status !== 'connecting') {
    closeSocket('session ended'); // the server let go after the end: nothing left to wait for
    return;
  }
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
  socket = new ListenerSocket({
    code, lang, since, audio: audioStats.enabled, onEvent, onAudio, onStatus,
  });
  socket.start();
}

// ---------------------------------------------------------------- spoken translation

function onAudio(header, pcm) {
  if (header.lang !== lang) {
    audioStats.ignoredChunks += 1; // the language the listener just left
    return;
  }
  lastAudioAt = Date.now();
  if (typeof header.rate === 'number') audioStats.rate = header.rate;
  player.push(header, pcm);
  showVoice(document.getElementById('audio-voice'), header.voice);
  if (header.last !== false && Number.isInteger(header.segment)) {
    audioStats.spokenSegments.push(header.segment);
    if (audioStats.spokenSegments.length > 500) audioStats.spokenSegments.shift();
  }
  const skipped = Number(header.skipped) || 0;
  if (skipped > 0 && audioStats.enabled) noticeSkipped(skipped);
}

let noticeTimer = null;

/** Tell the listener (on screen and to screen readers) that sentences were left out. */
function noticeSkipped(count) {
  audioStats.skippedAnnounced += count;
  ui.audioNotice.textContent = count === 1
    ? 'Skipped 1 sentence to catch up with the speaker.'
    : `Skipped ${count} sentences to catch up with the speaker.`;
  ui.audioNotice.dataset.shown = '';
  window.clearTimeout(noticeTimer);
  noticeTimer = window.setTimeout(() => {
    delete ui.audioNotice.dataset.shown;
    ui.audioNotice.textContent = '';
  }, SKIP_NOTICE_MS);
}

function turnAudioOn() {
  if (!audioStats.supported) return;
  let starting;
  try {
    starting = player.start(); // inside the tap: creates or resumes the AudioContext
  } catch (error) {
    console.warn('spoken translation could not start', error);
    audioStats.context = 'failed';
    renderAudio();
    return;
  }
  audioWanted = true;
  savePreference('listen.audio', '1');
  if (socket) socket.setAudio(true);
  renderAudio();
  starting.then(renderAudio, (error) => {
    console.warn('spoken translation could not start', error);
    renderAudio();
  });
}

function turnAudioOff() {
  player.stop();
  audioWanted = false;
  savePreference('listen.audio', '0');
  if (socket) socket.setAudio(false);
  renderAudio();
}

function setAudioOnly(on, save = true) {
  audioStats.audioOnly = on;
  if (on) root.dataset.audioOnly = '';
  else delete root.dataset.audioOnly;
  document.body.classList.toggle('audio-only', on);
  ui.audioOnly.setAttribute('aria-pressed', String(on));
  if (save) savePreference('listen.audioOnly', on ? '1' : '0');
  if (view.following) view.jumpToLive();
}

let audioRenderPending = false;

function scheduleAudioRender() {
  if (audioRenderPending) return;
  audioRenderPending = true;
  window.requestAnimationFrame(() => {
    audioRenderPending = false;
    renderAudio();
  });
}

function setText(element, text) {
  if (element.textContent !== text) element.textContent = text;
}

/** Whether anything is spoken in the chosen language (the original is heard from the speaker). */
function spokenLanguage() {
  return translationFor(lang) !== null;
}

function audioStatusText() {
  if (!audioStats.supported) return 'This browser cannot play spoken translation.';
  if (audioStats.context === 'failed') return 'Spoken translation could not start on this device.';
  if (!spokenLanguage()) {
    return audioStats.enabled
      ? 'The original language is not spoken: choose a translation above to hear it.'
      : 'Choose a translation above to hear it spoken.';
  }
  if (!audioStats.enabled) return '';
  if (audioStats.context !== 'running') return 'Starting audio…';
  const where = languageNames[lang] || lang;
  if (audioStats.muted) return `Muted (${where}).`;
  if (audioStats.playing) {
    return audioStats.rate > 1.05
      ? `Speaking ${where}, a little faster to keep up.`
      : `Speaking ${where}.`;
  }
  return `Listening in ${where}: waiting for the next sentence.`;
}

function renderAudio() {
  const on = audioStats.enabled;
  ui.audioPanel.dataset.audio = on ? (audioStats.playing ? 'playing' : 'on') : 'off';
  ui.audioToggle.disabled = !audioStats.supported || (!on && !spokenLanguage());
  ui.audioToggle.dataset.on = on ? '1' : '0';
  ui.audioToggle.setAttribute(
    'aria-label',
    on ? 'Pause: turn off spoken translation' : 'Listen: turn on spoken translation',
  );
  setText(ui.audioToggleLabel, on ? 'Pause' : 'Listen');
  setText(
    ui.audioToggleHint,
    on ? 'Spoken translation is on'
      : (audioWanted ? 'Tap to resume spoken translation' : 'Turn on spoken translation'),
  );
  ui.audioControls.hidden = !on;
  ui.audioMute.setAttribute('aria-pressed', String(audioStats.muted));
  ui.audioMute.dataset.muted = audioStats.muted ? '1' : '0';
  setText(ui.audioStatus, audioStatusText());
}

function initAudio() {
  // Only translations are spoken: a session without any has nothing to listen to.
  ui.audioPanel.hidden = offered.length < 2;
  ui.audioVolume.value = String(Math.round(audioStats.volume * 100));
  ui.audioToggle.addEventListener('click', () => {
    if (audioStats.enabled) turnAudioOff();
    else turnAudioOn();
  });
  ui.audioMute.addEventListener('click', () => player.setMuted(!audioStats.muted));
  ui.audioVolume.addEventListener('input', () => {
    const volume = Number(ui.audioVolume.value) / 100;
    player.setVolume(volume);
    if (volume > 0 && audioStats.muted) player.setMuted(false);
    savePreference('listen.volume', String(Math.round(volume * 100)));
  });
  ui.audioOnly.addEventListener('click', () => setAudioOnly(!audioStats.audioOnly));
  document.addEventListener('visibilitychange', () => {
    if (document.visibilityState === 'visible') player.wake();
  });
  setAudioOnly(!ui.audioPanel.hidden && loadPreference('listen.audioOnly') === '1', false);
  renderAudio();
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
  player.clear(); // speech queued in the old language is not what the listener wants now
  if (socket) socket.setLanguage(lang);
  renderLanguage();
  renderAudio();
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
  if (audioStats.enabled) player.stop(); // back from the cache, it needs a tap again
  wakeLock.disable();
});
window.addEventListener('pageshow', (event) => {
  // Back from the back-forward cache: pick up where the closed socket left off.
  if (!event.persisted || stats.state === 'ended') return;
  connect(socket ? socket.lastSeq : 0);
  wakeLock.enable();
  renderAudio();
});

initDisplay();
initMenus();
initAudio();
renderLanguage();
renderStatus();
connect(0);
if (stats.state !== 'ended') wakeLock.enable();
