"""A burst of caption events (a late joiner's backfill: every final of the session so far) in
real Chromium, through both caption views: the console's (static/js/captions.js) and the
subtitles of the listener page, venue screen and overlay (static/js/subtitles.js). Each lays
the page out once per animation frame, not once per event: drawing the history once per
line took time in the square of the lines, half a minute for a phone joining an hour in
(docs/metrics.md, "Late joiners / Their pages", measured by ``python -m bench
latejoin-pages``). Every line is still drawn, in order, the view at the newest. No server or
model is needed: static/ is served as is.
"""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page

pytestmark = pytest.mark.browser

LINES = 300

BURST = """async (n) => {
  const { CaptionView } = await import('/static/js/captions.js');
  const { SubtitleView } = await import('/static/js/subtitles.js');
  const frame = () => new Promise((done) => requestAnimationFrame(done));
  const height = Object.getOwnPropertyDescriptor(Element.prototype, 'scrollHeight');
  // A scrolling box whose layout reads (scrollHeight) are counted.
  const box = () => {
    const element = document.createElement('div');
    element.style.height = '200px';
    element.style.overflow = 'auto';
    element.reads = 0;
    Object.defineProperty(element, 'scrollHeight', {
      get() { this.reads += 1; return height.get.call(this); },
    });
    document.body.append(element);
    return element;
  };
  const final = (i) => ({
    type: 'caption', seq: i + 1, segment: i, lang: 'en', source: true, state: 'final',
    text: `Line ${i + 1} of the morning.`, start: 3 * i, end: 3 * i + 2.5,
  });
  const report = (element, lines) => ({
    reads: element.reads,
    lines,
    atNewest: element.scrollTop + element.clientHeight >= element.scrollHeight - 2,
  });

  const consoleBox = box();
  const consoleView = new CaptionView(consoleBox);
  const subtitleBox = box();
  const subtitleView = new SubtitleView(subtitleBox, {
    lang: 'en', maxChars: 42, visible: Infinity, minLineMs: 0, scroll: true,
  });
  await frame();
  consoleBox.reads = 0;
  subtitleBox.reads = 0;
  for (let i = 0; i < n; i += 1) {
    consoleView.apply(final(i));
    subtitleView.apply(final(i));
  }
  await frame();
  await frame();
  const consoleLines = [...consoleBox.querySelectorAll('.caption')].map((p) => p.textContent);
  return {
    console: report(consoleBox, consoleLines),
    subtitles: report(subtitleBox, subtitleView.finalTexts().map((line) => line.text)),
    drawn: [...subtitleBox.querySelectorAll('.caption-line')].map((p) => p.textContent).join(' '),
  };
}"""


def test_a_backfill_is_laid_out_once_a_frame_and_drawn_whole(
    page: Page, static_server: str
) -> None:
    page.goto(f"{static_server}/static/")  # an HTML page (the folder's listing) on that origin
    result: dict[str, Any] = page.evaluate(BURST, LINES)
    expected = [f"Line {i + 1} of the morning." for i in range(LINES)]
    for view in ("console", "subtitles"):
        seen = result[view]
        # A frame or two after the burst (and a resize observer's), not one per line.
        assert seen["reads"] <= 4, (view, seen["reads"])
        assert seen["atNewest"], view
    assert result["console"]["lines"] == expected
    assert result["subtitles"]["lines"] == expected
    assert result["drawn"].endswith(expected[-1]), result["drawn"][-200:]
