// Traveller mode's More menu (templates/talk.html): save the conversation as text, copy the
// link that continues it on another phone (./copy-text.js), and end it to start a new one. The
// menu closes on a tap outside it. Wired by ./talk.js.

import { copyText } from './copy-text.js';
import { endConversation } from './talk-session.js';
import {
  continueLink, transcriptDate, transcriptFileName,
} from './talk-page-state.js';
import { formatTime } from './talk-view.js';

/**
 * Wire the menu. `ui`: the page's elements (./talk-view.js); `stats`: the page's counters
 * (`code` is read, `lastExport` written); `languages`: a Languages (./talk-languages.js);
 * `conversation()`: the Conversation (./talk-state.js); `token()`: the presenter token;
 * `turns`: the Turns (./talk-turns.js); `listeners`: the ConversationListeners
 * (./talk-listeners.js).
 */
export function wireMenu({ ui, stats, languages, conversation, token, turns, listeners }) {
  /** The conversation as a text file, downloaded. */
  function exportTranscript() {
    const now = new Date().toISOString();
    const text = conversation().transcript({
      code: stats.code,
      nameOf: (code) => languages.nameOf(code),
      timeOf: formatTime,
      date: transcriptDate(now),
    });
    stats.lastExport = text;
    const url = URL.createObjectURL(new Blob([text], { type: 'text/plain;charset=utf-8' }));
    const link = document.createElement('a');
    link.href = url;
    link.download = transcriptFileName(stats.code, now);
    document.body.append(link);
    link.click();
    link.remove();
    window.setTimeout(() => URL.revokeObjectURL(url), 10_000);
  }

  function copyContinueLink() {
    const presenterToken = token();
    if (!stats.code || !presenterToken) return;
    copyText(continueLink(window.location.origin, stats.code, presenterToken), ui.copyContinue);
  }

  /** End the conversation for everyone (once the turn being spoken is finished), start over. */
  async function newConversation() {
    if (!window.confirm('End this conversation and start a new one? Save the text first if you want it.')) return;
    turns.end();
    await turns.ended();
    const presenterToken = token();
    if (presenterToken && stats.code) await endConversation(stats.code, presenterToken);
    listeners.close();
    window.location.assign('/talk');
  }

  ui.exportButton.addEventListener('click', exportTranscript);
  ui.copyContinue.addEventListener('click', copyContinueLink);
  ui.newConversation.addEventListener('click', newConversation);
  document.addEventListener('click', (event) => {
    if (ui.menu.open && !ui.menu.contains(event.target)) ui.menu.open = false;
  });
}
