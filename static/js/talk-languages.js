// What the server offers traveller mode, as state: the languages' names, the translation
// routes, the pairs that work both ways and the languages it can speak. Built from the page's
// `talk-config` (app/main.py, the `/talk` page); no DOM. Used by ./talk.js and ./talk-view.js,
// tested through real Chromium (e2e/test_talk_state.py).

export class Languages {
  /** `config`: {names: {code: {name, native}}, routes: ['src>tgt'], pairs: {code: [codes]}, spoken: [codes]}. */
  constructor(config) {
    this.names = config.names || {};
    this.routes = config.routes || [];
    this.pairs = config.pairs || {};
    this.spoken = config.spoken || [];
  }

  /** The language's English name, or its code where the server has none. */
  nameOf(code) {
    const entry = this.names[code];
    return entry ? entry.name : code;
  }

  /** The language's own name for itself. */
  nativeOf(code) {
    const entry = this.names[code];
    return entry ? entry.native : code;
  }

  /** "Español (Spanish)", or just "English" where both names are the same. */
  label(code) {
    const native = this.nativeOf(code);
    const english = this.nameOf(code);
    return native === english ? english : `${native} (${english})`;
  }

  hasRoute(source, target) {
    return this.routes.includes(`${source}>${target}`);
  }

  worksBothWays(a, b) {
    return Boolean(this.pairs[a] && this.pairs[a].includes(b));
  }

  /** Why a pair cannot hold a conversation here (null when it can). */
  pairProblem(a, b) {
    if (!a || !b) return 'This server offers no two languages to translate between.';
    if (a === b) return 'Choose two different languages.';
    if (this.worksBothWays(a, b)) return null;
    const missing = [[a, b], [b, a]]
      .filter(([source, target]) => !this.hasRoute(source, target))
      .map(([source, target]) => `${this.nameOf(source)} into ${this.nameOf(target)}`);
    const hints = [a, b].map((code) => {
      const partners = (this.pairs[code] || []).map((other) => this.nameOf(other));
      return partners.length
        ? `${this.nameOf(code)} works both ways with ${partners.join(', ')}.`
        : `${this.nameOf(code)} has no two-way partner on this server.`;
    });
    return `No translation route from ${missing.join(' or from ')} on this server, so these two `
      + `cannot talk here. ${hints.join(' ')}`;
  }

  /** How the setup screen describes a pair that works: both ways, and which side is shown only. */
  pairSummary(a, b) {
    const silent = [a, b].filter((code) => !this.spoken.includes(code)).map((code) => this.nameOf(code));
    return `${this.nameOf(a)} ↔ ${this.nameOf(b)}: translated both ways`
      + (silent.length ? `; no voice here for ${silent.join(' or ')}, so it is shown only.` : '.');
  }
}
