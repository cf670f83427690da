// Traveller mode (templates/talk.html, `/talk`): two people without a common language share
// one phone. Each taps their own button, speaks, and taps again; the phone shows what was said
// in both languages and speaks the translation.
//
// It is the session pipeline, not a second one: the setup screen (./talk-setup.js) creates a
// session offering the two languages, or continues one (./talk-session.js: its HTTP calls and
// the token kept for a reload); each turn is one presenter stream in the speaker's language or
// "auto" (./talk-turns.js); two listener sockets, one per language, bring every caption, both
// translations and the spoken translation (./talk-listeners.js), which ./talk-audio.js plays,
// holding it back while someone talks. The options are ./talk-options.js and the More menu
// ./talk-menu.js.
//
// This module wires those parts. Which turn each caption belongs to, and what a turn says, is
// ./talk-state.js (pure state, with its rules); the page's counters, options and words
// ./talk-page-state.js (pure); the drawing ./talk-view.js, the server's languages
// ./talk-languages.js, the buttons' words ./talk-words.js and their gestures ./talk-button.js.
// Screen readers hear each turn's final translation.
//
// `window.interpTalk` reports the conversation for tests and debugging: {phase, code, langs,
// state, turns: [{id, side, lang, text, translation, translationLang, state, audioChunks,
// audioSeconds, segments, timing}], errors}; `window.interpAudio` the player's counters.

import { SpokenTranslation } from './talk-audio.js';
import { wireTalkButton } from './talk-button.js';
import { Languages } from './talk-languages.js';
import { ConversationListeners } from './talk-listeners.js';
import { wireMenu } from './talk-menu.js';
import { TalkOptions } from './talk-options.js';
import {
  HOLD_MIN_MS, newStats, speakingState, tokenFromFragment,
} from './talk-page-state.js';
import { TalkSetup } from './talk-setup.js';
import { Conversation } from './talk-state.js';
import { Turns } from './talk-turns.js';
import {
  SIDES, TalkView, findElements, showMessage,
} from './talk-view.js';
import { ScreenWakeLock } from './wake-lock.js';

const config = JSON.parse(document.getElementById('talk-config').textContent);
const languages = new Languages(config);
const ui = findElements(document);
const view = new TalkView({ ui, languages });

const stats = newStats();
window.interpTalk = stats;

let conversation = null; // a Conversation (./talk-state.js) once the languages are known
const currentConversation = () => conversation;

const audio = new SpokenTranslation({
  stats, conversation: currentConversation, talking: () => turns.active !== null,
});
window.interpAudio = audio.stats;
const wakeLock = new ScreenWakeLock();

function showError(message) {
  if (message) stats.errors.push(message);
  showMessage(ui.error, message);
}

function render() {
  stats.state = speakingState(turns.active);
  view.render({ stats, active: turns.active, conversation });
}

/** A caption from a listener socket, or from the turn's own stream (`fromTurn`). */
function onCaption(event, fromTurn = null) {
  const change = conversation.caption(event, { fromTurn, now: performance.now(), wall: Date.now() });
  if (change === null) return;
  const { turn, translated } = change;
  // Screen readers hear each new turn's translation once (not every draft, not the backlog).
  if (translated && turn === stats.turns[stats.turns.length - 1] && stats.phase === 'conversation') {
    ui.announcer.textContent = `${languages.nameOf(turn.translationLang)}: ${turn.translation}`;
  }
  render();
}

function endedElsewhere() {
  if (stats.phase !== 'conversation') return;
  stats.phase = 'ended';
  stats.canTalk = false;
  showError('This conversation has ended. Start a new one from More.');
  render();
}

const listeners = new ConversationListeners({
  stats,
  onCaption,
  onAudio: (header, pcm) => audio.receive(header, pcm),
  onEnded: endedElsewhere,
  onError: showError,
  render,
});
const setup = new TalkSetup({
  ui, config, languages, stats, wakeAudio: () => audio.wake(), onBegin: beginConversation,
});
const turns = new Turns({
  stats,
  token: () => setup.token,
  conversation: currentConversation,
  audio,
  onCaption,
  onError: showError,
  showLevel: (side, rms) => view.setLevel(side, rms),
  render,
});
const options = new TalkOptions({
  ui,
  stats,
  onInput: () => turns.end(),
  onSpeak: (on) => {
    listeners.setAudio(on);
    audio.speakChanged(on); // a change of a checkbox is a user gesture
  },
  render,
});
wireMenu({
  ui, stats, languages, conversation: currentConversation, token: () => setup.token, turns, listeners,
});

/** The session is known (created, continued or followed): the conversation screen. */
function beginConversation() {
  conversation = new Conversation(stats.langs);
  stats.turns = conversation.turns;
  stats.canTalk = Boolean(setup.token);
  stats.phase = 'conversation';
  ui.code.textContent = stats.code;
  ui.codeWrap.hidden = false;
  listeners.open();
  wakeLock.enable();
  if (!setup.token) {
    showError('You are following this conversation. To talk in it, open the link from '
      + '“Copy link to continue on another phone” on the phone that started it.');
  }
  render();
  ui.sides.a.button.focus({ preventScroll: true });
}

// ---------------------------------------------------------------- the talk buttons

function wireButton(button, side) {
  wireTalkButton(button, side, {
    hold: () => stats.hold,
    busy: () => turns.busy,
    start: () => turns.start(side),
    end: () => turns.end(),
    slip: () => {
      turns.cancel();
      showError('Keep the button pressed while you speak, then let go.');
    },
  }, HOLD_MIN_MS);
}

for (const side of SIDES) wireButton(ui.sides[side].button, side);
wireButton(ui.auto, 'auto');

// ---------------------------------------------------------------- the page

document.addEventListener('visibilitychange', () => {
  if (document.visibilityState === 'visible') audio.resume();
});
window.addEventListener('pagehide', () => {
  turns.abort('page closed');
  listeners.close();
  wakeLock.disable();
});
window.addEventListener('hashchange', () => {
  // A continue link pasted into this tab only changes the fragment: load it properly.
  if (tokenFromFragment(window.location.hash) && !turns.active) window.location.reload();
});
window.addEventListener('beforeunload', (event) => {
  if (turns.active) event.preventDefault();
});

options.restore();
setup.init();
render();
