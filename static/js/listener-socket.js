// The audience side of WebSocket /ws/listen/{code} (docs/protocol.md, version 1).
//
// Keeps one connection open for as long as the page wants it. Every event carries a
// session-wide `seq`; the socket remembers the highest one and, after any drop, reconnects with
// `since=<that seq>` so the server backfills exactly what was missed (every final, the newest
// draft of an open segment). Reconnects back off exponentially with full jitter, so a server
// restart is not met by every phone at the same instant; going offline waits for the browser's
// `online` event, and a page coming back to the foreground retries at once.
//
// A connection can also die without closing (./heartbeat.js): an open socket pings every
// PING_MS, and a ping unanswered for UNANSWERED_MS drops the connection and reconnects as
// after any drop.
//
// Close codes that no retry can fix (1008: no such session or origin refused; 1003: the request
// itself is wrong) end the socket for good. 1013 (too far behind, or the session is full) and
// everything else is retried.
//
// Spoken translation (optional): with `audio: true` the socket asks for it (`audio=1` in the URL,
// or `{"type": "audio", "enabled": ...}` on an open socket). Each chunk is a text header
// (`type: "audio"`) followed by exactly one binary message with its PCM; the two are paired here
// and handed to `onAudio(header, pcm)` (pcm an ArrayBuffer). A binary message without a header
// just before it is ignored. Audio is live only: it is never backfilled, so its `seq` does not
// move `lastSeq` (a reconnect asks for what came after the last caption or state event).

import { Heartbeat } from './heartbeat.js';

const BASE_DELAY_MS = 500;
const MAX_DELAY_MS = 15_000;
const PERMANENT_CLOSE_CODES = new Set([1003, 1008]);
const CLIENT_CLOSE_OFFLINE = 4000;
const CLIENT_CLOSE_SILENT = 4001;
const PING_MS = 10_000;
const UNANSWERED_MS = 15_000;

export function listenSocketUrl(
  code, { lang, since, audio = false, token = null, preview = false }, location = window.location,
) {
  const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
  const query = new URLSearchParams({ lang, since: String(since), audio: audio ? '1' : '0' });
  if (token) query.set('token', token); // a private session's listener token
  if (preview) query.set('preview', '1'); // the presenter's preview: not counted
  return `${scheme}//${location.host}/ws/listen/${encodeURIComponent(code)}?${query}`;
}

/**
 * Why a listener socket was closed for good, in words: 1008 says that `what` (the session, the
 * conversation) is not there any more; any other code gives the server's reason.
 */
export function refusalWords(code, reason, what) {
  return code === 1008
    ? `This ${what} is not available any more.`
    : `The server refused the connection: ${reason || code}`;
}

/** The delay before reconnect attempt `attempt` (1, 2, ...): exponential, full jitter. */
export function backoffDelay(attempt, random = Math.random) {
  const ceiling = Math.min(MAX_DELAY_MS, BASE_DELAY_MS * 2 ** Math.max(0, attempt - 1));
  return Math.round(ceiling / 2 + (random() * ceiling) / 2);
}

export class ListenerSocket {
  /**
   * @param {{code: string, lang: string, since?: number,
   *          audio?: boolean, token?: string|null, preview?: boolean,
   *          onEvent: (event: object) => void,
   *          onAudio?: (header: object, pcm: ArrayBuffer) => void,
   *          onStatus: (status: string, detail: object) => void}} options
   *   token: a private session's listener token (or the presenter's); preview: the
   *   presenter's preview, not counted as audience (needs the presenter token).
   *   onStatus gets 'connecting', 'open', 'reconnecting' ({attempt, delayMs, code, reason}),
   *   'offline', or 'failed' ({code, reason}: closed for good by the server).
   */
  constructor({
    code, lang, since = 0, audio = false, token = null, preview = false,
    onEvent, onAudio = () => {}, onStatus,
  }) {
    this.code = code;
    this.lang = lang;
    this.token = token;
    this.preview = preview;
    this.audio = Boolean(audio);
    this.lastSeq = since;
    this.onEvent = onEvent;
    this.onAudio = onAudio;
    this.audioHeader = null; // the `audio` header whose PCM is the next binary message
    this.onStatus = onStatus;
    this.ws = null;
    this.attempt = 0;
    this.opens = 0;
    this.timer = null;
    this.stopped = false;
    this.gotMessage = false;
    this.heartbeat = new Heartbeat({
      periodMs: PING_MS,
      unansweredMs: UNANSWERED_MS,
      ping: () => this.#ping(),
      lost: (reason) => this.#lost(reason),
    });
    this.onOnline = () => this.#retryNow();
    this.onOffline = () => this.#dropForOffline();
    this.onVisible = () => {
      if (document.visibilityState === 'visible') this.#retryNow();
    };
  }

  /** Connect, and keep reconnecting until close() or a permanent refusal. */
  start() {
    window.addEventListener('online', this.onOnline);
    window.addEventListener('offline', this.onOffline);
    document.addEventListener('visibilitychange', this.onVisible);
    this.#connect();
  }

