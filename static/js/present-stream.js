// The presenter's stream, from Start to Stop: the microphone capture (./mic-capture.js) and the
// transport it goes over (./presenter-socket.js: PCM frames over the presenter WebSocket;
// ./presenter-webrtc.js: the microphone's own track over WebRTC), opened on Start, finished on
// Stop (the last words first), moved to another microphone while live, opened again on its
// own when the connection is lost or the server restarts (the microphone stays open; over the
// socket, what is said meanwhile is held, its last few seconds sent once the new stream is
// ready), and given up when the server refuses it or the page goes. A microphone lost while
// live (unplugged) gives way to the chosen one when it is back, or to the default one, the
// stream open all along; one that sends nothing is noticed (./mic-state.js). Its states are
// ./present-state.js's; ./present-status.js draws them.

import { MicCapture, TARGET_RATE } from './mic-capture.js';
import {
  heardLevel, lostMicrophone, micNotice, missedFrames, newMicHealth, replacedMicrophone,
} from './mic-state.js';
import { PresenterSocket, SocketClosedError } from './presenter-socket.js';
import { PresenterPeer } from './presenter-webrtc.js';
import { canStop, describeError, reconnectDelay } from './present-state.js';

const HELD_FRAMES = 50; // 100 ms frames held while reconnecting: under the server's 10 s burst
const MICROPHONE_RETRY_MS = 2000; // a lost microphone is looked for again at least this often
const WATCH_MS = 1000; // how often an open microphone is checked for frames that stopped coming

/** Resolves when the devices change (a microphone plugged in) or after `ms`, whichever first. */
function devicesChanged(ms) {
  return new Promise((resolve) => {
    const devices = navigator.mediaDevices;
    const done = () => {
      window.clearTimeout(timer);
      devices.removeEventListener('devicechange', done);
      resolve();
    };
    const timer = window.setTimeout(done, ms);
    devices.addEventListener('devicechange', done);
  });
}

/** The id of the device `track` captures, or null when the browser does not say. */
function deviceIdOf(track) {
  return track && track.getSettings ? track.getSettings().deviceId : null;
}

export class Streaming {
  /**
   * @param {{code: string, token: string|null, stats: object,
   *          settings: import('./present-settings.js').AudioSettings,
   *          status: import('./present-status.js').ConsoleStatus,
   *          onEvent: (event: object) => void}} options
   *   stats: the console's counters (the frames sent, the input rate, the lag are written
   *   here); onEvent: each event the server sends the presenter. The stream is in the
   *   language of the token's speaker (the presenter's is the session's), as the server knows
   *   it: the page knows only the session's.
   */
  constructor({ code, token, stats, settings, status, onEvent }) {
    this.code = code;
    this.token = token;
    this.stats = stats;
    this.settings = settings;
    this.status = status;
    this.onEvent = onEvent;
    this.lastSeq = 0; // the newest event the console holds: a new link asks only for later ones
    this.capture = null;
    this.link = null; // the PresenterSocket or PresenterPeer while one is open or opening
    this.held = []; // frames captured while reconnecting, the newest HELD_FRAMES
    this.health = newMicHealth(); // the open microphone's (./mic-state.js)
    this.lastFrameAt = 0; // performance.now() of the microphone's last frame
    this.watcher = null; // the interval that checks the microphone while the stream is open
  }

  /** Whether a transport is open (or opening): the server's events come over it then. */
  get open() {
    return this.link !== null;
  }

  async start() {
    if (!this.token) return;
    this.status.clearError();
    this.stats.lagSeconds = 0;
    this.status.setState('starting');
    this.health = newMicHealth();
    const current = this.newCapture();
    this.capture = current;
    this.#watchMicrophone();
    current.prepare(); // inside the click: lets the AudioContext start under autoplay rules
    try {
      await this.connect(current);
    } catch (error) {
      if (this.link) {
        this.link.abort('could not start');
        this.link = null;
      }
      if (this.capture === current) this.capture = null;
      await current.close();
      if (this.stats.state === 'starting') {
        this.status.showError(describeError(error));
        this.status.setState('error');
      }
      return;
    }
    if (this.stats.state === 'starting') this.status.setState('live'); // unless Stop was pressed meanwhile
  }

