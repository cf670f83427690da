// Display preferences remembered on this device (localStorage), shared by every page.
//
// `theme` and `font` are also applied before the first paint by theme-boot.js (a classic script
// in <head>, so a dark or high-contrast reader never sees a white flash); keep the keys in step.

const PREFIX = 'interp.';

/** The saved value of `name`, or null (nothing saved, or storage blocked by the browser). */
export function loadPreference(name) {
  try {
    return window.localStorage.getItem(PREFIX + name);
  } catch (error) {
    console.warn('localStorage unavailable; using defaults', error);
    return null;
  }
}

/** Remember `value` for `name` on this device (silently session-only where storage is blocked). */
export function savePreference(name, value) {
  try {
    window.localStorage.setItem(PREFIX + name, value);
  } catch (error) {
    console.warn('localStorage unavailable; the preference lasts until the page closes', error);
  }
}
