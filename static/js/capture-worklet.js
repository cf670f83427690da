// AudioWorkletProcessor for the presenter's microphone.
//
// Runs on the audio rendering thread: downmixes every render quantum to mono, converts it to
// `targetRate` (16 kHz) through an anti-aliasing polyphase low-pass (./resampler.js), and cuts
// the result into frames of `frameMs` (100 ms) of little-endian signed 16-bit PCM. Each frame is
// posted (transferred, not copied) to the main thread with its RMS and peak level for the meter:
//   {type: "frame", pcm: ArrayBuffer, rms: number, peak: number}
// Main-thread messages: {type: "flush"} posts the partial frame held (padded with silence to the
// 20 ms minimum the server accepts) and then {type: "flushed"}; {type: "close"} ends the processor.

import { Resampler } from './resampler.js';

const MIN_FRAME_MS = 20;

class CaptureProcessor extends AudioWorkletProcessor {
  constructor(options) {
    super();
    const opts = (options && options.processorOptions) || {};
    this.targetRate = opts.targetRate || 16000;
    const frameMs = opts.frameMs || 100;
    this.frameSamples = Math.round((this.targetRate * frameMs) / 1000);
    this.minSamples = Math.round((this.targetRate * MIN_FRAME_MS) / 1000);
    // `sampleRate` is the AudioWorkletGlobalScope's rate: the AudioContext's.
    this.resampler = new Resampler(sampleRate, this.targetRate);
    this.frame = new Float32Array(this.frameSamples);
    this.filled = 0;
    this.mono = new Float32Array(128);
    this.open = true;
    this.port.onmessage = (event) => this.#onMessage(event.data);
  }

  #onMessage(message) {
    if (!message) return;
    if (message.type === 'flush') {
      if (this.filled > 0) {
        const length = Math.max(this.filled, this.minSamples);
        this.frame.fill(0, this.filled, length);
        this.#post(length);
      }
      this.port.postMessage({ type: 'flushed' });
    } else if (message.type === 'close') {
      this.open = false;
    }
  }

  process(inputs) {
    if (!this.open) return false;
    const channels = inputs[0];
    if (!channels || channels.length === 0) return true; // no source connected this quantum
    const length = channels[0].length;
    if (this.mono.length !== length) this.mono = new Float32Array(length);
    const mono = this.mono;
    if (channels.length === 1) {
      mono.set(channels[0]);
    } else {
      mono.fill(0);
      for (const channel of channels) {
        for (let i = 0; i < length; i += 1) mono[i] += channel[i];
      }
      const scale = 1 / channels.length;
      for (let i = 0; i < length; i += 1) mono[i] *= scale;
    }

    const out = this.resampler.process(mono);
    let offset = 0;
    while (offset < out.length) {
      const take = Math.min(out.length - offset, this.frameSamples - this.filled);
      this.frame.set(out.subarray(offset, offset + take), this.filled);
      this.filled += take;
      offset += take;
      if (this.filled === this.frameSamples) this.#post(this.frameSamples);
    }
    return true;
  }

  #post(length) {
    const pcm = new ArrayBuffer(length * 2);
    const view = new DataView(pcm);
    let sumSquares = 0;
    let peak = 0;
    for (let i = 0; i < length; i += 1) {
      let s = this.frame[i];
      if (s > 1) s = 1;
      else if (s < -1) s = -1;
      sumSquares += s * s;
      const magnitude = s < 0 ? -s : s;
      if (magnitude > peak) peak = magnitude;
      view.setInt16(i * 2, Math.round(s < 0 ? s * 32768 : s * 32767), true);
    }
    this.filled = 0;
    this.port.postMessage(
      { type: 'frame', pcm, rms: Math.sqrt(sumSquares / length), peak },
      [pcm],
    );
  }
}

registerProcessor('capture-processor', CaptureProcessor);
