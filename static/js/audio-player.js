// Plays the spoken translation on the listener page (docs/protocol.md: `audio` messages).
//
// The server sends each chunk of synthesised speech as a header plus one binary message of
// little-endian signed 16-bit mono PCM at the header's `sample_rate`. The AudioPlayer converts
// it to Float32 at the AudioContext's rate here on the main thread (a streaming polyphase
// resampler per voice rate, ./resampler.js, so consecutive chunks of one segment join without a
// seam) and hands it to the player worklet (./player-worklet.js), which holds the jitter buffer,
// plays gaplessly, goes silent without a click on underrun and keeps at most `maxSeconds`
// queued. Volume and mute are a GainNode after the worklet.
//
// Phones (and desktop browsers without an earlier gesture) only let an AudioContext make sound
// if it is created or resumed inside a user gesture, so `start()` must be called from a click or
// tap handler: it creates (or resumes) the context synchronously before anything awaits.
//
// `stats` is kept up to date for the page and for tests (window.interpAudio):
// {enabled, context, sampleRate, receivedChunks, receivedSeconds, playedSeconds, bufferedSeconds,
//  underruns, dropped, droppedSeconds, playing, volume, muted}.

import { Resampler } from './resampler.js';

const WORKLET_URL = new URL('./player-worklet.js', import.meta.url);
const PENDING_LIMIT_SECONDS = 10; // chunks held while the worklet module is still loading
const GAIN_SMOOTHING_S = 0.015;

/** Whether this browser can play the spoken translation at all (AudioWorklet support). */
export function audioSupported() {
  const Context = window.AudioContext || window.webkitAudioContext;
  return Boolean(Context && 'audioWorklet' in Context.prototype && window.AudioWorkletNode);
}

/** Little-endian int16 PCM (an ArrayBuffer) as Float32 samples in [-1, 1). */
export function decodePcm16(buffer) {
  const count = Math.floor(buffer.byteLength / 2);
  const view = new DataView(buffer, 0, count * 2);
  const samples = new Float32Array(count);
  for (let i = 0; i < count; i += 1) samples[i] = view.getInt16(i * 2, true) / 32768;
  return samples;
}

export class AudioPlayer {
  /**
   * @param {{context?: BaseAudioContext, startSeconds?: number, maxSeconds?: number,
   *          volume?: number, muted?: boolean, stats?: object,
   *          onStats?: (stats: object) => void}} options
   *   context: an existing context (tests pass an OfflineAudioContext); by default one is made
   *   on the first start(). stats: the object to keep up to date (default: a new one).
   */
  constructor({
    context = null, startSeconds = 0.2, maxSeconds = 8, volume = 1, muted = false,
    stats = {}, onStats = () => {},
  } = {}) {
    this.context = context;
    this.ownsContext = context === null;
    this.options = { startSeconds, maxSeconds };
    this.node = null;
    this.gain = null;
    this.ready = null;
    this.pending = []; // [{samples, last}] until the worklet exists
    this.pendingSamples = 0;
    this.resamplers = new Map(); // voice sample rate -> Resampler (one segment's stream)
    this.pings = new Map();
    this.pingId = 0;
    this.onStats = onStats;
    this.stats = Object.assign(stats, {
      enabled: false,
      context: 'none', // none | suspended | running | closed | interrupted | failed
      sampleRate: null,
      receivedChunks: 0,
      receivedSeconds: 0,
      playedSeconds: 0,
      bufferedSeconds: 0,
      underruns: 0,
      dropped: 0,
      droppedSeconds: 0,
      playing: false,
      volume: clamp01(volume),
      muted: Boolean(muted),
    });
  }