  async stop() {
    if (!canStop(this.stats.state)) return;
    this.status.setState('stopping');
    const current = this.capture;
    const link = this.link;
    this.capture = null;
    this.held = [];
    if (current) await current.stop(); // hands over the last partial frame first
    try {
      if (link) await link.stop();
      this.link = null;
      this.status.setState('ended');
    } catch (error) {
      this.link = null;
      this.status.showError(describeError(error));
      this.status.setState('error');
    }
  }

  /** Go on with the microphone now chosen in the settings; if it will not open, with the one
   * the stream had (the new one opens before the old is let go). */
  async switchMicrophone() {
    const current = this.capture;
    if (this.stats.state !== 'live' || !current) return;
    this.status.clearError();
    try {
      await this.useMicrophone(current, this.settings.deviceId);
    } catch (error) {
      if (current !== this.capture) return;
      this.status.showError(`${describeError(error)} The stream goes on with the microphone it had.`);
      const track = current.stream && current.stream.getAudioTracks()[0];
      await this.settings.refreshMicrophones(deviceIdOf(track));
    }
  }

  /** The microphone `capture` had open is gone (unplugged, or its permission withdrawn) while
   * the stream is open: go on with the chosen one if it is back, else the default one, looking
   * again whenever the devices change (at least every MICROPHONE_RETRY_MS) until one opens, the
   * presenter chooses one, or the stream ends. Nothing is sent meanwhile. */
  async onMicrophoneLost(capture) {
    if (capture !== this.capture || !canStop(this.stats.state)) return;
    this.stats.microphoneLosses += 1;
    this.#setHealth(lostMicrophone(this.health));
    const searching = () => capture === this.capture && canStop(this.stats.state)
      && this.health.lost;
    while (searching()) {
      for (const deviceId of new Set([this.settings.deviceId, ''])) {
        try {
          await this.useMicrophone(capture, deviceId);
          return;
        } catch {
          if (!searching()) return;
        }
      }
      await devicesChanged(MICROPHONE_RETRY_MS);
    }
  }

  /** Capture microphone `deviceId` ("" for the default one) in place of the one `capture` has:
   * over WebRTC its track is sent from now on (the socket is fed by the capture's frames). */
  async useMicrophone(capture, deviceId) {
    const wasLost = this.health.lost;
    const track = await capture.useDevice(deviceId);
    if (this.link && this.stats.transport === 'webrtc') await this.link.replaceTrack(track);
    this.#setHealth(wasLost ? replacedMicrophone(this.health, capture.trackLabel) : newMicHealth());
    await this.settings.refreshMicrophones(deviceIdOf(track));
  }

