// The microphone's health while a stream is open, pure (no DOM, no clock, no devices): whether
// it sends only digital silence (muted at its source: a hardware switch, the system's mute, a
// track the browser muted), whether it was lost (unplugged, or its permission withdrawn) and
// what took its place, and the notice the console shows for each. ./present-stream.js feeds it
// every level reading and every loss; ./present-status.js draws the notice; tested in
// e2e/test_present_state.py.
//
// A microphone is never quite silent: even a quiet room leaves its noise in the lowest bits.
// Frames whose every sample rounds to zero at 16 bits come from a microphone that sends
// nothing, so a few seconds of them earn a notice, as do a few seconds with no frame at all
// (the browser suspended the audio engine and would not start it again); any sound clears it.

/** How long a microphone sends only digital silence before the console says so. */
export const SILENT_NOTICE_MS = 3000;

/** Whether a frame whose largest magnitude is `peak` (1.0 = full scale) holds nothing at all:
 * every sample rounds to zero in the 16-bit PCM the server is sent. */
export function isDigitalSilence(peak) {
  return peak * 32768 < 0.5;
}

/** A microphone just opened: heard nothing yet, lost nothing. */
export function newMicHealth() {
  return { silentSince: null, lost: false, replacedBy: null };
}

/** `health` after a frame whose peak is `peak`, read at `now` (ms). */
export function heardLevel(health, peak, now) {
  const silent = isDigitalSilence(peak);
  if (silent === (health.silentSince !== null)) return health;
  return { ...health, silentSince: silent ? now : null };
}

/** `health` when no frame has come since `lastFrameAt` (ms): silent since then, unless it
 * already was. */
export function missedFrames(health, lastFrameAt) {
  if (health.silentSince !== null && health.silentSince <= lastFrameAt) return health;
  return { ...health, silentSince: lastFrameAt };
}

/** `health` once the microphone is gone: no other has taken its place yet. */
export function lostMicrophone(health) {
  return { ...health, lost: true, silentSince: null };
}

/** `health` once another microphone took the lost one's place (`label`: its name, "" when the
 * browser hides it). */
export function replacedMicrophone(health, label) {
  return { ...health, lost: false, silentSince: null, replacedBy: label };
}

/** The notice for `health` at `now` (ms), or null when all is well. */
export function micNotice(health, now) {
  if (health.lost) {
    return 'The microphone was disconnected. Plug it in or choose another: the stream goes on '
      + 'as soon as one is back.';
  }
  if (health.silentSince !== null && now - health.silentSince >= SILENT_NOTICE_MS) {
    return 'No sound from the microphone. Is it muted?';
  }
  if (health.replacedBy !== null) {
    const name = health.replacedBy ? `“${health.replacedBy}”` : 'the default microphone';
    return `The microphone was disconnected; now using ${name}.`;
  }
  return null;
}
