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
PAGE_JS = """
() => {
  const words = __WORDS__;
  const hands = window.e3rgVoice = {ctx: null, chain: Promise.resolve(), sources: [], turn: null,
                                    startAt: null, endAt: 0, stopped: true};
  hands.start = () => {
    if (!hands.ctx) hands.ctx = new (window.AudioContext || window.webkitAudioContext)();
    if (hands.ctx.state === 'suspended') hands.ctx.resume();
  };
  hands.stop = () => {
    hands.stopped = true;
    for (const source of hands.sources) { try { source.stop(); } catch (e) {} }
    hands.sources = [];
  };
  hands.play = (piece) => {
    hands.start();
    if (piece.turn !== hands.turn) {
      hands.stop();
      Object.assign(hands, {turn: piece.turn, startAt: null, endAt: 0, stopped: false});
    }
    const turn = piece.turn;
    const url = new URL('gradio_api/file=' + piece.path, window.location.href);
    const decoded = fetch(url).then((r) => r.arrayBuffer()).then((b) => hands.ctx.decodeAudioData(b));
    hands.chain = hands.chain.then(() => decoded).then((buffer) => {
      if (hands.turn !== turn || hands.stopped) return;
      const source = hands.ctx.createBufferSource();
      source.buffer = buffer;
      source.connect(hands.ctx.destination);
      const at = Math.max(hands.ctx.currentTime + 0.03, hands.endAt);
      if (hands.startAt === null) hands.startAt = at;
      source.start(at);
      hands.endAt = at + buffer.duration;
      hands.sources.push(source);
    }).catch(() => {});
  };
  const clock = () => {
    if (hands.ctx && hands.startAt !== null && !hands.stopped) {
      const now = hands.ctx.currentTime;
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
    if (!c.playing) return;
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
      const now = speaking ? 'speaking' : (state.value || 'off');
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
