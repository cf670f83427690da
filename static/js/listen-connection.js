// The listener page's connection to its session (one ./listener-socket.js at a time, which
// backfills after any drop): caption events go to the captions, state events and the socket's
// ups and downs to the page's stats and status, audio to the spoken translation. When the
// session ends, nothing more will come, so the socket closes (with spoken translation on, once
// the last sentences have been spoken) and the screen may sleep.

import {
  PRIVATE_NOTICE, PROBLEM_NOTICE, isSessionState, refusalText,
} from './listen-state.js';
import { ListenerSocket } from './listener-socket.js';

export class ListenerConnection {
  /**
   * @param {{code: string, stats: object,
   *          languages: import('./listen-state.js').LanguageChoice,
   *          captions: import('./listen-captions.js').ListenerCaptions,
   *          status: import('./listen-status.js').ListenerStatus,
   *          audio: import('./listen-audio.js').ListenerAudio,
   *          wakeLock: import('./wake-lock.js').ScreenWakeLock,
   *          token: () => string|null, askToken: (() => Promise<void>)|null}} options
   *   stats: the page's (window.interpStats), kept up to date here; token: a private session's
   *   listener token; askToken: a private session's, for when the server refuses the token (a
   *   wrong or stale link): it settles once there is a new one; null for a public session.
   */
  constructor({ code, stats, languages, captions, status, audio, wakeLock, token, askToken }) {
    this.code = code;
    this.stats = stats;
    this.languages = languages;
    this.captions = captions;
    this.status = status;
    this.audio = audio;
    this.wakeLock = wakeLock;
    this.token = token;
    this.askToken = askToken;
    this.socket = null;
  }

  /** The newest event's `seq` (0 before the first socket). */
  get lastSeq() {
    return this.socket ? this.socket.lastSeq : 0;
  }

  /** Follow the session from after `since` (by default, where the last socket left off). */
  connect(since = this.lastSeq) {
    this.socket = new ListenerSocket({
      code: this.code,
      lang: this.languages.lang,
      since,
      audio: this.audio.enabled,
      token: this.token(),
      onEvent: (event) => this.#onEvent(event),
      onAudio: (header, pcm) => this.audio.hear(header, pcm),
      onStatus: (connection, detail) => this.#onStatus(connection, detail),
    });
    this.socket.start();
  }

  setLanguage(lang) {
    if (this.socket) this.socket.setLanguage(lang);
  }

  setAudio(enabled) {
    if (this.socket) this.socket.setAudio(enabled);
  }

  /** The page goes away: close the socket (connect() picks up again, back from the cache). */
  leave() {
    if (this.socket) this.socket.close('page closed');
  }

  #onEvent(event) {
    this.stats.lastSeq = this.socket.lastSeq;
    switch (event.type) {
      case 'caption':
        if (this.captions.apply(event) !== null) this.status.captionShown();
        break;
      case 'state':
        if (typeof event.listeners === 'number') {
          this.stats.listeners = event.listeners;
          this.status.showListeners(event.listeners);
        }
        this.#setSessionState(event.state);
        break;
      case 'error':
        this.status.showNotice(event.message || PROBLEM_NOTICE);
        break;
      default:
        break; // event types of later protocol versions
    }
  }

  #setSessionState(state) {
    if (!isSessionState(state)) return;
    this.stats.state = state;
    if (state === 'ended') {
      this.audio.afterSpeech(() => this.#close('session ended'));
      this.wakeLock.disable();
    } else {
      this.audio.render();
    }
    this.status.render();
  }

  #close(reason) {
    if (this.socket) this.socket.close(reason);
    this.stats.connected = false;
    this.stats.connection = 'closed';
    this.audio.closed(this.stats.state === 'ended');
    this.status.render();
  }

  #onStatus(connection, detail) {
    const stats = this.stats;
    if (stats.state === 'ended' && connection !== 'open' && connection !== 'connecting') {
      this.#close('session ended'); // the server let go after the end: nothing left to wait for
      return;
    }
    stats.connection = connection;
    stats.connected = connection === 'open';
    if (connection === 'open') {
      if (detail.reconnect) stats.reconnects += 1;
      this.status.showNotice('');
    } else if (connection === 'reconnecting' || connection === 'offline' || connection === 'failed') {
      stats.lastClose = { code: detail.code, reason: detail.reason || '' };
    }
    if (connection === 'failed') {
      if (detail.code === 1008 && this.askToken !== null) {
        this.status.showNotice(PRIVATE_NOTICE);
        this.askToken().then(() => {
          this.status.showNotice('');
          this.connect();
        });
      } else {
        this.status.showNotice(refusalText(detail.code, detail.reason));
      }
    }
    this.status.render();
  }
}
