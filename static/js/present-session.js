// The session as the console sees it: its facts (GET /api/sessions/{code}: the audience by
// language, the speakers, a private session's title, its state), read while no stream is open
// (an open one brings them as events); "End session" for everyone; and who this console is
// (the presenter, or a speaker of a panel: ./console-panel.js).

import { whoAmI } from './console-panel.js';
import { canStop } from './present-state.js';
import { sessionFacts } from './private-gate.js';

// While no stream is open the console has no socket to hear joins and leaves on, so it asks
// GET /api/sessions/{code} this often (only while the tab is visible).
const FACTS_REFRESH_MS = 10_000;

export class SessionControls {
  /**
   * @param {{code: string, token: string|null, isPrivate: boolean, stats: object,
   *          status: import('./present-status.js').ConsoleStatus,
   *          streaming: import('./present-stream.js').Streaming,
   *          share: import('./present-share.js').SharePanel,
   *          speakers: import('./console-panel.js').SpeakersPanel,
   *          title: HTMLElement, endButton: HTMLButtonElement}} options
   *   stats: the console's counters (`session` is written here).
   */
  constructor({ code, token, isPrivate, stats, status, streaming, share, speakers, title, endButton }) {
    this.code = code;
    this.token = token;
    this.isPrivate = isPrivate;
    this.stats = stats;
    this.status = status;
    this.streaming = streaming;
    this.share = share;
    this.speakers = speakers;
    this.ui = { title, endButton };
    this.factsTimer = null;
    endButton.addEventListener('click', () => this.end());
  }

  /** Read the facts now, then again while the tab is visible and no stream is open. */
  follow() {
    document.addEventListener('visibilitychange', () => {
      if (document.visibilityState !== 'visible') return;
      if (!this.streaming.open) this.refreshFacts();
      this.scheduleFacts();
    });
    this.refreshFacts().then(() => this.scheduleFacts());
  }

  /** The session's facts (a private session's need the token): audience size by language,
   * speakers, title, state. */
  async refreshFacts() {
    let facts;
    try {
      facts = await sessionFacts(this.code, this.token);
    } catch (error) {
      console.warn('cannot read the session facts', error);
      return;
    }
    if (typeof facts.listeners === 'number') this.share.setAudience(facts.listeners, facts.by_language);
    if (Array.isArray(facts.speakers)) this.speakers.render(facts.speakers);
    const { title } = this.ui;
    if (this.isPrivate && facts.title !== undefined && title.textContent !== facts.title) {
      title.textContent = facts.title;
      document.title = `${facts.title} · presenter · Live interpreter`;
    }
    this.stats.session = facts.state;
    if (facts.state === 'ended' && this.stats.state !== 'closed') this.status.setState('closed');
    else this.status.render();
  }

  scheduleFacts() {
    window.clearTimeout(this.factsTimer);
    this.factsTimer = null;
    if (this.stats.state === 'closed' || document.visibilityState !== 'visible') return;
    this.factsTimer = window.setTimeout(async () => {
      // While streaming, state events on the socket carry the count already.
      if (!this.streaming.open) await this.refreshFacts();
      this.scheduleFacts();
    }, FACTS_REFRESH_MS);
  }

  /** End the session for everyone (POST .../end), after the presenter confirms. */
  async end() {
    if (!this.token || this.stats.state === 'closed') return;
    const sure = window.confirm(
      'End this session for everyone? Nobody can stream to it again; listeners keep the transcript.',
    );
    if (!sure) return;
    this.ui.endButton.disabled = true;
    if (canStop(this.stats.state)) await this.streaming.stop();
    try {
      const response = await fetch(`/api/sessions/${encodeURIComponent(this.code)}/end`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${this.token}`, Accept: 'application/json' },
      });
      if (!response.ok) {
        let message = `${response.status} ${response.statusText}`;
        try {
          const body = await response.json();
          if (body && body.error) message = body.error;
        } catch (error) {
          console.warn('error response is not JSON', error);
        }
        throw new Error(message);
      }
    } catch (error) {
      this.status.showError(`Could not end the session: ${error.message}`);
      this.ui.endButton.disabled = false;
      return;
    }
    this.status.clearError();
    this.stats.session = 'ended';
    this.status.setState('closed');
  }
}

/** A speaker's console (a speaker token in the link) shows only what a speaker may do (the
 * role on `root`); a presenter's follows the questions from the floor; a console whose speaker
 * streams on another device says so before Start. */
export async function showRole({ code, token, root, questions, onError }) {
  if (!token) return;
  try {
    const me = await whoAmI(code, token);
    if (!me.role) {
      onError("This link is not this session's presenter or speaker link. Ask the organiser for the right one.");
      return;
    }
    root.dataset.role = me.role;
    // A panel's speaker speaks their own language, which the page could not know.
    const badge = root.querySelector('.lang-badge');
    if (badge && me.speaker.language) badge.textContent = me.speaker.language;
    if (me.role === 'presenter') questions.start();
    if (me.speaker.live) {
      onError('This session is already live on another device. Stop it there first.');
    }
  } catch {
    // the server is away: Start says so
  }
}
