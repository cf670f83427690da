// The console's audio settings (templates/present.html, "Microphone and streaming"): which
// microphone (the browser names them only once it has allowed one, so the list is refreshed
// when a stream opens one and when devices change) and how the audio travels (WebSocket PCM or
// WebRTC Opus), remembered on this device. The choices themselves are ./present-state.js.

import { listMicrophones } from './mic-capture.js';
import { loadPreference, savePreference } from './preferences.js';
import { chosenTransport, microphoneChoice, transportOf } from './present-state.js';

export class AudioSettings {
  /**
   * @param {{stats: object, micSelect: HTMLSelectElement, micHint: HTMLElement,
   *          transportSelect: HTMLSelectElement|null}} options
   *   stats: the console's counters; `transport` is written here.
   */
  constructor({ stats, micSelect, micHint, transportSelect }) {
    this.stats = stats;
    this.ui = { micSelect, micHint, transport: transportSelect };
    if (this.ui.transport) {
      this.ui.transport.addEventListener('change', () => this.setTransport(this.ui.transport.value));
    }
    if (navigator.mediaDevices && navigator.mediaDevices.addEventListener) {
      navigator.mediaDevices.addEventListener('devicechange', () => this.refreshMicrophones());
    }
  }

  /** The chosen microphone's device id ("" for the default one). */
  get deviceId() {
    return this.ui.micSelect.value;
  }

  /** List the microphones, selecting `activeDeviceId` (the one open now) or the chosen one. */
  async refreshMicrophones(activeDeviceId = null) {
    let devices = [];
    try {
      devices = await listMicrophones();
    } catch (error) {
      console.warn('cannot list microphones', error);
      return;
    }
    const choice = microphoneChoice(devices, activeDeviceId || this.ui.micSelect.value);
    if (!choice) return;
    this.ui.micSelect.replaceChildren(
      ...choice.options.map(({ label, value }) => new Option(label, value)),
    );
    if (choice.selected !== null) this.ui.micSelect.value = choice.selected;
    this.ui.micHint.textContent = choice.hint;
  }

  /** Send the audio over `value` ("websocket" or "webrtc"), remembered unless `remember` is false. */
  setTransport(value, remember = true) {
    this.stats.transport = transportOf(value);
    if (this.ui.transport) this.ui.transport.value = this.stats.transport;
    if (remember) savePreference('transport', this.stats.transport);
  }

  /** The transport remembered on this device, where this browser has it. */
  restoreTransport() {
    this.setTransport(chosenTransport(loadPreference('transport'), 'RTCPeerConnection' in window), false);
  }
}
