// Traveller mode's turns as they are spoken: each is one presenter stream
// (./presenter-socket.js) in the speaker's language, or "auto" (the server detects which of the
// two is spoken), fed by the microphone (./mic-capture.js). At most one turn is spoken at a
// time (`active`), and the next stream only opens once the previous one has ended, when all its
// segments are known (./talk-state.js, "Turns and segments"). Spoken translation held while a
// turn is spoken is released when it ends (./talk-audio.js). A microphone lost mid-turn gives
// way to the default one. Wired by ./talk.js.

import { MicCapture, TARGET_RATE } from './mic-capture.js';
import { PresenterSocket } from './presenter-socket.js';
import { PENDING_FRAMES, describeError, serverProblem } from './talk-page-state.js';

export class Turns {
  /**
   * @param {{stats: object, token: () => string|null, conversation: () => object,
   *          audio: object, onCaption: (event: object, turn: object) => void,
   *          onError: (message: string) => void, showLevel: (side: string, rms: number) => void,
   *          render: () => void}} options
   *   stats: the page's counters (`phase`, `canTalk`, `code` and `langs` are read); token: the
   *   presenter token; conversation: the Conversation (./talk-state.js); audio: the
   *   SpokenTranslation (./talk-audio.js); onCaption: a caption the turn's own stream brought.
   */
  constructor({ stats, token, conversation, audio, onCaption, onError, showLevel, render }) {
    this.stats = stats;
    this.token = token;
    this.conversation = conversation;
    this.audio = audio;
    this.onCaption = onCaption;
    this.onError = onError;
    this.showLevel = showLevel;
    this.render = render;
    this.active = null; // the turn being spoken: {turn, side, socket, capture, micStarted, connected}
    this.lastStop = Promise.resolve(); // settles once the latest turn's stream has ended
  }

  /** The side of the turn being spoken ('a', 'b' or 'auto'), or null. */
  get busy() {
    return this.active ? this.active.side : null;
  }

  /** Settles once the latest turn's stream has ended. */
  ended() {
    return this.lastStop;
  }

  /** Start a turn (inside the tap or press): `side` 'a', 'b' or 'auto'. */
  start(side) {
    const { stats } = this;
    if (this.active !== null || stats.phase !== 'conversation' || !stats.canTalk) return;
    this.onError('');
    this.audio.wake();
    this.audio.clear(); // the partner starts talking: stop speaking over them
    const conversation = this.conversation();
    const auto = side === 'auto';
    const lang = auto ? null : stats.langs[side];
    const turn = conversation.newTurn({
      side: auto ? null : side, lang, live: true, auto, state: 'connecting', startedAt: Date.now(),
    });
    const current = { turn, side, socket: null, capture: null, failed: false };
    current.socket = new PresenterSocket({
      code: stats.code,
      token: this.token(),
      language: auto ? 'auto' : lang,
      finals: 'fast', // someone is waiting for each turn's final: the quicker decode
      sampleRate: TARGET_RATE,
      pendingLimit: PENDING_FRAMES,
      onEvent: (event) => this.onPresenterEvent(current, event),
      onClose: (error) => {
        if (error) this.fail(current, error);
      },
    });
    current.capture = new MicCapture({
      onFrame: (pcm) => current.socket.send(pcm),
      onLevel: ({ rms }) => this.showLevel(current.side, rms),
      onLost: () => this.onMicrophoneLost(current),
    });
    current.capture.prepare(); // inside the tap: lets its AudioContext run
    this.active = current;
    current.micStarted = current.capture.start('').then(() => null, (error) => error);
    const previous = this.lastStop;
    current.connected = (async () => {
      await previous;
      if (current.failed) return;
      // The previous stream has ended, so every segment it made is known by now.
      conversation.open(turn);
      const [micError] = await Promise.all([current.micStarted, current.socket.connect()]);
      if (micError) throw micError;
    })();
    current.connected.then(() => {
      if (turn.state === 'connecting') turn.state = 'recording';
      this.render();
    }, (error) => this.fail(current, error));
    this.render();
  }

  /** Finish the turn being spoken: the rest is recognised, translated and spoken. */
  end() {
    const current = this.active;
    if (current === null) return;
    this.active = null;
    const { turn } = current;
    this.audio.release(turn);
    if (turn.state === 'connecting' || turn.state === 'recording') turn.state = 'finishing';
    turn.timing.stoppedAt = performance.now();
    this.showLevel(current.side, 0);
    const done = (async () => {
      await current.micStarted;
      await current.capture.stop(); // hands the last partial frame to the socket first
      await current.connected;
      if (current.failed) return;
      await current.socket.stop(); // resolves after the server's "ended"
    })();
    this.lastStop = done.then(() => {}, () => {});
    done.then(() => {
      if (turn.state === 'finishing') turn.state = 'done';
      this.render();
    }, (error) => this.fail(current, error));
    this.render();
  }

  /** A press too short to be a turn (hold mode): forget it. */
  cancel() {
    const current = this.active;
    if (current === null) return;
    this.active = null;
    current.failed = true;
    this.audio.release(current.turn);
    current.micStarted.then(() => current.capture.close());
    current.socket.abort('cancelled');
    this.conversation().cancel(current.turn);
    this.render();
  }

  /** The page goes away: drop the turn being spoken. */
  abort(reason) {
    if (this.active) this.active.socket.abort(reason);
  }

  fail(current, error) {
    if (current.failed) return;
    current.failed = true;
    if (this.active === current) {
      this.active = null;
      this.audio.release(current.turn);
    }
    if (current.micStarted) current.micStarted.then(() => current.capture.close());
    else current.capture.close();
    current.socket.abort('turn failed');
    current.turn.state = 'failed';
    current.turn.error = describeError(error);
    this.onError(current.turn.error);
    this.render();
  }

  /**
   * The turn's microphone went (a headset unplugged or out of range): the phone's default one
   * takes over and the turn goes on. Where none can be opened, the turn ends with what was said
   * before, and the page says why.
   */
  async onMicrophoneLost(current) {
    try {
      await current.capture.useDevice('');
    } catch (error) {
      if (this.active !== current) return; // the turn ended meanwhile
      this.end();
      this.onError(`The microphone was disconnected. ${describeError(error)}`);
    }
  }

  onPresenterEvent(current, event) {
    if (event.type === 'caption') this.onCaption(event, current.turn);
    else if (event.type === 'error') this.onError(serverProblem(event));
  }
}
