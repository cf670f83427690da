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
// Turns and segments: the server numbers segments in order across streams, so a turn owns the
// segments numbered from one past the highest seen when its stream opened (`minSegment`); the
// next stream only opens once the previous one has ended, when all its segments are known.
// Segments nobody on this page spoke (the history backfilled on load, or a second phone in the
// same conversation) become turns of their own, by language.
//
// Continuing a conversation: the page keeps `?code=CODE` in the address and the presenter token
// in this tab's sessionStorage, so a reload continues it. `/talk?code=CODE#token=TOKEN` (More ->
// "Copy link to continue on another phone") continues it on another phone or browser; the token
// travels in the fragment, which browsers never send to a server.
//
// Spoken translation that arrives while someone is talking is held back (the phone must not hear
// itself) and played when the turn ends if it belongs to that turn; an earlier turn's speech is
// dropped once the partner starts to answer. Screen readers hear each turn's final translation.
//
// `window.interpTalk` reports the conversation for tests and debugging: {phase, code, langs,
// state, turns: [{id, side, lang, text, translation, translationLang, state, audioChunks,
// audioSeconds, segments, timing}], errors}; `window.interpAudio` the player's counters.

import { AudioPlayer, audioSupported } from './audio-player.js';
import { ListenerSocket } from './listener-socket.js';
import { MicCapture, TARGET_RATE } from './mic-capture.js';
import { PresenterSocket } from './presenter-socket.js';
import { loadPreference, savePreference } from './preferences.js';
import { ScreenWakeLock } from './wake-lock.js';

const config = JSON.parse(document.getElementById('talk-config').textContent);
const root = document.getElementById('talk');

const SIDES = ['a', 'b'];
const HOLD_MIN_MS = 350; // a shorter press in hold mode is a tap, not a turn
const PENDING_FRAMES = 90; // 9 s of speech held while the previous turn finishes (server burst: 10 s)
const HELD_MAX_SECONDS = 30; // spoken translation held while someone talks

// The talk button's words in the speaker's own language (English where none is written here).
const WORDS = {
  en: {
    tap: 'Tap to talk', hold: 'Hold to talk', stop: 'Tap when done', release: 'Release when done',
    wait: 'Wait…', listening: 'Listening…', translating: 'Translating…',
  },
  es: {
    tap: 'Toca para hablar', hold: 'Mantén pulsado para hablar', stop: 'Toca al terminar',
    release: 'Suelta al terminar', wait: 'Espera…', listening: 'Escuchando…',
    translating: 'Traduciendo…',
  },
  fr: {
    tap: 'Touchez pour parler', hold: 'Maintenez pour parler', stop: 'Touchez pour finir',
    release: 'Relâchez pour finir', wait: 'Patientez…', listening: 'J’écoute…',
    translating: 'Traduction…',
  },
  pt: {
    tap: 'Toque para falar', hold: 'Mantenha premido para falar', stop: 'Toque ao terminar',
    release: 'Solte ao terminar', wait: 'Aguarde…', listening: 'A ouvir…',
    translating: 'A traduzir…',
  },
  it: {
    tap: 'Tocca per parlare', hold: 'Tieni premuto per parlare', stop: 'Tocca quando hai finito',
    release: 'Rilascia quando hai finito', wait: 'Attendi…', listening: 'Ascolto…',
    translating: 'Traduzione…',
  },
  ca: {
    tap: 'Toca per parlar', hold: 'Mantén premut per parlar', stop: 'Toca quan acabis',
    release: 'Deixa anar quan acabis', wait: 'Espera…', listening: 'Escoltant…',
    translating: 'Traduint…',
  },
  gl: {
    tap: 'Toca para falar', hold: 'Mantén premido para falar', stop: 'Toca ao rematar',
    release: 'Solta ao rematar', wait: 'Agarda…', listening: 'Escoitando…',
    translating: 'Traducindo…',
  },
  de: {
    tap: 'Tippen zum Sprechen', hold: 'Gedrückt halten zum Sprechen', stop: 'Tippen, wenn fertig',
    release: 'Loslassen, wenn fertig', wait: 'Bitte warten…', listening: 'Ich höre zu…',
    translating: 'Übersetze…',
  },
};