  /**
   * Turn playback on. Call it from a user gesture: the context is created or resumed before
   * this returns its promise (which settles once the worklet is loaded and the context runs).
   */
  start() {
    this.stats.enabled = true;
    if (!this.context) {
      const Context = window.AudioContext || window.webkitAudioContext;
      this.context = new Context({ latencyHint: 'playback' });
    }
    const context = this.context;
    // Inside the gesture: this is what lets the context make sound (autoplay policy).
    const resumed = this.ownsContext && context.state !== 'running'
      ? context.resume() : Promise.resolve();
    if (!this.ready) this.ready = this.#build();
    this.#noteContext();
    return Promise.all([resumed, this.ready]).then(() => this.#noteContext());
  }

  /** Turn playback off: forget what is queued and let the audio device sleep. */
  stop() {
    this.stats.enabled = false;
    this.clear();
    if (this.context && this.ownsContext && this.context.state === 'running') {
      this.context.suspend().then(() => this.#noteContext(), () => {});
    }
    this.#noteContext();
  }

  /** Resume a context the browser suspended (page hidden, phone call) if playback is on. */
  wake() {
    if (!this.stats.enabled || !this.context || !this.ownsContext) return;
    if (this.context.state !== 'running' && this.context.state !== 'closed') {
      this.context.resume().then(() => this.#noteContext(), () => this.#noteContext());
    }
  }

  /** Drop everything queued (a language switch: the old language's speech is stale). */
  clear() {
    this.pending = [];
    this.pendingSamples = 0;
    this.resamplers.clear();
    if (this.node) this.node.port.postMessage({ type: 'clear' });
  }

  /**
   * Queue one chunk of speech.
   * @param {{sample_rate: number, last?: boolean}} header the `audio` message
   * @param {ArrayBuffer} pcm the binary message that followed it
   */
  push(header, pcm) {
    const rate = Number(header.sample_rate);
    if (!(rate >= 1000 && rate <= 384000) || !(pcm instanceof ArrayBuffer)) return false;
    const last = header.last !== false;
    const input = decodePcm16(pcm);
    this.stats.receivedChunks += 1;
    this.stats.receivedSeconds += input.length / rate;
    if (!this.stats.enabled || !this.context) {
      this.#changed();
      return false;
    }
    const samples = this.#resample(input, rate, last);
    this.#send(samples, last);
    this.#changed();
    return true;
  }

  /** Resolves once the worklet has applied every message sent before (tests). */
  sync() {
    if (!this.ready) return Promise.resolve();
    return this.ready.then(() => new Promise((resolve) => {
      this.pingId += 1;
      this.pings.set(this.pingId, resolve);
      this.node.port.postMessage({ type: 'ping', id: this.pingId });
    }));
  }

  setVolume(volume) {
    this.stats.volume = clamp01(volume);
    this.#applyGain();
    this.#changed();
  }

  setMuted(muted) {
    this.stats.muted = Boolean(muted);
    this.#applyGain();
    this.#changed();
  }

  /** Release the worklet and (if it is ours) the context. */
  close() {
    this.stats.enabled = false;
    if (this.node) {
      this.node.port.postMessage({ type: 'close' });
      this.node.disconnect();
    }
    if (this.context && this.ownsContext && this.context.state !== 'closed') {
      this.context.close().catch(() => {});
    }
    this.#noteContext();
  }

  async #build() {
    const context = this.context;
    this.stats.sampleRate = context.sampleRate;
    context.addEventListener?.('statechange', () => this.#noteContext());
    try {
      await context.audioWorklet.addModule(WORKLET_URL.href);
    } catch (error) {
      this.stats.context = 'failed';
      this.#changed();
      throw error;
    }
    this.gain = new GainNode(context, { gain: this.#gainValue() });
    this.node = new AudioWorkletNode(context, 'player-processor', {
      numberOfInputs: 0,
      numberOfOutputs: 1,
      outputChannelCount: [1],
      processorOptions: this.options,
    });
    this.node.port.onmessage = (event) => this.#onWorklet(event.data);
    this.node.connect(this.gain).connect(context.destination);
    const held = this.pending;
    this.pending = [];
    this.pendingSamples = 0;
    for (const { samples, last } of held) this.#send(samples, last);
  }

  #resample(input, rate, last) {
    const target = this.context.sampleRate;
    if (Math.round(rate) === Math.round(target)) return input;
    let resampler = this.resamplers.get(rate);
    if (!resampler) {
      resampler = new Resampler(rate, target);
      this.resamplers.set(rate, resampler);
    }
    let out = resampler.process(input);
    if (last) {
      // Let the filter's held-back tail out; the next segment starts a fresh stream.
      const tail = resampler.process(new Float32Array(resampler.delaySamples + 1));
      const joined = new Float32Array(out.length + tail.length);
      joined.set(out);
      joined.set(tail, out.length);
      out = joined;
      this.resamplers.delete(rate);
    }
    // A subarray of a larger buffer: copy, so only these samples are transferred.
    return out.length * 4 === out.buffer.byteLength ? out : out.slice();
  }

  #send(samples, last) {
    if (!this.node) {
      this.pending.push({ samples, last });
      this.pendingSamples += samples.length;
      const limit = PENDING_LIMIT_SECONDS * this.context.sampleRate;
      while (this.pendingSamples > limit && this.pending.length > 1) {
        this.pendingSamples -= this.pending.shift().samples.length;
      }
      return;
    }
    this.node.port.postMessage({ type: 'chunk', samples, last }, [samples.buffer]);
  }

  #onWorklet(message) {
    if (!message) return;
    if (message.type === 'stats') {
      const { stats } = this;
      stats.playedSeconds = message.playedSeconds;
      stats.bufferedSeconds = message.bufferedSeconds;
      stats.underruns = message.underruns;
      stats.dropped = message.dropped;
      stats.droppedSeconds = message.droppedSeconds;
      stats.playing = message.playing;
      this.#changed();
    } else if (message.type === 'pong') {
      const resolve = this.pings.get(message.id);
      this.pings.delete(message.id);
      if (resolve) resolve();
    }
  }

  #gainValue() {
    return this.stats.muted ? 0 : this.stats.volume;
  }

  #applyGain() {
    if (!this.gain) return;
    const now = this.context.currentTime;
    this.gain.gain.cancelScheduledValues(now);
    this.gain.gain.setTargetAtTime(this.#gainValue(), now, GAIN_SMOOTHING_S);
  }

  #noteContext() {
    const state = this.context ? this.context.state : 'none';
    if (this.stats.context !== 'failed') this.stats.context = state;
    this.#changed();
  }

  #changed() {
    this.onStats(this.stats);
  }
}

function clamp01(value) {
  const number = Number(value);
  if (!Number.isFinite(number)) return 1;
  return Math.min(1, Math.max(0, number));
}
