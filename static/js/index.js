// The "start a session" form (templates/index.html): POST /api/sessions (with the pasted term
// list, ./edit-state.js parseTerms), then open the presenter console at the returned
// present_url (`/p/{code}#token=...`).

import { parseTerms } from './edit-state.js';

const form = document.getElementById('create-form');
const title = document.getElementById('title');
const passcode = document.getElementById('listener-passcode');
const sourceLanguage = document.getElementById('source-language');
const button = document.getElementById('create-button');
const errorBox = document.getElementById('create-error');
const targetList = document.getElementById('targets');
const targetsEmpty = document.getElementById('targets-empty');
const termsBox = document.getElementById('terms');
const languageNames = new Map(
  Array.from(sourceLanguage.options, (option) => [option.value, option.textContent.trim()]),
);
let routes = [];

function renderTargets() {
  const source = sourceLanguage.value;
  const targets = routes.filter((route) => route.source === source);
  targetList.replaceChildren(
    ...targets.map((route) => {
      const label = document.createElement('label');
      label.className = 'target-option';
      const box = document.createElement('input');
      box.type = 'checkbox';
      box.name = 'target_languages';
      box.value = route.target;
      const name = document.createElement('span');
      name.textContent = languageNames.get(route.target) || route.target;
      label.append(box, name);
      return label;
    }),
  );
  targetsEmpty.hidden = targets.length > 0;
}

async function loadRoutes() {
  try {
    const response = await fetch('/api/routes', { headers: { Accept: 'application/json' } });
    if (!response.ok) throw new Error(`${response.status}`);
    routes = (await response.json()).routes;
  } catch (error) {
    console.warn('could not load translation routes', error);
    routes = [];
  }
  renderTargets();
}

sourceLanguage.addEventListener('change', renderTargets);
loadRoutes();

function showError(message) {
  errorBox.textContent = message;
  errorBox.hidden = false;
}

async function readError(response) {
  try {
    const body = await response.json();
    if (body && (body.detail || body.error || body.message)) {
      return String(body.detail || body.error || body.message);
    }
  } catch (error) {
    console.warn('error response is not JSON', error);
  }
  return `The server answered ${response.status} ${response.statusText}.`;
}

form.addEventListener('submit', async (event) => {
  event.preventDefault();
  errorBox.hidden = true;
  const name = title.value.trim();
  if (passcode.value.trim() && passcode.value.trim().length < 4) {
    showError('A passcode needs at least 4 characters (or leave it empty for an open session).');
    passcode.focus();
    return;
  }
  if (!name) {
    showError('Give the session a title so listeners know they are in the right place.');
    title.focus();
    return;
  }
  button.disabled = true;
  button.textContent = 'Creating…';
  try {
    const response = await fetch('/api/sessions', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
      body: JSON.stringify({
        title: name,
        source_language: sourceLanguage.value,
        target_languages: Array.from(
          targetList.querySelectorAll('input[name="target_languages"]:checked'),
          (box) => box.value,
        ),
        terms: termsBox ? parseTerms(termsBox.value) : [],
        ...(passcode.value.trim() ? { listener_passcode: passcode.value.trim() } : {}),
      }),
    });
    if (!response.ok) throw new Error(await readError(response));
    const session = await response.json();
    window.location.assign(session.present_url);
  } catch (error) {
    showError(`Could not create the session: ${error.message}`);
    button.disabled = false;
    button.textContent = 'Create session';
  }
});
