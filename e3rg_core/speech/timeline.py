"""Phoneme and viseme timelines for lip sync.

The embedded engines say which phonemes they speak but not when. We time them against the audio
they made ("forced timing" by the envelope): each sentence's audio is known exactly (one synthesis
call per sentence); inside it, the voiced span is found with ``librosa.effects.split``, internal
pauses are matched to the phrase breaks of the text (commas, semicolons, dashes), and each phrase's
phonemes share its span in proportion to their typical lengths (vowels long, stops short). The
result is good to within a phoneme or two, which is what a mouth needs; the animator also follows
the audio envelope, so the jaw never opens in silence.

Visemes use the 15 Oculus names (``sil PP FF TH DD kk CH SS nn RR aa E ih oh ou``); phonemes are the
engines' IPA-like symbols (espeak IPA for Piper, misaki's alphabet for hibari, where ``A I O W Y``
are the diphthongs eɪ aɪ oʊ aʊ ɔɪ).
"""

from __future__ import annotations

import functools
import re
from typing import Iterable, Sequence

import numpy as np

from e3rg_core.types import TimedUnit

VISEMES: tuple[str, ...] = ("sil", "PP", "FF", "TH", "DD", "kk", "CH", "SS", "nn", "RR", "aa", "E", "ih", "oh", "ou")

# symbol -> (viseme, relative duration)
_TABLE: dict[str, tuple[str, float]] = {}
for _symbols, _viseme, _weight in (
    ("pbm", "PP", 0.7), ("fv", "FF", 0.8), ("θð", "TH", 0.7), ("tdɾʔ", "DD", 0.55),
    ("kgŋxɡ", "kk", 0.6), ("ʃʒʧʤ", "CH", 0.85), ("sz", "SS", 0.8), ("nlɫɬ", "nn", 0.6),
    ("ɹrɚɝ", "RR", 0.8), ("ɑæaʌɐɒ", "aa", 1.0), ("əᵊ", "aa", 0.5), ("ɛeA", "E", 1.0),
    ("ɪiɨjy", "ih", 0.9), ("ɔoOY", "oh", 1.1), ("uʊwWɯ", "ou", 1.0), ("IW", "aa", 1.3), ("h", "aa", 0.4),
):
    for _s in _symbols:
        _TABLE[_s] = (_viseme, _weight)
_TABLE["O"] = ("oh", 1.3)
_TABLE["A"] = ("E", 1.3)
_TABLE["Y"] = ("oh", 1.3)
# modifiers that lengthen or stress the previous symbol rather than sound on their own
_LENGTH = {"ː": 0.5, "ˑ": 0.25}
_IGNORED = set("ˈˌ̩̃ʰʲʷ‿-'")
_PHRASE_BREAK = re.compile(r"[,;:—–.!?…]+")
#: internal silences shorter than this are not pauses
MIN_PAUSE_S = 0.12


def symbols(phonemes: str) -> list[tuple[str, str, float]]:
    """(symbol, viseme, weight) for every sounding symbol of an IPA-like string; unknown symbols are skipped."""
    out: list[tuple[str, str, float]] = []
    for ch in phonemes:
        if ch in _LENGTH and out:
            sym, vis, w = out[-1]
            out[-1] = (sym + ch, vis, w * (1 + _LENGTH[ch]))
        elif ch in "ʃʒ" and out and out[-1][0] in "td":  # tʃ, dʒ written as two symbols
            out[-1] = (out[-1][0] + ch, "CH", 0.9)
        elif ch in _TABLE:
            out.append((ch, *_TABLE[ch]))
    return out


def phrases(phonemes: str) -> list[str]:
    """The phrases of a phoneme string, split at punctuation."""
    return [p for p in (s.strip() for s in _PHRASE_BREAK.split(phonemes)) if symbols(p)]


