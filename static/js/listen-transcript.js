// The listener page's transcript links (templates/listen.html: the Transcript menu and the
// ended note): each downloads everything said so far in the chosen language, as TXT, SRT or
// VTT. A private session's transcript needs its token, so there a click fetches it with the
// token and saves what came (./private-gate.js).

import { saveWithToken } from './private-gate.js';
import { pointTranscriptLinks } from './transcript-links.js';

/** The transcript links of templates/listen.html, and where the menu names their language. */
export function transcriptElements(doc) {
  return {
    links: [...doc.querySelectorAll('.transcript-link')],
    languageLabel: doc.querySelector('.transcript-language'),
  };
}

export class TranscriptLinks {
  /**
   * @param {{elements: {links: HTMLAnchorElement[], languageLabel: HTMLElement}, code: string,
   *          token: () => string|null, onError: (message: string) => void}} options
   *   elements: transcriptElements(document); token: a private session's listener token (null
   *   for a public one).
   */
  constructor({ elements: { links, languageLabel }, code, token, onError }) {
    this.links = links;
    this.languageLabel = languageLabel;
    this.code = code;
    this.token = token;
    this.onError = onError;
    for (const link of links) link.addEventListener('click', (event) => this.#download(event));
  }

  /** Point every link at the transcript in `lang`, named `name`. */
  show(lang, name) {
    this.languageLabel.textContent = name;
    pointTranscriptLinks(this.links, this.code, lang);
  }

  async #download(event) {
    const link = event.currentTarget;
    const token = this.token();
    if (!token) return;
    event.preventDefault();
    try {
      await saveWithToken(link.href, link.download, token);
    } catch (error) {
      this.onError(`The transcript could not be downloaded: ${error.message}`);
    }
  }
}