function words(lang) {
  return { ...WORDS.en, ...(WORDS[lang] || {}) };
}

function wordsLang(lang) {
  return WORDS[lang] ? lang : 'en';
}

const ui = {
  setup: document.getElementById('talk-setup'),
  setupTitle: document.getElementById('talk-setup-heading'),
  langA: document.getElementById('lang-a'),
  langB: document.getElementById('lang-b'),
  swap: document.getElementById('swap-langs'),
  pairStatus: document.getElementById('pair-status'),
  setupError: document.getElementById('setup-error'),
  optHold: document.getElementById('opt-hold'),
  optAuto: document.getElementById('opt-auto'),
  optFacing: document.getElementById('opt-facing'),
  optSpeak: document.getElementById('opt-speak'),
  begin: document.getElementById('begin'),
  conversation: document.getElementById('talk-conversation'),
  codeWrap: document.getElementById('talk-code-wrap'),
  code: document.getElementById('talk-code'),
  auto: document.getElementById('talk-auto'),
  autoText: document.getElementById('talk-auto-text'),
  autoLangs: document.getElementById('talk-auto-langs'),
  facing: document.getElementById('talk-facing'),
  exportButton: document.getElementById('talk-export'),
  menu: document.getElementById('talk-menu'),
  menuHold: document.getElementById('menu-hold'),
  menuAuto: document.getElementById('menu-auto'),
  menuSpeak: document.getElementById('menu-speak'),
  copyContinue: document.getElementById('copy-continue'),
  newConversation: document.getElementById('new-conversation'),
  error: document.getElementById('talk-error'),
  history: document.getElementById('talk-history'),
  announcer: document.getElementById('talk-announcer'),
  historyEmpty: document.getElementById('talk-history-empty'),
  sides: Object.fromEntries(SIDES.map((side) => [side, {
    panel: document.getElementById(`side-${side}`),
    name: document.getElementById(`side-${side}-name`),
    state: document.getElementById(`side-${side}-state`),
    latest: document.getElementById(`latest-${side}`),
    button: document.getElementById(`talk-${side}`),
    text: document.getElementById(`talk-${side}-text`),
    lang: document.getElementById(`talk-${side}-lang`),
  }])),
};

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
const segments = new Map(); // segment number -> {turn, source, translation}
const turnItems = new Map(); // turn id -> its <li> in the history
let maxSegment = -1;
let token = null;
let listeners = [];
let active = null; // the turn being spoken: {turn, side, socket, capture, micStarted, connected}
let lastStop = Promise.resolve(); // settles once the latest turn's stream has ended
let nextTurnId = 1;
let held = []; // spoken translation that arrived while someone was talking
let heldSeconds = 0;

// ---------------------------------------------------------------- languages

function nameOf(code) {
  const entry = config.names[code];
  return entry ? entry.name : code;
}

function nativeOf(code) {
  const entry = config.names[code];
  return entry ? entry.native : code;
}

/** "Español (Spanish)", or just "English" where both names are the same. */
function label(code) {
  const native = nativeOf(code);
  const english = nameOf(code);
  return native === english ? english : `${native} (${english})`;
}

function hasRoute(source, target) {
  return config.routes.includes(`${source}>${target}`);
}

function worksBothWays(a, b) {
  return Boolean(config.pairs[a] && config.pairs[a].includes(b));
}

function otherLang(lang) {
  if (lang === stats.langs.a) return stats.langs.b;
  if (lang === stats.langs.b) return stats.langs.a;
  return null;
}

function sideOf(lang) {
  if (lang === stats.langs.a) return 'a';
  if (lang === stats.langs.b) return 'b';
  return null;
}