  /** While the stream is open, every WATCH_MS: frames that stopped coming (the browser
   * suspended the audio engine) start it again and, if they stay away, earn the notice; a
   * silence the level readings began earns it once it has lasted. */
  #watchMicrophone() {
    window.clearInterval(this.watcher);
    this.lastFrameAt = performance.now();
    this.watcher = window.setInterval(() => {
      const current = this.capture;
      if (!current || !canStop(this.stats.state)) {
        window.clearInterval(this.watcher);
        this.watcher = null;
        return;
      }
      if (this.health.lost || this.stats.state === 'starting') {
        this.lastFrameAt = performance.now(); // no frame is due: the clock starts when one is
        return;
      }
      if (performance.now() - this.lastFrameAt >= WATCH_MS) {
        current.wake();
        this.#setHealth(missedFrames(this.health, this.lastFrameAt));
      } else {
        this.#setHealth(this.health); // a silence may have lasted long enough now
      }
    }, WATCH_MS);
  }

  #setHealth(health) {
    this.health = health;
    this.status.setMicNotice(micNotice(health, performance.now()));
  }

  /** Drop the transport at once (the page is going). */
  abort(reason) {
    if (this.link) this.link.abort(reason);
  }

  newCapture() {
    const capture = new MicCapture({
      voiceProcessing: this.stats.transport === 'webrtc',
      onFrame: (pcm) => {
        if (capture === this.capture) this.lastFrameAt = performance.now();
        const link = this.link;
        if (!link) {
          if (this.stats.state !== 'reconnecting') return;
          this.held.push(pcm);
          if (this.held.length > HELD_FRAMES) this.held.shift();
          return;
        }
        link.send(pcm);
        this.stats.framesSent = link.framesSent;
        this.stats.bytesSent = link.bytesSent;
        this.stats.framesDropped = link.framesDropped;
      },
      onLevel: ({ rms, peak }) => {
        this.status.setLevel(rms, peak);
        if (capture === this.capture) this.#setHealth(heardLevel(this.health, peak, performance.now()));
      },
      onLost: () => this.onMicrophoneLost(capture),
    });
    return capture;
  }

  async openMicrophone(current) {
    await current.start(this.settings.deviceId);
    this.stats.inputRate = current.inputRate;
    const track = current.stream && current.stream.getAudioTracks()[0];
    await this.settings.refreshMicrophones(deviceIdOf(track));
    return track;
  }

  /** Open the chosen transport: PCM frames over the presenter WebSocket (frames captured
   * before "ready" wait in the socket), or the microphone's own track over WebRTC. */
  async connect(current) {
    const link = this.newLink();
    this.link = link;
    if (this.stats.transport === 'webrtc') {
      // Connect first, then open the microphone onto the live connection: nothing said while
      // ICE and DTLS complete is lost (a track does not buffer like the socket's queue).
      await link.connect();
      await link.replaceTrack(await this.openMicrophone(current));
    } else {
      await Promise.all([this.openMicrophone(current), link.connect()]);
    }
    return link;
  }

  /** A transport open again, up to "ready", onto the microphone `current` has open (after a
   * lost connection). A failure without a close code (the network is down: a fetch fails)
   * counts as a lost connection. */
  async reopen(current) {
    const link = this.newLink();
    const track = this.stats.transport === 'webrtc' ? current.stream.getAudioTracks()[0] : null;
    try {
      await link.connect(track);
    } catch (failure) {
      link.abort('could not reconnect');
      if (failure instanceof SocketClosedError) throw failure;
      throw new SocketClosedError(1006, describeError(failure));
    }
    return link;
  }

  /** A new transport of the chosen kind, its close reported to onClose. */
  newLink() {
    const onEvent = (event) => {
      if (Number.isInteger(event.seq) && event.seq > this.lastSeq) this.lastSeq = event.seq;
      this.onEvent(event);
    };
    const options = { code: this.code, token: this.token, since: this.lastSeq, onEvent };
    let link = null;
    const onClose = (error) => this.onClose(error, link);
    link = this.stats.transport === 'webrtc'
      ? new PresenterPeer({ ...options, onClose })
      : new PresenterSocket({
        ...options, sampleRate: TARGET_RATE, onClose,
      });
    return link;
  }

  /** The transport `link` closed (`error` null: a normal end after Stop). */
  onClose(error, link) {
    if (!error || link !== this.link) return; // stop() finishes a normal end; an old link
    if (this.stats.state === 'stopping') return; // stop() reports it
    if (this.stats.state === 'reconnecting') return; // the attempt that opened it reports it
    if (this.stats.state === 'live' && reconnectDelay(error.code, 0, 0) !== null) {
      this.reconnect(error);
      return;
    }
    this.status.showError(error.message);
    const current = this.capture;
    this.capture = null;
    this.link = null;
    if (current) current.close();
    this.status.setState('error');
  }

  /** Open the stream again after `error` closed it while live, the microphone open all along,
   * until it is live again, Stop or "End session" is pressed, or ./present-state.js's
   * `reconnectDelay` gives up. */
  async reconnect(error) {
    const current = this.capture;
    this.link = null;
    this.stats.reconnects += 1;
    this.status.setState('reconnecting');
    const lostAt = performance.now();
    let last = error;
    for (let attempt = 0; ; attempt += 1) {
      const wait = reconnectDelay(last.code, attempt, performance.now() - lostAt);
      if (wait === null) break;
      await new Promise((resolve) => { window.setTimeout(resolve, wait); });
      if (this.#leftReconnecting(current)) return;
      let link;
      try {
        link = await this.reopen(current);
      } catch (failure) {
        last = failure;
        continue;
      }
      if (this.#leftReconnecting(current)) {
        link.abort('stopped while reconnecting');
        return;
      }
      this.link = link;
      for (const pcm of this.held.splice(0)) link.send(pcm); // said while it was away
      this.status.setState('live');
      return;
    }
    this.held = [];
    this.capture = null;
    if (current) current.close();
    this.status.showError(describeError(last));
    this.status.setState('error');
  }

  /** Whether Stop, "End session" or the session's end took the stream out of reconnecting
   * (the microphone `current` is closed then, if Stop has not done it). */
  #leftReconnecting(current) {
    if (this.stats.state === 'reconnecting' && this.capture === current) return false;
    if (this.capture === current) {
      this.capture = null;
      current.close();
    }
    return true;
  }
}
