// Traveller mode (templates/talk.html, `/talk`): two people without a common language share
// one phone. Each taps their own button, speaks, and taps again; the phone shows what was said
// in both languages and speaks the translation.
//
// It is the session pipeline, not a second one: the page creates a session offering the two
// languages (source A, target B; the server translates every offered language into the others)
// and each turn is one presenter stream (./presenter-socket.js) in the speaker's language, or
// "auto" (the server detects which of the two is spoken). Frames come from ./mic-capture.js.
// Two listener sockets (./listener-socket.js, lang=A and lang=B, audio=1 while speaking aloud is
// on) bring every source caption, the translations into both languages and the spoken
// translation, which ./audio-player.js plays.
//
// This module wires the page: the turns' streams, the sockets, the options and the session.
// Which turn each caption belongs to, and what a turn says, is ./talk-state.js (pure state,
// with its rules); the drawing is ./talk-view.js, the server's languages ./talk-languages.js
// and the buttons' words ./talk-words.js. The next stream only opens once the previous one has
// ended, when all its segments are known (talk-state.js, "Turns and segments").
//
// Continuing a conversation: the page keeps `?code=CODE` in the address and the presenter token
// in this tab's sessionStorage, so a reload continues it. `/talk?code=CODE#token=TOKEN` (More ->
// "Copy link to continue on another phone") continues it on another phone or browser; the token
// travels in the fragment, which browsers never send to a server.
//
// Spoken translation that arrives while someone is talking is held back (the phone must not hear
// itself) and played when the turn ends if it belongs to that turn; an earlier turn's speech is
// dropped once the partner starts to answer (talk-state.js, `HeldAudio`). Screen readers hear
// each turn's final translation.
//
// `window.interpTalk` reports the conversation for tests and debugging: {phase, code, langs,
// state, turns: [{id, side, lang, text, translation, translationLang, state, audioChunks,
// audioSeconds, segments, timing}], errors}; `window.interpAudio` the player's counters.

import { AudioPlayer, audioSupported } from './audio-player.js';
import { copyText } from './copy-text.js';
import { ListenerSocket } from './listener-socket.js';
import { MicCapture, TARGET_RATE } from './mic-capture.js';
import { PresenterSocket } from './presenter-socket.js';
import { loadPreference, savePreference } from './preferences.js';
import { setText } from './set-text.js';
import { wireTalkButton } from './talk-button.js';
import { Languages } from './talk-languages.js';
import {
  createConversation, endConversation, fetchConversation, recallToken, rememberToken,
} from './talk-session.js';
import { Conversation, HeldAudio } from './talk-state.js';
import {
  SIDES, TalkView, findElements, formatTime, showMessage,
} from './talk-view.js';
import { ScreenWakeLock } from './wake-lock.js';

const config = JSON.parse(document.getElementById('talk-config').textContent);
const languages = new Languages(config);
const ui = findElements(document);
const view = new TalkView({ ui, languages });
const nameOf = (code) => languages.nameOf(code);

const HOLD_MIN_MS = 350; // a shorter press in hold mode is a tap, not a turn
const PENDING_FRAMES = 90; // 9 s of speech held while the previous turn finishes (server burst: 10 s)
const HELD_MAX_SECONDS = 30; // spoken translation held while someone talks