/** Why a pair cannot hold a conversation here (null when it can). */
function pairProblem(a, b) {
  if (!a || !b) return 'This server offers no two languages to translate between.';
  if (a === b) return 'Choose two different languages.';
  if (worksBothWays(a, b)) return null;
  const missing = [[a, b], [b, a]]
    .filter(([source, target]) => !hasRoute(source, target))
    .map(([source, target]) => `${nameOf(source)} into ${nameOf(target)}`);
  const partners = (code) => (config.pairs[code] || []).map(nameOf);
  const hints = [a, b].map((code) => {
    const list = partners(code);
    return list.length
      ? `${nameOf(code)} works both ways with ${list.join(', ')}.`
      : `${nameOf(code)} has no two-way partner on this server.`;
  });
  return `No translation route from ${missing.join(' or from ')} on this server, so these two `
    + `cannot talk here. ${hints.join(' ')}`;
}

function renderPair() {
  const a = ui.langA.value;
  const b = ui.langB.value;
  const problem = stats.code ? null : pairProblem(a, b);
  if (problem) {
    ui.pairStatus.textContent = '';
    showSetupError(problem);
  } else {
    showSetupError('');
    const silent = [a, b].filter((code) => !config.spoken.includes(code)).map(nameOf);
    ui.pairStatus.textContent = `${nameOf(a)} ↔ ${nameOf(b)}: translated both ways`
      + (silent.length ? `; no voice here for ${silent.join(' or ')}, so it is shown only.` : '.');
  }
  ui.begin.disabled = Boolean(problem) || !config.ready;
}

function showSetupError(message) {
  ui.setupError.textContent = message;
  ui.setupError.hidden = !message;
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
  ui.error.textContent = message || '';
  ui.error.hidden = !message;
}

// ---------------------------------------------------------------- turns and captions

function newTurn({ side, lang, live, auto = false, state }) {
  const turn = {
    id: nextTurnId,
    side,
    lang,
    text: '',
    translation: '',
    translationLang: lang ? otherLang(lang) : null,
    state, // connecting | recording | finishing | done | failed | remote
    live, // spoken on this page (false: backfilled history or another phone)
    auto,
    final: false, // every segment's source caption is final
    translationFinal: false, // ... and so is its translation
    audioChunks: 0,
    audioSeconds: 0,
    segments: [],
    minSegment: null,
    startedAt: Date.now(),
    timing: { stoppedAt: null, translationShownAt: null, translationFinalAt: null, firstAudioAt: null },
  };
  nextTurnId += 1;
  stats.turns.push(turn);
  return turn;
}

function isOpen(turn) {
  return turn.live && (turn.state === 'connecting' || turn.state === 'recording'
    || turn.state === 'finishing');
}

/** The turn a caption's segment belongs to, assigning it on first sight. */
function claim(event, fromTurn) {
  const number = event.segment;
  const known = segments.get(number);
  if (known) return known;
  let turn = null;
  if (fromTurn && fromTurn.minSegment !== null && number >= fromTurn.minSegment) {
    turn = fromTurn;
  } else {
    for (const candidate of stats.turns) {
      if (isOpen(candidate) && candidate.minSegment !== null && number >= candidate.minSegment
        && (turn === null || candidate.minSegment > turn.minSegment)) turn = candidate;
    }
  }
  if (turn === null) {
    if (fromTurn) return null; // replayed history on the presenter socket: the listeners have it
    turn = remoteTurn(event);
  }
  const entry = { turn, source: null, translation: null };
  segments.set(number, entry);
  turn.segments.push(number);
  turn.segments.sort((x, y) => x - y);
  if (number > maxSegment) maxSegment = number;
  return entry;
}

/** A turn for speech nobody on this page spoke: consecutive segments in one language join. */
function remoteTurn(event) {
  const lang = event.source ? event.lang : otherLang(event.lang);
  const last = stats.turns[stats.turns.length - 1];
  if (last && !last.live && last.lang === lang
    && last.segments.length && last.segments[last.segments.length - 1] === event.segment - 1) {
    return last;
  }
  return newTurn({ side: sideOf(lang), lang, live: false, state: 'remote' });
}

