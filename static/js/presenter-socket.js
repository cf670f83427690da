// The presenter side of WebSocket /ws/present/{code} (docs/protocol.md, version 1).
//
// start (text) -> {"type":"ready"} -> binary PCM frames -> {"type":"stop"} -> remaining events
// -> {"type":"ended"} -> close 1000. Frames captured before "ready" wait in a small queue so the
// first words are not lost while the socket opens; past the bound the oldest are dropped.
//
// A connection can die without closing (./heartbeat.js): once ready the socket pings every
// PING_MS, and a ping unanswered for UNANSWERED_MS reports the connection lost at once (a
// close with code 1006), as a dropped connection is. While the server finishes a stop it
// reads no pings, so none is sent then.

import { Heartbeat } from './heartbeat.js';

const PENDING_LIMIT = 50; // frames held before "ready": 5 s of 100 ms frames
const BUFFERED_LIMIT = 1 << 20; // bytes queued in the socket (about 30 s of audio) before dropping
export const PING_MS = 2500; // the console's pings, over either transport (./presenter-webrtc.js)
export const UNANSWERED_MS = 10_000;

/** What each close code means to the person at the console (docs/protocol.md). */
const CLOSE_REASONS = {
  1000: 'The stream ended.',
  1001: 'The server is going away (restart or shutdown).',
  1003: 'The server refused the audio format.',
  1006: 'The connection was lost.',
  1008: 'Not allowed: this presenter link is invalid or the session has ended.',
  1009: 'An audio message was too large.',
  1011: 'The server hit an internal error.',
  1013: 'The server is busy, or this session is already live on another device. Try again shortly.',
};

export class SocketClosedError extends Error {
  constructor(code, reason) {
    const known = CLOSE_REASONS[code] || 'The connection closed.';
    super(reason ? `${known} (${code}: ${reason})` : `${known} (${code})`);
    this.name = 'SocketClosedError';
    this.code = code;
    this.reason = reason;
  }
}

export function presentSocketUrl(code, location = window.location) {
  const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
  return `${scheme}//${location.host}/ws/present/${encodeURIComponent(code)}`;
}

export class PresenterSocket {
  /**
   * @param {{code: string, token: string, language?: string, sampleRate: number,
   *          onEvent: (event: object) => void, onClose: (error: SocketClosedError|null) => void,
   *          pendingLimit?: number}} options
   *   onEvent gets every server event except "ready" and "ended"; onClose gets null after a
   *   normal end (1000 following "ended") and a SocketClosedError otherwise. pendingLimit: how
   *   many frames to hold before "ready" (default 50; keep it under the server's 10 s burst).
   *   `language` (optional): the language spoken (by default the token's speaker's own).
   *   `since` (optional): the newest event seq the caller holds (the server sends only later
   *   ones: a reconnect does not take the whole session again).
   *   `finals` (optional): "fast" asks for the quicker final decode (conversation turns).
   */
  constructor({
    code, token, language = null, sampleRate, onEvent, onClose, pendingLimit = PENDING_LIMIT,
    finals = null, since = 0,
  }) {
    this.since = since;
    this.code = code;
    this.token = token;
    this.language = language;
    this.finals = finals;
    this.sampleRate = sampleRate;
    this.onEvent = onEvent;
    this.onClose = onClose;
    this.pendingLimit = pendingLimit;
    this.ws = null;
    this.ready = false;
    this.ended = false;
    this.closed = false;
    this.pending = [];
    this.framesSent = 0;
    this.bytesSent = 0;
    this.framesDropped = 0;
    this.readyWaiters = null;
    this.endWaiters = null;
    this.heartbeat = new Heartbeat({
      periodMs: PING_MS,
      unansweredMs: UNANSWERED_MS,
      ping: () => this.#ping(),
      lost: (reason) => this.#lost(reason),
    });
  }

