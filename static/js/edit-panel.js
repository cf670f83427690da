// The editor panel (templates/_edit_panel.html), on the editor page (/e/{code}) and in the
// presenter console: the session's source finals as they arrive, fixed by a person.
//
// Keyboard first: the list is one tab stop (a listbox); ↑ ↓ Home End move the selection,
// Enter opens the selected line for fixing, Enter again sends the fix and Escape cancels;
// the focus comes back to the list. A click opens a line too. A fix is
// PUT /api/sessions/{code}/segments/{segment}; every editor sees every fix live, since each
// is a new final with a higher `rev` on the same listener socket. Words a fix brought are
// offered as terms (PUT .../terms), so the recogniser does not make the same mistake again.
// The state lives in ./edit-state.js; this module draws it and talks to the server.

import { EditState, formatTerms, parseTerms } from './edit-state.js';
import { ListenerSocket } from './listener-socket.js';
import { markLanguage } from './text-direction.js';

/**
 * @param {HTMLElement} root the panel (holds #edit-lines, #edit-terms, ...)
 * @param {{code: string, language: string, token: string|null, start?: boolean}} options
 *   start: follow the session at once (default); false waits for the returned `start()`
 *   (the console opens the panel on demand: its socket counts as a listener).
 * @returns {{state: EditState, stats: object, start: () => void}}
 */