function onCaption(event, fromTurn = null) {
  if (!Number.isInteger(event.segment)) return;
  const entry = claim(event, fromTurn);
  if (entry === null) return;
  const { turn } = entry;
  const slot = event.source ? 'source' : 'translation';
  if (!event.source && turn.lang && event.lang === turn.lang) return; // not a translation here
  const current = entry[slot];
  if (current && (current.state === 'final' || current.seq >= event.seq)) return; // a repeat
  entry[slot] = {
    lang: event.lang, text: String(event.text || ''), state: event.state, seq: event.seq,
  };
  if (!event.source && event.state === 'final' && Array.isArray(event.sources)) {
    // A translation final covers its whole sentence (docs/protocol.md, "sources"): it
    // replaces the drafts of every segment it covers; its text stays on its first segment.
    for (const covered of event.sources) {
      const other = segments.get(covered);
      if (covered === event.segment || !other) continue;
      other.translation = { lang: event.lang, text: '', state: 'final', seq: event.seq };
    }
  }
  if (event.source && turn.lang === null) {
    // Automatic detection: the server says which language it heard.
    turn.lang = event.lang;
    turn.side = sideOf(event.lang);
    turn.translationLang = otherLang(event.lang);
  }
  compose(turn);
  render();
}

/** The turn's text and translation from its segments, in order. */
function compose(turn) {
  const parts = turn.segments.map((number) => segments.get(number));
  const spoken = parts.filter((part) => part.source && part.source.text.trim());
  turn.text = spoken.map((part) => part.source.text.trim()).join(' ');
  turn.translation = spoken
    .filter((part) => part.translation && part.translation.text.trim())
    .map((part) => part.translation.text.trim())
    .join(' ');
  turn.final = parts.length > 0 && parts.every((part) => part.source && part.source.state === 'final');
  turn.translationFinal = turn.final && spoken.length > 0
    && spoken.every((part) => part.translation && part.translation.state === 'final');
  const now = performance.now();
  if (turn.translation && turn.timing.translationShownAt === null) turn.timing.translationShownAt = now;
  if (turn.translationFinal && turn.timing.translationFinalAt === null) {
    turn.timing.translationFinalAt = now;
    // Screen readers hear each new turn's translation once (not every draft, not the backlog).
    if (turn === stats.turns[stats.turns.length - 1] && stats.phase === 'conversation') {
      ui.announcer.textContent = `${nameOf(turn.translationLang)}: ${turn.translation}`;
    }
  }
}

function onAudio(header, pcm) {
  const entry = segments.get(header.segment);
  const seconds = pcm.byteLength / 2 / (Number(header.sample_rate) || 16000);
  if (entry) {
    const { turn } = entry;
    turn.audioChunks += 1;
    turn.audioSeconds += seconds;
    if (turn.timing.firstAudioAt === null) turn.timing.firstAudioAt = performance.now();
  } else {
    stats.unmatchedAudio += 1;
  }
  if (!stats.speak) {
    stats.audioNotPlayed += 1;
    return;
  }
  if (active !== null) {
    // Never into an open microphone (the phone would translate its own voice): held until the
    // turn ends, then played if it is that turn's own translation (a sentence finished while
    // the speaker went on), dropped if it is an earlier turn's (the partner has moved on).
    held.push({ header, pcm, turn: entry ? entry.turn : null, seconds });
    heldSeconds += seconds;
    while (heldSeconds > HELD_MAX_SECONDS && held.length > 1) {
      heldSeconds -= held.shift().seconds;
      stats.audioNotPlayed += 1;
    }
    return;
  }
  player.push(header, pcm);
}

