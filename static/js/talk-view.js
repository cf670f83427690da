// Traveller mode's drawing (templates/talk.html): the two sides with their talk buttons and
// newest turn, the automatic-detection button and the history. It reads the page's state
// (./talk.js's `stats` and turn being spoken, ./talk-state.js's conversation) and changes only
// the DOM; ./talk.js calls `render()` after every change.

import { setText } from './set-text.js';
import { isOpen } from './talk-state.js';
import { words, wordsLang } from './talk-words.js';
import { markLanguage } from './text-direction.js';

export const SIDES = ['a', 'b'];

/** The page's elements, by role. */
export function findElements(doc) {
  const byId = (id) => doc.getElementById(id);
  return {
    root: byId('talk'),
    setup: byId('talk-setup'),
    setupTitle: byId('talk-setup-heading'),
    langA: byId('lang-a'),
    langB: byId('lang-b'),
    swap: byId('swap-langs'),
    pairStatus: byId('pair-status'),
    setupError: byId('setup-error'),
    optHold: byId('opt-hold'),
    optAuto: byId('opt-auto'),
    optFacing: byId('opt-facing'),
    optSpeak: byId('opt-speak'),
    begin: byId('begin'),
    conversation: byId('talk-conversation'),
    codeWrap: byId('talk-code-wrap'),
    code: byId('talk-code'),
    auto: byId('talk-auto'),
    autoText: byId('talk-auto-text'),
    autoLangs: byId('talk-auto-langs'),
    facing: byId('talk-facing'),
    exportButton: byId('talk-export'),
    menu: byId('talk-menu'),
    menuHold: byId('menu-hold'),
    menuAuto: byId('menu-auto'),
    menuSpeak: byId('menu-speak'),
    copyContinue: byId('copy-continue'),
    newConversation: byId('new-conversation'),
    error: byId('talk-error'),
    history: byId('talk-history'),
    announcer: byId('talk-announcer'),
    historyEmpty: byId('talk-history-empty'),
    sides: Object.fromEntries(SIDES.map((side) => [side, {
      panel: byId(`side-${side}`),
      name: byId(`side-${side}-name`),
      state: byId(`side-${side}-state`),
      latest: byId(`latest-${side}`),
      button: byId(`talk-${side}`),
      text: byId(`talk-${side}-text`),
      lang: byId(`talk-${side}-lang`),
    }])),
  };
}

/** A turn's start as the history and the transcript write it. */
export function formatTime(ms) {
  return new Date(ms).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
}

/** A message in a box that hides while it is empty. */
export function showMessage(element, message) {
  element.textContent = message || '';
  element.hidden = !message;
}

export class TalkView {
  /** `ui`: findElements(document); `languages`: a Languages (./talk-languages.js). */
  constructor({ ui, languages }) {
    this.ui = ui;
    this.languages = languages;
    this.turnItems = new Map(); // turn id -> its <li> in the history
  }

  /** The talk button's loudness meter, 0-1 from the microphone's RMS. */
  setLevel(side, rms) {
    const db = rms > 0 ? 20 * Math.log10(rms) : -Infinity;
    const level = Math.min(1, Math.max(0, (db + 60) / 60));
    const button = side === 'auto' ? this.ui.auto : this.ui.sides[side].button;
    button.style.setProperty('--level', level.toFixed(3)); // CSSOM: allowed by a strict CSP
  }

  /** Everything from the state: `stats` (window.interpTalk), `active` (the turn being spoken, or null). */
  render({ stats, active, conversation }) {
    const { ui } = this;
    const { root } = ui;
    root.dataset.phase = stats.phase;
    root.dataset.facing = stats.facing ? '1' : '0';
    root.dataset.auto = stats.auto ? '1' : '0';
    root.dataset.mode = stats.hold ? 'hold' : 'tap';
    root.dataset.busy = stats.state === 'idle' ? '' : (active.side || '');
    ui.setup.hidden = stats.phase === 'conversation' || stats.phase === 'ended';
    ui.conversation.hidden = !ui.setup.hidden;
    if (ui.conversation.hidden || conversation === null) return;
    const langs = this.languages;
    for (const side of SIDES) {
      const lang = stats.langs[side];
      const parts = ui.sides[side];
      parts.panel.lang = wordsLang(lang);
      setText(parts.name, langs.label(lang));
      parts.name.lang = lang;
      setText(parts.lang, langs.label(lang));
      parts.button.hidden = stats.auto;
      this.renderButton(parts.button, parts.text, this.buttonState(stats, active, side), stats.hold, lang);
      const speaking = active && (active.side === side || (active.side === 'auto' && active.turn.side === side));
      setText(parts.state, speaking ? words(lang).listening : '');
      parts.panel.dataset.state = speaking ? 'speaking' : 'idle';
      this.renderLatest(parts.latest, lang, conversation.latest());
    }
    ui.auto.hidden = !stats.auto;
    this.renderButton(ui.auto, ui.autoText, this.buttonState(stats, active, 'auto'), stats.hold, stats.langs.a);
    setText(ui.autoLangs, `${langs.nativeOf(stats.langs.a)} / ${langs.nativeOf(stats.langs.b)}`);
    ui.facing.setAttribute('aria-pressed', String(stats.facing));
    this.renderHistory(conversation.shown());
  }

