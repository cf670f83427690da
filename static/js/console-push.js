// The console's "Captions to YouTube Live or Zoom" panel (docs/protocol.md, "Captions pushed
// out"): starts and stops a target with the presenter token and shows, for each target, its
// last send and its last error, read every few seconds while the panel is open and has
// targets (nothing is asked of the server before the presenter opens the panel).

const REFRESH_MS = 3000;

function ago(unixSeconds) {
  if (!unixSeconds) return '';
  const seconds = Math.max(0, Math.round(Date.now() / 1000 - unixSeconds));
  return seconds < 60 ? `${seconds} s ago` : `${Math.round(seconds / 60)} min ago`;
}

const SERVICE_NAMES = { youtube: 'YouTube', zoom: 'Zoom' };

export class PushPanel {
  constructor({ code, presenterToken, languageNames }) {
    this.code = code;
    this.token = presenterToken;
    this.names = languageNames;
    this.timer = null;
    this.ui = {
      form: document.getElementById('push-form'),
      service: document.getElementById('push-service'),
      url: document.getElementById('push-url'),
      lang: document.getElementById('push-lang'),
      error: document.getElementById('push-error'),
      status: document.getElementById('push-status'),
      badge: document.getElementById('push-badge'),
      panel: document.getElementById('push'),
    };
    this.stats = { targets: [] };
    window.interpPush = this.stats;
    this.ui.form.addEventListener('submit', (event) => {
      event.preventDefault();
      this.start();
    });
    this.ui.panel.addEventListener('toggle', () => {
      if (this.ui.panel.open && this.token) this.refresh();
      else window.clearTimeout(this.timer);
    });
  }

  async #request(method, path, body) {
    const response = await fetch(`/api/sessions/${encodeURIComponent(this.code)}/push${path}`, {
      method,
      headers: {
        Authorization: `Bearer ${this.token}`,
        Accept: 'application/json',
        ...(body ? { 'Content-Type': 'application/json' } : {}),
      },
      body: body ? JSON.stringify(body) : undefined,
    });
    const answer = await response.json().catch(() => ({}));
    if (!response.ok) throw new Error(answer.error || `${response.status} ${response.statusText}`);
    return answer;
  }

  async start() {
    this.ui.error.hidden = true;
    try {
      await this.#request('PUT', `/${this.ui.service.value}`, {
        url: this.ui.url.value.trim(),
        lang: this.ui.lang.value,
      });
      this.ui.url.value = ''; // a secret: not kept on screen
    } catch (error) {
      this.ui.error.textContent = `Not started: ${error.message}`;
      this.ui.error.hidden = false;
    }
    await this.refresh();
  }

  async stop(service) {
    try {
      await this.#request('DELETE', `/${service}`);
    } catch (error) {
      this.ui.error.textContent = `Not stopped: ${error.message}`;
      this.ui.error.hidden = false;
    }
    await this.refresh();
  }

  async refresh() {
    window.clearTimeout(this.timer);
    let targets = [];
    try {
      targets = (await this.#request('GET', '')).targets;
    } catch (error) {
      console.warn('cannot read the push targets', error);
    }
    this.stats.targets = targets;
    this.render(targets);
    if (targets.length > 0 && this.ui.panel.open) {
      this.timer = window.setTimeout(() => this.refresh(), REFRESH_MS);
    }
  }

  render(targets) {
    this.ui.badge.hidden = targets.length === 0;
    this.ui.badge.textContent = targets.length ? 'on' : '';
    this.ui.status.replaceChildren(...targets.map((target) => {
      const item = document.createElement('li');
      item.className = 'push-target';
      item.dataset.service = target.service;
      const head = document.createElement('strong');
      const language = this.names[target.lang] || target.lang;
      head.textContent = `${SERVICE_NAMES[target.service] || target.service} (${target.host}), ${language}`;
      const sent = document.createElement('span');
      sent.className = 'push-sent';
      sent.textContent = target.last_sent_at
        ? `Last sent ${ago(target.last_sent_at)}: “${target.last_sent_text}” (${target.sent} in all)`
        : 'Nothing sent yet.';
      item.append(head, sent);
      if (target.last_error) {
        const failed = document.createElement('span');
        failed.className = 'push-error';
        failed.textContent = `Last error ${ago(target.last_error_at)}: ${target.last_error}`;
        item.append(failed);
      }
      if (target.dropped || target.failed) {
        const lost = document.createElement('span');
        lost.className = 'push-error';
        lost.textContent = `Not delivered: ${target.failed} given up, ${target.dropped} dropped.`;
        item.append(lost);
      }
      const stop = document.createElement('button');
      stop.type = 'button';
      stop.className = 'button button-small button-danger-outline';
      stop.textContent = 'Stop';
      stop.addEventListener('click', () => this.stop(target.service));
      item.append(stop);
      return item;
    }));
  }
}
