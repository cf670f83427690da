// The console's presenter (or speaker) token. It arrives in the URL fragment (`#token=...`,
// never sent to the server by the browser), is kept in sessionStorage for this tab and then
// removed from the address bar so a screen-shared console does not show it; a reload still
// works.

/** The token for session `code`: from the address (then kept and hidden), else the one kept
 * for this tab, else null. */
export function readPresenterToken(code) {
  const key = `interp.presenter-token.${code.toUpperCase()}`;
  const fragment = new URLSearchParams(window.location.hash.slice(1));
  const fromUrl = fragment.get('token');
  if (fromUrl) {
    try {
      window.sessionStorage.setItem(key, fromUrl);
      window.history.replaceState(null, '', window.location.pathname + window.location.search);
    } catch (error) {
      console.warn('sessionStorage unavailable; keeping the token in the address bar', error);
    }
    return fromUrl;
  }
  try {
    return window.sessionStorage.getItem(key);
  } catch (error) {
    console.warn('sessionStorage unavailable', error);
    return null;
  }
}
