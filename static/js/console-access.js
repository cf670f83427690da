// The console's side of a private session (docs/protocol.md): a listener token for the share
// link, the QR code and the display links (granted with the presenter token), and the passcode
// form. A public session needs none of it.

import { saveWithToken } from './private-gate.js';

/** A listener token for this session's links (POST .../listener-token). */
export async function grantListenerToken(code, presenterToken) {
  const response = await fetch(`/api/sessions/${encodeURIComponent(code)}/listener-token`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${presenterToken}`, Accept: 'application/json' },
  });
  if (!response.ok) throw new Error(`${response.status} ${response.statusText}`);
  return (await response.json()).listener_token;
}

/** The QR code of the link that carries `listenerToken`, as a data URL for an <img>. */
export async function qrDataUrl(code, listenerToken) {
  const response = await fetch(`/api/sessions/${encodeURIComponent(code)}/qr.svg`, {
    headers: { Authorization: `Bearer ${listenerToken}` },
  });
  if (!response.ok) throw new Error(`${response.status} ${response.statusText}`);
  const svg = await response.text();
  return `data:image/svg+xml;charset=utf-8,${encodeURIComponent(svg)}`;
}

/** Transcript links that fetch with the presenter token (a private session's need it). */
export function authoriseDownloads(links, presenterToken, onError) {
  for (const link of links) {
    link.addEventListener('click', async (event) => {
      event.preventDefault();
      try {
        await saveWithToken(link.href, link.download, presenterToken);
      } catch (error) {
        onError(`The transcript could not be downloaded: ${error.message}`);
      }
    });
  }
}

/** The passcode form: PUT .../passcode with the presenter token. */
export function initPasscodeForm(code, presenterToken) {
  const form = document.getElementById('passcode-form');
  if (!form) return;
  const input = document.getElementById('new-passcode');
  const status = document.getElementById('passcode-status');
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    status.textContent = 'Changing…';
    try {
      const response = await fetch(`/api/sessions/${encodeURIComponent(code)}/passcode`, {
        method: 'PUT',
        headers: {
          Authorization: `Bearer ${presenterToken}`,
          'Content-Type': 'application/json',
          Accept: 'application/json',
        },
        body: JSON.stringify({ passcode: input.value }),
      });
      if (!response.ok) {
        const body = await response.json().catch(() => ({}));
        throw new Error(body.error || `${response.status} ${response.statusText}`);
      }
      input.value = '';
      status.textContent = 'Passcode changed. Listeners who joined before keep their captions.';
    } catch (error) {
      status.textContent = `Not changed: ${error.message}`;
    }
  });
}
