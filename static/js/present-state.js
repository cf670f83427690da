// The presenter console's state, pure (no DOM, no clock, no storage): the counters the console
// keeps (`window.interpStats`), which controls each stream state allows, the status line's
// words, the level meter's scale, the audience by language, the microphone list, the transport
// kept on this device, and the words for an error. Drawn by ./present-status.js,
// ./present-settings.js and ./present-share.js; tested in e2e/test_present_state.py.
//
// A stream's states: idle -> starting -> live -> stopping -> ended (Start again goes on with
// the same session); a failure on the way -> error; "End session" -> closed, for good. A live
// stream whose connection is lost, or which a restarting server closes, goes live -> reconnecting
// -> live on its own, the microphone open all along (`reconnectDelay` says when to try again and
// when to give up, -> error).

export const STATUS_TEXT = {
  idle: 'Ready when you are.',
  starting: 'Connecting…',
  live: 'Live',
  reconnecting: 'Connection lost. Reconnecting…',
  stopping: 'Finishing the last sentence…',
  ended: 'Stream ended. Press Start to continue the session.',
  error: 'Stopped.',
  closed: 'Session ended. Listeners can still download the transcript.',
};

/** The counters of a console that has done nothing yet (`window.interpStats`). */
export function newStats() {
  return {
    framesSent: 0,
    bytesSent: 0,
    framesDropped: 0,
    captions: { draft: 0, final: 0 },
    state: 'idle',
    inputRate: null,
    transport: 'websocket', // how the audio goes: websocket (PCM) | webrtc (Opus over RTP)
    lagSeconds: 0,
    reconnects: 0, // times a lost connection was opened again without the presenter
    microphoneLosses: 0, // times the open microphone went (unplugged) while streaming
    listeners: null,
    byLanguage: {},
    session: 'unknown', // the session's own state: waiting | live | paused | ended
    lastError: null,
  };
}

/** Whether Stop (or a microphone switch's failure) may end a stream in `state`. */
export function canStop(state) {
  return state === 'live' || state === 'starting' || state === 'reconnecting';
}

/** Whether leaving the page in `state` would cut off what the presenter is saying. */
export function warnsBeforeLeaving(state) {
  return state === 'live' || state === 'stopping' || state === 'reconnecting';
}

// Closes a new connection may cure (docs/protocol.md): the connection was lost (1006), the
// server is going away or restarting (1001, 1012), hit an internal error (1011), or asks to
// try again later (1013: busy, or the lost connection's stream still open: the server lets a
// new one take over once the old has carried no audio for a few seconds). Any other close
// (a bad token, an ended session, refused audio) is told to the presenter at once.
const RECONNECTABLE = new Set([1001, 1006, 1011, 1012, 1013]);
const RECONNECT_FIRST_MS = 500;
const RECONNECT_MAX_MS = 8000;
export const RECONNECT_GIVE_UP_MS = 120_000;

/** How long to wait before attempt `attempt` (0, 1, ...) to open again a stream closed with
 * `code`, `elapsedMs` after it was lost: doubling from half a second up to 8 s; null when the
 * close is not one a new connection cures, or after two minutes of trying. */
export function reconnectDelay(code, attempt, elapsedMs) {
  if (!RECONNECTABLE.has(code) || elapsedMs > RECONNECT_GIVE_UP_MS) return null;
  return Math.min(RECONNECT_MAX_MS, RECONNECT_FIRST_MS * 2 ** attempt);
}

/** Which controls a stream in `state` allows; `hasToken`: the console has a presenter or
 * speaker token. `busy`: a stream is open or opening (the transport cannot change). */
export function controlsFor(state, hasToken) {
  const busy = state === 'starting' || state === 'live' || state === 'stopping'
    || state === 'reconnecting';
  return {
    busy,
    start: !busy && hasToken && state !== 'closed',
    stop: canStop(state),
    end: hasToken && state !== 'closed' && state !== 'stopping',
  };
}

/** `seconds` as minutes and seconds ("12:05"); never negative. */
export function formatClock(seconds) {
  const s = Math.max(0, Math.floor(seconds));
  const minutes = Math.floor(s / 60);
  return `${minutes}:${String(s % 60).padStart(2, '0')}`;
}

/** The status line: live, it tells for how long (`liveSeconds`), how far the captions are
 * behind (`lagSeconds`, from 1 s on) and the audience (`listeners`, null until known). */
export function statusText({ state, liveSeconds, lagSeconds, listeners }) {
  if (state !== 'live') return STATUS_TEXT[state];
  const parts = [`Live · ${formatClock(liveSeconds)}`];
  if (lagSeconds >= 1) parts.push(`captions ${lagSeconds.toFixed(1)} s behind`);
  if (listeners !== null) parts.push(listeners === 1 ? '1 listener' : `${listeners} listeners`);
  return parts.join(' · ');
}

/** The level meter's fill (0..1) for an RMS level: -60 dBFS is empty, 0 dBFS full. */
export function meterLevel(rms) {
  const db = rms > 0 ? 20 * Math.log10(rms) : -Infinity;
  return Math.min(1, Math.max(0, (db + 60) / 60));
}

/** Whether a peak sample clips. */
export function isClipping(peak) {
  return peak >= 0.99;
}

/** The audience: the word after the count, and how many follow each language, most first
 * ("English 2 · Spanish 1"; a language without a name in `languageNames` by its code). */
export function audienceText(count, byLanguage, languageNames) {
  const languages = Object.entries(byLanguage)
    .filter(([, n]) => n > 0)
    .sort((a, b) => b[1] - a[1])
    .map(([lang, n]) => `${languageNames[lang] || lang} ${n}`);
  return { label: count === 1 ? 'listener' : 'listeners', languages: languages.join(' · ') };
}

/** What the console says once the editor links are revoked (`count` of them were valid). */
export function revokedText(count) {
  if (count === 0) return 'There were no editor links to revoke.';
  const links = count === 1 ? 'The editor link' : `All ${count} editor links`;
  return `${links} given so far no longer work${count === 1 ? 's' : ''}. Make new ones for the editors you trust.`;
}

/** The microphone picker for the browser's audio inputs (`{deviceId, label}`): null while it
 * hides their labels (no permission yet: keep "Default microphone"), else the options
 * (`{label, value}`, the default first; the browser's "default" and "communications" aliases
 * left out), the one to select (`wanted` if listed, else null) and the hint under it. */
export function microphoneChoice(devices, wanted) {
  const labelled = devices.filter((device) => device.deviceId && device.label);
  if (labelled.length === 0) return null;
  const options = [{ label: 'Default microphone', value: '' }];
  for (const device of labelled) {
    if (device.deviceId === 'default' || device.deviceId === 'communications') continue;
    options.push({ label: device.label, value: device.deviceId });
  }
  const found = options.length - 1;
  return {
    options,
    selected: options.some((option) => option.value === wanted) ? wanted : null,
    hint: `${found} microphone${found === 1 ? '' : 's'} found.`,
  };
}

/** A transport's name as the console knows it: "webrtc", or else "websocket". */
export function transportOf(value) {
  return value === 'webrtc' ? 'webrtc' : 'websocket';
}

/** The transport to begin with: the `saved` one if this browser has it (`hasWebRtc`). */
export function chosenTransport(saved, hasWebRtc) {
  return hasWebRtc ? transportOf(saved) : 'websocket';
}

/** The words for a failure to start or go on: the browser's microphone errors by name, any
 * other error by its message. */
export function describeError(error) {
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
