// The presenter console (templates/present.html): microphone picker, start/stop, level meter,
// status line, the presenter's own live captions, the editor panel (./edit-panel.js: fix a
// final, the term list), and the share panel (join code, link, QR code, listeners by
// language, transcript downloads, a new editor link, the venue screen's and the overlay's
// links with a preview (./console-displays.js), captions pushed to YouTube or Zoom
// (./console-push.js), a private session's passcode (./console-access.js), "End session").
//
// The presenter token arrives in the URL fragment (`#token=...`, never sent to the server by the
// browser). It is kept in sessionStorage for this tab and then removed from the address bar so a
// screen-shared console does not show it; a reload still works.
//
// `window.interpStats` exposes counters for tests and for debugging in the console.

import { CaptionView } from './captions.js';
import { mountEditPanel } from './edit-panel.js';
import {
  authoriseDownloads, grantListenerToken, initPasscodeForm, qrDataUrl,
} from './console-access.js';
import { DisplayLinks } from './console-displays.js';
import {
  QuestionQueue, SpeakersPanel, showShedding, whoAmI,
} from './console-panel.js';
import { PushPanel } from './console-push.js';
import { MicCapture, TARGET_RATE, listMicrophones } from './mic-capture.js';
import { PresenterSocket } from './presenter-socket.js';
import { PresenterPeer } from './presenter-webrtc.js';
import { loadPreference, savePreference } from './preferences.js';

const root = document.getElementById('console');
const code = root.dataset.code;
const language = root.dataset.language;
const isPrivate = root.dataset.private === '1';

const ui = {
  micSelect: document.getElementById('mic-select'),
  micHint: document.getElementById('mic-hint'),
  transport: document.getElementById('transport-select'),
  levelBar: document.getElementById('level-bar'),
  start: document.getElementById('start-button'),
  stop: document.getElementById('stop-button'),
  status: document.getElementById('status'),
  statusText: document.getElementById('status-text'),
  error: document.getElementById('error'),
  captions: document.getElementById('captions'),
  jumpLive: document.getElementById('jump-live'),
  copyLink: document.getElementById('copy-link'),
  copyPresenterLink: document.getElementById('copy-presenter-link'),
  makeEditorLink: document.getElementById('make-editor-link'),
  listenLink: document.getElementById('listen-link'),
  joinOrigin: document.getElementById('join-origin'),
  title: document.getElementById('session-title'),
  qr: document.getElementById('share-qr'),
  qrLink: document.getElementById('share-qr-link'),
  listenerCount: document.getElementById('share-listener-count'),
  listenerLabel: document.getElementById('share-listener-label'),
  listenerLanguages: document.getElementById('share-languages'),
  transcriptLang: document.getElementById('transcript-lang'),
  transcriptLinks: [...document.querySelectorAll('.share .transcript-link')],
  endSession: document.getElementById('end-session'),
};

// While no stream is open the console has no socket to hear joins and leaves on, so it asks
// GET /api/sessions/{code} this often (only while the tab is visible).
const FACTS_REFRESH_MS = 10_000;

const stats = {
  framesSent: 0,
  bytesSent: 0,
  framesDropped: 0,
  captions: { draft: 0, final: 0 },
  state: 'idle',
  inputRate: null,
  transport: 'websocket', // how the audio goes: websocket (PCM) | webrtc (Opus over RTP)
  lagSeconds: 0,
  listeners: null,
  byLanguage: {},
  session: 'unknown', // the session's own state: waiting | live | paused | ended
  lastError: null,
};
window.interpStats = stats;

const captionView = new CaptionView(ui.captions, {
  lang: language,
  source: true,
  jumpButton: ui.jumpLive,
});

let capture = null;
let socket = null;
let liveSince = 0;
let clock = null;

// ---------------------------------------------------------------- token

function readToken() {
  const key = `interp.presenter-token.${code.toUpperCase()}`;
  const fragment = new URLSearchParams(window.location.hash.slice(1));
  const fromUrl = fragment.get('token');
  if (fromUrl) {
    try {
      window.sessionStorage.setItem(key, fromUrl);
      window.history.replaceState(null, '', window.location.pathname + window.location.search);
    } catch (error) {
      console.warn('sessionStorage unavailable; keeping the token in the address bar', error);
    }
    return fromUrl;
  }
  try {
    return window.sessionStorage.getItem(key);
  } catch (error) {
    console.warn('sessionStorage unavailable', error);
    return null;
  }
}