/** Play what was held while `turn` was being spoken: its own translation only. */
function releaseHeld(turn) {
  const items = held;
  held = [];
  heldSeconds = 0;
  for (const item of items) {
    if (item.turn === turn && stats.speak) player.push(item.header, item.pcm);
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
  const turn = newTurn({ side: auto ? null : side, lang, live: true, auto, state: 'connecting' });
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
    turn.minSegment = maxSegment + 1;
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
  const index = stats.turns.indexOf(current.turn);
  if (index >= 0 && current.turn.segments.length === 0) stats.turns.splice(index, 1);
  else current.turn.state = 'done';
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
  const db = rms > 0 ? 20 * Math.log10(rms) : -Infinity;
  const level = Math.min(1, Math.max(0, (db + 60) / 60));
  const button = current.side === 'auto' ? ui.auto : ui.sides[current.side].button;
  button.style.setProperty('--level', level.toFixed(3)); // CSSOM: allowed by a strict CSP
}

// ---------------------------------------------------------------- buttons (tap and hold)

function wireButton(button, side) {
  let pressedAt = 0;
  let pointer = null;
  button.addEventListener('click', (event) => {
    if (stats.hold) {
      event.preventDefault(); // hold mode works on press and release
      return;
    }
    if (active && active.side === side) endTurn();
    else if (!active) startTurn(side);
  });
  button.addEventListener('pointerdown', (event) => {
    if (!stats.hold || event.button !== 0 || active) return;
    event.preventDefault();
    pointer = event.pointerId;
    button.setPointerCapture?.(event.pointerId);
    pressedAt = performance.now();
    startTurn(side);
  });
  const release = (event) => {
    if (!stats.hold || event.pointerId !== pointer) return;
    pointer = null;
    if (!active || active.side !== side) return;
    if (performance.now() - pressedAt < HOLD_MIN_MS) {
      cancelTurn();
      showError('Keep the button pressed while you speak, then let go.');
    } else {
      endTurn();
    }
  };
  button.addEventListener('pointerup', release);
  button.addEventListener('pointercancel', release);
  button.addEventListener('contextmenu', (event) => {
    if (stats.hold) event.preventDefault(); // a long press must not open a menu
  });
  // Keyboards hold Space or Enter.
  button.addEventListener('keydown', (event) => {
    if (!stats.hold || (event.key !== ' ' && event.key !== 'Enter')) return;
    event.preventDefault();
    if (event.repeat || active) return;
    pressedAt = performance.now();
    startTurn(side);
  });
  button.addEventListener('keyup', (event) => {
    if (!stats.hold || (event.key !== ' ' && event.key !== 'Enter')) return;
    event.preventDefault();
    if (active && active.side === side) endTurn();
  });
}

// ---------------------------------------------------------------- rendering

function formatTime(ms) {
  return new Date(ms).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
}

function setText(element, text) {
  if (element.textContent !== text) element.textContent = text;
}

function buttonState(side) {
  if (!stats.canTalk || stats.phase !== 'conversation') return 'off';
  if (active && active.side === side) return active.turn.state === 'connecting' ? 'connecting' : 'recording';
  if (active) return 'busy';
  return 'idle';
}

function renderButton(button, textElement, side, lang) {
  const state = buttonState(side);
  const w = words(lang);
  let text = stats.hold ? w.hold : w.tap;
  if (state === 'recording' || state === 'connecting') text = stats.hold ? w.release : w.stop;
  else if (state === 'busy') text = w.wait;
  setText(textElement, text);
  textElement.lang = wordsLang(lang);
  button.dataset.state = state;
  button.setAttribute('aria-pressed', String(state === 'recording' || state === 'connecting'));
  button.disabled = state === 'off' || state === 'busy';
  if (state !== 'recording') button.style.removeProperty('--level');
}

/** The newest turn, shown in `lang`: the original if it was spoken in `lang`, else its translation. */
function renderLatest(side) {
  const parts = ui.sides[side];
  const lang = stats.langs[side];
  const turn = [...stats.turns].reverse().find((t) => t.lang && (t.text || isOpen(t)))
    || [...stats.turns].reverse().find((t) => isOpen(t));
  const w = words(lang);
  parts.latest.replaceChildren();
  parts.latest.dataset.empty = turn ? '0' : '1';
  if (!turn) return;
  const original = turn.lang === lang;
  const text = original ? turn.text : turn.translation;
  const line = document.createElement('p');
  line.className = 'talk-latest-text';
  line.lang = lang;
  line.dataset.kind = original ? 'original' : 'translation';
  line.dataset.state = original ? (turn.final ? 'final' : 'draft')
    : (turn.translationFinal ? 'final' : 'draft');
  if (text) {
    line.textContent = text;
  } else {
    line.dataset.placeholder = '1';
    line.lang = wordsLang(lang);
    line.textContent = turn.state === 'recording' || turn.state === 'connecting'
      ? w.listening : (turn.state === 'failed' ? '—' : w.translating);
  }
  const from = document.createElement('p');
  from.className = 'talk-latest-from';
  from.textContent = turn.lang && !original ? `← ${nativeOf(turn.lang)}` : '';
  parts.latest.append(line, from);
}

function renderHistoryItem(turn) {
  let item = turnItems.get(turn.id);
  if (!item) {
    item = document.createElement('li');
    item.className = 'talk-turn';
    item.dataset.turn = String(turn.id);
    const meta = document.createElement('p');
    meta.className = 'talk-turn-meta';
    const original = document.createElement('p');
    original.className = 'talk-turn-original';
    const translation = document.createElement('p');
    translation.className = 'talk-turn-translation';
    item.append(meta, original, translation);
    turnItems.set(turn.id, item);
  }
  const [meta, original, translation] = item.children;
  item.dataset.side = turn.side || '';
  item.dataset.state = turn.state;
  const direction = turn.lang
    ? `${nameOf(turn.lang)} → ${turn.translationLang ? nameOf(turn.translationLang) : '?'}`
    : 'Detecting the language…';
  setText(meta, `${formatTime(turn.startedAt)} · ${direction}${turn.state === 'failed' ? ' · failed' : ''}`);
  original.lang = turn.lang || '';
  original.dataset.state = turn.final ? 'final' : 'draft';
  setText(original, turn.text || (isOpen(turn) ? '…' : ''));
  translation.lang = turn.translationLang || '';
  translation.dataset.state = turn.translationFinal ? 'final' : 'draft';
  setText(translation, turn.translation);
  return item;
}

function renderHistory() {
  const follow = ui.history.scrollHeight - ui.history.scrollTop - ui.history.clientHeight < 40;
  const shown = stats.turns.filter((turn) => turn.text || isOpen(turn) || turn.state === 'failed');
  const items = shown.map(renderHistoryItem);
  ui.historyEmpty.hidden = items.length > 0;
  const current = [...ui.history.children].filter((child) => child !== ui.historyEmpty);
  if (current.length !== items.length || current.some((child, i) => child !== items[i])) {
    ui.history.replaceChildren(ui.historyEmpty, ...items);
  }
  if (follow) ui.history.scrollTop = ui.history.scrollHeight;
}

function render() {
  stats.state = active ? (active.turn.state === 'connecting' ? 'connecting' : 'recording') : 'idle';
  root.dataset.phase = stats.phase;
  root.dataset.facing = stats.facing ? '1' : '0';
  root.dataset.auto = stats.auto ? '1' : '0';
  root.dataset.mode = stats.hold ? 'hold' : 'tap';
  root.dataset.busy = stats.state === 'idle' ? '' : (active.side || '');
  ui.setup.hidden = stats.phase === 'conversation' || stats.phase === 'ended';
  ui.conversation.hidden = !ui.setup.hidden;
  if (ui.conversation.hidden) return;
  for (const side of SIDES) {
    const lang = stats.langs[side];
    const parts = ui.sides[side];
    parts.panel.lang = wordsLang(lang);
    setText(parts.name, label(lang));
    parts.name.lang = lang;
    setText(parts.lang, label(lang));
    parts.button.hidden = stats.auto;
    renderButton(parts.button, parts.text, side, lang);
    const speaking = active && (active.side === side || (active.side === 'auto' && active.turn.side === side));
    setText(parts.state, speaking ? words(lang).listening : '');
    parts.panel.dataset.state = speaking ? 'speaking' : 'idle';
    renderLatest(side);
  }
  ui.auto.hidden = !stats.auto;
  renderButton(ui.auto, ui.autoText, 'auto', stats.langs.a);
  setText(ui.autoLangs, `${nativeOf(stats.langs.a)} / ${nativeOf(stats.langs.b)}`);
  ui.facing.setAttribute('aria-pressed', String(stats.facing));
  renderHistory();
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
  const { a, b } = stats.langs;
  const lines = [
    `Conversation ${stats.code || ''}: ${nameOf(a)} ↔ ${nameOf(b)}`,
    new Date().toISOString().slice(0, 16).replace('T', ' '),
    '',
  ];
  for (const turn of stats.turns) {
    if (!turn.text) continue;
    lines.push(`[${formatTime(turn.startedAt)}] ${nameOf(turn.lang)}: ${turn.text}`);
    if (turn.translationLang) {
      lines.push(`    ${nameOf(turn.translationLang)}: ${turn.translation || '(no translation)'}`);
    }
    lines.push('');
  }
  return `${lines.join('\n')}\n`;
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

async function copyText(text, button) {
  const original = button.textContent;
  try {
    await navigator.clipboard.writeText(text);
    button.textContent = 'Copied';
  } catch (error) {
    console.warn('clipboard unavailable', error);
    window.prompt('Copy this link:', text);
  }
  window.setTimeout(() => {
    button.textContent = original;
  }, 1500);
}

// ---------------------------------------------------------------- session

function storageKey(code) {
  return `interp.talk.${code.toUpperCase()}`;
}

function remember() {
  try {
    window.sessionStorage.setItem(storageKey(stats.code), token);
  } catch (error) {
    console.warn('sessionStorage unavailable; a reload will not continue this conversation', error);
  }
}

function recall(code) {
  try {
    return window.sessionStorage.getItem(storageKey(code));
  } catch (error) {
    return null;
  }
}

async function createSession(a, b) {
  const response = await fetch('/api/sessions', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
    body: JSON.stringify({
      title: `Conversation: ${nameOf(a)} ↔ ${nameOf(b)}`,
      source_language: a,
      target_languages: [b],
    }),
  });
  let body = null;
  try {
    body = await response.json();
  } catch (error) {
    body = null;
  }
  if (!response.ok) {
    throw new Error((body && body.error) || `The server refused: ${response.status} ${response.statusText}`);
  }
  return body;
}

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
      const problem = pairProblem(a, b);
      if (problem) throw new Error(problem);
      const created = await createSession(a, b);
      stats.code = created.code;
      stats.langs = { a, b };
      token = created.presenter_token;
      remember();
      window.history.replaceState(null, '', `/talk?code=${encodeURIComponent(stats.code)}`);
    }
  } catch (error) {
    stats.phase = 'setup';
    showSetupError(describeError(error));
    renderPair();
    return;
  }
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
  token = fragment.get('token') || recall(code);
  if (fragment.get('token')) window.history.replaceState(null, '', `/talk?code=${encodeURIComponent(code)}`);
  let facts;
  try {
    const response = await fetch(`/api/sessions/${encodeURIComponent(code)}`, {
      headers: { Accept: 'application/json' },
    });
    if (response.status === 404) throw new Error(`There is no conversation with the code ${code}.`);
    if (!response.ok) throw new Error(`${response.status} ${response.statusText}`);
    facts = await response.json();
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
  if (token) remember();
  for (const [select, lang] of [[ui.langA, stats.langs.a], [ui.langB, stats.langs.b]]) {
    if (![...select.options].some((option) => option.value === lang)) {
      select.append(new Option(label(lang), lang));
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
  if (token && stats.code) {
    try {
      await fetch(`/api/sessions/${encodeURIComponent(stats.code)}/end`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${token}`, Accept: 'application/json' },
      });
    } catch (error) {
      console.warn('could not end the conversation', error);
    }
    try {
      window.sessionStorage.removeItem(storageKey(stats.code));
    } catch (error) {
      console.warn('sessionStorage unavailable', error);
    }
  }
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
