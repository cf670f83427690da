// Traveller mode's two listener sockets (./listener-socket.js), one per side's language
// (lang=A and lang=B, audio=1 while speaking aloud is on): together they bring every source
// caption, the translations into both languages and the spoken translation. Their state is
// `stats.sockets`; a refusal, the server's errors and the end of the session go to the page.
// Wired by ./talk.js.

import { ListenerSocket } from './listener-socket.js';
import { refusalText, serverProblem } from './talk-page-state.js';
import { SIDES } from './talk-view.js';

export class ConversationListeners {
  /**
   * @param {{stats: object, onCaption: (event: object) => void,
   *          onAudio: (header: object, pcm: ArrayBuffer) => void, onEnded: () => void,
   *          onError: (message: string) => void, render: () => void}} options
   *   stats: the page's counters (`code`, `langs` and `speak` are read, `sockets` written);
   *   onEnded: the session was ended elsewhere.
   */
  constructor({ stats, onCaption, onAudio, onEnded, onError, render }) {
    this.stats = stats;
    this.onCaption = onCaption;
    this.onAudio = onAudio;
    this.onEnded = onEnded;
    this.onError = onError;
    this.render = render;
    this.sockets = [];
  }

  /** (Re)open a socket for each side's language. */
  open() {
    this.close();
    const { stats } = this;
    this.sockets = SIDES.map((side) => {
      const socket = new ListenerSocket({
        code: stats.code,
        lang: stats.langs[side],
        audio: stats.speak,
        onEvent: (event) => this.onEvent(event),
        onAudio: this.onAudio,
        onStatus: (status, detail) => this.onStatus(side, status, detail),
      });
      socket.start();
      return socket;
    });
  }

  close() {
    for (const socket of this.sockets) socket.close('conversation closed');
    this.sockets = [];
  }

  /** Ask for the spoken translation, or stop it. */
  setAudio(on) {
    for (const socket of this.sockets) socket.setAudio(on);
  }

  onEvent(event) {
    if (event.type === 'caption') this.onCaption(event);
    else if (event.type === 'state' && event.state === 'ended') this.onEnded();
    else if (event.type === 'error') this.onError(serverProblem(event));
  }

  onStatus(side, status, detail) {
    this.stats.sockets[side] = status;
    if (status === 'failed') this.onError(refusalText(detail));
    this.render();
  }
}
