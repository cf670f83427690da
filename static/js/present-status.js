// The console's stream state on the page (templates/present.html, "Microphone and streaming"):
// the status line with its clock while live, which of Start, Stop, "End session" and the
// transport picker may be used, the level meter, the microphone's notice and the error box.
// What each state allows and says is ./present-state.js, what the notice says ./mic-state.js;
// this module only draws them.

import { controlsFor, isClipping, meterLevel, statusText } from './present-state.js';

export class ConsoleStatus {
  /**
   * @param {{stats: object, hasToken: boolean,
   *          controls: {start: HTMLButtonElement, stop: HTMLButtonElement,
   *                     end: HTMLButtonElement, transport: HTMLSelectElement|null},
   *          view: {status: HTMLElement, statusText: HTMLElement, error: HTMLElement,
   *                 levelBar: HTMLElement, micNotice: HTMLElement}}} options
   *   stats: the console's counters (./present-state.js `newStats`); `state`, `lastError` are
   *   written here. view: the status line, its text, the error box, the level meter's bar and
   *   the microphone's notice.
   */
  constructor({ stats, hasToken, controls, view }) {
    this.stats = stats;
    this.hasToken = hasToken;
    this.controls = controls;
    this.ui = view;
    this.liveSince = 0;
    this.clock = null;
  }

  /** Enter stream state `state` (./present-state.js) and draw it. */
  setState(state) {
    const previous = this.stats.state;
    this.stats.state = state;
    document.body.dataset.streamState = state;
    const allowed = controlsFor(state, this.hasToken);
    this.controls.start.disabled = !allowed.start;
    this.controls.end.disabled = !allowed.end;
    this.controls.stop.disabled = !allowed.stop;
    if (this.controls.transport) this.controls.transport.disabled = allowed.busy;
    if (state === 'live') {
      // A stream opened again after a lost connection keeps the talk's clock.
      if (previous !== 'reconnecting') this.liveSince = performance.now();
      if (!this.clock) this.clock = window.setInterval(() => this.render(), 1000);
    } else if (this.clock) {
      window.clearInterval(this.clock);
      this.clock = null;
    }
    if (!allowed.busy) {
      this.setLevel(0, 0);
      this.setMicNotice(null);
    }
    this.render();
  }

  /** The status line for the counters as they are now. */
  render() {
    const { state, lagSeconds, listeners } = this.stats;
    const liveSeconds = (performance.now() - this.liveSince) / 1000;
    this.ui.statusText.textContent = statusText({ state, liveSeconds, lagSeconds, listeners });
    this.ui.status.dataset.state = state;
  }

  /** The level meter for one reading of the microphone. */
  setLevel(rms, peak) {
    // CSSOM: allowed by a strict CSP
    this.ui.levelBar.style.setProperty('--level', meterLevel(rms).toFixed(3));
    this.ui.levelBar.parentElement.classList.toggle('is-clipping', isClipping(peak));
  }

  /** The microphone's notice (./mic-state.js `micNotice`), or null to hide it. */
  setMicNotice(text) {
    const notice = this.ui.micNotice;
    if (notice.textContent === (text || '') && notice.hidden === !text) return;
    notice.textContent = text || '';
    notice.hidden = !text;
  }

  showError(message) {
    this.stats.lastError = message;
    this.ui.error.textContent = message;
    this.ui.error.hidden = false;
  }

  clearError() {
    this.stats.lastError = null;
    this.ui.error.textContent = '';
    this.ui.error.hidden = true;
  }
}
