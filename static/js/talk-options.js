// Traveller mode's options (templates/talk.html: on the setup screen and in the More menu):
// hold to talk instead of tap, one button with automatic detection, face to face (the
// partner's half upside down) and speaking the translation aloud. Each is kept on this device
// (./preferences.js; how: ./talk-page-state.js) and mirrored in every checkbox that shows it.
// Wired by ./talk.js.

import { loadPreference, savePreference } from './preferences.js';
import { OPTIONS, optionFromPreference, preferenceOf } from './talk-page-state.js';

export class TalkOptions {
  /**
   * @param {{ui: object, stats: object, onInput: () => void, onSpeak: (on: boolean) => void,
   *          render: () => void}} options
   *   ui: the page's elements (./talk-view.js); stats: the page's counters (each option is
   *   written there); onInput: a checkbox is about to change an option (a turn being spoken
   *   ends first); onSpeak: speaking aloud was turned on or off by hand.
   */
  constructor({ ui, stats, onInput, onSpeak, render }) {
    this.stats = stats;
    this.onSpeak = onSpeak;
    this.render = render;
    this.inputs = {
      hold: [ui.optHold, ui.menuHold],
      auto: [ui.optAuto, ui.menuAuto],
      facing: [ui.optFacing],
      speak: [ui.optSpeak, ui.menuSpeak],
    };
    for (const name of OPTIONS) {
      for (const input of this.inputs[name]) {
        input.addEventListener('change', () => {
          onInput();
          this.set(name, input.checked);
        });
      }
    }
    ui.facing.addEventListener('click', () => this.set('facing', !stats.facing));
  }

  /** Set an option, kept on this device unless `save` is false (it was read from there). */
  set(name, value, save = true) {
    const { stats } = this;
    stats[name] = Boolean(value);
    for (const input of this.inputs[name]) input.checked = stats[name];
    if (save) savePreference(`talk.${name}`, preferenceOf(stats[name]));
    if (name === 'speak' && save) this.onSpeak(stats.speak);
    this.render();
  }

  /** The options this device kept. */
  restore() {
    for (const name of OPTIONS) {
      this.set(name, optionFromPreference(name, loadPreference(`talk.${name}`)), false);
    }
  }
}
