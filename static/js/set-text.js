// Writing text into the page only where it changed: an unchanged write would still restart a
// screen reader's announcement of a live region and cost a layout. Used by every page's
// drawing (./subtitles.js, ./listen-audio.js, ./talk-view.js, ./talk.js).

/** Set `element`'s text to `text` unless it already reads so. */
export function setText(element, text) {
  if (element.textContent !== text) element.textContent = text;
}
