// The "start a session" form (templates/index.html): POST /api/sessions, then open the
// presenter console at the returned present_url (`/p/{code}#token=...`).

const form = document.getElementById('create-form');
const title = document.getElementById('title');
const sourceLanguage = document.getElementById('source-language');
const button = document.getElementById('create-button');
const errorBox = document.getElementById('create-error');

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
        target_languages: [],
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
