// Microphone capture on the main thread: getUserMedia -> AudioContext -> capture worklet.
//
// The worklet (capture-worklet.js) does the DSP; this class owns the browser objects, hands
// every 16 kHz PCM frame to `onFrame(ArrayBuffer)` and every level reading to
// `onLevel({rms, peak})`, says `onLost()` when the microphone goes (unplugged, or its
// permission withdrawn), takes another microphone into the same worklet on `useDevice()`, and
// tears everything down on `stop()`.

const WORKLET_URL = new URL('./capture-worklet.js', import.meta.url);

export const TARGET_RATE = 16000;
export const FRAME_MS = 100;

/** List audio inputs; labels are empty until the page has been granted microphone access. */
export async function listMicrophones() {
  if (!navigator.mediaDevices || !navigator.mediaDevices.enumerateDevices) return [];
  const devices = await navigator.mediaDevices.enumerateDevices();
  return devices.filter((d) => d.kind === 'audioinput');
}

export class MicCapture {
  /**
   * @param {{onFrame: (pcm: ArrayBuffer) => void, onLevel?: (level: {rms: number, peak: number}) => void,
   *          onLost?: () => void, voiceProcessing?: boolean}} handlers
   *   onLost: the microphone being captured ended without stop() or close() (the browser ends
   *   a track whose device goes). voiceProcessing: the browser's echo cancellation and noise
   *   suppression on (for WebRTC, where the track itself is sent and the peer may be a phone on
   *   speaker).
   */
  constructor({ onFrame, onLevel, onLost, voiceProcessing = false }) {
    this.onFrame = onFrame;
    this.onLevel = onLevel || (() => {});
    this.onLost = onLost || (() => {});
    this.closed = false;
    this.voiceProcessing = voiceProcessing;
    this.context = null;
    this.stream = null;
    this.source = null;
    this.node = null;
    this.flushWaiter = null;
  }

  /** The rate the browser captures at (the worklet converts it to 16 kHz). */
  get inputRate() {
    return this.context ? this.context.sampleRate : null;
  }

  /** The label of the track being captured ("" when the browser hides it). */
  get trackLabel() {
    const track = this.stream && this.stream.getAudioTracks()[0];
    return track ? track.label : '';
  }

  /**
   * Create the AudioContext. Call synchronously inside the click handler so that the browser's
   * autoplay policy lets it run.
   */
  prepare() {
    if (!this.context) {
      this.context = new AudioContext({ latencyHint: 'interactive' });
      this.context.addEventListener('statechange', () => this.wake());
    }
    return this.context.resume();
  }

  /** Start the audio engine again if the browser suspended it while the microphone is open
   * (the system slept, a phone call took the audio on iOS): no frame comes while it stands. */
  wake() {
    const context = this.context;
    if (!context || this.closed || !this.node) return;
    if (context.state === 'running' || context.state === 'closed') return;
    context.resume().catch((error) => console.warn('cannot resume the microphone', error));
  }

  /**
   * Ask for the microphone and start producing frames.
   * @param {string} deviceId an id from listMicrophones(), or "" for the default one
   */
  async start(deviceId) {
    if (!navigator.mediaDevices || !navigator.mediaDevices.getUserMedia) {
      throw new Error('This browser cannot capture audio here (a secure https:// page is required).');
    }
    this.prepare();
    this.stream = await this.#open(deviceId);
    const context = this.context;
    await context.audioWorklet.addModule(WORKLET_URL.href);
    if (this.closed) throw new Error('The microphone was closed while it opened.');
    this.node = new AudioWorkletNode(context, 'capture-processor', {
      numberOfInputs: 1,
      numberOfOutputs: 0,
      channelCountMode: 'explicit',
      channelCount: 2,
      channelInterpretation: 'speakers',
      processorOptions: { targetRate: TARGET_RATE, frameMs: FRAME_MS },
    });
    this.node.port.onmessage = (event) => this.#onMessage(event.data);
    this.source = context.createMediaStreamSource(this.stream);
    this.source.connect(this.node);
    await context.resume();
  }

  /**
   * Capture another microphone into the same worklet and go on (the one captured was lost, or
   * the presenter chose another): the new one is connected before the old one is let go, so
   * the frames run on without a gap. Resolves with the new track.
   * @param {string} deviceId an id from listMicrophones(), or "" for the default one
   */
  async useDevice(deviceId) {
    if (!this.node) throw new Error('The microphone is not open.');
    const stream = await this.#open(deviceId);
    const source = this.context.createMediaStreamSource(stream);
    source.connect(this.node);
    const old = { stream: this.stream, source: this.source };
    this.stream = stream;
    this.source = source;
    if (old.source) old.source.disconnect();
    if (old.stream) for (const track of old.stream.getTracks()) track.stop();
    return stream.getAudioTracks()[0];
  }

  /** A stream of microphone `deviceId` ("" for the default one) whose end, unless this capture
   * let it go itself, is reported to onLost. */
  async #open(deviceId) {
    // Recognition works best on the plain signal: the console plays nothing, so there is no echo
    // to cancel, and noise suppression leaves artefacts Whisper was not trained on. Automatic
    // gain stays on: quiet laptop microphones are the commoner problem.
    const audio = {
      channelCount: { ideal: 1 },
      echoCancellation: this.voiceProcessing,
      noiseSuppression: this.voiceProcessing,
      autoGainControl: true,
    };
    if (deviceId) audio.deviceId = { exact: deviceId };
    const stream = await navigator.mediaDevices.getUserMedia({ audio, video: false });
    if (this.closed) {
      for (const track of stream.getTracks()) track.stop();
      throw new Error('The microphone was closed while it opened.');
    }
    for (const track of stream.getAudioTracks()) {
      // track.stop() fires no "ended": only a track the browser ended reaches here.
      track.addEventListener('ended', () => {
        if (this.stream === stream) this.onLost();
      });
    }
    return stream;
  }

  #onMessage(message) {
    if (message.type === 'frame') {
      this.onLevel({ rms: message.rms, peak: message.peak });
      this.onFrame(message.pcm);
    } else if (message.type === 'flushed' && this.flushWaiter) {
      this.flushWaiter();
      this.flushWaiter = null;
    }
  }

  /**
   * Stop listening to the microphone and deliver the last partial frame. Resolves once the
   * worklet has handed over everything it held (or after `timeoutMs` if the audio thread is gone).
   */
  async stop(timeoutMs = 1000) {
    if (this.stream) for (const track of this.stream.getTracks()) track.stop();
    if (this.source) this.source.disconnect();
    if (this.node) {
      const flushed = new Promise((resolve) => {
        this.flushWaiter = resolve;
      });
      this.node.port.postMessage({ type: 'flush' });
      let timer = null;
      const timeout = new Promise((resolve) => {
        timer = setTimeout(resolve, timeoutMs);
      });
      await Promise.race([flushed, timeout]);
      clearTimeout(timer);
      this.node.port.postMessage({ type: 'close' });
      this.node.port.onmessage = null;
    }
    await this.close();
  }

  /** Release everything immediately (no flush). */
  async close() {
    this.closed = true;
    if (this.stream) for (const track of this.stream.getTracks()) track.stop();
    if (this.source) this.source.disconnect();
    this.stream = null;
    this.source = null;
    this.node = null;
    this.flushWaiter = null;
    const context = this.context;
    this.context = null;
    if (context && context.state !== 'closed') await context.close();
  }
}
