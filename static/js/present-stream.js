// The presenter's stream, from Start to Stop: the microphone capture (./mic-capture.js) and the
// transport it goes over (./presenter-socket.js: PCM frames over the presenter WebSocket;
// ./presenter-webrtc.js: the microphone's own track over WebRTC), opened on Start, finished on
// Stop (the last words first), moved to another microphone while live, and given up when the
// server closes it or the page goes. Its states are ./present-state.js's; ./present-status.js
// draws them.

import { MicCapture, TARGET_RATE } from './mic-capture.js';
import { PresenterSocket } from './presenter-socket.js';
import { PresenterPeer } from './presenter-webrtc.js';
import { canStop, describeError } from './present-state.js';

export class Streaming {
  /**
   * @param {{code: string, token: string|null, language: string, stats: object,
   *          settings: import('./present-settings.js').AudioSettings,
   *          status: import('./present-status.js').ConsoleStatus,
   *          onEvent: (event: object) => void}} options
   *   stats: the console's counters (the frames sent, the input rate, the lag are written
   *   here); onEvent: each event the server sends the presenter.
   */
  constructor({ code, token, language, stats, settings, status, onEvent }) {
    this.code = code;
    this.token = token;
    this.language = language;
    this.stats = stats;
    this.settings = settings;
    this.status = status;
    this.onEvent = onEvent;
    this.capture = null;
    this.link = null; // the PresenterSocket or PresenterPeer while one is open or opening
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
    const current = this.newCapture();
    this.capture = current;
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

  /** Go on with the microphone now chosen in the settings. */
  async switchMicrophone() {
    if (this.stats.state !== 'live' || !this.capture) return;
    const old = this.capture;
    const current = this.newCapture();
    current.prepare();
    this.capture = current;
    await old.close();
    try {
      const track = await this.openMicrophone(current);
      // Over WebRTC the track itself is sent; the socket is fed by the capture's frames.
      // (The transport cannot change while live.)
      if (this.link && this.stats.transport === 'webrtc') await this.link.replaceTrack(track);
    } catch (error) {
      this.status.showError(describeError(error));
      await this.stop();
    }
  }

  /** Drop the transport at once (the page is going). */
  abort(reason) {
    if (this.link) this.link.abort(reason);
  }

  newCapture() {
    return new MicCapture({
      voiceProcessing: this.stats.transport === 'webrtc',
      onFrame: (pcm) => {
        const link = this.link;
        if (!link) return;
        link.send(pcm);
        this.stats.framesSent = link.framesSent;
        this.stats.bytesSent = link.bytesSent;
        this.stats.framesDropped = link.framesDropped;
      },
      onLevel: ({ rms, peak }) => this.status.setLevel(rms, peak),
    });
  }

  async openMicrophone(current) {
    await current.start(this.settings.deviceId);
    this.stats.inputRate = current.inputRate;
    const track = current.stream && current.stream.getAudioTracks()[0];
    const deviceId = track && track.getSettings ? track.getSettings().deviceId : null;
    await this.settings.refreshMicrophones(deviceId);
    return track;
  }

  /** Open the chosen transport: PCM frames over the presenter WebSocket (frames captured
   * before "ready" wait in the socket), or the microphone's own track over WebRTC. */
  async connect(current) {
    const onClose = (error) => this.onClose(error);
    if (this.stats.transport === 'webrtc') {
      // Connect first, then open the microphone onto the live connection: nothing said while
      // ICE and DTLS complete is lost (a track does not buffer like the socket's queue).
      const peer = new PresenterPeer({
        code: this.code, token: this.token, onEvent: this.onEvent, onClose,
      });
      this.link = peer;
      await peer.connect();
      await peer.replaceTrack(await this.openMicrophone(current));
      return peer;
    }
    const socket = new PresenterSocket({
      code: this.code,
      token: this.token,
      language: this.language,
      sampleRate: TARGET_RATE,
      onEvent: this.onEvent,
      onClose,
    });
    this.link = socket;
    await Promise.all([this.openMicrophone(current), socket.connect()]);
    return socket;
  }

  onClose(error) {
    if (!error) return; // normal end: stop() finishes the state change
    if (this.stats.state === 'stopping') return; // stop() reports it
    this.status.showError(error.message);
    const current = this.capture;
    this.capture = null;
    this.link = null;
    if (current) current.close();
    this.status.setState('error');
  }
}