def voiced_spans(samples: np.ndarray, sample_rate_hz: int, *, top_db: float = 35.0) -> list[tuple[float, float]]:
    """Spans (seconds) of sound, with gaps shorter than ``MIN_PAUSE_S`` closed."""
    import librosa

    y = np.asarray(samples, dtype=np.float32)
    if y.size == 0 or not np.any(np.abs(y) > 1e-4):
        return []
    hop = max(1, sample_rate_hz // 200)
    intervals = librosa.effects.split(y, top_db=top_db, frame_length=4 * hop, hop_length=hop)
    spans: list[tuple[float, float]] = []
    for start, end in intervals:
        a, b = start / sample_rate_hz, end / sample_rate_hz
        if spans and a - spans[-1][1] < MIN_PAUSE_S:
            spans[-1] = (spans[-1][0], b)
        else:
            spans.append((a, b))
    return spans


def _phrase_spans(spans: list[tuple[float, float]], n_phrases: int) -> list[tuple[float, float]]:
    """Divide the voiced spans into ``n_phrases`` consecutive spans at the longest pauses."""
    start, end = spans[0][0], spans[-1][1]
    if n_phrases <= 1:
        return [(start, end)]
    if len(spans) == 1:
        return _split_evenly(start, end, n_phrases)
    gaps = sorted(range(len(spans) - 1), key=lambda i: spans[i + 1][0] - spans[i][1], reverse=True)
    cut = sorted(gaps[: n_phrases - 1])
    out, first = [], 0
    for i in cut:
        out.append((spans[first][0], spans[i][1]))
        first = i + 1
    out.append((spans[first][0], end))
    if len(out) < n_phrases:  # fewer pauses than phrase breaks: share the last span
        last = out.pop()
        out += _split_evenly(last[0], last[1], n_phrases - len(out))
    return out


def _split_evenly(start: float, end: float, n: int) -> list[tuple[float, float]]:
    edges = np.linspace(start, end, n + 1)
    return [(float(edges[i]), float(edges[i + 1])) for i in range(n)]


def align(phonemes: Sequence[str], samples: np.ndarray, sample_rate_hz: int, *,
          offset_s: float = 0.0) -> tuple[list[TimedUnit], list[TimedUnit]]:
    """Time the phoneme strings of one stretch of audio (one sentence, or several in order).

    Returns (phonemes, visemes), the visemes with silences (``sil``) between phrases, merged where
    consecutive units share a viseme. Times are offset by ``offset_s``.
    """
    parts = [p for text in phonemes for p in phrases(text)]
    spans = voiced_spans(samples, sample_rate_hz)
    if not parts or not spans:
        return [], []
    timed: list[TimedUnit] = []
    vis: list[TimedUnit] = []
    for part, (a, b) in zip(parts, _phrase_spans(spans, len(parts))):
        units = symbols(part)
        weights = np.array([w for _, _, w in units])
        edges = a + (b - a) * np.concatenate([[0.0], np.cumsum(weights) / weights.sum()])
        for (sym, viseme, _), t0, t1 in zip(units, edges[:-1], edges[1:]):
            timed.append(TimedUnit(round(offset_s + float(t0), 4), round(offset_s + float(t1), 4), sym))
            vis.append(TimedUnit(round(offset_s + float(t0), 4), round(offset_s + float(t1), 4), viseme))
    return timed, _with_silences(vis, offset_s, offset_s + len(samples) / sample_rate_hz)


def _with_silences(units: Iterable[TimedUnit], start_s: float, end_s: float) -> list[TimedUnit]:
    """Merge equal neighbours and fill every gap (and both ends) with ``sil``."""
    out: list[TimedUnit] = []
    cursor = start_s
    for u in units:
        if u.start_s > cursor + 1e-4:
            out.append(TimedUnit(round(cursor, 4), u.start_s, "sil"))
        if out and out[-1].symbol == u.symbol and abs(out[-1].end_s - u.start_s) < 1e-4:
            out[-1] = TimedUnit(out[-1].start_s, u.end_s, u.symbol)
        else:
            out.append(u)
        cursor = u.end_s
    if end_s > cursor + 1e-4:
        out.append(TimedUnit(round(cursor, 4), round(end_s, 4), "sil"))
    return out


def join(parts: Sequence[tuple[list[TimedUnit], list[TimedUnit]]], total_s: float) -> tuple[tuple[TimedUnit, ...], tuple[TimedUnit, ...]]:
    """Concatenate per-sentence timelines (already offset) into one, silences filled to ``total_s``."""
    phon = [u for p, _ in parts for u in p]
    vis = [u for _, v in parts for u in v if u.symbol != "sil"]
    return tuple(phon), tuple(_with_silences(vis, 0.0, total_s))


def text_timeline(text: str, samples: np.ndarray, sample_rate_hz: int) -> tuple[tuple[TimedUnit, ...], tuple[TimedUnit, ...]]:
    """Phonemes and visemes of any English speech whose words are ``text`` (for engines that give no phonemes).

    The text is turned into phonemes with hibari's offline G2P (in the ``hibari-tts`` package).
    """
    from e3rg_core.speech.base import split_sentences

    g2p = _g2p()
    ps = [g2p(s) for s in split_sentences(text)]
    phon, vis = align([p for p in ps if p], samples, sample_rate_hz)
    return join([(phon, vis)], len(samples) / sample_rate_hz)


@functools.lru_cache(maxsize=1)
def _g2p():
    from hibari.g2p import G2P

    return G2P(british=False)
