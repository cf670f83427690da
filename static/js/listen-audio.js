// The listener page's spoken translation (templates/listen.html, #audio-panel): the Listen
// button, mute and volume, audio-only mode, the status line, the notice of skipped sentences,
// and the wait for the last speech once the session has ended. The words come from
// ./listen-audio-state.js; the sound from ./audio-player.js.
//
// Browsers on phones only let a page make sound after a tap, so the AudioContext is created
// (or resumed) in the Listen button's click handler, and audio never starts by itself: the
// choice is remembered, but each visit needs its own tap. Audio-only mode is for listeners who
// do not watch the screen: one large play/pause button, only the newest caption, a dark page.
//
// `stats` (window.interpAudio) holds the player's counters and the page's: skipped sentences
// announced, chunks ignored in a language no longer chosen, the segments fully spoken.

import { AudioPlayer, audioSupported } from './audio-player.js';
import { audioPanelView, savedVolume, skippedText, tailOver } from './listen-audio-state.js';
import { loadPreference, savePreference } from './preferences.js';
import { setText } from './set-text.js';
import { showVoice } from './voice-label.js';

const SKIP_NOTICE_MS = 6000;
const SPOKEN_SEGMENTS_KEPT = 500;

/** The audio panel's elements in templates/listen.html, and the captions panel, over whose top
 * the notice of skipped sentences is shown. */
export function audioElements(doc) {
  const byId = (id) => doc.getElementById(id);
  return {
    panel: byId('audio-panel'),
    toggle: byId('audio-toggle'),
    toggleLabel: byId('audio-toggle-label'),
    toggleHint: byId('audio-toggle-hint'),
    controls: byId('audio-controls'),
    mute: byId('audio-mute'),
    volume: byId('audio-volume'),
    only: byId('audio-only'),
    status: byId('audio-status'),
    voice: byId('audio-voice'),
    notice: byId('audio-notice'),
    captionsPanel: doc.querySelector('.listen-captions'),
  };
}

export class ListenerAudio {
  /**
   * @param {{elements: object, root: HTMLElement, session: {state: string, connection: string},
   *          languages: import('./listen-state.js').LanguageChoice,
   *          captions: import('./listen-captions.js').ListenerCaptions,
   *          onWanted: (enabled: boolean) => void}} options
   *   elements: audioElements(document); root: the page's #listener; session: the page's
   *   stats, read when drawing; onWanted: ask the server for audio, or no more.
   */
  constructor({ elements, root, session, languages, captions, onWanted }) {
    this.el = elements;
    this.root = root;
    this.session = session;
    this.languages = languages;
    this.captions = captions;
    this.onWanted = onWanted;
    this.stats = {};
    this.player = new AudioPlayer({
      stats: this.stats,
      volume: savedVolume(loadPreference('listen.volume')),
      onStats: () => this.scheduleRender(),
    });
    Object.assign(this.stats, {
      skippedAnnounced: 0, // sentences the server skipped to keep pace, as told to the listener
      ignoredChunks: 0, // chunks in a language no longer chosen (in flight during a switch)
      spokenSegments: [], // segments whose speech has fully arrived (their `last` chunk), newest 500
      rate: 1,
      supported: audioSupported(),
      audioOnly: false,
    });
    this.wanted = loadPreference('listen.audio') === '1'; // remembered; still needs a tap
    this.lastAudioAt = 0;
    this.tailTimer = null;
    this.noticeTimer = null;
    this.renderPending = false;
  }

  get enabled() {
    return this.stats.enabled;
  }

  /** Show the panel (only translations are spoken: a session without any has nothing to
   * listen to), restore audio-only mode and the volume, and follow the controls. */
  init() {
    const el = this.el;
    el.panel.hidden = this.languages.codes.length < 2;
    el.volume.value = String(Math.round(this.stats.volume * 100));
    el.toggle.addEventListener('click', () => {
      if (this.stats.enabled) this.turnOff();
      else this.turnOn();
    });
    el.mute.addEventListener('click', () => this.player.setMuted(!this.stats.muted));
    el.volume.addEventListener('input', () => {
      const volume = Number(el.volume.value) / 100;
      this.player.setVolume(volume);
      if (volume > 0 && this.stats.muted) this.player.setMuted(false);
      savePreference('listen.volume', String(Math.round(volume * 100)));
    });
    el.only.addEventListener('click', () => this.setAudioOnly(!this.stats.audioOnly));
    document.addEventListener('visibilitychange', () => {
      if (document.visibilityState === 'visible') this.player.wake();
    });
    // A phone turned while the notice shows: it follows the captions' new top.
    window.addEventListener('resize', () => {
      if ('shown' in el.notice.dataset) this.#placeNotice();
    });
    this.setAudioOnly(!el.panel.hidden && loadPreference('listen.audioOnly') === '1', false);
    this.render();
  }