  /** Open the socket and send `start`; resolves on "ready", rejects if the socket closes first. */
  connect() {
    return new Promise((resolve, reject) => {
      this.readyWaiters = { resolve, reject };
      const ws = new WebSocket(presentSocketUrl(this.code));
      ws.binaryType = 'arraybuffer';
      this.ws = ws;
      ws.addEventListener('open', () => {
        ws.send(JSON.stringify({
          type: 'start',
          token: this.token,
          sample_rate: this.sampleRate,
          encoding: 'pcm_s16le',
          ...(this.language ? { language: this.language } : {}),
          ...(this.since > 0 ? { since: this.since } : {}),
          ...(this.finals ? { finals: this.finals } : {}),
        }));
      });
      ws.addEventListener('message', (event) => this.#onMessage(event));
      ws.addEventListener('close', (event) => this.#onSocketClose(event));
    });
  }

  /** Send one frame of PCM (queued until "ready"). Returns false if the frame was dropped. */
  send(pcm) {
    if (this.closed || this.ended) return false;
    if (!this.ready) {
      this.pending.push(pcm);
      if (this.pending.length > this.pendingLimit) {
        this.pending.shift();
        this.framesDropped += 1;
      }
      return true;
    }
    if (this.ws.bufferedAmount > BUFFERED_LIMIT) {
      this.framesDropped += 1;
      return false;
    }
    this.ws.send(pcm);
    this.framesSent += 1;
    this.bytesSent += pcm.byteLength;
    return true;
  }

  /**
   * Tell the server the speaker is done. Resolves when the server has sent "ended" and closed
   * normally; rejects with SocketClosedError if it closes any other way.
   */
  stop() {
    if (this.closed) {
      return this.ended ? Promise.resolve() : Promise.reject(new SocketClosedError(1006, ''));
    }
    const done = new Promise((resolve, reject) => {
      this.endWaiters = { resolve, reject };
    });
    this.heartbeat.stop(); // the server reads no pings while it finishes
    if (this.ready) this.ws.send(JSON.stringify({ type: 'stop' }));
    else this.ws.close(1000, 'stopped before ready');
    return done;
  }

  /** Close without the graceful stop (page unload, errors). */
  abort(reason = 'presenter left') {
    if (this.ws && !this.closed) this.ws.close(1000, reason);
  }

  #ping() {
    if (this.closed || !this.ready) return false;
    this.ws.send(JSON.stringify({ type: 'ping' }));
    return true;
  }

  #lost(reason) {
    const ws = this.ws;
    // Reported now: the close handshake of a dead connection can take minutes.
    this.#onSocketClose({ code: 1006, reason });
    ws.close(4000, reason);
  }

  #onMessage(event) {
    this.heartbeat.heard();
    if (typeof event.data !== 'string') return; // the presenter socket sends no audio back
    let message;
    try {
      message = JSON.parse(event.data);
    } catch (error) {
      console.warn('ignoring a message that is not JSON', error);
      return;
    }
    if (message.type === 'ready') {
      this.ready = true;
      this.heartbeat.start();
      for (const pcm of this.pending.splice(0)) this.send(pcm);
      if (this.readyWaiters) this.readyWaiters.resolve(message);
      this.readyWaiters = null;
    } else if (message.type === 'ended') {
      this.ended = true;
    } else if (message.type !== 'pong') {
      this.onEvent(message);
    }
  }

  #onSocketClose(event) {
    if (this.closed) return; // reported already (a connection given up as lost)
    this.closed = true;
    this.heartbeat.stop();
    this.ready = false;
    this.pending = [];
    const normal = event.code === 1000 && (this.ended || this.endWaiters !== null);
    const error = normal ? null : new SocketClosedError(event.code, event.reason);
    if (this.readyWaiters) {
      this.readyWaiters.reject(error || new SocketClosedError(event.code, event.reason));
      this.readyWaiters = null;
    }
    if (this.endWaiters) {
      if (error) this.endWaiters.reject(error);
      else this.endWaiters.resolve();
      this.endWaiters = null;
    }
    this.onClose(error);
  }
}
