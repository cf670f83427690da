// Private sessions (docs/protocol.md): the listener token a page needs, taken from the link's
// fragment (`#token=...`, which browsers never send to the server), from this tab's storage,
// or from the passcode form (POST /api/sessions/{code}/join). The token leaves the address bar
// once stored, as the presenter's does, so a shared screen does not show it.

function storageKey(code) {
  return `interp.listener-token.${code.toUpperCase()}`;
}

/** The token of the link or of this tab, or null. */
export function storedToken(code) {
  const fromUrl = new URLSearchParams(window.location.hash.slice(1)).get('token');
  try {
    if (fromUrl) {
      window.sessionStorage.setItem(storageKey(code), fromUrl);
      window.history.replaceState(null, '', window.location.pathname + window.location.search);
      return fromUrl;
    }
    return window.sessionStorage.getItem(storageKey(code));
  } catch (error) {
    console.warn('sessionStorage unavailable; the token stays in the address bar', error);
    return fromUrl;
  }
}

/** Forget a token the server refused. */
export function forgetToken(code) {
  try {
    window.sessionStorage.removeItem(storageKey(code));
  } catch (error) {
    console.warn('sessionStorage unavailable', error);
  }
}

/** Trade a passcode for a token; throws an Error whose message a person can read. */
export async function join(code, passcode) {
  const response = await fetch(`/api/sessions/${encodeURIComponent(code)}/join`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
    body: JSON.stringify({ passcode }),
  });
  let body = {};
  try {
    body = await response.json();
  } catch (error) {
    console.warn('join answer is not JSON', error);
  }
  if (response.status === 401) throw new Error('That passcode is not right. Try again.');
  if (response.status === 429) {
    const wait = Math.ceil(Number(body.retry_after) || 60);
    throw new Error(`Too many wrong passcodes from this network. Try again in ${wait} s.`);
  }
  if (!response.ok || !body.listener_token) {
    throw new Error(body.error || `The server answered ${response.status}.`);
  }
  try {
    window.sessionStorage.setItem(storageKey(code), body.listener_token);
  } catch (error) {
    console.warn('sessionStorage unavailable', error);
  }
  return body.listener_token;
}

/**
 * Show `form` (a passcode input and a submit button) until a passcode gives a token.
 * @param {{form: HTMLFormElement, input: HTMLInputElement, error: HTMLElement}} ui
 */
export function askForToken(code, { form, input, error }) {
  form.hidden = false;
  input.focus();
  return new Promise((resolve) => {
    form.addEventListener('submit', async function onSubmit(event) {
      event.preventDefault();
      error.hidden = true;
      const button = form.querySelector('button[type="submit"]');
      if (button) button.disabled = true;
      try {
        const token = await join(code, input.value);
        form.removeEventListener('submit', onSubmit);
        form.hidden = true;
        resolve(token);
      } catch (failure) {
        error.textContent = failure.message;
        error.hidden = false;
        input.select();
      } finally {
        if (button) button.disabled = false;
      }
    });
  });
}

/** The session's facts, with the token when there is one (a private session's need it). */
export async function sessionFacts(code, token) {
  const headers = { Accept: 'application/json' };
  if (token) headers.Authorization = `Bearer ${token}`;
  const response = await fetch(`/api/sessions/${encodeURIComponent(code)}`, { headers });
  if (!response.ok) throw new Error(`${response.status} ${response.statusText}`);
  return response.json();
}

/** Download `href` with the token as `Authorization: Bearer` and save it as `filename` (a
 * link cannot carry a header, and a token in a query string would reach the server's logs). */
export async function saveWithToken(href, filename, token) {
  const response = await fetch(href, { headers: { Authorization: `Bearer ${token}` } });
  if (!response.ok) throw new Error(`${response.status} ${response.statusText}`);
  const url = URL.createObjectURL(await response.blob());
  const save = document.createElement('a');
  save.href = url;
  save.download = filename;
  document.body.append(save);
  save.click();
  save.remove();
  window.setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
