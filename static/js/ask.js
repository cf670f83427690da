// "Ask": a listener types or speaks a question in their own language (docs/protocol.md,
// "Panels"). The moderator sees it translated and decides; nobody else sees it until then.
// A spoken question is recorded here (16 kHz PCM from ./mic-capture.js) and sent whole as
// `audio/L16`; the server transcribes it. A microphone lost while recording gives way to the
// default one, or, where none can be had, what was said is sent.

import { MicCapture } from './mic-capture.js';

/** How long a spoken question may run here; the server refuses more (MAX_QUESTION_S). */
export const MAX_RECORD_S = 30;
const BYTES_PER_S = 16000 * 2;

/** Frames of 16-bit PCM joined into one body, bounded at `maxSeconds`. Pure state. */
export class PcmTake {
  constructor(maxSeconds = MAX_RECORD_S) {
    this.maxBytes = maxSeconds * BYTES_PER_S;
    this.frames = [];
    this.bytes = 0;
  }

  /** Keep a frame; false once the take is full (the frame is cut to fit). */
  add(frame) {
    const room = this.maxBytes - this.bytes;
    if (room <= 0) return false;
    const kept = frame.byteLength > room ? frame.slice(0, room) : frame;
    this.frames.push(new Uint8Array(kept));
    this.bytes += kept.byteLength;
    return this.bytes < this.maxBytes;
  }

  get seconds() {
    return this.bytes / BYTES_PER_S;
  }

  body() {
    const out = new Uint8Array(this.bytes);
    let at = 0;
    for (const frame of this.frames) {
      out.set(frame, at);
      at += frame.byteLength;
    }
    return out;
  }
}

export class AskPanel {
  /** @param {{code: string, language: () => string, token: () => (string|null)}} options */
  constructor({ code, language, token }) {
    this.code = code;
    this.language = language;
    this.token = token;
    this.form = document.getElementById('ask-form');
    this.text = document.getElementById('ask-text');
    this.status = document.getElementById('ask-status');
    this.speak = document.getElementById('ask-speak');
    this.mic = null;
    this.take = null;
    if (!this.form) return;
    this.form.addEventListener('submit', (event) => {
      event.preventDefault();
      this.sendText();
    });
    this.speak.addEventListener('click', () => (this.mic ? this.finishSpeaking() : this.startSpeaking()));
  }

  url(query = '') {
    return `/api/sessions/${encodeURIComponent(this.code)}/questions${query}`;
  }

  headers(contentType) {
    const token = this.token();
    return {
      Accept: 'application/json',
      'Content-Type': contentType,
      ...(token ? { Authorization: `Bearer ${token}` } : {}),
    };
  }

  /** Send a question; `note` comes before what the status then says. */
  async post(body, contentType, query, note = '') {
    this.say(`${note}Sending…`);
    try {
      const response = await fetch(this.url(query), {
        method: 'POST', headers: this.headers(contentType), body,
      });
      const answer = await response.json().catch(() => ({}));
      if (!response.ok) throw new Error(answer.error || `HTTP ${response.status}`);
      this.say(`${note}Sent. The moderator decides which questions are shown.`);
      return true;
    } catch (error) {
      this.say(`${note}Not sent: ${error.message}`);
      return false;
    }
  }

  async sendText() {
    const text = this.text.value.trim();
    if (!text) return;
    if (await this.post(JSON.stringify({ text, lang: this.language() }), 'application/json')) {
      this.text.value = '';
    }
  }

  async startSpeaking() {
    this.take = new PcmTake();
    const mic = new MicCapture({
      onFrame: (pcm) => {
        if (!this.take.add(pcm)) this.finishSpeaking();
      },
      onLost: () => this.onMicrophoneLost(mic),
    });
    this.mic = mic;
    try {
      mic.prepare();
      await mic.start('');
    } catch (error) {
      this.mic = null;
      this.say(`No microphone: ${error.message}`);
      return;
    }
    this.speak.textContent = 'Send what I said';
    this.speak.setAttribute('aria-pressed', 'true');
    this.say(`Recording (up to ${MAX_RECORD_S} s)…`);
  }

  /**
   * Stop recording and send what was said. `note` comes before what the status then says.
   */
  async finishSpeaking(note = '') {
    const mic = this.mic;
    if (!mic) return;
    this.mic = null;
    await mic.stop();
    this.speak.textContent = 'Speak a question';
    this.speak.setAttribute('aria-pressed', 'false');
    if (this.take.seconds < 0.5) {
      this.say(`${note}Nothing recorded.`);
      return;
    }
    const query = `?lang=${encodeURIComponent(this.language())}`;
    await this.post(this.take.body(), 'audio/L16; rate=16000', query, note);
  }

  /**
   * The microphone went mid-question (a headset unplugged or out of range): the default one
   * takes over. Where none can be opened, what was said before is sent.
   */
  async onMicrophoneLost(mic) {
    try {
      await mic.useDevice('');
    } catch (error) {
      if (this.mic !== mic) return; // sent or stopped meanwhile
      console.warn('no microphone to go on with', error);
      await this.finishSpeaking('The microphone was disconnected. ');
    }
  }

  say(message) {
    this.status.textContent = message;
  }
}