  /** Whether the socket is open now. */
  get connected() {
    return this.ws !== null && this.ws.readyState === WebSocket.OPEN;
  }

  /** Switch language without reconnecting (and use it for every reconnect after). */
  setLanguage(lang) {
    this.lang = lang;
    if (this.connected) this.ws.send(JSON.stringify({ type: 'language', lang }));
  }

  /** Ask for spoken translation, or stop it, without reconnecting (and on every reconnect). */
  setAudio(enabled) {
    this.audio = Boolean(enabled);
    if (!this.audio) this.audioHeader = null;
    if (this.connected) this.ws.send(JSON.stringify({ type: 'audio', enabled: this.audio }));
  }

  /** Close for good (the session ended, or the page is going away). */
  close(reason = 'listener left') {
    this.stopped = true;
    window.clearTimeout(this.timer);
    this.timer = null;
    this.heartbeat.stop();
    window.removeEventListener('online', this.onOnline);
    window.removeEventListener('offline', this.onOffline);
    document.removeEventListener('visibilitychange', this.onVisible);
    if (this.ws && this.ws.readyState <= WebSocket.OPEN) this.ws.close(1000, reason);
  }

  #connect() {
    this.timer = null;
    if (this.stopped) return;
    this.gotMessage = false;
    this.onStatus('connecting', { attempt: this.attempt });
    const ws = new WebSocket(
      listenSocketUrl(this.code, {
        lang: this.lang, since: this.lastSeq, audio: this.audio, token: this.token,
        preview: this.preview,
      }),
    );
    ws.binaryType = 'arraybuffer';
    this.ws = ws;
    this.audioHeader = null;
    ws.addEventListener('open', () => {
      if (this.ws !== ws) return;
      this.heartbeat.start();
      this.opens += 1;
      this.onStatus('open', { reconnect: this.opens > 1 });
    });
    ws.addEventListener('message', (event) => {
      if (this.ws === ws) this.#onMessage(event);
    });
    ws.addEventListener('close', (event) => {
      if (this.ws === ws) this.#onClose(event);
    });
  }

  #ping() {
    if (!this.connected) return false;
    this.ws.send(JSON.stringify({ type: 'ping' }));
    return true;
  }

  /** Drop the open socket (its close handshake cannot complete) and reconnect. */
  #lost(reason) {
    const ws = this.ws;
    if (!ws) return;
    ws.close(CLIENT_CLOSE_SILENT, reason);
    this.#onClose({ code: 1006, reason });
  }

  #onMessage(message) {
    this.heartbeat.heard();
    if (typeof message.data !== 'string') {
      // The PCM of the header just before it (audio=1).
      const header = this.audioHeader;
      this.audioHeader = null;
      if (header && this.audio && message.data instanceof ArrayBuffer) {
        this.onAudio(header, message.data);
      }
      return;
    }
    this.audioHeader = null; // a header not followed by its PCM: nothing to pair it with
    let event;
    try {
      event = JSON.parse(message.data);
    } catch (error) {
      console.warn('ignoring a message that is not JSON', error);
      return;
    }
    if (!this.gotMessage) {
      this.gotMessage = true;
      this.attempt = 0; // the server is serving us again: start the backoff afresh next time
    }
    if (event && event.type === 'audio') {
      this.audioHeader = event;
      return;
    }
    if (event && event.type === 'pong') return;
    if (typeof event.seq === 'number' && event.seq > this.lastSeq) this.lastSeq = event.seq;
    this.onEvent(event);
  }

  #onClose(event) {
    this.ws = null;
    this.heartbeat.stop();
    if (this.stopped) return;
    if (PERMANENT_CLOSE_CODES.has(event.code)) {
      this.stopped = true;
      this.onStatus('failed', { code: event.code, reason: event.reason });
      return;
    }
    if (!navigator.onLine) {
      this.onStatus('offline', { code: event.code, reason: event.reason });
      return; // the 'online' event reconnects
    }
    this.attempt += 1;
    const delayMs = backoffDelay(this.attempt);
    this.onStatus('reconnecting', {
      attempt: this.attempt, delayMs, code: event.code, reason: event.reason,
    });
    this.timer = window.setTimeout(() => this.#connect(), delayMs);
  }

  #retryNow() {
    if (this.stopped || this.ws !== null || !navigator.onLine) return;
    window.clearTimeout(this.timer);
    this.#connect();
  }

  #dropForOffline() {
    // The browser knows the network is gone; a socket it has not noticed yet is dead anyway.
    // Let go of it now (its closing handshake cannot complete) and wait for 'online'.
    if (this.stopped) return;
    window.clearTimeout(this.timer);
    this.timer = null;
    const ws = this.ws;
    this.ws = null;
    if (ws && ws.readyState <= WebSocket.OPEN) ws.close(CLIENT_CLOSE_OFFLINE, 'offline');
    this.onStatus('offline', { code: CLIENT_CLOSE_OFFLINE, reason: 'offline' });
  }
}
