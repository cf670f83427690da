// Traveller mode's setup screen (templates/talk.html): the two languages (a pair that cannot
// hold a conversation here is refused, saying why: ./talk-languages.js), and Start, which
// creates the session offering both (source A, target B; the server translates every offered
// language into the others; ./talk-session.js).
//
// Continuing a conversation: the page keeps `?code=CODE` in the address and the presenter token
// in this tab's sessionStorage, so a reload continues it. `/talk?code=CODE#token=TOKEN` (More ->
// "Copy link to continue on another phone") continues it on another phone or browser; the token
// travels in the fragment, which browsers never send to a server, and leaves the address bar at
// once. Without a token the conversation can be followed, not spoken in. Wired by ./talk.js.

import { setText } from './set-text.js';
import {
  createConversation, fetchConversation, recallToken, rememberToken,
} from './talk-session.js';
import {
  describeError, languagesOf, talkPath, tokenFromFragment,
} from './talk-page-state.js';
import { showMessage } from './talk-view.js';

export class TalkSetup {
  /**
   * @param {{ui: object, config: object, languages: object, stats: object,
   *          wakeAudio: () => void, onBegin: () => void}} options
   *   ui: the page's elements (./talk-view.js); config: the page's `talk-config` (`ready`: the
   *   server's models are loaded); languages: a Languages (./talk-languages.js); stats: the
   *   page's counters (`phase`, `code` and `langs` are written here); wakeAudio: lets the
   *   phone speak later (inside the tap on Start); onBegin: the conversation's session is known.
   */
  constructor({ ui, config, languages, stats, wakeAudio, onBegin }) {
    this.ui = ui;
    this.config = config;
    this.languages = languages;
    this.stats = stats;
    this.wakeAudio = wakeAudio;
    this.onBegin = onBegin;
    this.token = null; // the presenter token: null where the conversation is only followed
    ui.langA.addEventListener('change', () => this.renderPair());
    ui.langB.addEventListener('change', () => this.renderPair());
    ui.swap.addEventListener('click', () => {
      const a = ui.langA.value;
      ui.langA.value = ui.langB.value;
      ui.langB.value = a;
      this.renderPair();
    });
    ui.begin.addEventListener('click', () => this.begin());
  }

  showError(message) {
    showMessage(this.ui.setupError, message);
  }

  /** Whether the chosen pair can hold a conversation here, and what it will be. */
  renderPair() {
    const { ui, languages } = this;
    const a = ui.langA.value;
    const b = ui.langB.value;
    const problem = this.stats.code ? null : languages.pairProblem(a, b);
    if (problem) {
      ui.pairStatus.textContent = '';
      this.showError(problem);
    } else {
      this.showError('');
      ui.pairStatus.textContent = languages.pairSummary(a, b);
    }
    ui.begin.disabled = Boolean(problem) || !this.config.ready;
  }

  /** The screen as the page opens: a conversation in the address is read to continue it. */
  init() {
    if (!this.config.ready) {
      this.showError('The server is still loading its models. Reload this page in a minute.');
      this.ui.begin.disabled = true;
      return;
    }
    this.renderPair();
    const code = new URLSearchParams(window.location.search).get('code');
    if (code) this.resume(code.trim().toUpperCase());
  }

  /** Start (or continue, or follow) the conversation: the tap on Start. */
  async begin() {
    const { ui, stats, languages } = this;
    if (stats.phase !== 'setup') return;
    if (stats.speak) this.wakeAudio(); // this tap is what lets the phone speak later
    stats.phase = 'starting';
    ui.begin.disabled = true;
    this.showError('');
    try {
      if (!stats.code) {
        const a = ui.langA.value;
        const b = ui.langB.value;
        const problem = languages.pairProblem(a, b);
        if (problem) throw new Error(problem);
        const title = `Conversation: ${languages.nameOf(a)} ↔ ${languages.nameOf(b)}`;
        const created = await createConversation(title, a, b);
        stats.code = created.code;
        stats.langs = { a, b };
        this.token = created.presenter_token;
        rememberToken(stats.code, this.token);
        window.history.replaceState(null, '', talkPath(stats.code));
      }
    } catch (error) {
      stats.phase = 'setup';
      this.showError(describeError(error));
      this.renderPair();
      return;
    }
    this.onBegin();
  }

  /** `/talk?code=...`: continue a conversation (the token from `#token=` or this tab). */
  async resume(code) {
    const { ui, stats, languages } = this;
    const fragmentToken = tokenFromFragment(window.location.hash);
    this.token = fragmentToken || recallToken(code);
    if (fragmentToken) window.history.replaceState(null, '', talkPath(code));
    let facts;
    try {
      facts = await fetchConversation(code);
    } catch (error) {
      this.refuse(`${describeError(error)} Start a new conversation instead.`);
      return;
    }
    if (facts.state === 'ended') {
      this.refuse(`The conversation ${facts.code} has ended. Start a new one.`);
      return;
    }
    stats.code = facts.code;
    stats.langs = languagesOf(facts);
    if (this.token) rememberToken(stats.code, this.token);
    for (const [select, lang] of [[ui.langA, stats.langs.a], [ui.langB, stats.langs.b]]) {
      if (![...select.options].some((option) => option.value === lang)) {
        select.append(new Option(languages.label(lang), lang));
      }
      select.value = lang;
      select.disabled = true;
    }
    ui.swap.disabled = true;
    setText(ui.setupTitle, `Conversation ${facts.code}`);
    setText(ui.begin, this.token ? 'Continue the conversation' : 'Follow the conversation');
    ui.pairStatus.textContent = `${languages.nameOf(stats.langs.a)} ↔ ${languages.nameOf(stats.langs.b)}.`;
    this.showError('');
    ui.begin.disabled = false;
  }

  /** The conversation in the address cannot be continued: back to a new one, saying why. */
  refuse(message) {
    window.history.replaceState(null, '', '/talk');
    this.token = null;
    this.renderPair();
    this.showError(message);
  }
}