const token = readToken();

// ---------------------------------------------------------------- status and errors

const STATUS_TEXT = {
  idle: 'Ready when you are.',
  starting: 'Connecting…',
  live: 'Live',
  stopping: 'Finishing the last sentence…',
  ended: 'Stream ended. Press Start to continue the session.',
  error: 'Stopped.',
  closed: 'Session ended. Listeners can still download the transcript.',
};

function formatClock(seconds) {
  const s = Math.max(0, Math.floor(seconds));
  const minutes = Math.floor(s / 60);
  return `${minutes}:${String(s % 60).padStart(2, '0')}`;
}

function renderStatus() {
  let text = STATUS_TEXT[stats.state];
  if (stats.state === 'live') {
    const parts = [`Live · ${formatClock((performance.now() - liveSince) / 1000)}`];
    if (stats.lagSeconds >= 1) parts.push(`captions ${stats.lagSeconds.toFixed(1)} s behind`);
    if (stats.listeners !== null) {
      parts.push(stats.listeners === 1 ? '1 listener' : `${stats.listeners} listeners`);
    }
    text = parts.join(' · ');
  }
  ui.statusText.textContent = text;
  ui.status.dataset.state = stats.state;
}

function setState(state) {
  stats.state = state;
  document.body.dataset.streamState = state;
  const busy = state === 'starting' || state === 'live' || state === 'stopping';
  ui.start.disabled = busy || !token || state === 'closed';
  ui.endSession.disabled = !token || state === 'closed' || state === 'stopping';
  ui.stop.disabled = !(state === 'live' || state === 'starting');
  if (ui.transport) ui.transport.disabled = busy;
  if (state === 'live') {
    liveSince = performance.now();
    if (!clock) clock = window.setInterval(renderStatus, 1000);
  } else if (clock) {
    window.clearInterval(clock);
    clock = null;
  }
  if (!busy) setLevel(0, 0);
  renderStatus();
}

function showError(message) {
  stats.lastError = message;
  ui.error.textContent = message;
  ui.error.hidden = false;
}

function clearError() {
  stats.lastError = null;
  ui.error.textContent = '';
  ui.error.hidden = true;
}

function describeError(error) {
  if (error && error.name === 'NotAllowedError') {
    return 'Microphone access was blocked. Allow it in the browser’s site settings and press Start again.';
  }
  if (error && error.name === 'NotFoundError') return 'No microphone was found.';
  if (error && error.name === 'OverconstrainedError') {
    return 'The selected microphone is not available any more. Pick another one.';
  }
  if (error && error.name === 'NotReadableError') {
    return 'The microphone is in use by another application or could not be opened.';
  }
  return (error && error.message) || String(error);
}

// ---------------------------------------------------------------- level meter

function setLevel(rms, peak) {
  const db = rms > 0 ? 20 * Math.log10(rms) : -Infinity;
  const level = Math.min(1, Math.max(0, (db + 60) / 60)); // -60 dBFS .. 0 dBFS
  ui.levelBar.style.setProperty('--level', level.toFixed(3)); // CSSOM: allowed by a strict CSP
  ui.levelBar.parentElement.classList.toggle('is-clipping', peak >= 0.99);
}

// ---------------------------------------------------------------- microphones

async function refreshMicrophones(activeDeviceId = null) {
  let devices = [];
  try {
    devices = await listMicrophones();
  } catch (error) {
    console.warn('cannot list microphones', error);
    return;
  }
  const labelled = devices.filter((device) => device.deviceId && device.label);
  if (labelled.length === 0) return; // no permission yet: keep "Default microphone"
  const wanted = activeDeviceId || ui.micSelect.value;
  const options = [new Option('Default microphone', '')];
  for (const device of labelled) {
    if (device.deviceId === 'default' || device.deviceId === 'communications') continue;
    options.push(new Option(device.label, device.deviceId));
  }
  ui.micSelect.replaceChildren(...options);
  if (options.some((option) => option.value === wanted)) ui.micSelect.value = wanted;
  ui.micHint.textContent = `${options.length - 1} microphone${options.length === 2 ? '' : 's'} found.`;
}

function newCapture() {
  return new MicCapture({
    voiceProcessing: stats.transport === 'webrtc',
    onFrame: (pcm) => {
      if (!socket) return;
      socket.send(pcm);
      stats.framesSent = socket.framesSent;
      stats.bytesSent = socket.bytesSent;
      stats.framesDropped = socket.framesDropped;
    },
    onLevel: ({ rms, peak }) => setLevel(rms, peak),
  });
}

