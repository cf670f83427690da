// Keeps the screen on while someone reads live captions (Screen Wake Lock API).
//
// Browsers release the lock whenever the page is hidden, so it is requested again each time
// the page becomes visible. Where the API is missing or refused (older browsers, battery saver,
// an insecure origin) the page works as before; `state` says which case applies.

export class ScreenWakeLock {
  constructor() {
    this.sentinel = null;
    this.wanted = false;
    this.state = 'wakeLock' in navigator ? 'off' : 'unsupported';
    this.onVisibility = () => {
      if (this.wanted && document.visibilityState === 'visible') this.#request();
    };
  }

  /** Keep the screen on from now on (re-acquired whenever the page becomes visible). */
  enable() {
    if (this.wanted || this.state === 'unsupported') return;
    this.wanted = true;
    document.addEventListener('visibilitychange', this.onVisibility);
    this.#request();
  }

  /** Let the screen sleep again. */
  disable() {
    this.wanted = false;
    document.removeEventListener('visibilitychange', this.onVisibility);
    const sentinel = this.sentinel;
    this.sentinel = null;
    if (sentinel && !sentinel.released) {
      sentinel.release().catch((error) => console.warn('wake lock release failed', error));
    }
    if (this.state !== 'unsupported') this.state = 'off';
  }

  async #request() {
    if (this.sentinel && !this.sentinel.released) return;
    if (document.visibilityState !== 'visible') return;
    try {
      const sentinel = await navigator.wakeLock.request('screen');
      if (!this.wanted) {
        await sentinel.release();
        return;
      }
      this.sentinel = sentinel;
      this.state = 'held';
      sentinel.addEventListener('release', () => {
        if (this.sentinel === sentinel) this.state = this.wanted ? 'released' : 'off';
      });
    } catch (error) {
      // NotAllowedError: refused by policy or the browser (battery saver, not visible, ...).
      this.state = 'refused';
      console.info(`screen wake lock not available: ${error.name}`);
    }
  }
}