  buttonState(stats, active, side) {
    if (!stats.canTalk || stats.phase !== 'conversation') return 'off';
    if (active && active.side === side) return active.turn.state === 'connecting' ? 'connecting' : 'recording';
    if (active) return 'busy';
    return 'idle';
  }

  renderButton(button, textElement, state, hold, lang) {
    const w = words(lang);
    let text = hold ? w.hold : w.tap;
    if (state === 'recording' || state === 'connecting') text = hold ? w.release : w.stop;
    else if (state === 'busy') text = w.wait;
    setText(textElement, text);
    textElement.lang = wordsLang(lang);
    button.dataset.state = state;
    button.setAttribute('aria-pressed', String(state === 'recording' || state === 'connecting'));
    button.disabled = state === 'off' || state === 'busy';
    if (state !== 'recording') button.style.removeProperty('--level');
  }

  /** The newest turn, shown in `lang`: the original if it was spoken in `lang`, else its translation. */
  renderLatest(box, lang, turn) {
    const w = words(lang);
    box.replaceChildren();
    box.dataset.empty = turn ? '0' : '1';
    if (!turn) return;
    const original = turn.lang === lang;
    const text = original ? turn.text : turn.translation;
    const line = document.createElement('p');
    line.className = 'talk-latest-text';
    markLanguage(line, lang);
    line.dataset.kind = original ? 'original' : 'translation';
    line.dataset.state = original ? (turn.final ? 'final' : 'draft')
      : (turn.translationFinal ? 'final' : 'draft');
    if (text) {
      line.textContent = text;
    } else {
      line.dataset.placeholder = '1';
      markLanguage(line, wordsLang(lang));
      line.textContent = turn.state === 'recording' || turn.state === 'connecting'
        ? w.listening : (turn.state === 'failed' ? '—' : w.translating);
    }
    const from = document.createElement('p');
    from.className = 'talk-latest-from';
    from.textContent = turn.lang && !original ? `← ${this.languages.nativeOf(turn.lang)}` : '';
    box.append(line, from);
  }

  renderHistoryItem(turn) {
    const nameOf = (code) => this.languages.nameOf(code);
    let item = this.turnItems.get(turn.id);
    if (!item) {
      item = document.createElement('li');
      item.className = 'talk-turn';
      item.dataset.turn = String(turn.id);
      const meta = document.createElement('p');
      meta.className = 'talk-turn-meta';
      const original = document.createElement('p');
      original.className = 'talk-turn-original';
      const translation = document.createElement('p');
      translation.className = 'talk-turn-translation';
      item.append(meta, original, translation);
      this.turnItems.set(turn.id, item);
    }
    const [meta, original, translation] = item.children;
    item.dataset.side = turn.side || '';
    item.dataset.state = turn.state;
    const direction = turn.lang
      ? `${nameOf(turn.lang)} → ${turn.translationLang ? nameOf(turn.translationLang) : '?'}`
      : 'Detecting the language…';
    setText(meta, `${formatTime(turn.startedAt)} · ${direction}${turn.state === 'failed' ? ' · failed' : ''}`);
    markLanguage(original, turn.lang);
    original.dataset.state = turn.final ? 'final' : 'draft';
    setText(original, turn.text || (isOpen(turn) ? '…' : ''));
    markLanguage(translation, turn.translationLang);
    translation.dataset.state = turn.translationFinal ? 'final' : 'draft';
    setText(translation, turn.translation);
    return item;
  }

  renderHistory(turns) {
    const { history, historyEmpty } = this.ui;
    const follow = history.scrollHeight - history.scrollTop - history.clientHeight < 40;
    const items = turns.map((turn) => this.renderHistoryItem(turn));
    historyEmpty.hidden = items.length > 0;
    const current = [...history.children].filter((child) => child !== historyEmpty);
    if (current.length !== items.length || current.some((child, i) => child !== items[i])) {
      history.replaceChildren(historyEmpty, ...items);
    }
    if (follow) history.scrollTop = history.scrollHeight;
  }
}