async function openMicrophone(current) {
  await current.start(ui.micSelect.value);
  stats.inputRate = current.inputRate;
  const track = current.stream && current.stream.getAudioTracks()[0];
  const deviceId = track && track.getSettings ? track.getSettings().deviceId : null;
  await refreshMicrophones(deviceId);
  return track;
}

// ---------------------------------------------------------------- transport

function chosenTransport() {
  const saved = loadPreference('transport');
  return saved === 'webrtc' && 'RTCPeerConnection' in window ? 'webrtc' : 'websocket';
}

function setTransport(value, remember = true) {
  stats.transport = value === 'webrtc' ? 'webrtc' : 'websocket';
  if (ui.transport) ui.transport.value = stats.transport;
  if (remember) savePreference('transport', stats.transport);
}

/** Open the chosen transport: PCM frames over the presenter WebSocket (frames captured before
 * "ready" wait in the socket), or the microphone's own track over WebRTC. */
async function connectTransport(current) {
  if (stats.transport === 'webrtc') {
    // Connect first, then open the microphone onto the live connection: nothing said while
    // ICE and DTLS complete is lost (a track does not buffer like the socket's queue).
    const peer = new PresenterPeer({ code, token, onEvent: onServerEvent, onClose: onSocketClose });
    socket = peer;
    await peer.connect();
    await peer.replaceTrack(await openMicrophone(current));
    return peer;
  }
  const thisSocket = new PresenterSocket({
    code,
    token,
    language,
    sampleRate: TARGET_RATE,
    onEvent: onServerEvent,
    onClose: onSocketClose,
  });
  socket = thisSocket;
  await Promise.all([openMicrophone(current), thisSocket.connect()]);
  return thisSocket;
}

// ---------------------------------------------------------------- start / stop

function onServerEvent(event) {
  switch (event.type) {
    case 'caption':
      if (event.state === 'final') stats.captions.final += 1;
      else stats.captions.draft += 1;
      captionView.apply(event);
      break;
    case 'lag':
      stats.lagSeconds = Number(event.seconds) || 0;
      renderStatus();
      break;
    case 'state':
      if (typeof event.listeners === 'number') setListeners(event.listeners, event.by_language);
      if (event.state) stats.session = event.state;
      renderStatus();
      break;
    case 'error':
      showError(event.message || 'The server reported an error.');
      break;
    case 'question':
      questions.onEvent(event);
      break;
    case 'shedding':
      showShedding(event);
      break;
    default:
      break; // events this console does not show (translations to other languages, audio)
  }
}

function onSocketClose(error) {
  if (!error) return; // normal end: stopStreaming() finishes the state change
  if (stats.state === 'stopping') return; // stopStreaming() reports it
  showError(error.message);
  const current = capture;
  capture = null;
  socket = null;
  if (current) current.close();
  setState('error');
}

async function startStreaming() {
  if (!token) return;
  clearError();
  stats.lagSeconds = 0;
  setState('starting');
  const current = newCapture();
  capture = current;
  current.prepare(); // inside the click: lets the AudioContext start under autoplay rules
  try {
    await connectTransport(current);
  } catch (error) {
    if (socket) {
      socket.abort('could not start');
      socket = null;
    }
    if (capture === current) capture = null;
    await current.close();
    if (stats.state === 'starting') {
      showError(describeError(error));
      setState('error');
    }
    return;
  }
  if (stats.state === 'starting') setState('live'); // unless Stop was pressed meanwhile
}

async function stopStreaming() {
  if (stats.state !== 'live' && stats.state !== 'starting') return;
  setState('stopping');
  const current = capture;
  const thisSocket = socket;
  capture = null;
  if (current) await current.stop(); // hands over the last partial frame first
  try {
    if (thisSocket) await thisSocket.stop();
    socket = null;
    setState('ended');
  } catch (error) {
    socket = null;
    showError(describeError(error));
    setState('error');
  }
}

async function switchMicrophone() {
  if (stats.state !== 'live' || !capture) return;
  const old = capture;
  const current = newCapture();
  current.prepare();
  capture = current;
  await old.close();
  try {
    const track = await openMicrophone(current);
    if (socket && socket.replaceTrack) await socket.replaceTrack(track);
  } catch (error) {
    showError(describeError(error));
    await stopStreaming();
  }
}

