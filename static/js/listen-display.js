// The listener page's display choices (templates/listen.html, the toolbar): the caption
// language, the Display menu (text size, theme, the bilingual view), and the menus' behaviour
// (one open at a time; a tap outside or Escape closes them). Theme, text size, bilingual view
// and language are remembered on this device (./preferences.js); the language chosen is held
// by a LanguageChoice (./listen-state.js).

import { loadPreference, savePreference } from './preferences.js';

const FALLBACK_CHARS = 42;

/** The languages a <select> offers, as [{code, name}]. */
export function offeredIn(select) {
  return [...select.options].map((option) => ({
    code: option.value, name: option.textContent.trim(),
  }));
}

/** How many characters of caption text fit one line of `box` (at most 42). */
export function fittingChars(box) {
  const sample = 'the quick brown fox jumps over the lazy dog';
  const probe = document.createElement('span');
  probe.className = 'caption-line';
  probe.textContent = sample;
  probe.style.position = 'absolute'; // CSSOM: allowed by the strict CSP
  probe.style.visibility = 'hidden';
  probe.style.whiteSpace = 'nowrap';
  box.append(probe);
  const perChar = probe.getBoundingClientRect().width / sample.length;
  probe.remove();
  const style = window.getComputedStyle(box);
  const width = box.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
  if (!(perChar > 0) || !(width > 0)) return FALLBACK_CHARS;
  return Math.max(16, Math.min(FALLBACK_CHARS, Math.floor(width / perChar)));
}

function choose(inputs, value) {
  const match = inputs.find((input) => input.value === value) || inputs[0];
  match.checked = true;
  return match.value;
}

/** The toolbar's elements in templates/listen.html. */
export function displayElements(doc) {
  return {
    language: doc.getElementById('language'),
    bilingualOption: doc.getElementById('bilingual-option'),
    bilingual: doc.getElementById('bilingual'),
    menus: [doc.getElementById('display-menu'), doc.getElementById('transcript-menu')],
    fontChoices: [...doc.querySelectorAll('input[name="font"]')],
    themeChoices: [...doc.querySelectorAll('input[name="theme"]')],
  };
}

export class ListenerDisplay {
  /**
   * @param {{elements: object, languages: import('./listen-state.js').LanguageChoice,
   *          captions: import('./listen-captions.js').ListenerCaptions,
   *          onLanguage: (code: string) => void}} options
   *   elements: displayElements(document); onLanguage: the listener picked another language.
   */
  constructor({ elements, languages, captions, onLanguage }) {
    this.el = elements;
    this.languages = languages;
    this.captions = captions;
    this.onLanguage = onLanguage;
  }

  /** Whether the original is shown above a translation. */
  get bilingual() {
    return this.el.bilingual.checked;
  }

  /** Restore the saved choices and follow the controls. */
  init() {
    const el = this.el;
    const root = document.documentElement;
    choose(el.themeChoices, root.dataset.theme || 'auto');
    choose(el.fontChoices, root.dataset.font || 'm');
    for (const input of [...el.themeChoices, ...el.fontChoices]) {
      input.addEventListener('change', () => {
        if (input.checked) this.#set(input.name, input.value);
      });
    }
    el.bilingual.checked = loadPreference('listen.bilingual') === '1';
    el.bilingual.addEventListener('change', () => {
      this.captions.show(this.languages.lang, el.bilingual.checked); // keeps a reader who follows live there
      savePreference('listen.bilingual', el.bilingual.checked ? '1' : '0');
    });
    el.language.addEventListener('change', () => this.onLanguage(el.language.value));
    this.#initMenus();
  }

  /** Offer `offered` ([{code, name}], a private session's once unlocked). */
  offer(offered) {
    this.el.language.replaceChildren(...offered.map(({ code, name }) => {
      const option = new Option(name, code);
      option.lang = code;
      return option;
    }));
    this.el.language.disabled = offered.length < 2;
  }

  /** Show the chosen language (and the bilingual option, for a translation). */
  renderLanguage() {
    this.el.language.value = this.languages.lang;
    this.el.bilingualOption.hidden = !this.languages.translated;
  }

  #set(name, value) {
    if (value === 'auto' || (name === 'font' && value === 'm')) {
      delete document.documentElement.dataset[name];
    } else {
      document.documentElement.dataset[name] = value;
    }
    savePreference(name, value);
    if (name === 'font') this.captions.relayout(); // a new text size changes what fits a line
    else if (this.captions.following) this.captions.jumpToLive();
  }

  #initMenus() {
    const menus = this.el.menus;
    for (const menu of menus) {
      menu.addEventListener('toggle', () => {
        if (!menu.open) return;
        for (const other of menus) if (other !== menu) other.open = false;
      });
    }
    document.addEventListener('click', (event) => {
      for (const menu of menus) if (menu.open && !menu.contains(event.target)) menu.open = false;
    });
    document.addEventListener('keydown', (event) => {
      if (event.key !== 'Escape') return;
      for (const menu of menus) {
        if (!menu.open) continue;
        menu.open = false;
        menu.querySelector('summary').focus();
      }
    });
  }
}
