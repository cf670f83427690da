// Names the voice speaking the listener's language (templates/listen.html, #audio-voice),
// from each audio header's `voice` (docs/protocol.md): "natural" is a neural voice (Piper,
// Kokoro), "fast" is espeak-ng (also when it stands in for a natural voice that fell behind).

const NAMES = { natural: 'Natural voice', fast: 'Fast voice' };

/** Show the name of voice `kind` in `element` (unknown kinds leave it as it is). */
export function showVoice(element, kind) {
  const name = NAMES[kind];
  if (!element || !name) return;
  if (element.textContent !== name) element.textContent = name;
  element.dataset.voice = kind;
  element.hidden = false;
}