// ---------------------------------------------------------------- share panel

async function copyText(text, button) {
  const original = button.textContent;
  try {
    await navigator.clipboard.writeText(text);
    button.textContent = 'Copied';
  } catch (error) {
    console.warn('clipboard unavailable', error);
    button.textContent = 'Copy failed';
  }
  window.setTimeout(() => {
    button.textContent = original;
  }, 1500);
}

const languageNames = Object.fromEntries(
  [...ui.transcriptLang.options].map((option) => [option.value, option.textContent.trim()]),
);

/** The audience size, and how many follow each language ("English 2 · Spanish 1"). */
function setListeners(count, byLanguage = {}) {
  stats.listeners = count;
  stats.byLanguage = byLanguage || {};
  ui.listenerCount.textContent = String(count);
  ui.listenerLabel.textContent = count === 1 ? 'listener' : 'listeners';
  const parts = Object.entries(stats.byLanguage)
    .filter(([, n]) => n > 0)
    .sort((a, b) => b[1] - a[1])
    .map(([lang, n]) => `${languageNames[lang] || lang} ${n}`);
  ui.listenerLanguages.textContent = parts.join(' · ');
  ui.listenerLanguages.hidden = parts.length === 0;
}

function renderTranscriptLinks() {
  const lang = ui.transcriptLang.value || language;
  for (const link of ui.transcriptLinks) {
    const query = new URLSearchParams({ lang, format: link.dataset.format });
    link.href = `/api/sessions/${encodeURIComponent(code)}/transcript?${query}`;
    link.download = `${code}-${lang}.${link.dataset.format}`;
  }
}

/** The session's facts (GET /api/sessions/{code}; a private session's need the token):
 * audience size by language, title, state. */
async function refreshFacts() {
  let facts;
  try {
    const headers = { Accept: 'application/json' };
    if (token) headers.Authorization = `Bearer ${token}`;
    const response = await fetch(`/api/sessions/${encodeURIComponent(code)}`, { headers });
    if (!response.ok) throw new Error(`${response.status} ${response.statusText}`);
    facts = await response.json();
  } catch (error) {
    console.warn('cannot read the session facts', error);
    return;
  }
  if (typeof facts.listeners === 'number') setListeners(facts.listeners, facts.by_language);
  if (Array.isArray(facts.speakers)) speakers.render(facts.speakers);
  if (isPrivate && facts.title !== undefined && ui.title.textContent !== facts.title) {
    ui.title.textContent = facts.title;
    document.title = `${facts.title} · presenter · Live interpreter`;
  }
  stats.session = facts.state;
  if (facts.state === 'ended' && stats.state !== 'closed') setState('closed');
  else renderStatus();
}

let factsTimer = null;

function scheduleFacts() {
  window.clearTimeout(factsTimer);
  factsTimer = null;
  if (stats.state === 'closed' || document.visibilityState !== 'visible') return;
  factsTimer = window.setTimeout(async () => {
    // While streaming, state events on the socket carry the count already.
    if (!socket) await refreshFacts();
    scheduleFacts();
  }, FACTS_REFRESH_MS);
}

