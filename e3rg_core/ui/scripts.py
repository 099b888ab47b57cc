"""The page's own JavaScript (``gr.Blocks(js=...)`` and events' ``js=``): the voice's clock, the face kept on
it, and the hands-free player, status and listening face. No gradio here: the strings are wired in
``e3rg_core.ui.app``."""

from __future__ import annotations

import json
from typing import Mapping

#: Runs once when the page loads. ``window.e3rgVoice`` plays a hands-free reply's voice piece by piece as
#: the server makes them (Web Audio, no streaming delay); the streamed player (``#live_audio``, HLS)
#: plays the other turns. Whichever sounds gives the page one clock: the face (``#live_video``, silent)
#: is moved to it whenever the voice's position lies in video already received; the server is told it
#: (``#player_state``: is the avatar speaking, how far into the reply) so it can tell the reply's echo
#: from the person; the status says whether the avatar listens, thinks or speaks; and while it does not
#: speak, the listening face (``#listening_face``) takes the face's place.
#:
#: The page's own ear (``e3rgVoice.ear``) holds the voice the moment the microphone (echo cancellation
#: on) hears a voice-like sound while the avatar speaks: the server hears the microphone 0.3-0.5 s late,
#: so waiting for its word made barge-in take 0.75 s. A hold only pauses the player (its clock stops, so
#: nothing is skipped); the server still decides: its barge-in stops the reply for good (``PAUSE_JS``),
#: and when the microphone has been quiet for ``resumeQuietS`` with no barge-in and the server not
#: hearing speech, the voice goes on where it was (``ear.resumed`` counts these false stops, and each
#: raises the level that holds this reply by ``stepDb``, so the reply's own echo cannot stutter it).
PAGE_JS = """
() => {
  const words = __WORDS__;
  const hands = window.e3rgVoice = {ctx: null, gain: null, chain: Promise.resolve(), sources: [], turn: null,
                                    startAt: null, endAt: 0, stopped: true};
  const ear = hands.ear = {ctx: null, analyser: null, data: null, floorDb: -70, loudMs: 0, lastT: 0, held: false,
                           heldAt: 0, quietSince: 0, raiseDb: 0, holds: 0, resumed: 0, confirmed: 0,
                           minDb: -50, overFloorDb: 12, needMs: 90, resumeQuietS: 0.6,
                           holdMinS: 0.8, holdMaxS: 4.0, stepDb: 6};
  hands.start = () => {
    if (!hands.ctx) {
      hands.ctx = new (window.AudioContext || window.webkitAudioContext)();
      hands.gain = hands.ctx.createGain();
      hands.gain.connect(hands.ctx.destination);
    }
    if (hands.ctx.state === 'suspended' && !ear.held) hands.ctx.resume();
  };
  const release = () => {
    if (!ear.held) return;
    ear.held = false;
    ear.loudMs = 0;
    hands.gain.gain.value = 1;
    hands.ctx.resume();
  };
  hands.stop = () => {
    hands.stopped = true;
    for (const source of hands.sources) { try { source.stop(); } catch (e) {} }
    hands.sources = [];
    if (ear.held) { ear.confirmed += 1; release(); }
  };
  hands.play = (piece) => {
    hands.start();
    if (piece.turn !== hands.turn) {
      hands.stop();
      Object.assign(hands, {turn: piece.turn, startAt: null, endAt: 0, stopped: false});
      ear.raiseDb = 0;
    }
    const turn = piece.turn;
    const url = new URL('gradio_api/file=' + piece.path, window.location.href);
    const decoded = fetch(url).then((r) => r.arrayBuffer()).then((b) => hands.ctx.decodeAudioData(b));
    hands.chain = hands.chain.then(() => decoded).then((buffer) => {
      if (hands.turn !== turn || hands.stopped) return;
      const source = hands.ctx.createBufferSource();
      source.buffer = buffer;
      source.connect(hands.gain);
      const at = Math.max(hands.ctx.currentTime + 0.03, hands.endAt);
      if (hands.startAt === null) hands.startAt = at;
      source.start(at);
      hands.endAt = at + buffer.duration;
      hands.sources.push(source);
    }).catch(() => {});
  };
  // the avatar's voice sounds now (a piece of it scheduled at this moment)
  const sounding = () => {
    if (!hands.ctx || hands.startAt === null || hands.stopped) return false;
    const now = hands.ctx.currentTime;
    return now >= hands.startAt && now < hands.endAt;
  };
  // the microphone's level over the last analyser window (dBFS) and the share of it in the voice's band
  const level = () => {
    ear.analyser.getFloatTimeDomainData(ear.data);
    let sum = 0;
    for (const x of ear.data) sum += x * x;
    const db = 10 * Math.log10(sum / ear.data.length + 1e-12);
    ear.analyser.getFloatFrequencyData(ear.spectrum);
    const hz = ear.ctx.sampleRate / ear.analyser.fftSize;
    let band = 0, all = 0;
    ear.spectrum.forEach((d, i) => { const p = Math.pow(10, d / 10); all += p; if (i * hz >= 150 && i * hz <= 4000) band += p; });
    return {db, voiceShare: all > 0 ? band / all : 0};
  };
  const hear = () => {
    if (!ear.analyser) return;
    const t = performance.now();
    const {db, voiceShare} = level();
    const state = document.querySelector('#live_state textarea');
    const on = state && state.value && state.value !== 'off';
    const speaking = on && sounding();
    if (!speaking && !ear.held) ear.floorDb = db < ear.floorDb ? db : ear.floorDb + 0.005 * (db - ear.floorDb);
    const loud = db >= Math.max(ear.minDb, ear.floorDb + ear.overFloorDb) + ear.raiseDb && voiceShare >= 0.5;
    // voiced time, leaking away at half speed in the gaps between syllables
    const dt = Math.min(t - (ear.lastT || t), 50);
    ear.lastT = t;
    ear.loudMs = loud ? Math.min(ear.loudMs + dt, 2 * ear.needMs) : Math.max(0, ear.loudMs - dt / 2);
    if (loud) ear.quietSince = t;
    if (!ear.held && speaking && ear.loudMs >= ear.needMs) {
      ear.held = true;
      ear.heldAt = t;
      ear.holds += 1;
      hands.gain.gain.value = 0;
      hands.ctx.suspend();
      const face = document.querySelector('#live_video video');
      if (face) face.pause();
    } else if (ear.held) {
      const heldS = (t - ear.heldAt) / 1000, quietS = (t - ear.quietSince) / 1000;
      const hearing = state && state.value === 'hearing';
      if ((heldS >= ear.holdMinS && quietS >= ear.resumeQuietS && !hearing) || heldS >= ear.holdMaxS) {
        ear.resumed += 1;
        ear.raiseDb += ear.stepDb;
        release();
      }
    }
  };
  hands.listen = (stream) => {
    if (!stream.getAudioTracks().length) return;
    if (!ear.ctx) ear.ctx = new (window.AudioContext || window.webkitAudioContext)();
    if (ear.ctx.state === 'suspended') ear.ctx.resume();
    ear.analyser = ear.ctx.createAnalyser();
    ear.analyser.fftSize = 1024;
    ear.analyser.smoothingTimeConstant = 0;
    ear.data = new Float32Array(ear.analyser.fftSize);
    ear.spectrum = new Float32Array(ear.analyser.frequencyBinCount);
    ear.ctx.createMediaStreamSource(stream).connect(ear.analyser);
  };
  const devices = navigator.mediaDevices;
  if (devices && devices.getUserMedia) {
    const open = devices.getUserMedia.bind(devices);
    devices.getUserMedia = (c) => {
      // a microphone alone (the hands-free one): echo cancellation on, so the ear hears the person
      const mic = c && c.audio && !c.video;
      const asked = mic && c.audio === true ? {...c, audio: {echoCancellation: true, noiseSuppression: true,
                                                             autoGainControl: true}} : c;
      return open(asked).then((stream) => { if (mic) hands.listen(stream); return stream; });
    };
  }
  setInterval(hear, 16);
  const clock = () => {
    if (hands.ctx && hands.startAt !== null && !hands.stopped) {
      const now = hands.ctx.currentTime;
      if (ear.held) return {playing: true, t: now - hands.startAt, gap: false, held: true};
      if (now >= hands.startAt && now < hands.endAt) return {playing: true, t: now - hands.startAt, gap: false};
      if (now >= hands.startAt && now < hands.endAt + 0.6) return {playing: false, t: now - hands.startAt, gap: true};
    }
    const voice = document.querySelector('#live_audio audio');
    if (voice && !voice.paused && !voice.ended && voice.currentTime > 0) return {playing: true, t: voice.currentTime, gap: false};
    return {playing: false, t: 0, gap: false};
  };
  setInterval(() => {
    const face = document.querySelector('#live_video video');
    const c = clock();
    if (!face) return;
    face.muted = true;
    if (!c.playing || c.held) return;
    for (let i = 0; i < face.buffered.length; i++) {
      if (face.buffered.start(i) <= c.t && c.t < face.buffered.end(i)) {
        if (Math.abs(face.currentTime - c.t) > 0.2) face.currentTime = c.t;
        if (face.paused) face.play().catch(() => {});
        return;
      }
    }
  }, 200);
  const post = (id, value) => {
    const box = document.querySelector('#' + id + ' textarea');
    if (!box || box.value === value) return;
    box.value = value;
    box.dispatchEvent(new Event('input', {bubbles: true}));
  };
  setInterval(() => {
    const c = clock();
    post('player_state', JSON.stringify({playing: c.playing, t: Math.round(c.t * 100) / 100}));
    const speaking = c.playing || c.gap;
    const state = document.querySelector('#live_state textarea');
    const shown = document.querySelector('#live_status');
    if (state && shown) {
      const now = c.held ? 'hearing' : speaking ? 'speaking' : (state.value || 'off');
      if (shown.dataset.state !== now) { shown.dataset.state = now; shown.textContent = words[now] || now; }
    }
    const listening = document.querySelector('#listening_face');
    const face = document.querySelector('#live_video');
    if (listening && face) {
      const idle = !speaking && !!listening.querySelector('video[src]');
      listening.style.display = idle ? '' : 'none';
      face.style.display = idle ? 'none' : '';
    }
  }, 100);
}
"""

#: The hands-free microphone opened (a click): the voice player may sound from now on.
START_JS = "() => { if (window.e3rgVoice) window.e3rgVoice.start(); }"

#: A piece of a hands-free reply's voice (``{"path", "turn"}``): played as soon as it arrives.
PIECE_JS = "(piece) => { if (piece && window.e3rgVoice) window.e3rgVoice.play(JSON.parse(piece)); return piece; }"

#: Barge-in: the server heard the person talk over the reply; the page falls silent at once.
PAUSE_JS = """
(cut) => {
  if (window.e3rgVoice) window.e3rgVoice.stop();
  for (const selector of ['#live_audio audio', '#live_video video']) {
    const media = document.querySelector(selector);
    if (media) media.pause();
  }
  return cut;
}
"""


def page_js(status_words: Mapping[str, str]) -> str:
    """``PAGE_JS`` with the status words it shows."""
    return PAGE_JS.replace("__WORDS__", json.dumps(dict(status_words)), 1)
