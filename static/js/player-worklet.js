// AudioWorkletProcessor that plays the spoken translation (the listener page).
//
// Runs on the audio rendering thread. The main thread (./audio-player.js) has already turned
// each chunk of server PCM into Float32 samples at this context's rate; this processor queues
// them and plays them back to back, so consecutive chunks are gapless. Rules:
// - jitter buffer: playback (re)starts once `startSeconds` (0.2 s) is queued, or at once when
//   the queue holds the `last` chunk of a segment (the whole sentence is here; nothing to wait
//   for), or when what is queued has waited `maxWaitSeconds` (0.5 s) for more (a short clause
//   whose sequel is late or never comes is not held back indefinitely);
// - underrun (the queue runs dry in the middle of a segment): the output goes silent through a
//   5 ms ramp from the last sample (no click), counts an underrun, and waits for the jitter
//   buffer again; the end of a segment's `last` chunk is a normal stop, not an underrun;
// - bounded delay: when more than `maxSeconds` (8 s) is queued, the oldest whole chunks are
//   dropped (the newest kept), so playback never drifts further behind the speaker than that;
//   a cut in the middle of the sound is smoothed the same way as an underrun;
// - every restart after silence or a cut fades in over 5 ms.
// Main-thread messages: {type: "chunk", samples: Float32Array, last: boolean};
// {type: "clear"} (drop the queue, e.g. the listener changed language; not counted as dropped);
// {type: "ping", id} (answered with {type: "pong", id} once every earlier message is applied);
// {type: "close"}.
// Posted back: {type: "stats", playedSeconds, bufferedSeconds, underruns, dropped,
// droppedSeconds, playing} whenever something changed, at most every `statsSeconds` (0.1 s) while
// playing and at once on a start, stop, underrun or drop.

const FADE_SECONDS = 0.005;

class PlayerProcessor extends AudioWorkletProcessor {
  constructor(options) {
    super();
    const opts = (options && options.processorOptions) || {};
    // `sampleRate` is the AudioWorkletGlobalScope's rate: the AudioContext's.
    this.startSamples = Math.max(1, Math.round(sampleRate * (opts.startSeconds ?? 0.2)));
    this.maxSamples = Math.max(this.startSamples, Math.round(sampleRate * (opts.maxSeconds ?? 8)));
    this.statsSamples = Math.round(sampleRate * (opts.statsSeconds ?? 0.1));
    this.maxWaitSamples = Math.round(sampleRate * (opts.maxWaitSeconds ?? 0.5));
    this.waited = 0; // samples of time something has been queued without playing
    this.fadeSamples = Math.max(1, Math.round(sampleRate * FADE_SECONDS));

    this.queue = []; // {samples: Float32Array, offset: number, last: boolean}
    this.buffered = 0; // samples queued and not yet played
    this.lastQueued = 0; // queued chunks that end a segment
    this.playing = false;
    this.fadeIn = 0; // samples left of the fade-in after a (re)start
    this.tail = 0; // the last sample written (what a declick ramp starts from)
    this.declickValue = 0; // a linear ramp from the sample before a cut down to zero...
    this.declickLeft = 0; // ...and how many samples of it remain

    this.played = 0; // samples of speech played (silence not counted)
    this.underruns = 0;
    this.dropped = 0; // chunks dropped (whole, or cut) to keep the delay bounded
    this.droppedSamples = 0;
    this.sinceStats = 0;
    this.dirty = false;
    this.open = true;
    this.port.onmessage = (event) => this.#onMessage(event.data);
  }

