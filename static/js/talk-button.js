// A traveller-mode talk button's gestures (./talk.js): in tap mode a tap starts a turn and the
// next tap on the same button ends it; in hold mode pressing starts it and letting go ends it,
// and a press shorter than `holdMinMs` is a slip, not a turn. Keyboards hold Space or Enter.

/**
 * Wire `button` for one side. `page` answers and acts: `hold()` (is hold mode on), `busy()`
 * (the side of the turn being spoken, or null), `start()`, `end()`, `slip()` (a press too short).
 */
export function wireTalkButton(button, side, page, holdMinMs) {
  let pressedAt = 0;
  let pointer = null;
  const mine = () => page.busy() === side;
  button.addEventListener('click', (event) => {
    if (page.hold()) {
      event.preventDefault(); // hold mode works on press and release
      return;
    }
    if (mine()) page.end();
    else if (page.busy() === null) page.start();
  });
  button.addEventListener('pointerdown', (event) => {
    if (!page.hold() || event.button !== 0 || page.busy() !== null) return;
    event.preventDefault();
    pointer = event.pointerId;
    button.setPointerCapture?.(event.pointerId);
    pressedAt = performance.now();
    page.start();
  });
  const release = (event) => {
    if (!page.hold() || event.pointerId !== pointer) return;
    pointer = null;
    if (!mine()) return;
    if (performance.now() - pressedAt < holdMinMs) page.slip();
    else page.end();
  };
  button.addEventListener('pointerup', release);
  button.addEventListener('pointercancel', release);
  button.addEventListener('contextmenu', (event) => {
    if (page.hold()) event.preventDefault(); // a long press must not open a menu
  });
  button.addEventListener('keydown', (event) => {
    if (!page.hold() || (event.key !== ' ' && event.key !== 'Enter')) return;
    event.preventDefault();
    if (event.repeat || page.busy() !== null) return;
    pressedAt = performance.now();
    page.start();
  });
  button.addEventListener('keyup', (event) => {
    if (!page.hold() || (event.key !== ' ' && event.key !== 'Enter')) return;
    event.preventDefault();
    if (mine()) page.end();
  });
}
