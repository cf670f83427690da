// The editor page (templates/edit.html, /e/{code}#token=...): the editor panel with the
// editor token from the link. The token arrives in the URL fragment (never sent to the
// server by the browser), is kept in sessionStorage for this tab and removed from the
// address bar, as the presenter console does with its token. A private session's title
// comes with the token, as on the console.
//
// `window.interpEdit` exposes the panel's state and counters for tests.

import { mountEditPanel } from './edit-panel.js';

const root = document.getElementById('editor');
const code = root.dataset.code;

function readToken() {
  const key = `interp.editor-token.${code.toUpperCase()}`;
  const fromUrl = new URLSearchParams(window.location.hash.slice(1)).get('token');
  try {
    if (fromUrl) {
      window.sessionStorage.setItem(key, fromUrl);
      window.history.replaceState(null, '', window.location.pathname + window.location.search);
      return fromUrl;
    }
    return window.sessionStorage.getItem(key);
  } catch (error) {
    console.warn('sessionStorage unavailable', error);
    return fromUrl;
  }
}

const token = readToken();
window.interpEdit = mountEditPanel(root.querySelector('.edit-panel'), {
  code,
  language: root.dataset.language,
  token,
});

// A private session's title is not in the page: the facts give it to the editor's token.
if (root.dataset.private === 'true' && token) {
  fetch(`/api/sessions/${encodeURIComponent(code)}`, {
    headers: { Accept: 'application/json', Authorization: `Bearer ${token}` },
  })
    .then((response) => (response.ok ? response.json() : null))
    .then((facts) => {
      if (!facts || typeof facts.title !== 'string') return;
      root.querySelector('.session-title').textContent = facts.title || 'Untitled session';
      document.title = `${facts.title || 'Session'} · editor · Live interpreter`;
    })
    .catch((error) => console.warn('cannot read the session', error));
}