  #onMessage(message) {
    if (!message) return;
    switch (message.type) {
      case 'chunk':
        this.#enqueue(message.samples, Boolean(message.last));
        break;
      case 'clear':
        this.queue = [];
        this.buffered = 0;
        this.lastQueued = 0;
        if (this.playing) this.#cut();
        this.playing = false;
        this.#postStats();
        break;
      case 'ping':
        this.#postStats();
        this.port.postMessage({ type: 'pong', id: message.id });
        break;
      case 'close':
        this.open = false;
        break;
      default:
        break;
    }
  }

  #enqueue(samples, last) {
    if (!(samples instanceof Float32Array)) return;
    if (samples.length === 0 && !last) return;
    this.queue.push({ samples, offset: 0, last });
    this.buffered += samples.length;
    if (last) this.lastQueued += 1;
    if (this.buffered > this.maxSamples) this.#dropOldest();
    this.dirty = true;
  }

  /** Keep the newest `maxSamples`: drop whole chunks from the front (sentence boundaries);
   * only a single chunk longer than the bound is cut inside. */
  #dropOldest() {
    while (this.buffered > this.maxSamples && this.queue.length > 1) {
      const head = this.queue.shift();
      const remaining = head.samples.length - head.offset;
      this.buffered -= remaining;
      this.droppedSamples += remaining;
      this.dropped += 1;
      if (head.last) this.lastQueued -= 1;
    }
    if (this.buffered > this.maxSamples) {
      const head = this.queue[0];
      const excess = this.buffered - this.maxSamples;
      head.offset += excess;
      this.buffered -= excess;
      this.droppedSamples += excess;
      this.dropped += 1;
    }
    if (this.playing) {
      // Playback jumps ahead: ramp out of what was playing, fade into what comes next.
      this.#cut();
      this.fadeIn = this.fadeSamples;
    }
    this.#postStats();
  }

  /** The sound stops or jumps here: ramp the last sample down to zero instead of stepping. */
  #cut() {
    this.declickValue = this.tail;
    this.declickLeft = this.fadeSamples;
  }

  process(inputs, outputs) {
    if (!this.open) return false;
    const output = outputs[0];
    if (!output || output.length === 0) return true;
    const out = output[0];
    const n = out.length;

    if (!this.playing && this.buffered > 0
        && (this.buffered >= this.startSamples || this.lastQueued > 0
          || this.waited >= this.maxWaitSamples)) {
      this.playing = true;
      this.waited = 0;
      this.fadeIn = this.fadeSamples;
      this.sinceStats = this.statsSamples; // report the start at once
    }

    let k = 0;
    while (this.playing && k < n) {
      if (this.queue.length === 0) {
        // Dry in the middle of a segment: an underrun. Go silent and wait for the buffer.
        this.underruns += 1;
        this.#stop();
        break;
      }
      const entry = this.queue[0];
      const source = entry.samples;
      const take = Math.min(n - k, source.length - entry.offset);
      let offset = entry.offset;
      for (let j = 0; j < take; j += 1) {
        let sample = source[offset];
        offset += 1;
        if (this.fadeIn > 0) {
          sample *= 1 - this.fadeIn / this.fadeSamples;
          this.fadeIn -= 1;
        }
        if (this.declickLeft > 0) {
          sample += this.declickValue * (this.declickLeft / this.fadeSamples);
          this.declickLeft -= 1;
        }
        out[k] = sample;
        k += 1;
      }
      if (take > 0) this.tail = out[k - 1];
      entry.offset = offset;
      this.buffered -= take;
      this.played += take;
      this.dirty = true;
      if (entry.offset >= source.length) {
        this.queue.shift();
        if (entry.last) {
          this.lastQueued -= 1;
          // The segment is over and nothing else is queued: a normal stop, not an underrun.
          if (this.queue.length === 0) this.#stop();
        }
      }
    }
    // Silence for the rest of the quantum, with what is left of a cut's ramp.
    for (; k < n; k += 1) {
      let sample = 0;
      if (this.declickLeft > 0) {
        sample = this.declickValue * (this.declickLeft / this.fadeSamples);
        this.declickLeft -= 1;
      }
      out[k] = sample;
    }
    this.tail = out[n - 1];
    this.waited = !this.playing && this.buffered > 0 ? this.waited + n : 0;
    for (let c = 1; c < output.length; c += 1) output[c].set(out);

    this.sinceStats += n;
    if (this.dirty && this.sinceStats >= this.statsSamples) this.#postStats();
    return true;
  }

  #stop() {
    this.playing = false;
    this.#cut();
    this.dirty = true;
    this.sinceStats = this.statsSamples; // report the stop at once
  }

  #postStats() {
    this.sinceStats = 0;
    this.dirty = false;
    this.port.postMessage({
      type: 'stats',
      playedSeconds: this.played / sampleRate,
      bufferedSeconds: this.buffered / sampleRate,
      underruns: this.underruns,
      dropped: this.dropped,
      droppedSeconds: this.droppedSamples / sampleRate,
      playing: this.playing,
    });
  }
}

registerProcessor('player-processor', PlayerProcessor);
