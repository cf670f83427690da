// Transcript download links (the listener's Transcript menu, ./listen-transcript.js; the
// console's share panel, ./present-share.js). Each link names its format in `data-format`.

/** Point every one of `links` at session `code`'s transcript in `lang`. */
export function pointTranscriptLinks(links, code, lang) {
  for (const link of links) {
    const { format } = link.dataset;
    const query = new URLSearchParams({ lang, format });
    link.href = `/api/sessions/${encodeURIComponent(code)}/transcript?${query}`;
    link.download = `${code}-${lang}.${format}`;
  }
}
