// A traveller conversation's session on the server (docs/protocol.md, the HTTP API): create
// it, read it to continue it, end it; and the presenter token this tab keeps in
// sessionStorage, so that a reload continues the conversation. Used by ./talk-setup.js and
// ./talk-menu.js.

function storageKey(code) {
  return `interp.talk.${code.toUpperCase()}`;
}

/** Keep the presenter token of `code` for this tab (a reload continues the conversation). */
export function rememberToken(code, token) {
  try {
    window.sessionStorage.setItem(storageKey(code), token);
  } catch (error) {
    console.warn('sessionStorage unavailable; a reload will not continue this conversation', error);
  }
}

/** The presenter token this tab kept for `code`, or null. */
export function recallToken(code) {
  try {
    return window.sessionStorage.getItem(storageKey(code));
  } catch (error) {
    return null;
  }
}

function forgetToken(code) {
  try {
    window.sessionStorage.removeItem(storageKey(code));
  } catch (error) {
    console.warn('sessionStorage unavailable', error);
  }
}

/** A new session offering `a` and `b` (titled with their names); its `{code, presenter_token}`. */
export async function createConversation(title, a, b) {
  const response = await fetch('/api/sessions', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
    body: JSON.stringify({ title, source_language: a, target_languages: [b] }),
  });
  let body = null;
  try {
    body = await response.json();
  } catch (error) {
    body = null;
  }
  if (!response.ok) {
    throw new Error((body && body.error) || `The server refused: ${response.status} ${response.statusText}`);
  }
  return body;
}

/** The session `code`'s public facts; an Error that says why where there are none. */
export async function fetchConversation(code) {
  const response = await fetch(`/api/sessions/${encodeURIComponent(code)}`, {
    headers: { Accept: 'application/json' },
  });
  if (response.status === 404) throw new Error(`There is no conversation with the code ${code}.`);
  if (!response.ok) throw new Error(`${response.status} ${response.statusText}`);
  return response.json();
}

/** End the session (for everyone) and forget its token here; a failure is only logged. */
export async function endConversation(code, token) {
  try {
    await fetch(`/api/sessions/${encodeURIComponent(code)}/end`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${token}`, Accept: 'application/json' },
    });
  } catch (error) {
    console.warn('could not end the conversation', error);
  }
  forgetToken(code);
}
