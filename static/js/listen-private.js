// A private session on the listener page (templates/listen.html, #passcode-form): the token
// it needs (from the link, this tab, or the passcode, ./private-gate.js), and the facts the
// page could not show without it (title, languages, state).

import { askForToken, forgetToken, sessionFacts, storedToken } from './private-gate.js';

/** The passcode form of templates/listen.html, as askForToken takes it. */
export function passcodeGate(doc) {
  return {
    form: doc.getElementById('passcode-form'),
    input: doc.getElementById('passcode'),
    error: doc.getElementById('passcode-error'),
  };
}

/** The token of session `code` and its facts, once the server takes the token (asking for the
 * passcode until it does; a stale or foreign link's token is forgotten). */
export async function unlockSession(code, gate) {
  let token = storedToken(code);
  for (;;) {
    if (!token) token = await askForToken(code, gate);
    const facts = await sessionFacts(code, token);
    if (facts.title !== undefined) return { token, facts };
    forgetToken(code);
    token = null;
  }
}

/** The server refused the token (a wrong or stale link): forget it and ask for the passcode
 * again; the new token. */
export function askAgain(code, gate) {
  forgetToken(code);
  return askForToken(code, gate);
}
