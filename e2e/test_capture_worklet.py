"""The capture AudioWorklet in real Chromium, rendered faster than real time.

An OfflineAudioContext at a typical hardware rate feeds test tones into static/js/
capture-worklet.js; the frames it posts are decoded as the server would (little-endian int16,
16 kHz) and measured: speech-band tones keep their level and their pitch, tones the 16 kHz stream
cannot carry are removed instead of aliasing into the speech band, channels are averaged, and
every frame is exactly 100 ms. No server or model is needed: the static files are served as is.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from playwright.sync_api import Page

pytestmark = pytest.mark.browser

FULL_SCALE_TONE_RMS = 0.5 / math.sqrt(2)  # a sine of amplitude 0.5

RENDER = """
async ({ rate, seconds, left, right }) => {
  const ctx = new OfflineAudioContext({
    numberOfChannels: 1, length: Math.round(rate * seconds), sampleRate: rate,
  });
  await ctx.audioWorklet.addModule('/static/js/capture-worklet.js');
  const node = new AudioWorkletNode(ctx, 'capture-processor', {
    numberOfInputs: 1, numberOfOutputs: 0, channelCount: 2, channelCountMode: 'explicit',
    channelInterpretation: 'speakers', processorOptions: { targetRate: 16000, frameMs: 100 },
  });
  const frames = [];
  const wanted = Math.floor(seconds * 10) - 1;  // the filter delay holds back a few samples
  const enough = new Promise((resolve) => {
    node.port.onmessage = (event) => {
      if (event.data.type !== 'frame') return;
      frames.push(event.data);
      if (frames.length >= wanted) resolve();
    };
  });
  const tone = (frequency) => {
    const oscillator = new OscillatorNode(ctx, { frequency });
    oscillator.start();
    return oscillator.connect(new GainNode(ctx, { gain: 0.5 }));
  };
  if (right === null) {
    tone(left).connect(node);  // a mono source: up-mixed to both channels
  } else {
    const merger = new ChannelMergerNode(ctx, { numberOfInputs: 2 });
    if (left) tone(left).connect(merger, 0, 0);
    if (right) tone(right).connect(merger, 0, 1);
    merger.connect(node);
  }
  await ctx.startRendering();
  await Promise.race([enough, new Promise((resolve) => setTimeout(resolve, 5000))]);

  let count = 0, crossings = 0, previous = 0;
  const bytes = [], reported = [], measured = [];
  for (const frame of frames) {
    const view = new DataView(frame.pcm);
    const n = frame.pcm.byteLength / 2;
    let frameSquares = 0;
    for (let i = 0; i < n; i += 1) {
      const x = view.getInt16(2 * i, true) / 32768;
      frameSquares += x * x;
      if (count > 0 && (previous < 0) !== (x < 0)) crossings += 1;
      previous = x;
      count += 1;
    }
    bytes.push(frame.pcm.byteLength);
    reported.push(frame.rms);
    measured.push(Math.sqrt(frameSquares / n));
  }
  return {
    contextRate: ctx.sampleRate, bytes, reported, measured,
    samples: count,
    frequency: crossings / 2 / (count / 16000),
  };
}
"""


def render(
    page: Page, base: str, rate: int, left: float, right: float | None = None
) -> dict[str, Any]:
    """Play `left` (and `right`, if given, as a stereo pair) at `rate` Hz through the worklet."""
    page.goto(f"{base}/")
    result: dict[str, Any] = page.evaluate(
        RENDER, {"rate": rate, "seconds": 2.0, "left": left, "right": right}
    )
    assert result["contextRate"] == rate
    return result


def steady_rms(result: dict[str, Any]) -> float:
    """RMS of every frame but the first: a tone switched on at t=0 is a broadband click."""
    tail = result["measured"][1:]
    return math.sqrt(sum(m * m for m in tail) / len(tail))


def db(rms: float, reference: float = FULL_SCALE_TONE_RMS) -> float:
    return 20 * math.log10(max(rms, 1e-12) / reference)


@pytest.mark.parametrize("rate", [48000, 44100, 16000])
def test_speech_band_tone_keeps_level_pitch_and_framing(
    page: Page, static_server: str, rate: int
) -> None:
    result = render(page, static_server, rate, left=1000)
    assert result["bytes"] and all(size == 3200 for size in result["bytes"])  # 100 ms at 16 kHz
    # 2 s of input (rounded up to whole 128-sample render quanta) less the filter's delay.
    assert len(result["bytes"]) in (19, 20)
    assert abs(db(steady_rms(result))) < 0.2
    assert result["frequency"] == pytest.approx(1000, rel=0.005)  # right rate conversion
    for reported, measured in zip(result["reported"], result["measured"], strict=True):
        assert reported == pytest.approx(measured, abs=1e-3)  # the meter shows what is sent


@pytest.mark.parametrize(("rate", "frequency"), [(48000, 11000), (48000, 17000), (44100, 9500)])
def test_tones_above_8_khz_are_filtered_not_aliased(
    page: Page, static_server: str, rate: int, frequency: int
) -> None:
    # Naive decimation would fold these into the speech band at nearly full level
    # (48 kHz: 11 kHz -> 5 kHz, 17 kHz -> 1 kHz; 44.1 kHz: 9.5 kHz -> 6.5 kHz).
    result = render(page, static_server, rate, left=frequency)
    assert db(steady_rms(result)) < -60


def test_channels_are_averaged_to_mono(page: Page, static_server: str) -> None:
    one_side = render(page, static_server, 48000, left=1000, right=0)
    assert db(steady_rms(one_side)) == pytest.approx(-6.02, abs=0.2)
