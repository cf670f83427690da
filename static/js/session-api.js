// Calls to a session's HTTP API from the console (docs/protocol.md): the JSON answer, or an
// Error with the server's reason. Used by ./console-panel.js and ./present-share.js.

/** The base URL of session `code`'s API. */
export const sessionApi = (code) => `/api/sessions/${encodeURIComponent(code)}`;

/** `fetch` `url` with `token` as the bearer (and a JSON body's content type): the answer's
 * JSON, or an Error carrying the server's `error`. */
export async function callApi(url, token, options = {}) {
  const response = await fetch(url, {
    ...options,
    headers: {
      Accept: 'application/json',
      ...(token ? { Authorization: `Bearer ${token}` } : {}),
      ...(options.body ? { 'Content-Type': 'application/json' } : {}),
    },
  });
  const body = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(body.error || `HTTP ${response.status}`);
  return body;
}