export function mountEditPanel(root, { code, language, token, start = true }) {
  const ui = {
    lines: root.querySelector('.edit-lines'),
    offer: root.querySelector('.edit-offer'),
    status: root.querySelector('.edit-status'),
    terms: root.querySelector('.edit-terms'),
    saveTerms: root.querySelector('.edit-terms-save'),
  };
  const state = new EditState();
  const stats = { fixesSent: 0, fixesSeen: 0, termsSaved: 0, lastError: null };
  const api = `/api/sessions/${encodeURIComponent(code)}`;
  let termsDirty = false;

  function say(message, error = false) {
    ui.status.textContent = message;
    ui.status.dataset.error = error ? 'true' : 'false';
    if (error) stats.lastError = message;
  }

  async function send(method, path, body) {
    const response = await fetch(`${api}${path}`, {
      method,
      headers: {
        'Content-Type': 'application/json',
        Accept: 'application/json',
        Authorization: `Bearer ${token}`,
      },
      body: JSON.stringify(body),
    });
    const data = await response.json().catch(() => ({}));
    if (!response.ok) throw new Error(data.error || `${response.status} ${response.statusText}`);
    return data;
  }

  // ------------------------------------------------------------ drawing

  function lineElement(segment) {
    let item = ui.lines.querySelector(`[data-segment="${segment}"]`);
    if (item) return item;
    item = document.createElement('li');
    item.id = `edit-line-${segment}`;
    item.className = 'edit-line';
    item.setAttribute('role', 'option');
    item.dataset.segment = String(segment);
    const text = document.createElement('span');
    text.className = 'edit-text';
    item.append(text);
    const order = state.order();
    const after = order.slice(order.indexOf(segment) + 1);
    const next = after.map((other) => ui.lines.querySelector(`[data-segment="${other}"]`)).find(Boolean);
    ui.lines.insertBefore(item, next || null);
    return item;
  }

  function drawLine(segment) {
    const line = state.lines.get(segment);
    const item = lineElement(segment);
    const text = item.querySelector('.edit-text');
    markLanguage(text, line.lang); // its speaker's (a panel's may differ), and the field inside
    if (state.editing !== segment) text.textContent = line.text;
    item.dataset.rev = String(line.rev);
    item.title = line.rev ? `Corrected (${line.rev})` : '';
  }

  function drawSelection() {
    for (const item of ui.lines.children) {
      const selected = Number(item.dataset.segment) === state.selected;
      item.setAttribute('aria-selected', selected ? 'true' : 'false');
      if (selected) {
        ui.lines.setAttribute('aria-activedescendant', item.id);
        item.scrollIntoView({ block: 'nearest' });
      }
    }
  }

  function drawTerms() {
    if (!termsDirty && document.activeElement !== ui.terms) ui.terms.value = formatTerms(state.terms);
  }

  // ------------------------------------------------------------ fixing a line

  function open(segment) {
    const text = state.begin(segment);
    if (text === null) return;
    drawSelection();
    const item = lineElement(segment);
    const input = document.createElement('input');
    input.type = 'text';
    input.className = 'edit-input';
    input.value = text;
    input.setAttribute('aria-label', 'Fix this line, Enter to send, Escape to cancel');
    item.querySelector('.edit-text').replaceChildren(input);
    input.addEventListener('keydown', (event) => {
      if (event.key === 'Enter') {
        event.preventDefault();
        close(input.value);
      } else if (event.key === 'Escape') {
        event.preventDefault();
        close(null);
      }
    });
    input.addEventListener('blur', () => {
      if (state.editing === segment) close(null);
    });
    input.focus();
    input.select();
  }

  async function close(text) {
    const segment = state.editing;
    const fix = text === null ? (state.cancel(), null) : state.finish(text);
    if (segment !== null) drawLine(segment);
    ui.lines.focus();
    drawSelection();
    if (!fix) return;
    const item = lineElement(fix.segment);
    item.querySelector('.edit-text').textContent = fix.text; // shown at once; the echo confirms
    item.dataset.pending = 'true';
    try {
      await send('PUT', `/segments/${fix.segment}`, { text: fix.text });
      stats.fixesSent += 1;
      say('Fixed. Every listener gets the corrected line.');
      offerTerms(fix.offers);
    } catch (error) {
      drawLine(fix.segment);
      say(`Could not send the fix: ${error.message}`, true);
    } finally {
      delete item.dataset.pending;
    }
  }

  function offerTerms(words) {
    ui.offer.replaceChildren();
    if (words.length === 0) {
      ui.offer.hidden = true;
      return;
    }
    const label = document.createElement('span');
    label.textContent = 'Add to the terms, so it is heard right next time: ';
    ui.offer.append(label);
    for (const word of words) {
      const button = document.createElement('button');
      button.type = 'button';
      button.className = 'button button-small edit-offer-term';
      button.textContent = word;
      button.addEventListener('click', async () => {
        button.disabled = true;
        await saveTerms(state.withTerm(word));
        button.remove();
        if (!ui.offer.querySelector('button')) ui.offer.hidden = true;
        ui.lines.focus();
      });
      ui.offer.append(button);
    }
    ui.offer.hidden = false;
  }

  async function saveTerms(terms) {
    try {
      const data = await send('PUT', '/terms', { terms });
      state.terms = data.terms;
      termsDirty = false;
      stats.termsSaved += 1;
      drawTerms();
      say(`Terms saved (${data.terms.length}).`);
    } catch (error) {
      say(`Could not save the terms: ${error.message}`, true);
    }
  }

  // ------------------------------------------------------------ wiring

  ui.lines.addEventListener('keydown', (event) => {
    if (event.target !== ui.lines) return; // keys typed into the open line
    const moves = { ArrowUp: -1, ArrowDown: 1, Home: -Infinity, End: Infinity };
    if (event.key in moves) {
      event.preventDefault();
      const delta = moves[event.key];
      state.move(Number.isFinite(delta) ? delta : delta > 0 ? 1e9 : -1e9);
      drawSelection();
    } else if (event.key === 'Enter' && state.selected !== null) {
      event.preventDefault();
      open(state.selected);
    }
  });
  ui.lines.addEventListener('click', (event) => {
    const item = event.target.closest('.edit-line');
    if (!item || event.target.closest('.edit-input')) return;
    open(Number(item.dataset.segment));
  });
  ui.terms.addEventListener('input', () => {
    termsDirty = true;
  });
  ui.saveTerms.addEventListener('click', () => saveTerms(parseTerms(ui.terms.value)));

  const socket = new ListenerSocket({
    code,
    lang: language,
    token, // a private session opens to its editors' and presenters' tokens too
    onEvent: (event) => {
      const changed = state.apply(event);
      if (changed === 'terms') drawTerms();
      else if (changed !== null) {
        if (event.rev) stats.fixesSeen += 1;
        drawLine(changed);
        drawSelection();
      }
    },
    onStatus: (status) => {
      root.dataset.connection = status;
    },
  });
  if (!token) {
    say('Editing needs the editor link (the address ending in #token=…).', true);
    ui.saveTerms.disabled = true;
  }
  let started = false;
  function begin() {
    if (started) return;
    started = true;
    const headers = { Accept: 'application/json' };
    if (token) headers.Authorization = `Bearer ${token}`;
    fetch(`${api}/terms`, { headers })
      .then((response) => (response.ok ? response.json() : { terms: [] }))
      .then((data) => {
        if (!state.terms.length) state.terms = data.terms || [];
        drawTerms();
      })
      .catch((error) => console.warn('cannot read the terms', error));
    socket.start();
  }
  if (start) begin();
  return { state, stats, socket, start: begin };
}
