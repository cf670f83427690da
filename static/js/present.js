// The presenter console (templates/present.html), wired: microphone picker and transport
// (./present-settings.js), Start and Stop (./present-stream.js), the status line, level meter
// and error box (./present-status.js; what each state allows and says: ./present-state.js),
// the presenter's own live captions (./captions.js), the editor panel (./edit-panel.js: fix a
// final, the term list), the share panel (./present-share.js: join code, link, QR code,
// listeners by language, transcript downloads, a new editor link), the venue screen's and the
// overlay's links with a preview (./console-displays.js), captions pushed to YouTube or Zoom
// (./console-push.js), a panel's speakers and the questions from the floor
// (./console-panel.js), and the session's facts and "End session" (./present-session.js).
// The presenter token: ./present-token.js.
//
// `window.interpStats` exposes counters for tests and for debugging in the console.

import { CaptionView } from './captions.js';
import { mountEditPanel } from './edit-panel.js';
import { DisplayLinks } from './console-displays.js';
import { QuestionQueue, SpeakersPanel, showShedding } from './console-panel.js';
import { PushPanel } from './console-push.js';
import { copyText } from './copy-text.js';
import { SessionControls, showRole } from './present-session.js';
import { AudioSettings } from './present-settings.js';
import { SharePanel } from './present-share.js';
import { newStats, warnsBeforeLeaving } from './present-state.js';
import { ConsoleStatus } from './present-status.js';
import { Streaming } from './present-stream.js';
import { readPresenterToken } from './present-token.js';

const root = document.getElementById('console');
const code = root.dataset.code;
const language = root.dataset.language;
const isPrivate = root.dataset.private === '1';

const ui = {
  micSelect: document.getElementById('mic-select'),
  micHint: document.getElementById('mic-hint'),
  transport: document.getElementById('transport-select'),
  start: document.getElementById('start-button'),
  stop: document.getElementById('stop-button'),
  captions: document.getElementById('captions'),
  jumpLive: document.getElementById('jump-live'),
  title: document.getElementById('session-title'),
  endSession: document.getElementById('end-session'),
  editDetails: document.getElementById('edit-details'),
};

const token = readPresenterToken(code);
const stats = newStats();
window.interpStats = stats;

// What every speaker says, in the language they speak: a panel's speakers may speak others
// than the session's.
const captionView = new CaptionView(ui.captions, {
  source: true,
  jumpButton: ui.jumpLive,
});
const status = new ConsoleStatus({
  stats,
  hasToken: Boolean(token),
  controls: { start: ui.start, stop: ui.stop, end: ui.endSession, transport: ui.transport },
  view: {
    status: document.getElementById('status'),
    statusText: document.getElementById('status-text'),
    error: document.getElementById('error'),
    levelBar: document.getElementById('level-bar'),
    micNotice: document.getElementById('mic-notice'),
  },
});
const showError = (message) => status.showError(message);
const settings = new AudioSettings({
  stats, micSelect: ui.micSelect, micHint: ui.micHint, transportSelect: ui.transport,
});
const share = new SharePanel({ code, language, token, isPrivate, stats, onError: showError });
const { languageNames } = share;

// The editor panel follows the session over a listener socket of its own, which counts in
// the audience: it connects only once the presenter opens it.
window.interpEdit = mountEditPanel(document.querySelector('.edit-panel'), {
  code,
  language,
  token,
  start: false,
});
ui.editDetails.addEventListener('toggle', () => {
  if (ui.editDetails.open) window.interpEdit.start();
});

const displays = new DisplayLinks({ code, presenterToken: token, copy: copyText });
const push = new PushPanel({ code, presenterToken: token, languageNames });
const speakers = new SpeakersPanel({
  code, token, languageNames, copy: copyText, onError: showError,
});
const questions = new QuestionQueue({ code, token, languageNames, onError: showError });
window.interpConsole = { displays, push, speakers, questions };

/** Each event the server sends the presenter, to the part of the console that shows it. */
function onServerEvent(event) {
  switch (event.type) {
    case 'caption':
      if (event.state === 'final') stats.captions.final += 1;
      else stats.captions.draft += 1;
      captionView.apply(event);
      break;
    case 'lag':
      stats.lagSeconds = Number(event.seconds) || 0;
      status.render();
      break;
    case 'state':
      if (typeof event.listeners === 'number') share.setAudience(event.listeners, event.by_language);
      if (event.state) stats.session = event.state;
      status.render();
      break;
    case 'error':
      showError(event.message || 'The server reported an error.');
      break;
    case 'question':
      questions.onEvent(event);
      break;
    case 'shedding':
      showShedding(event);
      break;
    default:
      break; // events this console does not show (translations to other languages, audio)
  }
}

const streaming = new Streaming({
  code, token, stats, settings, status, onEvent: onServerEvent,
});
const session = new SessionControls({
  code,
  token,
  isPrivate,
  stats,
  status,
  streaming,
  share,
  speakers,
  title: ui.title,
  endButton: ui.endSession,
});

ui.start.addEventListener('click', () => streaming.start());
ui.stop.addEventListener('click', () => streaming.stop());
ui.micSelect.addEventListener('change', () => streaming.switchMicrophone());
window.addEventListener('beforeunload', (event) => {
  if (warnsBeforeLeaving(stats.state)) event.preventDefault();
});
window.addEventListener('pagehide', () => streaming.abort('page closed'));

showRole({ code, token, root, questions, onError: showError });
share.sharePrivately(displays);
settings.restoreTransport();
status.setState('idle');
share.renderTranscriptLinks();
session.follow();
if (!token) {
  showError(
    'This console needs the presenter link you got when you created the session '
      + '(the address ending in #token=…). Open that link in this browser tab.',
  );
}
settings.refreshMicrophones();