const stats = {
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
window.interpTalk = stats;

const audioStats = {};
const player = new AudioPlayer({ stats: audioStats });
audioStats.supported = audioSupported();
window.interpAudio = audioStats;

const wakeLock = new ScreenWakeLock();
const held = new HeldAudio(HELD_MAX_SECONDS);
let conversation = null; // a Conversation (./talk-state.js) once the languages are known
let token = null;
let listeners = [];
let active = null; // the turn being spoken: {turn, side, socket, capture, micStarted, connected}
let lastStop = Promise.resolve(); // settles once the latest turn's stream has ended

// ---------------------------------------------------------------- languages

function renderPair() {
  const a = ui.langA.value;
  const b = ui.langB.value;
  const problem = stats.code ? null : languages.pairProblem(a, b);
  if (problem) {
    ui.pairStatus.textContent = '';
    showSetupError(problem);
  } else {
    showSetupError('');
    ui.pairStatus.textContent = languages.pairSummary(a, b);
  }
  ui.begin.disabled = Boolean(problem) || !config.ready;
}

function showSetupError(message) {
  showMessage(ui.setupError, message);
}

// ---------------------------------------------------------------- errors

function describeError(error) {
  if (error && error.name === 'NotAllowedError') {
    return 'Microphone access was blocked. Allow it in the browser’s site settings and tap again.';
  }
  if (error && error.name === 'NotFoundError') return 'No microphone was found.';
  if (error && error.name === 'NotReadableError') {
    return 'The microphone is in use by another application or could not be opened.';
  }
  return (error && error.message) || String(error);
}

function showError(message) {
  if (message) stats.errors.push(message);
  showMessage(ui.error, message);
}

// ---------------------------------------------------------------- turns and captions

function onCaption(event, fromTurn = null) {
  const change = conversation.caption(event, { fromTurn, now: performance.now(), wall: Date.now() });
  if (change === null) return;
  const { turn, translated } = change;
  // Screen readers hear each new turn's translation once (not every draft, not the backlog).
  if (translated && turn === stats.turns[stats.turns.length - 1] && stats.phase === 'conversation') {
    ui.announcer.textContent = `${nameOf(turn.translationLang)}: ${turn.translation}`;
  }
  render();
}

function onAudio(header, pcm) {
  const seconds = pcm.byteLength / 2 / (Number(header.sample_rate) || 16000);
  const turn = conversation.audio(header.segment, seconds, performance.now());
  if (turn === null) stats.unmatchedAudio += 1;
  if (!stats.speak) {
    stats.audioNotPlayed += 1;
    return;
  }
  if (active !== null) {
    // Never into an open microphone (the phone would translate its own voice): held until the
    // turn ends, then played if it is that turn's own translation (a sentence finished while
    // the speaker went on), dropped if it is an earlier turn's (the partner has moved on).
    stats.audioNotPlayed += held.push({ header, pcm, turn, seconds });
    return;
  }
  player.push(header, pcm);
}

/** Play what was held while `turn` was being spoken: its own translation only. */
function releaseHeld(turn) {
  const { play, dropped } = held.release(turn);
  stats.audioNotPlayed += dropped;
  for (const item of play) {
    if (stats.speak) player.push(item.header, item.pcm);
    else stats.audioNotPlayed += 1;
  }
}

// ---------------------------------------------------------------- the server

function onListenerEvent(event) {
  if (event.type === 'caption') onCaption(event);
  else if (event.type === 'state' && event.state === 'ended') endedElsewhere();
  else if (event.type === 'error') showError(event.message || 'The server reported a problem.');
}

function onListenerStatus(side, status, detail) {
  stats.sockets[side] = status;
  if (status === 'failed') {
    showError(detail.code === 1008
      ? 'This conversation is not available any more.'
      : `The server refused the connection: ${detail.reason || detail.code}`);
  }
  render();
}

function openListeners() {
  closeListeners();
  listeners = SIDES.map((side) => {
    const socket = new ListenerSocket({
      code: stats.code,
      lang: stats.langs[side],
      audio: stats.speak,
      onEvent: onListenerEvent,
      onAudio,
      onStatus: (status, detail) => onListenerStatus(side, status, detail),
    });
    socket.start();
    return socket;
  });
}

function closeListeners() {
  for (const socket of listeners) socket.close('conversation closed');
  listeners = [];
}

function endedElsewhere() {
  if (stats.phase !== 'conversation') return;
  stats.phase = 'ended';
  stats.canTalk = false;
  showError('This conversation has ended. Start a new one from More.');
  render();
}

// ---------------------------------------------------------------- speaking

/** Turn the sound on, or wake it; call inside a tap (phones block audio started otherwise). */
function wakeAudio() {
  if (!stats.speak || !audioStats.supported) return;
  try {
    if (!audioStats.enabled) {
      player.start().catch((error) => console.warn('spoken translation could not start', error));
    } else {
      player.wake();
    }
  } catch (error) {
    console.warn('spoken translation could not start', error);
  }
}

/** Start a turn (inside the tap or press): `side` 'a', 'b' or 'auto'. */
function startTurn(side) {
  if (active !== null || stats.phase !== 'conversation' || !stats.canTalk) return;
  showError('');
  wakeAudio();
  player.clear(); // the partner starts talking: stop speaking over them
  const auto = side === 'auto';
  const lang = auto ? null : stats.langs[side];
  const turn = conversation.newTurn({
    side: auto ? null : side, lang, live: true, auto, state: 'connecting', startedAt: Date.now(),
  });
  const current = { turn, side, socket: null, capture: null, failed: false };
  current.socket = new PresenterSocket({
    code: stats.code,
    token,
    language: auto ? 'auto' : lang,
    finals: 'fast', // someone is waiting for each turn's final: the quicker decode
    sampleRate: TARGET_RATE,
    pendingLimit: PENDING_FRAMES,
    onEvent: (event) => onPresenterEvent(current, event),
    onClose: (error) => {
      if (error) failTurn(current, error);
    },
  });
  current.capture = new MicCapture({
    onFrame: (pcm) => current.socket.send(pcm),
    onLevel: ({ rms }) => setLevel(current, rms),
  });
  current.capture.prepare(); // inside the tap: lets its AudioContext run
  active = current;
  current.micStarted = current.capture.start('').then(() => null, (error) => error);
  const previous = lastStop;
  current.connected = (async () => {
    await previous;
    if (current.failed) return;
    // The previous stream has ended, so every segment it made is known by now.
    conversation.open(turn);
    const [micError] = await Promise.all([current.micStarted, current.socket.connect()]);
    if (micError) throw micError;
  })();
  current.connected.then(() => {
    if (turn.state === 'connecting') turn.state = 'recording';
    render();
  }, (error) => failTurn(current, error));
  render();
}

/** Finish the turn being spoken: the rest is recognised, translated and spoken. */
function endTurn() {
  const current = active;
  if (current === null) return;
  active = null;
  const { turn } = current;
  releaseHeld(turn);
  if (turn.state === 'connecting' || turn.state === 'recording') turn.state = 'finishing';
  turn.timing.stoppedAt = performance.now();
  setLevel(current, 0);
  const done = (async () => {
    await current.micStarted;
    await current.capture.stop(); // hands the last partial frame to the socket first
    await current.connected;
    if (current.failed) return;
    await current.socket.stop(); // resolves after the server's "ended"
  })();
  lastStop = done.then(() => {}, () => {});
  done.then(() => {
    if (turn.state === 'finishing') turn.state = 'done';
    render();
  }, (error) => failTurn(current, error));
  render();
}

/** A press too short to be a turn (hold mode): forget it. */
function cancelTurn() {
  const current = active;
  if (current === null) return;
  active = null;
  current.failed = true;
  releaseHeld(current.turn);
  current.micStarted.then(() => current.capture.close());
  current.socket.abort('cancelled');
  conversation.cancel(current.turn);
  render();
}

function failTurn(current, error) {
  if (current.failed) return;
  current.failed = true;
  if (active === current) {
    active = null;
    releaseHeld(current.turn);
  }
  if (current.micStarted) current.micStarted.then(() => current.capture.close());
  else current.capture.close();
  current.socket.abort('turn failed');
  current.turn.state = 'failed';
  current.turn.error = describeError(error);
  showError(current.turn.error);
  render();
}

function onPresenterEvent(current, event) {
  if (event.type === 'caption') onCaption(event, current.turn);
  else if (event.type === 'error') showError(event.message || 'The server reported a problem.');
}

function setLevel(current, rms) {
  view.setLevel(current.side, rms);
}

// ---------------------------------------------------------------- buttons (tap and hold)

function wireButton(button, side) {
  wireTalkButton(button, side, {
    hold: () => stats.hold,
    busy: () => (active ? active.side : null),
    start: () => startTurn(side),
    end: endTurn,
    slip: () => {
      cancelTurn();
      showError('Keep the button pressed while you speak, then let go.');
    },
  }, HOLD_MIN_MS);
}

// ---------------------------------------------------------------- rendering

function render() {
  stats.state = active ? (active.turn.state === 'connecting' ? 'connecting' : 'recording') : 'idle';
  view.render({ stats, active, conversation });
}

// ---------------------------------------------------------------- options

function setOption(name, value, save = true) {
  stats[name] = Boolean(value);
  const inputs = {
    hold: [ui.optHold, ui.menuHold],
    auto: [ui.optAuto, ui.menuAuto],
    facing: [ui.optFacing],
    speak: [ui.optSpeak, ui.menuSpeak],
  }[name];
  for (const input of inputs) input.checked = stats[name];
  if (save) savePreference(`talk.${name}`, stats[name] ? '1' : '0');
  if (name === 'speak' && save) {
    for (const socket of listeners) socket.setAudio(stats.speak);
    if (stats.speak) wakeAudio(); // a change of a checkbox is a user gesture
    else player.stop();
  }
  render();
}

function wireOptions() {
  const pairs = [
    ['hold', ui.optHold], ['hold', ui.menuHold], ['auto', ui.optAuto], ['auto', ui.menuAuto],
    ['facing', ui.optFacing], ['speak', ui.optSpeak], ['speak', ui.menuSpeak],
  ];
  for (const [name, input] of pairs) {
    input.addEventListener('change', () => {
      if (active) endTurn();
      setOption(name, input.checked);
    });
  }
  ui.facing.addEventListener('click', () => setOption('facing', !stats.facing));
  for (const name of ['hold', 'auto', 'facing']) setOption(name, loadPreference(`talk.${name}`) === '1', false);
  setOption('speak', loadPreference('talk.speak') !== '0', false);
}

// ---------------------------------------------------------------- export

function transcriptText() {
  const date = new Date().toISOString().slice(0, 16).replace('T', ' ');
  return conversation.transcript({ code: stats.code, nameOf, timeOf: formatTime, date });
}

function exportTranscript() {
  const text = transcriptText();
  stats.lastExport = text;
  const url = URL.createObjectURL(new Blob([text], { type: 'text/plain;charset=utf-8' }));
  const link = document.createElement('a');
  link.href = url;
  link.download = `conversation-${stats.code || 'talk'}-${new Date().toISOString().slice(0, 10)}.txt`;
  document.body.append(link);
  link.click();
  link.remove();
  window.setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

// ---------------------------------------------------------------- session

async function begin() {
  if (stats.phase !== 'setup') return;
  if (stats.speak) wakeAudio(); // this tap is what lets the phone speak later
  stats.phase = 'starting';
  ui.begin.disabled = true;
  showSetupError('');
  try {
    if (!stats.code) {
      const a = ui.langA.value;
      const b = ui.langB.value;
      const problem = languages.pairProblem(a, b);
      if (problem) throw new Error(problem);
      const created = await createConversation(`Conversation: ${nameOf(a)} ↔ ${nameOf(b)}`, a, b);
      stats.code = created.code;
      stats.langs = { a, b };
      token = created.presenter_token;
      rememberToken(stats.code, token);
      window.history.replaceState(null, '', `/talk?code=${encodeURIComponent(stats.code)}`);
    }
  } catch (error) {
    stats.phase = 'setup';
    showSetupError(describeError(error));
    renderPair();
    return;
  }
  conversation = new Conversation(stats.langs);
  stats.turns = conversation.turns;
  stats.canTalk = Boolean(token);
  stats.phase = 'conversation';
  ui.code.textContent = stats.code;
  ui.codeWrap.hidden = false;
  openListeners();
  wakeLock.enable();
  if (!token) {
    showError('You are following this conversation. To talk in it, open the link from '
      + '“Copy link to continue on another phone” on the phone that started it.');
  }
  render();
  ui.sides.a.button.focus({ preventScroll: true });
}

/** `/talk?code=...`: continue a conversation (the token from `#token=` or this tab). */
async function resume(code) {
  const fragment = new URLSearchParams(window.location.hash.slice(1));
  token = fragment.get('token') || recallToken(code);
  if (fragment.get('token')) window.history.replaceState(null, '', `/talk?code=${encodeURIComponent(code)}`);
  let facts;
  try {
    facts = await fetchConversation(code);
  } catch (error) {
    window.history.replaceState(null, '', '/talk');
    token = null;
    renderPair();
    showSetupError(`${describeError(error)} Start a new conversation instead.`);
    return;
  }
  if (facts.state === 'ended') {
    window.history.replaceState(null, '', '/talk');
    token = null;
    renderPair();
    showSetupError(`The conversation ${facts.code} has ended. Start a new one.`);
    return;
  }
  stats.code = facts.code;
  stats.langs = { a: facts.source_language, b: facts.target_languages[0] || null };
  if (token) rememberToken(stats.code, token);
  for (const [select, lang] of [[ui.langA, stats.langs.a], [ui.langB, stats.langs.b]]) {
    if (![...select.options].some((option) => option.value === lang)) {
      select.append(new Option(languages.label(lang), lang));
    }
    select.value = lang;
    select.disabled = true;
  }
  ui.swap.disabled = true;
  setText(ui.setupTitle, `Conversation ${facts.code}`);
  setText(ui.begin, token ? 'Continue the conversation' : 'Follow the conversation');
  ui.pairStatus.textContent = `${nameOf(stats.langs.a)} ↔ ${nameOf(stats.langs.b)}.`;
  showSetupError('');
  ui.begin.disabled = false;
}

async function newConversation() {
  if (!window.confirm('End this conversation and start a new one? Save the text first if you want it.')) return;
  if (active) endTurn();
  await lastStop;
  if (token && stats.code) await endConversation(stats.code, token);
  closeListeners();
  window.location.assign('/talk');
}

// ---------------------------------------------------------------- wiring

ui.langA.addEventListener('change', renderPair);
ui.langB.addEventListener('change', renderPair);
ui.swap.addEventListener('click', () => {
  const a = ui.langA.value;
  ui.langA.value = ui.langB.value;
  ui.langB.value = a;
  renderPair();
});
ui.begin.addEventListener('click', begin);
for (const side of SIDES) wireButton(ui.sides[side].button, side);
wireButton(ui.auto, 'auto');
ui.exportButton.addEventListener('click', exportTranscript);
ui.copyContinue.addEventListener('click', () => {
  if (!stats.code || !token) return;
  const link = `${window.location.origin}/talk?code=${encodeURIComponent(stats.code)}`
    + `#token=${encodeURIComponent(token)}`;
  copyText(link, ui.copyContinue);
});
ui.newConversation.addEventListener('click', newConversation);
document.addEventListener('click', (event) => {
  if (ui.menu.open && !ui.menu.contains(event.target)) ui.menu.open = false;
});
document.addEventListener('visibilitychange', () => {
  if (document.visibilityState === 'visible') player.wake();
});
window.addEventListener('pagehide', () => {
  if (active) active.socket.abort('page closed');
  closeListeners();
  wakeLock.disable();
});
window.addEventListener('hashchange', () => {
  // A continue link pasted into this tab only changes the fragment: load it properly.
  if (new URLSearchParams(window.location.hash.slice(1)).get('token') && !active) {
    window.location.reload();
  }
});
window.addEventListener('beforeunload', (event) => {
  if (active) event.preventDefault();
});

wireOptions();
if (!config.ready) {
  showSetupError('The server is still loading its models. Reload this page in a minute.');
  ui.begin.disabled = true;
} else {
  renderPair();
  const code = new URLSearchParams(window.location.search).get('code');
  if (code) resume(code.trim().toUpperCase());
}
render();
