// The listener's spoken translation as words, with no DOM and no clock: what the audio panel
// shows (the Listen/Pause button, its hint, the status line) from plain state, the notice of
// skipped sentences, the saved volume, and when to stop waiting for speech after the session
// ended. Drawn by ./listen-audio.js; tested in real Chromium (e2e/test_listen_state.py).

/** After the session ends, keep listening this long after the last audio... */
export const AUDIO_TAIL_MS = 4000;
/** ...but no longer than this after the end. */
export const AUDIO_TAIL_MAX_MS = 60_000;

/** The volume saved as a percentage (a string, or null), as a gain in [0, 1]; 1 when unset. */
export function savedVolume(saved) {
  const percent = Number.parseInt(saved ?? '', 10);
  return Number.isFinite(percent) ? Math.min(100, Math.max(0, percent)) / 100 : 1;
}

/** The notice of sentences the server skipped to keep pace. */
export function skippedText(count) {
  return count === 1
    ? 'Skipped 1 sentence to catch up with the speaker.'
    : `Skipped ${count} sentences to catch up with the speaker.`;
}

/**
 * The audio panel's status line.
 * @param {{audio: {enabled: boolean, supported: boolean, context: string, muted: boolean,
 *          playing: boolean, rate: number}, state: string, spoken: boolean, language: string}} view
 *   audio: the player's stats; state: the session's; spoken: whether the chosen language is
 *   spoken (a translation: the original is heard from the speaker); language: its name.
 */
export function audioStatusText({ audio, state, spoken, language }) {
  if (state === 'ended' && !audio.enabled) return 'The session has ended.';
  if (!audio.supported) return 'This browser cannot play spoken translation.';
  if (audio.context === 'failed') return 'Spoken translation could not start on this device.';
  if (!spoken) {
    return audio.enabled
      ? 'The original language is not spoken: choose a translation above to hear it.'
      : 'Choose a translation above to hear it spoken.';
  }
  if (!audio.enabled) return '';
  if (audio.context !== 'running') return 'Starting audio…';
  if (audio.muted) return `Muted (${language}).`;
  if (audio.playing) {
    return audio.rate > 1.05
      ? `Speaking ${language}, a little faster to keep up.`
      : `Speaking ${language}.`;
  }
  return `Listening in ${language}: waiting for the next sentence.`;
}

/**
 * Everything the audio panel shows. Takes what audioStatusText takes, and `connection` (the
 * socket's) and `wanted` (spoken translation was on when the listener last chose).
 */
export function audioPanelView({ audio, state, connection, spoken, language, wanted }) {
  const on = audio.enabled;
  const ended = state === 'ended' && connection === 'closed';
  let hint = wanted ? 'Tap to resume spoken translation' : 'Turn on spoken translation';
  if (on) hint = 'Spoken translation is on';
  else if (ended) hint = 'Spoken translation has finished';
  return {
    audio: on ? (audio.playing ? 'playing' : 'on') : 'off',
    ended,
    on,
    disabled: ended || !audio.supported || (!on && !spoken),
    ariaLabel: on ? 'Pause: turn off spoken translation' : 'Listen: turn on spoken translation',
    label: on ? 'Pause' : 'Listen',
    hint,
    muted: audio.muted,
    status: audioStatusText({ audio, state, spoken, language }),
  };
}

/**
 * After the session ended (at `endedAt`, ms), whether to stop waiting for speech: audio is off,
 * or none has come for AUDIO_TAIL_MS (since `lastAudioAt`) and nothing plays, or the wait has
 * lasted AUDIO_TAIL_MAX_MS.
 */
export function tailOver({ enabled, playing, now, lastAudioAt, endedAt }) {
  const quiet = now - lastAudioAt > AUDIO_TAIL_MS;
  return !enabled || (quiet && !playing) || now - endedAt > AUDIO_TAIL_MAX_MS;
}
