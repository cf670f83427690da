// The listener page (templates/listen.html): live captions of one session, on a phone first.
//
// One ListenerSocket follows the session and backfills after any drop; the captions are laid
// out as subtitles (./listen-captions.js, the layout every caption view shares): a scrolling
// history in the chosen language, and in the bilingual view the original's newest lines above
// it. Display preferences (theme, text size, bilingual view, language) are remembered on this
// device. A private session first asks for its passcode (or takes the token of the link,
// ./private-gate.js), then fills in what the page could not show before.
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

import { AskPanel } from './ask.js';
import { AudioPlayer, audioSupported } from './audio-player.js';
import { ListenerCaptions } from './listen-captions.js';
import { ListenerSocket } from './listener-socket.js';
import { loadPreference, savePreference } from './preferences.js';
import {
  askForToken, forgetToken, saveWithToken, sessionFacts, storedToken,
} from './private-gate.js';
import { setText } from './set-text.js';
import { ScreenWakeLock } from './wake-lock.js';
import { showVoice } from './voice-label.js';

const SKIP_NOTICE_MS = 6000;
const AUDIO_TAIL_MS = 4000; // after the session ends, keep listening this long after the last audio
const AUDIO_TAIL_MAX_MS = 60_000;

const root = document.getElementById('listener');
const code = root.dataset.code;
const isPrivate = root.dataset.private === '1';
let sourceLanguage = root.dataset.sourceLanguage;
let token = null; // a private session's listener token

