// Telling a connection that died without closing (the network path went: a laptop or a phone
// roamed to another access point). The browser then reports nothing for minutes, so a socket
// pings the server every `periodMs` (the server answers each ping with a pong,
// docs/protocol.md), and a ping that no message from the server has followed for
// `unansweredMs` gives the connection up. Counted from the ping, not from the last message: a
// hidden tab's timers may run once a minute, and a session may say nothing for as long as a
// coffee break. Used by ./presenter-socket.js and ./listener-socket.js.

export class Heartbeat {
  /**
   * @param {{periodMs: number, unansweredMs: number, ping: () => boolean,
   *          lost: (reason: string) => void}} options
   *   ping: send a ping now, or return false to skip this beat (nothing to check then: the
   *   socket is not ready, or the server reads no pings at the moment); lost: the connection
   *   is given up (called once; the heartbeat has stopped).
   */
  constructor({ periodMs, unansweredMs, ping, lost }) {
    this.periodMs = periodMs;
    this.unansweredMs = unansweredMs;
    this.ping = ping;
    this.lost = lost;
    this.pingSentAt = null; // performance.now() of the ping no message has followed yet
    this.timer = null;
  }

  /** Beat from now on (again from scratch if it was beating). */
  start() {
    this.stop();
    this.timer = window.setInterval(() => this.#beat(), this.periodMs);
  }

  /** A message came from the server: it is there. */
  heard() {
    this.pingSentAt = null;
  }

  stop() {
    window.clearInterval(this.timer);
    this.timer = null;
    this.pingSentAt = null;
  }

  #beat() {
    if (this.pingSentAt === null) {
      if (this.ping()) this.pingSentAt = performance.now();
      return;
    }
    if (performance.now() - this.pingSentAt < this.unansweredMs) return;
    this.stop();
    this.lost(`no answer from the server for ${this.unansweredMs / 1000} s`);
  }
}
