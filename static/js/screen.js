// The venue screen (/s/{code}/screen) and the stream overlay (/s/{code}/overlay):
// templates/screen.html, options from the query (app/caption_pages.py).
//
// One SubtitleView per language (two stacked with `lang=es,en`), fed by listener sockets that
// reconnect and backfill as the listener page's do. The screen also goes full-screen on a
// click or the F key, hides the cursor after two idle seconds, and shows a small status
// (waiting, paused, reconnecting, ended) while no captions flow; the overlay shows captions
// and nothing else. `window.interpStats` and `window.interpSubtitles` (the first language's
// measurements, static/js/subtitles.js) are read by tests and the bench.

import { ListenerSocket } from './listener-socket.js';
import { askForToken, forgetToken, storedToken } from './private-gate.js';
import { SubtitleView, newStats } from './subtitles.js';

const CURSOR_IDLE_MS = 2000;

const root = document.getElementById('display');
const code = root.dataset.code;
const mode = root.dataset.mode;
const source = root.dataset.sourceLanguage;
const langs = root.dataset.langs.split(',');
const isPrivate = root.dataset.private === '1';
document.documentElement.style.setProperty('--subtitle-size', root.dataset.size);
document.documentElement.style.setProperty('--subtitle-lines', root.dataset.lines);
document.documentElement.style.setProperty('--subtitle-chars', root.dataset.chars);

const ui = {
  status: document.getElementById('display-status'),
  announcer: document.getElementById('announcer'),
  form: document.getElementById('passcode-form'),
  input: document.getElementById('passcode'),
  error: document.getElementById('passcode-error'),
};

const stats = {
  mode,
  langs,
  state: root.dataset.state,
  connection: 'connecting',
  connected: false,
  reconnects: 0,
  lastSeq: 0,
  subtitles: newStats(),
};
window.interpStats = stats;
window.interpSubtitles = stats.subtitles;

const views = langs.map((lang, index) => new SubtitleView(
  document.getElementById(`subtitles-${index}`),
  {
    lang,
    maxChars: Number(root.dataset.chars) || 42,
    visible: Number(root.dataset.lines) || 3,
    announcer: index === 0 ? ui.announcer : null,
    stats: index === 0 ? stats.subtitles : newStats(),
  },
));

// Source captions come to every listener socket; a translation needs a socket of its own.
const socketLanguages = langs.filter((lang) => lang !== source);
if (socketLanguages.length === 0) socketLanguages.push(source);
const sockets = [];

const STATUS_TEXT = {
  waiting: 'Captions appear here when the talk starts.',
  paused: 'Paused',
  ended: 'This session has ended.',
  private: '',
};

let captionsSeen = false;

function renderStatus() {
  let text = STATUS_TEXT[stats.state] || '';
  if (stats.state === 'waiting' && captionsSeen) text = '';
  if (stats.state !== 'ended' && ['reconnecting', 'offline'].includes(stats.connection)) {
    text = 'Reconnecting…';
  }
  if (stats.connection === 'failed') text = stats.failure || 'The captions are not available.';
  ui.status.textContent = text;
  ui.status.hidden = !text;
  root.dataset.state = stats.state;
}

function onEvent(event) {
  const receivedAt = performance.now();
  stats.lastSeq = Math.max(stats.lastSeq, ...sockets.map((s) => s.lastSeq));
  if (event.type === 'caption') {
    for (const view of views) view.apply(event, receivedAt);
    if (!captionsSeen) {
      captionsSeen = true;
      renderStatus();
    }
  } else if (event.type === 'state' && event.state in STATUS_TEXT) {
    stats.state = event.state;
    if (event.state === 'ended') {
      for (const socket of sockets) socket.close('session ended');
    }
    renderStatus();
  }
}

function onStatus(status, detail) {
  stats.connection = status;
  stats.connected = sockets.length > 0 && sockets.every((s) => s.connected);
  if (status === 'open' && detail.reconnect) stats.reconnects += 1;
  if (status === 'failed') {
    stats.failure = detail.code === 1008 && isPrivate
      ? 'This session is private: its link or passcode is needed.'
      : 'The captions are not available.';
    if (detail.code === 1008 && isPrivate) retryPrivate();
  }
  renderStatus();
}

function connect(token) {
  for (const lang of socketLanguages) {
    const socket = new ListenerSocket({ code, lang, token, onEvent, onStatus });
    sockets.push(socket);
    socket.start();
  }
}

async function retryPrivate() {
  forgetToken(code);
  for (const socket of sockets.splice(0)) socket.close('token refused');
  if (mode !== 'screen') return;
  connect(await askForToken(code, ui));
}

async function start() {
  renderStatus();
  let token = null;
  if (isPrivate) {
    token = storedToken(code);
    if (!token && mode === 'screen') token = await askForToken(code, ui);
    if (!token) {
      stats.connection = 'failed';
      stats.failure = 'This session is private: open this overlay from the presenter’s link.';
      renderStatus();
      return;
    }
  }
  connect(token);
}

// ---------------------------------------------------------------- the screen: full screen, cursor

function toggleFullScreen() {
  if (document.fullscreenElement) document.exitFullscreen().catch(() => {});
  else document.documentElement.requestFullscreen().catch((error) => console.warn('full screen refused', error));
}

if (mode === 'screen') {
  let cursorTimer = null;
  const wake = () => {
    document.body.classList.remove('cursor-hidden');
    window.clearTimeout(cursorTimer);
    cursorTimer = window.setTimeout(() => document.body.classList.add('cursor-hidden'), CURSOR_IDLE_MS);
  };
  document.addEventListener('mousemove', wake, { passive: true });
  wake();
  document.addEventListener('click', (event) => {
    if (!ui.form || !ui.form.contains(event.target)) toggleFullScreen();
  });
  document.addEventListener('keydown', (event) => {
    if (event.target instanceof HTMLInputElement) return;
    if (event.key === 'f' || event.key === 'F' || event.key === 'Enter') toggleFullScreen();
  });
}

window.addEventListener('pagehide', () => {
  for (const socket of sockets) socket.close('page closed');
});

start();
