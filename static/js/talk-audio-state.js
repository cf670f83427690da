// Traveller mode's spoken translation as state, with no DOM and no clock: how long a chunk
// plays, and the speech held while someone talks (the phone must not hear itself). Driven by
// ./talk-audio.js; tested through real Chromium (e2e/test_talk_state.py).
//
// Rule (./talk-state.js has the conversation's): spoken translation that arrives while someone
// talks is held (at most `maxSeconds`, oldest dropped first; one item alone is kept whatever its
// length) and, when the turn ends, played only if it is that turn's own: an earlier turn's
// speech is dropped once the partner has started to answer.

/** Spoken translation held while someone talks, at most. */
export const HELD_MAX_SECONDS = 30;

/** How long a chunk of 16-bit mono PCM plays at its header's `sample_rate` (16 kHz if none). */
export function chunkSeconds(header, pcm) {
  return pcm.byteLength / 2 / (Number(header.sample_rate) || 16000);
}

/** Spoken translation held while someone talks (the phone must not hear itself). */
export class HeldAudio {
  constructor(maxSeconds) {
    this.maxSeconds = maxSeconds;
    this.items = [];
    this.seconds = 0;
  }

  /** Hold `item` ({header, pcm, turn, seconds}); the number of older items dropped for room. */
  push(item) {
    this.items.push(item);
    this.seconds += item.seconds;
    let dropped = 0;
    while (this.seconds > this.maxSeconds && this.items.length > 1) {
      this.seconds -= this.items.shift().seconds;
      dropped += 1;
    }
    return dropped;
  }

  /** Empty the hold: {play: `turn`'s own items, in order; dropped: how many others}. */
  release(turn) {
    const items = this.items;
    this.items = [];
    this.seconds = 0;
    const play = items.filter((item) => item.turn === turn);
    return { play, dropped: items.length - play.length };
  }
}