  /** Call from the tap itself: it creates or resumes the AudioContext. */
  turnOn() {
    if (!this.stats.supported) return;
    let starting;
    try {
      starting = this.player.start();
    } catch (error) {
      console.warn('spoken translation could not start', error);
      this.stats.context = 'failed';
      this.render();
      return;
    }
    this.wanted = true;
    savePreference('listen.audio', '1');
    this.onWanted(true);
    this.render();
    starting.then(() => this.render(), (error) => {
      console.warn('spoken translation could not start', error);
      this.render();
    });
  }

  turnOff() {
    this.player.stop();
    this.wanted = false;
    savePreference('listen.audio', '0');
    this.onWanted(false);
    this.render();
  }

  setAudioOnly(on, save = true) {
    this.stats.audioOnly = on;
    if (on) this.root.dataset.audioOnly = '';
    else delete this.root.dataset.audioOnly;
    document.body.classList.toggle('audio-only', on);
    this.el.only.setAttribute('aria-pressed', String(on));
    if (save) savePreference('listen.audioOnly', on ? '1' : '0');
    if (this.captions.following) this.captions.jumpToLive();
  }

  /** One chunk of speech from the socket: a header and its PCM. */
  hear(header, pcm) {
    if (header.lang !== this.languages.lang) {
      this.stats.ignoredChunks += 1; // the language the listener just left
      return;
    }
    this.lastAudioAt = Date.now();
    if (typeof header.rate === 'number') this.stats.rate = header.rate;
    this.player.push(header, pcm);
    showVoice(this.el.voice, header.voice);
    if (header.last !== false && Number.isInteger(header.segment)) {
      this.stats.spokenSegments.push(header.segment);
      if (this.stats.spokenSegments.length > SPOKEN_SEGMENTS_KEPT) this.stats.spokenSegments.shift();
    }
    const skipped = Number(header.skipped) || 0;
    if (skipped > 0 && this.stats.enabled) this.#noticeSkipped(skipped);
  }

  /** The listener chose another language: what is queued in the old one is not wanted now. */
  languageChanged() {
    this.player.clear();
    this.render();
  }

  /**
   * The session ended: call `done` at once with audio off, else once no speech has come for a
   * few seconds and nothing plays (the speech of the last finals may still be on its way).
   */
  afterSpeech(done) {
    if (!this.stats.enabled) {
      done();
      return;
    }
    if (this.tailTimer !== null) return;
    const endedAt = Date.now();
    this.lastAudioAt = Math.max(this.lastAudioAt, endedAt);
    this.tailTimer = window.setInterval(() => {
      const { enabled, playing } = this.stats;
      if (tailOver({ enabled, playing, now: Date.now(), lastAudioAt: this.lastAudioAt, endedAt })) {
        this.#stopTail();
        done();
      }
    }, 500);
  }

  /** The page stopped following: after the end, nothing more will be spoken, so let go of the
   * audio and say so in the panel. */
  closed(ended) {
    this.#stopTail();
    if (ended && this.stats.enabled) this.player.stop();
    this.render();
  }

  /** The page is going away (or into the back-forward cache): back, it needs a tap again. */
  pageHidden() {
    if (this.stats.enabled) this.player.stop();
  }

  scheduleRender() {
    if (this.renderPending) return;
    this.renderPending = true;
    window.requestAnimationFrame(() => {
      this.renderPending = false;
      this.render();
    });
  }

  render() {
    const el = this.el;
    const view = audioPanelView({
      audio: this.stats,
      state: this.session.state,
      connection: this.session.connection,
      spoken: this.languages.translated,
      language: this.languages.nameOf(),
      wanted: this.wanted,
    });
    el.panel.dataset.audio = view.audio;
    el.panel.dataset.ended = view.ended ? '1' : '0';
    el.toggle.disabled = view.disabled;
    el.toggle.dataset.on = view.on ? '1' : '0';
    el.toggle.setAttribute('aria-label', view.ariaLabel);
    setText(el.toggleLabel, view.label);
    setText(el.toggleHint, view.hint);
    el.controls.hidden = !view.on;
    el.mute.setAttribute('aria-pressed', String(view.muted));
    el.mute.dataset.muted = view.muted ? '1' : '0';
    setText(el.status, view.status);
  }

  #stopTail() {
    window.clearInterval(this.tailTimer);
    this.tailTimer = null;
  }

  /** Tell the listener (on screen and to screen readers) that sentences were left out. The
   * notice sits over the top of the captions, where it covers no control. */
  #noticeSkipped(count) {
    const notice = this.el.notice;
    this.stats.skippedAnnounced += count;
    notice.textContent = skippedText(count);
    this.#placeNotice();
    notice.dataset.shown = '';
    window.clearTimeout(this.noticeTimer);
    this.noticeTimer = window.setTimeout(() => {
      delete notice.dataset.shown;
      notice.textContent = '';
    }, SKIP_NOTICE_MS);
  }

  /** The notice's place: just below the captions panel's top edge. */
  #placeNotice() {
    const top = this.el.captionsPanel.getBoundingClientRect().top;
    this.el.notice.style.setProperty('--notice-top', `${Math.round(top)}px`); // CSSOM: allowed by the CSP
  }
}
