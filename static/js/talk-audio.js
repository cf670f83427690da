// Traveller mode's spoken translation (templates/talk.html): the player (./audio-player.js)
// that speaks each turn's translation, and what is held back while someone talks
// (./talk-audio-state.js: the phone must not hear itself). Each chunk is counted for its
// turn in the conversation (./talk-state.js). Wired by ./talk.js.
//
// Phones only let a page make sound from a tap, so `wake()` is called inside one: Start, a
// talk button, or turning speaking aloud on.

import { AudioPlayer, audioSupported } from './audio-player.js';
import { HELD_MAX_SECONDS, HeldAudio, chunkSeconds } from './talk-audio-state.js';

export class SpokenTranslation {
  /**
   * @param {{stats: object, conversation: () => object|null, talking: () => boolean}} options
   *   stats: the page's counters (`speak` is read; `unmatchedAudio` and `audioNotPlayed` are
   *   written); conversation: the Conversation (./talk-state.js) once there is one; talking:
   *   whether a turn is being spoken on this page now.
   */
  constructor({ stats, conversation, talking }) {
    this.pageStats = stats;
    this.conversation = conversation;
    this.talking = talking;
    this.stats = {}; // the player's counters (window.interpAudio)
    this.player = new AudioPlayer({ stats: this.stats });
    this.stats.supported = audioSupported();
    this.held = new HeldAudio(HELD_MAX_SECONDS);
  }

  /** Turn the sound on, or wake it; call inside a tap (phones block audio started otherwise). */
  wake() {
    if (!this.pageStats.speak || !this.stats.supported) return;
    try {
      if (!this.stats.enabled) {
        this.player.start().catch((error) => console.warn('spoken translation could not start', error));
      } else {
        this.player.wake();
      }
    } catch (error) {
      console.warn('spoken translation could not start', error);
    }
  }

  /** A chunk of spoken translation from a listener socket: played, held or not played. */
  receive(header, pcm) {
    const page = this.pageStats;
    const seconds = chunkSeconds(header, pcm);
    const turn = this.conversation().audio(header.segment, seconds, performance.now());
    if (turn === null) page.unmatchedAudio += 1;
    if (!page.speak) {
      page.audioNotPlayed += 1;
      return;
    }
    if (this.talking()) {
      // Never into an open microphone (the phone would translate its own voice): held until the
      // turn ends, then played if it is that turn's own translation (a sentence finished while
      // the speaker went on), dropped if it is an earlier turn's (the partner has moved on).
      page.audioNotPlayed += this.held.push({ header, pcm, turn, seconds });
      return;
    }
    this.player.push(header, pcm);
  }

  /** Play what was held while `turn` was being spoken: its own translation only. */
  release(turn) {
    const { play, dropped } = this.held.release(turn);
    this.pageStats.audioNotPlayed += dropped;
    for (const item of play) {
      if (this.pageStats.speak) this.player.push(item.header, item.pcm);
      else this.pageStats.audioNotPlayed += 1;
    }
  }

  /** The partner starts talking: stop speaking over them. */
  clear() {
    this.player.clear();
  }

  /** Speaking aloud was turned on (inside the change: a user gesture) or off. */
  speakChanged(on) {
    if (on) this.wake();
    else this.player.stop();
  }

  /** Back on screen: a phone may have suspended the sound. */
  resume() {
    this.player.wake();
  }
}
