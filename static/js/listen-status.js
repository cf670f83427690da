// Draws the listener page's status (templates/listen.html): the pill with the session's state
// or the connection's trouble, the ended note, the Ask panel while the session goes on, the
// empty caption box's words, the listener count, and the notice of a problem. The words come
// from ./listen-state.js.

import { emptyText, followersText, statusPill } from './listen-state.js';

/** The elements of templates/listen.html that show the status. */
export function statusElements(doc) {
  const byId = (id) => doc.getElementById(id);
  return {
    state: byId('state'),
    stateText: byId('state-text'),
    endedNote: byId('ended-note'),
    ask: byId('ask-panel'),
    empty: byId('captions-empty'),
    captions: byId('captions'),
    listenerCount: byId('listener-count'),
    listenerNumber: byId('listener-number'),
    notice: byId('notice'),
  };
}

export class ListenerStatus {
  /**
   * @param {{elements: object, root: HTMLElement, session: {state: string, connection: string},
   *          captions: import('./listen-captions.js').ListenerCaptions}} options
   *   elements: statusElements(document); root: the page's #listener; session: the page's
   *   stats, read when drawing.
   */
  constructor({ elements, root, session, captions }) {
    this.el = elements;
    this.root = root;
    this.session = session;
    this.captions = captions;
  }

  render() {
    const el = this.el;
    const { state, connection } = this.session;
    const pill = statusPill(state, connection);
    el.state.dataset.state = pill.shown;
    el.stateText.textContent = pill.text;
    this.root.dataset.state = state;
    el.endedNote.hidden = state !== 'ended';
    el.ask.hidden = state === 'ended';
    if (this.captions.lineCount === 0) {
      el.empty.textContent = emptyText(state);
      if (!el.empty.isConnected) el.captions.prepend(el.empty);
    }
  }

  /** A caption was laid out: the empty box's words go once there is a line. */
  captionShown() {
    if (this.el.empty.isConnected && this.captions.lineCount > 0) this.el.empty.remove();
  }

  showListeners(count) {
    const el = this.el;
    el.listenerNumber.textContent = String(count);
    el.listenerCount.title = followersText(count);
    el.listenerCount.setAttribute('aria-label', el.listenerCount.title);
    el.listenerCount.hidden = false;
  }

  /** Show `message` in the notice box, or hide it (an empty message). */
  showNotice(message) {
    this.el.notice.textContent = message;
    this.el.notice.hidden = !message;
  }
}
