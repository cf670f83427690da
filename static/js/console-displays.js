// The console's venue screen and stream overlay links (templates/present.html, "Venue screen
// and stream overlay"): the links for the chosen language(s) and background, copy buttons, and
// a live preview of one language drawn as the overlay draws it (./subtitles.js). The preview
// listens with the presenter token and `preview=1`, so it is not counted as a listener; it
// runs only while a language is chosen (the server translates into it meanwhile).

import { ListenerSocket } from './listener-socket.js';
import { SubtitleView } from './subtitles.js';

export class DisplayLinks {
  /**
   * @param {{code: string, presenterToken: string|null, copy: (text, button) => void}} options
   */
  constructor({ code, presenterToken, copy }) {
    this.code = code;
    this.presenterToken = presenterToken;
    this.listenerToken = null;
    this.copy = copy;
    this.ui = {
      lang: document.getElementById('display-lang'),
      bg: document.getElementById('overlay-bg'),
      screen: document.getElementById('screen-link'),
      overlay: document.getElementById('overlay-link'),
      copyScreen: document.getElementById('copy-screen'),
      copyOverlay: document.getElementById('copy-overlay'),
      previewLang: document.getElementById('preview-lang'),
      preview: document.getElementById('preview'),
    };
    this.previewSocket = null;
    this.previewView = null;
    this.ui.lang.addEventListener('change', () => this.render());
    this.ui.bg.addEventListener('change', () => this.render());
    this.ui.copyScreen.addEventListener('click', () => this.copy(this.ui.screen.href, this.ui.copyScreen));
    this.ui.copyOverlay.addEventListener('click', () => this.copy(this.ui.overlay.href, this.ui.copyOverlay));
    this.ui.previewLang.addEventListener('change', () => this.preview(this.ui.previewLang.value));
    this.render();
  }

  /** A private session's links carry a listener token in their fragment. */
  setListenerToken(token) {
    this.listenerToken = token;
    this.render();
  }

  /** The screen's and the overlay's links for the current choices. */
  render() {
    const base = `${window.location.origin}/s/${encodeURIComponent(this.code)}`;
    const fragment = this.listenerToken ? `#token=${encodeURIComponent(this.listenerToken)}` : '';
    const lang = new URLSearchParams({ lang: this.ui.lang.value });
    const overlay = new URLSearchParams({ lang: this.ui.lang.value, bg: this.ui.bg.value });
    this.ui.screen.href = `${base}/screen?${lang}${fragment}`;
    this.ui.overlay.href = `${base}/overlay?${overlay}${fragment}`;
    // Shown without the token: the console may be on a shared screen.
    this.ui.screen.textContent = `${base}/screen?${lang}`;
    this.ui.overlay.textContent = `${base}/overlay?${overlay}`;
  }

  /** Preview `lang` ('' stops the preview). */
  preview(lang) {
    if (this.previewSocket) this.previewSocket.close('preview closed');
    if (this.previewView) this.previewView.destroy();
    this.previewSocket = null;
    this.previewView = null;
    this.ui.preview.hidden = !lang;
    if (!lang || !this.presenterToken) return;
    this.previewView = new SubtitleView(this.ui.preview, { lang, visible: 3 });
    this.previewSocket = new ListenerSocket({
      code: this.code,
      lang,
      token: this.presenterToken,
      preview: true,
      onEvent: (event) => {
        if (event.type === 'caption') this.previewView.apply(event);
      },
      onStatus: () => {},
    });
    this.previewSocket.start();
  }
}
