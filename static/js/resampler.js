// Streaming sample-rate converter: polyphase windowed-sinc (Kaiser) low-pass interpolation.
//
// Used inside the capture AudioWorklet (and testable on its own): it takes mono Float32 blocks
// at `inRate` and returns Float32 samples at `outRate`. The low-pass is designed so that
// everything at or above min(inRate, outRate) / 2 is attenuated by about 70 dB: when the
// microphone runs at 48 kHz and we send 16 kHz, energy between 8 and 24 kHz cannot alias into
// the speech band (naive decimation would fold it straight back in).

const STOPBAND_DB = 70;

/** Zeroth-order modified Bessel function of the first kind (series; converges fast for x < 20). */
function besselI0(x) {
  let sum = 1;
  let term = 1;
  const halfX = x / 2;
  for (let k = 1; k < 50; k += 1) {
    term *= (halfX / k) * (halfX / k);
    sum += term;
    if (term < sum * 1e-12) break;
  }
  return sum;
}

function gcd(a, b) {
  let x = Math.abs(a);
  let y = Math.abs(b);
  while (y) [x, y] = [y, x % y];
  return x;
}

export class Resampler {
  /**
   * @param {number} inRate input sample rate in Hz (the AudioContext's rate)
   * @param {number} outRate output sample rate in Hz (16000 for the presenter socket)
   */
  constructor(inRate, outRate) {
    if (!(inRate > 0 && outRate > 0)) throw new RangeError(`bad rates ${inRate} -> ${outRate}`);
    this.inRate = Math.round(inRate);
    this.outRate = Math.round(outRate);
    const g = gcd(this.inRate, this.outRate);
    // The output clock advances `step / phases` input samples per output sample. With an exact
    // rational ratio (48000 -> 16000 is 3/1, 44100 -> 16000 is 441/160) every phase is exact;
    // odd rates fall back to 1024 quantised phases (timing error below 1/1000 of a sample).
    let phases = this.outRate / g;
    let step = this.inRate / g;
    if (phases > 1024) {
      step = Math.round((1024 * this.inRate) / this.outRate);
      phases = 1024;
    }
    this.phases = phases;
    this.step = step;

    const minRate = Math.min(this.inRate, this.outRate);
    const stopHz = minRate / 2;
    const transitionHz = minRate / 16; // 1 kHz at 16 kHz: passband up to 7 kHz
    const cutoff = (stopHz - transitionHz / 2) / this.inRate; // cycles per input sample
    const deltaOmega = (2 * Math.PI * transitionHz) / this.inRate;
    const taps = Math.ceil((STOPBAND_DB - 8) / (2.285 * deltaOmega)) + 1;
    const half = Math.max(2, Math.ceil(taps / 2)); // taps on each side of the output instant
    const beta = 0.1102 * (STOPBAND_DB - 8.7);
    const i0Beta = besselI0(beta);
    this.half = half;
    this.width = 2 * half;

    // table[p * width + i] weighs input sample (ipos - half + 1 + i) for phase p.
    this.table = new Float32Array(phases * this.width);
    for (let p = 0; p < phases; p += 1) {
      let sum = 0;
      for (let i = 0; i < this.width; i += 1) {
        const d = p / phases + (half - 1 - i); // output instant minus tap position, in samples
        const u = d / half;
        let w = 0;
        if (Math.abs(u) < 1) {
          const x = 2 * cutoff * d;
          const sinc = x === 0 ? 1 : Math.sin(Math.PI * x) / (Math.PI * x);
          w = 2 * cutoff * sinc * (besselI0(beta * Math.sqrt(1 - u * u)) / i0Beta);
        }
        this.table[p * this.width + i] = w;
        sum += w;
      }
      // Unity gain at DC for every phase (no amplitude ripple at the output rate).
      for (let i = 0; i < this.width; i += 1) this.table[p * this.width + i] /= sum;
    }

    // History: absolute index of buffer[0]; the first input sample has index 0 and is preceded
    // by zeros so the first output instant (t = 0) has a full window.
    this.buffer = new Float32Array(Math.max(4096, this.width * 4));
    this.bufferStart = -(half - 1);
    this.bufferLength = half - 1;
    this.ipos = 0;
    this.frac = 0;
  }

  /** Input samples of delay the filter adds (half its length). */
  get delaySamples() {
    return this.half;
  }

  /**
   * Push a block of input samples and return the output samples it completes.
   * @param {Float32Array} input
   * @returns {Float32Array}
   */
  process(input) {
    this.#append(input);
    const available = this.bufferStart + this.bufferLength; // one past the last index held
    const maxOut = Math.ceil(((input.length + this.width) * this.phases) / this.step) + 2;
    const out = new Float32Array(maxOut);
    let n = 0;
    const { table, width, phases, step, buffer } = this;
    while (this.ipos + this.half < available && n < maxOut) {
      const first = this.ipos - this.half + 1 - this.bufferStart;
      const base = this.frac * width;
      let acc = 0;
      for (let i = 0; i < width; i += 1) acc += buffer[first + i] * table[base + i];
      out[n] = acc;
      n += 1;
      this.frac += step;
      this.ipos += Math.floor(this.frac / phases);
      this.frac %= phases;
    }
    this.#discardBefore(this.ipos - this.half + 1);
    return out.subarray(0, n);
  }

  #append(input) {
    const needed = this.bufferLength + input.length;
    if (needed > this.buffer.length) {
      const grown = new Float32Array(Math.max(needed, this.buffer.length * 2));
      grown.set(this.buffer.subarray(0, this.bufferLength));
      this.buffer = grown;
    }
    this.buffer.set(input, this.bufferLength);
    this.bufferLength += input.length;
  }

  #discardBefore(index) {
    const drop = index - this.bufferStart;
    if (drop <= 0) return;
    this.buffer.copyWithin(0, drop, this.bufferLength);
    this.bufferStart += drop;
    this.bufferLength -= drop;
  }
}
