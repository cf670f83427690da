// The console's share panel (templates/present.html, "Share with your audience"): the listener
// link and where to type the join code, the audience by language, transcript downloads in the
// chosen language, the presenter's link and a new editor's link to copy (and revoking the
// editor links given), and a private
// session's share link and QR code with a listener token (./console-access.js). The venue
// screen's and the overlay's links are ./console-displays.js; pushes ./console-push.js.

import {
  authoriseDownloads, grantListenerToken, initPasscodeForm, qrDataUrl,
} from './console-access.js';
import { copyText } from './copy-text.js';
import { audienceText, revokedText } from './present-state.js';
import { callApi, sessionApi } from './session-api.js';
import { pointTranscriptLinks } from './transcript-links.js';

export class SharePanel {
  /**
   * @param {{code: string, language: string, token: string|null, isPrivate: boolean,
   *          stats: object, onError: (message: string) => void}} options
   *   language: the session's source language (the transcript's, until another is chosen);
   *   stats: the console's counters (`listeners`, `byLanguage` are written here).
   */
  constructor({ code, language, token, isPrivate, stats, onError }) {
    this.code = code;
    this.language = language;
    this.token = token;
    this.isPrivate = isPrivate;
    this.stats = stats;
    this.onError = onError;
    const byId = (id) => document.getElementById(id);
    this.ui = {
      copyLink: byId('copy-link'),
      copyPresenterLink: byId('copy-presenter-link'),
      makeEditorLink: byId('make-editor-link'),
      revokeEditorLinks: byId('revoke-editor-links'),
      editorLinksStatus: byId('editor-links-status'),
      listenLink: byId('listen-link'),
      joinOrigin: byId('join-origin'),
      qr: byId('share-qr'),
      qrLink: byId('share-qr-link'),
      listenerCount: byId('share-listener-count'),
      listenerLabel: byId('share-listener-label'),
      listenerLanguages: byId('share-languages'),
      transcriptLang: byId('transcript-lang'),
      transcriptLinks: [...document.querySelectorAll('.share .transcript-link')],
    };
    /** The names of the session's languages by code, from the transcript's picker. */
    this.languageNames = Object.fromEntries(
      [...this.ui.transcriptLang.options].map((option) => [option.value, option.textContent.trim()]),
    );
    this.wire();
  }

  wire() {
    const { ui, token } = this;
    if (ui.copyLink) ui.copyLink.addEventListener('click', () => copyText(ui.listenLink.href, ui.copyLink));
    if (ui.copyPresenterLink && !token) ui.copyPresenterLink.disabled = true;
    if (ui.copyPresenterLink && token) {
      ui.copyPresenterLink.addEventListener('click', () => {
        const link = `${window.location.origin}${window.location.pathname}#token=${encodeURIComponent(token)}`;
        copyText(link, ui.copyPresenterLink);
      });
    }
    if (ui.makeEditorLink) {
      ui.makeEditorLink.disabled = !token;
      ui.makeEditorLink.addEventListener('click', () => this.makeEditorLink());
    }
    if (ui.revokeEditorLinks) {
      ui.revokeEditorLinks.disabled = !token;
      ui.revokeEditorLinks.addEventListener('click', () => this.revokeEditorLinks());
    }
    ui.transcriptLang.addEventListener('change', () => this.renderTranscriptLinks());
    ui.listenLink.textContent = ui.listenLink.href; // absolute, ready to read out or paste
    ui.joinOrigin.textContent = window.location.host;
  }

  /** The audience size, and how many follow each language ("English 2 · Spanish 1"). */
  setAudience(count, byLanguage = {}) {
    this.stats.listeners = count;
    this.stats.byLanguage = byLanguage || {};
    const text = audienceText(count, this.stats.byLanguage, this.languageNames);
    this.ui.listenerCount.textContent = String(count);
    this.ui.listenerLabel.textContent = text.label;
    this.ui.listenerLanguages.textContent = text.languages;
    this.ui.listenerLanguages.hidden = text.languages === '';
  }

  /** The transcript links for the language chosen (the source language at first). */
  renderTranscriptLinks() {
    const lang = this.ui.transcriptLang.value || this.language;
    pointTranscriptLinks(this.ui.transcriptLinks, this.code, lang);
  }

  /** A new editor's link (POST .../editors), copied. */
  async makeEditorLink() {
    try {
      const body = await callApi(`${sessionApi(this.code)}/editors`, this.token, { method: 'POST' });
      await copyText(`${window.location.origin}${body.edit_url}`, this.ui.makeEditorLink);
    } catch (error) {
      this.onError(`Could not make an editor link: ${error.message}`);
    }
  }

  /** Every editor link given so far stops working (DELETE .../editors), once the presenter
   * confirms: for a link that went astray. */
  async revokeEditorLinks() {
    const sure = window.confirm(
      'Revoke every editor link given so far? Their editors can no longer fix lines; make new links for those you trust.',
    );
    if (!sure) return;
    const { ui } = this;
    ui.revokeEditorLinks.disabled = true;
    try {
      const body = await callApi(`${sessionApi(this.code)}/editors`, this.token, { method: 'DELETE' });
      ui.editorLinksStatus.textContent = revokedText(body.revoked);
    } catch (error) {
      this.onError(`Could not revoke the editor links: ${error.message}`);
    } finally {
      ui.revokeEditorLinks.disabled = false;
    }
  }

  /** A private session: the share link, the QR code and `displays`' links carry a listener
   * token (in the fragment); transcripts download with the presenter token. */
  async sharePrivately(displays) {
    if (!this.isPrivate || !this.token) return;
    const { ui, code, token } = this;
    authoriseDownloads(ui.transcriptLinks, token, this.onError);
    initPasscodeForm(code, token);
    ui.qrLink.removeAttribute('href'); // the full-size code would need the token in its URL
    try {
      const listenerToken = await grantListenerToken(code, token);
      ui.listenLink.href = `${ui.listenLink.href.split('#')[0]}#token=${encodeURIComponent(listenerToken)}`;
      displays.setListenerToken(listenerToken);
      ui.qr.src = await qrDataUrl(code, listenerToken);
    } catch (error) {
      this.onError(`The share link could not be made: ${error.message}`);
    }
  }
}