const ui = {
  ask: document.getElementById('ask-panel'),
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
  original: document.getElementById('captions-original'),
  empty: document.getElementById('captions-empty'),
  title: document.getElementById('listen-title'),
  gate: document.getElementById('passcode-form'),
  passcode: document.getElementById('passcode'),
  passcodeError: document.getElementById('passcode-error'),
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

let offered = [];
let languageNames = {};

function readLanguages() {
  offered = [...ui.language.options].map((option) => option.value);
  languageNames = Object.fromEntries(
    [...ui.language.options].map((option) => [option.value, option.textContent.trim()]),
  );
}
readLanguages();

function initialLanguage() {
  const fromUrl = new URLSearchParams(window.location.search).get('lang');
  for (const candidate of [fromUrl, loadPreference('listen.lang')]) {
    if (candidate && offered.includes(candidate)) return candidate;
  }
  return sourceLanguage;
}

let lang = initialLanguage();
const FALLBACK_CHARS = 42;

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

const captions = new ListenerCaptions({
  main: ui.captions,
  original: ui.original,
  announcer: ui.announcer,
  jumpButton: ui.jumpLive,
  source: sourceLanguage,
  maxChars: fittingChars,
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

const STATE_TEXT = { waiting: 'Waiting', live: 'Live', paused: 'Paused', ended: 'Ended' };
const CONNECTION_TEXT = { reconnecting: 'Reconnecting…', offline: 'Offline', failed: 'Disconnected' };
const EMPTY_TEXT = {
  waiting: 'The session has not started yet. Captions appear here as soon as the presenter speaks.',
  live: 'Listening… captions appear as soon as the presenter speaks.',
  paused: 'The presenter paused. Captions continue here when they start again.',
  ended: 'This session has ended.',
};

function renderStatus() {
  const trouble = stats.state !== 'ended' && CONNECTION_TEXT[stats.connection];
  const shown = trouble ? stats.connection : stats.state;
  ui.state.dataset.state = shown;
  ui.stateText.textContent = trouble || STATE_TEXT[stats.state] || stats.state;
  root.dataset.state = stats.state;
  ui.endedNote.hidden = stats.state !== 'ended';
  ui.ask.hidden = stats.state === 'ended';
  if (captions.lineCount === 0) {
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
  if (captions.apply(event) === null) return;
  if (ui.empty.isConnected && captions.lineCount > 0) ui.empty.remove();
}

/** How many characters of caption text fit one line of the captions box (at most 42). */
function fittingChars() {
  const sample = 'the quick brown fox jumps over the lazy dog';
  const probe = document.createElement('span');
  probe.className = 'caption-line';
  probe.textContent = sample;
  probe.style.position = 'absolute'; // CSSOM: allowed by the strict CSP
  probe.style.visibility = 'hidden';
  probe.style.whiteSpace = 'nowrap';
  ui.captions.append(probe);
  const perChar = probe.getBoundingClientRect().width / sample.length;
  probe.remove();
  const style = window.getComputedStyle(ui.captions);
  const width = ui.captions.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
  if (!(perChar > 0) || !(width > 0)) return FALLBACK_CHARS;
  return Math.max(16, Math.min(FALLBACK_CHARS, Math.floor(width / perChar)));
}

function setSessionState(state) {
  if (!(state in STATE_TEXT)) return;
  stats.state = state;
  if (state !== 'ended') ui.audioPanel.dataset.ended = '0';
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
  // Nothing more will be spoken: let go of the audio, and say so in its panel.
  if (stats.state === 'ended' && audioStats.enabled) player.stop();
  renderStatus();
  renderAudio();
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
    if (detail.code === 1008 && isPrivate) {
      forgetToken(code); // refused: a wrong or stale link; ask for the passcode again
      showNotice('This session is private: enter its passcode to follow it.');
      askForToken(code, gateUi()).then((fresh) => {
        token = fresh;
        showNotice('');
        connect(socket ? socket.lastSeq : 0);
      });
    } else {
      showNotice(
        detail.code === 1008
          ? 'This session is not available any more.'
          : `The server refused the connection: ${detail.reason || detail.code}`,
      );
    }
  }
  renderStatus();
}

function connect(since) {
  socket = new ListenerSocket({
    code, lang, since, audio: audioStats.enabled, token, onEvent, onAudio, onStatus,
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
  if (captions.following) captions.jumpToLive();
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

/** Whether anything is spoken in the chosen language (the original is heard from the speaker). */
function spokenLanguage() {
  return translationFor(lang) !== null;
}

function audioStatusText() {
  if (stats.state === 'ended' && !audioStats.enabled) return 'The session has ended.';
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
  const ended = stats.state === 'ended' && stats.connection === 'closed';
  ui.audioPanel.dataset.ended = ended ? '1' : '0';
  ui.audioToggle.disabled = ended || !audioStats.supported || (!on && !spokenLanguage());
  ui.audioToggle.dataset.on = on ? '1' : '0';
  ui.audioToggle.setAttribute(
    'aria-label',
    on ? 'Pause: turn off spoken translation' : 'Listen: turn on spoken translation',
  );
  setText(ui.audioToggleLabel, on ? 'Pause' : 'Listen');
  let hint = audioWanted ? 'Tap to resume spoken translation' : 'Turn on spoken translation';
  if (on) hint = 'Spoken translation is on';
  else if (ended) hint = 'Spoken translation has finished';
  setText(ui.audioToggleHint, hint);
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

/** A private session's transcript needs the token: fetch it, then save what came. */
async function downloadWithToken(event) {
  const link = event.currentTarget;
  if (!token) return;
  event.preventDefault();
  try {
    await saveWithToken(link.href, link.download, token);
  } catch (error) {
    showNotice(`The transcript could not be downloaded: ${error.message}`);
  }
}

function setLanguage(next) {
  if (!offered.includes(next) || next === lang) return;
  lang = next;
  stats.lang = lang;
  savePreference('listen.lang', lang);
  captions.show(lang, ui.bilingual.checked);
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
  if (name === 'font') captions.relayout(); // a new text size changes what fits a line
  else if (captions.following) captions.jumpToLive();
}

function initDisplay() {
  choose(ui.themeChoices, document.documentElement.dataset.theme || 'auto');
  choose(ui.fontChoices, document.documentElement.dataset.font || 'm');
  for (const input of [...ui.themeChoices, ...ui.fontChoices]) {
    input.addEventListener('change', () => {
      if (input.checked) setDisplay(input.name, input.value);
    });
  }
  ui.bilingual.checked = loadPreference('listen.bilingual') === '1';
  ui.bilingual.addEventListener('change', () => {
    captions.show(lang, ui.bilingual.checked); // keeps a reader who follows live there
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

for (const link of ui.transcriptLinks) link.addEventListener('click', downloadWithToken);

function gateUi() {
  return { form: ui.gate, input: ui.passcode, error: ui.passcodeError };
}

/** A private session: its token (from the link, this tab, or the passcode), then what the
 * page could not show without it: title, languages, state. */
async function unlock() {
  token = storedToken(code);
  for (;;) {
    if (!token) token = await askForToken(code, gateUi());
    const facts = await sessionFacts(code, token);
    if (facts.title !== undefined) {
      applyFacts(facts);
      return;
    }
    forgetToken(code); // the server did not take it: a stale or foreign link
    token = null;
  }
}

function applyFacts(facts) {
  ui.title.textContent = facts.title;
  document.title = `${facts.title} · live captions`;
  sourceLanguage = facts.source_language;
  root.dataset.sourceLanguage = sourceLanguage;
  captions.source = sourceLanguage;
  const names = facts.language_names || {};
  ui.language.replaceChildren(...facts.languages.map((code_) => {
    const option = new Option(names[code_] || code_, code_);
    option.lang = code_;
    return option;
  }));
  ui.language.disabled = facts.languages.length < 2;
  readLanguages();
  lang = initialLanguage();
  stats.lang = lang;
  stats.state = facts.state;
}

async function main() {
  initDisplay();
  initMenus();
  if (isPrivate) {
    renderStatus();
    await unlock();
  }
  initAudio();
  window.interpAsk = new AskPanel({ code, language: () => lang, token: () => token });
  captions.show(lang, ui.bilingual.checked);
  renderLanguage();
  renderStatus();
  connect(0);
  if (stats.state !== 'ended') wakeLock.enable();
}

main();
