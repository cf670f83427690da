// The console's panel controls (docs/protocol.md, "Panels"): the speakers of the session and
// their links, questions from the floor for the moderator, and who this console is. A
// speaker's console (a speaker token in the link) is told so, and a second tab of a speaker
// who is already live says so before Start. Pure DOM wiring over the panel API; no state
// beyond what the server returns.

import { callApi as call, sessionApi as api } from './session-api.js';
import { markLanguage } from './text-direction.js';

/** Who this console's token is: `{role: "presenter"|"speaker", speaker: {id, name, language, live}}`. */
export async function whoAmI(code, token) {
  return call(`${api(code)}/whoami`, token);
}

export class SpeakersPanel {
  /** @param {{code: string, token: string, languageNames: Record<string, string>,
   *           copy: (text: string, button: HTMLElement) => Promise<void>,
   *           onError: (message: string) => void}} options */
  constructor({ code, token, languageNames, copy, onError }) {
    this.code = code;
    this.token = token;
    this.languageNames = languageNames;
    this.copy = copy;
    this.onError = onError;
    this.root = document.getElementById('speakers-panel');
    this.list = document.getElementById('speakers-list');
    this.form = document.getElementById('speaker-form');
    if (!this.root || !this.form) return;
    this.form.addEventListener('submit', (event) => {
      event.preventDefault();
      this.add();
    });
  }

  /** Show the session's speakers (from `GET /api/sessions/{code}`). */
  render(speakers) {
    if (!this.list) return;
    this.list.replaceChildren(
      ...speakers.map((speaker) => {
        const item = document.createElement('li');
        const name = this.languageNames[speaker.language] || speaker.language;
        item.textContent = `${speaker.name} (${name})${speaker.live ? ' · live' : ''}`;
        item.dataset.speaker = speaker.id;
        return item;
      }),
    );
  }

  async add() {
    const data = new FormData(this.form);
    try {
      const speaker = await call(`${api(this.code)}/speakers`, this.token, {
        method: 'POST',
        body: JSON.stringify({ name: data.get('name'), language: data.get('language') }),
      });
      const link = `${window.location.origin}${speaker.present_url}`;
      const out = document.getElementById('speaker-link');
      out.hidden = false;
      out.querySelector('a').href = link;
      out.querySelector('a').textContent = link;
      const button = out.querySelector('button');
      button.onclick = () => this.copy(link, button);
      this.form.reset();
    } catch (error) {
      this.onError(`Could not add the speaker: ${error.message}`);
    }
  }
}

export class QuestionQueue {
  /** @param {{code: string, token: string, languageNames: Record<string, string>,
   *           onError: (message: string) => void}} options */
  constructor({ code, token, languageNames, onError }) {
    this.code = code;
    this.token = token;
    this.languageNames = languageNames;
    this.onError = onError;
    this.held = new Map();
    this.decided = new Set(); // decided here: a poll that started before cannot bring them back
    this.details = document.getElementById('questions-panel');
    this.list = document.getElementById('questions-list');
    this.count = document.getElementById('questions-count');
    this.timer = null;
    this.started = false;
  }

  /** Follow the held questions: only a moderator's console (the presenter's) may. */
  start() {
    if (!this.details || this.started) return;
    this.started = true;
    this.details.addEventListener('toggle', () => this.poll());
    this.poll();
  }

  /** A `question` event from the presenter socket. */
  onEvent(question) {
    if (question.state === 'held') this.held.set(question.id, question);
    else this.held.delete(question.id);
    this.render();
  }

  async poll() {
    clearTimeout(this.timer);
    try {
      const body = await call(`${api(this.code)}/questions`, this.token);
      const held = body.questions.filter((q) => !this.decided.has(q.id));
      this.held = new Map(held.map((q) => [q.id, q]));
      this.render();
    } catch {
      // not the presenter, or the server is away: try again later
    }
    this.timer = setTimeout(() => this.poll(), this.details.open ? 3000 : 15000);
  }

  render() {
    if (!this.list) return;
    this.count.textContent = this.held.size ? ` (${this.held.size})` : '';
    this.list.replaceChildren(
      ...[...this.held.values()].map((question) => this.item(question)),
    );
  }

  item(question) {
    const item = document.createElement('li');
    item.className = 'question';
    const text = document.createElement('p');
    text.textContent = question.text;
    markLanguage(text, question.lang);
    item.append(text);
    if (question.translation) {
      const translation = document.createElement('p');
      translation.className = 'question-translation';
      translation.dir = 'auto'; // in the session's language, not named here
      translation.textContent = question.translation;
      item.append(translation);
    }
    for (const [label, decision] of [['Accept', 'accept'], ['Reject', 'reject']]) {
      const button = document.createElement('button');
      button.type = 'button';
      button.className = `button button-small${decision === 'accept' ? ' button-primary' : ''}`;
      button.textContent = label;
      button.addEventListener('click', () => this.decide(question.id, decision));
      item.append(button);
    }
    return item;
  }

  async decide(id, decision) {
    try {
      await call(`${api(this.code)}/questions/${encodeURIComponent(id)}/${decision}`, this.token, {
        method: 'POST',
      });
      this.decided.add(id);
      this.held.delete(id);
      this.render();
    } catch (error) {
      this.onError(`Could not ${decision} the question: ${error.message}`);
    }
  }
}

/** The small "reduced accuracy" notice while the server sheds work (a `shedding` event). */
export function showShedding(event) {
  const notice = document.getElementById('shedding-notice');
  if (!notice) return;
  notice.hidden = !(event.level > 0);
  notice.title = event.shed && event.shed.length ? `Shedding: ${event.shed.join(', ')}` : '';
}
