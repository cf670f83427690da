// "Join a session" forms (home page, unknown-code page): type the code, open /s/{code}.
//
// Codes are 6 characters from ABCDEFGHJKMNPQRSTUVWXYZ23456789 (docs/protocol.md, no 0/O or
// 1/I/L to confuse); people type them in any case, with spaces or dashes.

const CODE = /^[ABCDEFGHJKMNPQRSTUVWXYZ23456789]{6}$/;

/** The code as the server spells it, or null if `text` cannot be one. */
export function normaliseCode(text) {
  const code = text.toUpperCase().replace(/[\s-]+/g, '');
  return CODE.test(code) ? code : null;
}

const form = document.getElementById('join-form');
if (form) {
  const input = document.getElementById('join-code');
  const error = document.getElementById('join-error');
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const code = normaliseCode(input.value);
    if (!code) {
      error.textContent = 'A session code has 6 letters and digits (there is no 0, 1, I, L or O '
        + 'in one), as shown on the presenter’s screen.';
      error.hidden = false;
      input.focus();
      return;
    }
    error.hidden = true;
    window.location.assign(`/s/${code}`);
  });
}
