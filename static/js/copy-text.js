// Copying a link for someone to share: the console's links (./present-share.js,
// ./console-displays.js, ./console-panel.js) and a traveller's link to go on (./talk-menu.js).

/**
 * Copy `text` to the clipboard; `button` says "Copied" for 1.5 s. Where the clipboard is
 * refused (a page not served over HTTPS, a browser that asks first), the text is offered in a
 * prompt to copy by hand.
 */
export async function copyText(text, button) {
  const original = button.textContent;
  try {
    await navigator.clipboard.writeText(text);
    button.textContent = 'Copied';
  } catch (error) {
    console.warn('clipboard unavailable', error);
    window.prompt('Copy this link:', text);
  }
  window.setTimeout(() => {
    button.textContent = original;
  }, 1500);
}