async function endSession() {
  if (!token || stats.state === 'closed') return;
  const sure = window.confirm(
    'End this session for everyone? Nobody can stream to it again; listeners keep the transcript.',
  );
  if (!sure) return;
  ui.endSession.disabled = true;
  if (stats.state === 'live' || stats.state === 'starting') await stopStreaming();
  try {
    const response = await fetch(`/api/sessions/${encodeURIComponent(code)}/end`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${token}`, Accept: 'application/json' },
    });
    if (!response.ok) {
      let message = `${response.status} ${response.statusText}`;
      try {
        const body = await response.json();
        if (body && body.error) message = body.error;
      } catch (error) {
        console.warn('error response is not JSON', error);
      }
      throw new Error(message);
    }
  } catch (error) {
    showError(`Could not end the session: ${error.message}`);
    ui.endSession.disabled = false;
    return;
  }
  clearError();
  stats.session = 'ended';
  setState('closed');
}

// ---------------------------------------------------------------- wiring

ui.start.addEventListener('click', startStreaming);
ui.stop.addEventListener('click', stopStreaming);
ui.micSelect.addEventListener('change', switchMicrophone);
if (ui.transport) ui.transport.addEventListener('change', () => setTransport(ui.transport.value));
if (ui.copyLink) {
  ui.copyLink.addEventListener('click', () => copyText(ui.listenLink.href, ui.copyLink));
}
if (ui.copyPresenterLink && !token) ui.copyPresenterLink.disabled = true;
if (ui.copyPresenterLink && token) {
  ui.copyPresenterLink.addEventListener('click', () => {
    const link = `${window.location.origin}${window.location.pathname}#token=${encodeURIComponent(token)}`;
    copyText(link, ui.copyPresenterLink);
  });
}
if (navigator.mediaDevices && navigator.mediaDevices.addEventListener) {
  navigator.mediaDevices.addEventListener('devicechange', () => refreshMicrophones());
}
window.addEventListener('beforeunload', (event) => {
  if (stats.state === 'live' || stats.state === 'stopping') event.preventDefault();
});
window.addEventListener('pagehide', () => {
  if (socket) socket.abort('page closed');
});
ui.endSession.addEventListener('click', endSession);
if (ui.makeEditorLink) {
  ui.makeEditorLink.disabled = !token;
  ui.makeEditorLink.addEventListener('click', async () => {
    try {
      const response = await fetch(`/api/sessions/${encodeURIComponent(code)}/editors`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${token}`, Accept: 'application/json' },
      });
      const body = await response.json();
      if (!response.ok) throw new Error(body.error || `${response.status}`);
      await copyText(`${window.location.origin}${body.edit_url}`, ui.makeEditorLink);
    } catch (error) {
      showError(`Could not make an editor link: ${error.message}`);
    }
  });
}
// The editor panel follows the session over a listener socket of its own, which counts in
// the audience: it connects only once the presenter opens it.
const editDetails = document.getElementById('edit-details');
window.interpEdit = mountEditPanel(document.querySelector('.edit-panel'), {
  code,
  language,
  token,
  start: false,
});
editDetails.addEventListener('toggle', () => {
  if (editDetails.open) window.interpEdit.start();
});
ui.transcriptLang.addEventListener('change', renderTranscriptLinks);
document.addEventListener('visibilitychange', () => {
  if (document.visibilityState !== 'visible') return;
  if (!socket) refreshFacts();
  scheduleFacts();
});

ui.listenLink.textContent = ui.listenLink.href; // absolute, ready to read out or paste
ui.joinOrigin.textContent = window.location.host;
const displays = new DisplayLinks({ code, presenterToken: token, copy: copyText });
const push = new PushPanel({ code, presenterToken: token, languageNames });
const speakers = new SpeakersPanel({
  code, token, languageNames, copy: copyText, onError: showError,
});
const questions = new QuestionQueue({ code, token, languageNames, onError: showError });
window.interpConsole = { displays, push, speakers, questions };

/** A speaker's console (a speaker token in the link) shows only what a speaker may do; a
 * console whose speaker streams on another device says so before Start. */
async function knowWhoIAm() {
  if (!token) return;
  try {
    const me = await whoAmI(code, token);
    if (!me.role) {
      showError("This link is not this session's presenter or speaker link. Ask the organiser for the right one.");
      return;
    }
    document.getElementById('console').dataset.role = me.role;
    if (me.role === 'presenter') questions.start();
    if (me.speaker.live) {
      showError('This session is already live on another device. Stop it there first.');
    }
  } catch {
    // the server is away: Start says so
  }
}
knowWhoIAm();

/** A private session: the share link, the QR code and the display links carry a listener
 * token (in the fragment); transcripts download with the presenter token. */
async function sharePrivately() {
  if (!isPrivate || !token) return;
  authoriseDownloads(ui.transcriptLinks, token, showError);
  initPasscodeForm(code, token);
  ui.qrLink.removeAttribute('href'); // the full-size code would need the token in its URL
  try {
    const listenerToken = await grantListenerToken(code, token);
    ui.listenLink.href = `${ui.listenLink.href.split('#')[0]}#token=${encodeURIComponent(listenerToken)}`;
    displays.setListenerToken(listenerToken);
    ui.qr.src = await qrDataUrl(code, listenerToken);
  } catch (error) {
    showError(`The share link could not be made: ${error.message}`);
  }
}

sharePrivately();
setTransport(chosenTransport(), false);
setState('idle');
renderTranscriptLinks();
refreshFacts().then(scheduleFacts);
if (!token) {
  showError(
    'This console needs the presenter link you got when you created the session '
      + '(the address ending in #token=…). Open that link in this browser tab.',
  );
}
refreshMicrophones();
