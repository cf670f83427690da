// The presenter over WebRTC: the microphone track goes to the server as Opus over RTP
// (POST /api/sessions/{code}/webrtc/offer, docs/protocol.md); a data channel named "control"
// brings back what the presenter socket would send ("ready", every event, "ended") and takes
// {"type": "stop"}. Same interface as PresenterSocket (connect / send / stop / abort), so the
// console switches transports without knowing which one it holds.
//
// No trickle ICE: the offer is sent once the browser has gathered its candidates (host
// candidates on a LAN; STUN/TURN ones when the server's GET /api/webrtc/config names servers).
//
// A path that goes dead is noticed as on the presenter socket (./heartbeat.js): pings on the
// channel once ready, and one unanswered for UNANSWERED_MS gives the connection up (1006).
// The browser's own check (ICE consent) takes about 30 s to say "failed".

import { Heartbeat } from './heartbeat.js';
import { PING_MS, SocketClosedError, UNANSWERED_MS } from './presenter-socket.js';

const GATHER_TIMEOUT_MS = 5000; // a STUN/TURN server that does not answer must not block Start
const STOP_DRAIN_MS = 300; // audio still in flight when the microphone stops
const CONNECT_TIMEOUT_MS = 20000;

/** The server's RTCPeerConnection configuration (STUN/TURN servers; none by default). */
export async function rtcConfiguration() {
  try {
    const response = await fetch('/api/webrtc/config', { headers: { Accept: 'application/json' } });
    if (response.ok) return await response.json();
  } catch (error) {
    console.warn('cannot read /api/webrtc/config; using host candidates only', error);
  }
  return { iceServers: [] };
}

function gathered(pc) {
  if (pc.iceGatheringState === 'complete') return Promise.resolve();
  return new Promise((resolve) => {
    const timer = window.setTimeout(resolve, GATHER_TIMEOUT_MS);
    pc.addEventListener('icegatheringstatechange', () => {
      if (pc.iceGatheringState === 'complete') {
        window.clearTimeout(timer);
        resolve();
      }
    });
  });
}

export class PresenterPeer {
  /**
   * @param {{code: string, token: string, since?: number, onEvent: (event: object) => void,
   *          onClose: (error: SocketClosedError|null) => void}} options
   *   onClose gets null after a normal end ("ended" after stop) and an error otherwise.
   *   since: the newest event seq the caller holds (only later ones are sent).
   */
  constructor({ code, token, since = 0, onEvent, onClose }) {
    this.code = code;
    this.token = token;
    this.since = since;
    this.onEvent = onEvent;
    this.onClose = onClose;
    this.pc = null;
    this.channel = null;
    this.sender = null;
    this.ready = false;
    this.closed = false;
    this.ended = false;
    this.framesSent = 0; // frames the microphone produced while connected (the track carries them)
    this.bytesSent = 0;
    this.framesDropped = 0;
    this.readyWaiters = null;
    this.endWaiters = null;
    this.heartbeat = new Heartbeat({
      periodMs: PING_MS,
      unansweredMs: UNANSWERED_MS,
      ping: () => this.#ping(),
      lost: (reason) => this.#fail(1006, reason),
    });
  }

  /**
   * Offer one send-only audio track (`track`, or none yet: see replaceTrack) to the server;
   * resolves when the server says "ready" on the channel.
   */
  async connect(track = null) {
    const pc = new RTCPeerConnection(await rtcConfiguration());
    this.pc = pc;
    this.sender = pc.addTransceiver(track || 'audio', { direction: 'sendonly' }).sender;
    const channel = pc.createDataChannel('control');
    this.channel = channel;
    const ready = new Promise((resolve, reject) => {
      this.readyWaiters = { resolve, reject };
    });
    channel.addEventListener('message', (event) => this.#onMessage(event));
    channel.addEventListener('close', () => this.#fail(1006, 'the connection closed'));
    pc.addEventListener('connectionstatechange', () => {
      if (pc.connectionState === 'failed') this.#fail(1006, 'WebRTC connection failed (ICE)');
    });
    await pc.setLocalDescription(await pc.createOffer());
    await gathered(pc);
    const response = await fetch(`/api/sessions/${encodeURIComponent(this.code)}/webrtc/offer`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
      body: JSON.stringify({
        sdp: pc.localDescription.sdp, type: 'offer', role: 'present', token: this.token,
        ...(this.since > 0 ? { since: this.since } : {}),
      }),
    });
    if (!response.ok) {
      let reason = `${response.status} ${response.statusText}`;
      try {
        reason = (await response.json()).error || reason;
      } catch (error) {
        console.warn('offer refusal is not JSON', error);
      }
      this.#fail(response.status === 401 || response.status === 403 ? 1008 : 1013, reason);
      return ready;
    }
    await pc.setRemoteDescription(await response.json());
    const timer = window.setTimeout(
      () => this.#fail(1006, 'WebRTC did not connect (no ICE route to the server)'),
      CONNECT_TIMEOUT_MS,
    );
    try {
      return await ready;
    } finally {
      window.clearTimeout(timer);
    }
  }

  /** Send `track` (the microphone, or another one) without renegotiating. */
  async replaceTrack(track) {
    if (this.sender) await this.sender.replaceTrack(track);
  }

  /** Count a microphone frame (the audio itself travels on the track). */
  send(pcm) {
    if (this.closed || this.ended || !this.ready) return false;
    this.framesSent += 1;
    this.bytesSent += pcm.byteLength;
    return true;
  }

  /** Finalise: resolves once the server has sent every event and "ended". */
  stop() {
    if (this.closed) {
      return this.ended ? Promise.resolve() : Promise.reject(new SocketClosedError(1006, ''));
    }
    const done = new Promise((resolve, reject) => {
      this.endWaiters = { resolve, reject };
    });
    this.heartbeat.stop(); // as on the presenter socket: a stop is answered by "ended"
    window.setTimeout(() => {
      if (this.channel && this.channel.readyState === 'open') {
        this.channel.send(JSON.stringify({ type: 'stop' }));
      } else {
        this.#finish(null);
      }
    }, STOP_DRAIN_MS);
    return done;
  }

  /** Close at once (page unload, errors); the server finalises what it heard. */
  abort() {
    this.#finish(null, true);
  }

  #ping() {
    if (this.closed || !this.ready || this.channel.readyState !== 'open') return false;
    this.channel.send(JSON.stringify({ type: 'ping' }));
    return true;
  }

  #onMessage(event) {
    this.heartbeat.heard();
    if (typeof event.data !== 'string') return;
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
      if (this.readyWaiters) this.readyWaiters.resolve(message);
      this.readyWaiters = null;
    } else if (message.type === 'ended') {
      this.ended = true;
      this.#finish(null);
    } else if (message.type === 'error' && message.code && !('seq' in message)) {
      this.#fail(message.code, message.message || 'stream refused');
    } else if (message.type !== 'pong') {
      this.onEvent(message);
    }
  }

  #fail(code, reason) {
    if (this.closed || this.ended) return;
    this.#finish(new SocketClosedError(code, reason));
  }

  #finish(error, quiet = false) {
    if (this.closed) return;
    this.closed = true;
    this.ready = false;
    this.heartbeat.stop();
    if (this.pc) this.pc.close();
    if (this.readyWaiters) {
      this.readyWaiters.reject(error || new SocketClosedError(1000, 'closed before ready'));
      this.readyWaiters = null;
    }
    if (this.endWaiters) {
      if (error) this.endWaiters.reject(error);
      else this.endWaiters.resolve();
      this.endWaiters = null;
    }
    if (!quiet) this.onClose(error);
  }
}
