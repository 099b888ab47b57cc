"""Voice prosody of one recorded turn: pitch, loudness, speaking rate, pauses -> arousal and a soft emotion guess.

No speech-emotion model ships in a package, so this is signal analysis, simple enough to state every
rule here. ``VoiceReader().read(wav)`` measures any WAV soundfile reads (in the pipeline, the 16 kHz
mono clip of ``asr.extract_audio``; for the output check, the avatar's own 22-24 kHz speech).

Measures
--------
* **Pitch**: Praat's autocorrelation tracker (parselmouth), in two passes (Hirst 2011; De Looze &
  Hirst 2008): 60-700 Hz finds the speaker's quartiles, then 0.75 x Q1 to 1.5 x Q3, which removes
  most octave jumps. (Hirst's 2.5 x Q3 for expressive speech let octave-up errors into an actress's
  creaky line: a 29-semitone span where pyin found 19.) ``f0_median_hz`` is the median of the voiced
  frames; ``f0_range_semitones`` the span between their 10th and 90th percentiles, in semitones (the
  "span" measure of Mennen, Schaeffler & Docherty 2012). Praat was chosen over librosa's pyin: both
  passes take 0.015-0.02 s on a 5-s clip against pyin's 0.54 s (bench/voice_prosody.py), with no
  numba compilation (pyin's first call in a fresh process took 2.8 s), and fewer octave jumps (on the
  heart voice pyin, 60-700 Hz, gave 20-25 semitone spans where Praat gave 4-12).
* **Speech and pauses**: ``speech.timeline.voiced_spans`` (sound within 35 dB of the loudest frame,
  gaps under 0.12 s closed), its threshold raised to 6 dB above the noise floor (the quietest 5 % of
  20-ms frames) on noisy recordings, so room noise is not speech. ``voiced_s`` is the speech time
  (pauses removed, as ``Transcript.voiced_s``); ``pause_ratio`` the share of silence between the
  first and the last sound; ``snr_db`` the speech level over that floor.
* **Loudness**: ``level_dbfs``, ``speech.prosody.active_level_dbfs`` of the speech spans.
* **Speaking rate**: syllables per second of speech time (an articulation rate). With word timings
  (Whisper's) the syllables are counted in the words by a vowel-group rule (``count_syllables``, no
  dictionary) and the speech is taken between the first and the last word (``rate_source="words"``).
  Without words they are the syllable nuclei of de Jong & Wempe (2009): voiced intensity peaks above
  the 99th percentile minus 25 dB, separated by dips of 2 dB (``"nuclei"``). That method misses
  unstressed syllables: on our two voices (4 texts, 5-8 emotions each) it found 0.85 of the true count
  (0.75-0.96), so its count is divided by ``NUCLEI_PER_SYLLABLE`` = 0.85. It cannot resolve rate
  changes under ~10 %. Under ``MIN_TIMING_SNR_DB`` of SNR the spans lose weak syllables, so rate and
  pauses are then left out of the judgement.

Arousal
-------
``arousal`` (-1..1) is ``tanh`` of the mean of per-cue scores (each clipped to +-2), one unit being
roughly the change from neutral to a full-blown emotional portrayal (the size of the differences
Banse & Scherer 1996 report). With a ``reference`` (the same speaker's neutral reading) each cue is
compared with it: level (6 dB a unit), rate (x1.25 a unit, log scale), F0 span (3 semitones a unit)
and F0 median (3 semitones a unit). Without one, speaker-independent norms stand in:

* level against -23 dBFS (``NEUTRAL_LEVEL_DBFS``, the level our voices speak at neutrally) with a
  wider unit, 8 dB, because a microphone's gain is unknown (browsers' automatic gain control helps);
* rate against 5 syllables/s: Jacewicz et al. (2009, 2010) find American English articulation rates
  of about 5 syl/s (slower in reading than in talk); Pellegrino, Coupé & Marsico (2011) about 6 syl/s
  for English read texts. Our neutral voices measure 5.1-6.7 depending on the text;
* F0 span against 7 semitones (our neutral voices: 6.4-7.8);
* F0 height not at all. A gender-free typical F0 would call every man "low", and the median above
  the clip's own floor (its 10th percentile; Traunmüller & Eriksson find F0 excursions rising from a
  base about 1.5 SD below the mean) is just half the 10-90 span for a near-symmetric distribution (0.35-0.40 of
  it on every clip we measured), so counting it would count the span twice.

Pauses are reported but not judged: they follow planning and hesitation as much as feeling.
Dominance and valence are not estimated: no rule on these cues would beat a guess.

Emotion
-------
Prosody tells arousal far better than valence (happy and angry voices are both loud, fast and high:
Juslin & Laukka 2003), so ``distribution`` is deliberately flat within an arousal band. Each coarse
class has an arousal centre (``AROUSAL_CENTRE``, after Russell's 1980 circumplex: angry, happy, fear,
surprised +0.6; neutral 0; disgusted, contempt -0.2; sad -0.6) and a Gaussian weight of the distance
(width 0.4), tilted a little by the F0 span, the one cue the literature separates within a band
(Juslin & Laukka 2003: much F0 variability in anger and joy, little in fear and sadness). Which class
of a band comes out on top is therefore arbitrary; the band is the information.

``cues`` names only what deviates (a score of 0.5 or more) for the LLM prompt, e.g.
"voice: high pitch, wide pitch range, loud, fast", or "voice: typical pitch, loudness and pace".
Silence (nothing voiced) gives ``note`` ``NO_SPEECH``, less than 1 s of speech ``TOO_SHORT``; both have
arousal 0, no cues and an empty distribution, so the emotion vote skips them. Only an unreadable file
is an error (``InputError``).

Sources: Banse & Scherer 1996, J Pers Soc Psychol 70:614. de Jong & Wempe 2009, Behav Res Methods
41:385. De Looze & Hirst 2008, Speech Prosody. Hirst 2011, J Speech Sciences 1:55. Jacewicz, Fox,
O'Neill & Salmons 2009, Lang Var Change 21:233. Jacewicz, Fox & Wei 2010, JASA 128:839. Juslin &
Laukka 2003, Psychol Bull 129:770. Mennen, Schaeffler & Docherty 2012, JASA 131:2249. Pellegrino,
Coupé & Marsico 2011, Language 87:539. Russell 1980, J Pers Soc Psychol 39:1161. Traunmüller &
Eriksson, "The frequency range of the voice fundamental in the speech of male and female adults",
Stockholm University, 1995.
"""

from __future__ import annotations

import logging
import math
import re
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from e3rg_core.emotions import COARSE
from e3rg_core.errors import BackendUnavailable
from e3rg_core.media.audio import read_audio
from e3rg_core.speech.prosody import NEUTRAL_LEVEL_DBFS, active_level_dbfs
from e3rg_core.speech.timeline import voiced_spans
from e3rg_core.types import TimedUnit

logger = logging.getLogger(__name__)

NO_SPEECH = "no speech"
TOO_SHORT = "too short to judge (< 1 s of speech)"
#: less speech than this, seconds, and arousal is not judged
MIN_SPEECH_S = 1.0
#: fewer pitched seconds than this and the clip holds no speech (noise, a cough, a click)
MIN_PITCHED_S = 0.2

# pitch tracking (Hirst 2011 two-pass: floor 0.75 x Q1, ceiling 1.5 x Q3)
PITCH_STEP_S = 0.01
FIRST_PASS_HZ = (60.0, 700.0)
FLOOR_FACTOR, CEILING_FACTOR = 0.75, 1.5

# speech spans: 35 dB under the loudest frame, but never within 6 dB of the noise floor
SPAN_TOP_DB, NOISE_MARGIN_DB = 35.0, 6.0
#: under this SNR (as ``snr_db`` measures it) the spans lose weak syllables, so rate and pauses are
#: not judged: with white noise added to our voices, an estimated 21 dB moved the rate by 1-4 %,
#: 16 dB by 5-12 %, 12 dB by 15-45 %
MIN_TIMING_SNR_DB = 20.0
#: the speech of a transcribed clip lies between its first and last word, give or take this
WORD_MARGIN_S = 0.05

# syllable nuclei (de Jong & Wempe 2009), and their measured undercount on our voices
NUCLEI_SILENCE_DB = -25.0
NUCLEI_MIN_DIP_DB = 2.0
NUCLEI_WINDOW_PITCH_HZ = 100.0  # Praat's default "minimum pitch" of To Intensity: a 32 ms window
NUCLEI_PER_SYLLABLE = 0.85

# the norms used without a reference, and the size of one arousal unit per cue
NORM_LEVEL_DBFS = NEUTRAL_LEVEL_DBFS  # -23
NORM_RATE_SYL_S = 5.0
NORM_SPAN_SEMITONES = 7.0
UNIT_LEVEL_DB = 6.0
UNIT_LEVEL_DB_NO_REFERENCE = 8.0
UNIT_RATE_RATIO = 1.25
UNIT_SEMITONES = 3.0
SCORE_LIMIT = 2.0
#: a cue is named when its score reaches this
CUE_SCORE = 0.5
#: pauses are named above this share of the speech span (our voices pause 10-25 % of it; spontaneous
#: speech pauses more, so only half the time silent is named), or this much above the reference's share
PAUSE_CUE_RATIO, PAUSE_CUE_OVER_REFERENCE = 0.5, 0.15

#: each coarse class's place on the arousal axis (Russell 1980), deliberately equal within a band
AROUSAL_CENTRE: dict[str, float] = {
    "angry": 0.6, "happy": 0.6, "fear": 0.6, "surprised": 0.6,
    "neutral": 0.0, "disgusted": -0.2, "contempt": -0.2, "sad": -0.6,
}
AROUSAL_WIDTH = 0.4
#: how a wide (+) or narrow (-) F0 span tilts a class, on the log scale (Juslin & Laukka 2003)
SPAN_TILT: dict[str, float] = {"angry": 0.25, "happy": 0.25, "surprised": 0.25, "fear": -0.25, "sad": -0.25}


@dataclass(frozen=True)
class VoiceReading:
    """What the voice of one clip sounds like, and the arousal and emotions that suggests."""

    f0_median_hz: float  # 0 when nothing was voiced
    f0_range_semitones: float  # 10th-90th percentile span of the voiced frames
    level_dbfs: float  # active level of the speech spans (RMS of the frames within 35 dB of the loudest)
    speaking_rate: float  # syllables per second of speech time (pauses removed)
    pause_ratio: float  # 0..1, silence between the first and the last sound
    voiced_s: float  # speech time, pauses removed
    arousal: float  # -1..1; 0 when not judged
    cues: str  # "voice: loud, fast" for the LLM prompt; "" when not judged
    distribution: Mapping[str, float] = field(default_factory=dict)  # over COARSE, sums to 1; {} when not judged
    note: str = ""  # "", NO_SPEECH or TOO_SHORT
    rate_source: str = ""  # "words" (syllables counted in the transcript) or "nuclei" (intensity peaks)
    snr_db: float = 0.0  # sound over the noise floor (the quietest 5 % of 20-ms frames); 99 for digital silence
    seconds: float = 0.0  # processing time

    @property
    def judged(self) -> bool:
        """Whether arousal and emotions were judged (not silence, not too short)."""
        return bool(self.distribution)


class VoiceReader:
    """Reads prosody from WAV files with Praat (parselmouth) and numpy; holds no model."""

    def __init__(self) -> None:
        """Import Praat and warm librosa's span finder (importing and first calling it take 1.5-3 s)."""
        try:
            import parselmouth  # noqa: F401
        except ImportError as exc:
            raise BackendUnavailable("voice prosody needs Praat: pip install praat-parselmouth==0.4.7") from exc
        t = time.perf_counter()
        tone = np.sin(2 * np.pi * 150 * np.arange(1600) / 16000).astype(np.float32)
        voiced_spans(tone, 16000)
        logger.debug("warmed the span finder in %.2f s", time.perf_counter() - t)

    def read(self, wav_path: Path, *, words: Sequence[TimedUnit] = (),
             reference: VoiceReading | None = None) -> VoiceReading:
        """Measure the voice in ``wav_path``; ``words`` (timed) give the syllable count, ``reference`` a baseline.

        ``reference`` is a reading of the same speaker's neutral voice; one that was not judged is ignored.
        Raises ``InputError`` for a missing, empty or unreadable file.
        """
        start = time.perf_counter()
        audio = read_audio(Path(wav_path))
        samples, sr = audio.samples, audio.sample_rate_hz
        spans, snr_db = _speech_spans(samples, sr)
        sound = _sound(samples, sr)
        f0_times, f0_all = _pitch(sound) if spans else (np.zeros(0), np.zeros(0))
        f0 = f0_all[f0_all > 0]
        if len(f0) * PITCH_STEP_S < MIN_PITCHED_S:  # silence, noise, a click: nothing voiced
            return VoiceReading(0.0, 0.0, active_level_dbfs(samples, sr), 0.0, 0.0, 0.0, 0.0, "", {},
                                NO_SPEECH, "", snr_db, time.perf_counter() - start)
        counted = [w for w in words if count_syllables(w.symbol) > 0]
        if counted:  # the speech between the first and the last word (breaths and bumps outside are not speech)
            lo, hi = counted[0].start_s - WORD_MARGIN_S, counted[-1].end_s + WORD_MARGIN_S
            inside = [(max(a, lo), min(b, hi)) for a, b in spans if b > lo and a < hi]
            spans = inside or spans
        speech_s = float(sum(b - a for a, b in spans))
        extent_s = spans[-1][1] - spans[0][0]
        if counted:
            syllables, source = float(sum(count_syllables(w.symbol) for w in counted)), "words"
        else:
            syllables = _nuclei(sound, spans, f0_times, f0_all) / NUCLEI_PER_SYLLABLE
            source = "nuclei"
        speech = np.concatenate([samples[int(a * sr): int(b * sr)] for a, b in spans])
        semitones = 12 * np.log2(f0)
        p10, p50, p90 = np.percentile(semitones, [10, 50, 90])
        reading = VoiceReading(
            f0_median_hz=float(2 ** (p50 / 12)), f0_range_semitones=float(p90 - p10),
            level_dbfs=active_level_dbfs(speech, sr), speaking_rate=syllables / max(speech_s, 1e-3),
            pause_ratio=float(max(0.0, 1 - speech_s / extent_s)) if extent_s > 0 else 0.0,
            voiced_s=speech_s, arousal=0.0, cues="", distribution={}, note="", rate_source=source, snr_db=snr_db)
        if speech_s < MIN_SPEECH_S:
            return replace(reading, note=TOO_SHORT, seconds=time.perf_counter() - start)
        if reference is not None and not reference.judged:
            reference = None
        timing = snr_db >= MIN_TIMING_SNR_DB and (reference is None or reference.snr_db >= MIN_TIMING_SNR_DB)
        scores = _scores(reading, reference, timing=timing)
        arousal = math.tanh(sum(scores.values()) / len(scores))
        return replace(reading, arousal=arousal, cues=_cues(reading, scores, reference, timing=timing),
                       distribution=coarse_distribution(arousal, scores["span"]), seconds=time.perf_counter() - start)


# ---------------------------------------------------------------------------------------------
# measuring


def _speech_spans(samples: np.ndarray, sample_rate_hz: int) -> tuple[list[tuple[float, float]], float]:
    """Sound spans, the threshold kept above the noise floor of a noisy recording; and the clip's SNR (dB)."""
    hop = max(1, sample_rate_hz // 200)  # the framing of voiced_spans: 5 ms hop, 20 ms frames
    frame = 4 * hop
    n = (len(samples) - frame) // hop + 1
    if n < 1 or not np.any(np.abs(samples) > 1e-4):
        return [], 0.0
    power = np.concatenate([[0.0], np.cumsum(np.asarray(samples, dtype=np.float64) ** 2)])
    energy = (power[frame: frame + n * hop: hop] - power[0: n * hop: hop]) / frame
    db = 10 * np.log10(np.maximum(energy, 1e-12))
    floor_db = float(np.percentile(db, 5))
    top_db = float(np.clip(db.max() - floor_db - NOISE_MARGIN_DB, 3.0, SPAN_TOP_DB))
    loud = energy[db > floor_db + NOISE_MARGIN_DB]
    snr_db = float(min(10 * np.log10(loud.mean()) - floor_db, 99.0)) if loud.size else 0.0
    return voiced_spans(samples, sample_rate_hz, top_db=top_db), snr_db


def _sound(samples: np.ndarray, sample_rate_hz: int):
    import parselmouth

    return parselmouth.Sound(np.asarray(samples, dtype=np.float64), sampling_frequency=sample_rate_hz)


def _pitch(sound) -> tuple[np.ndarray, np.ndarray]:
    """Frame times and F0 (Hz, 0 where unvoiced) every 10 ms, by Praat's two-pass autocorrelation method."""
    times, f0 = _track(sound, *FIRST_PASS_HZ)
    voiced = f0[f0 > 0]
    if len(voiced) < 10:
        return times, f0
    q1, q3 = np.percentile(voiced, [25, 75])
    return _track(sound, max(30.0, FLOOR_FACTOR * q1), min(1000.0, CEILING_FACTOR * q3))


def _track(sound, floor_hz: float, ceiling_hz: float) -> tuple[np.ndarray, np.ndarray]:
    pitch = sound.to_pitch_ac(time_step=PITCH_STEP_S, pitch_floor=floor_hz, pitch_ceiling=ceiling_hz)
    return np.asarray(pitch.xs()), np.asarray(pitch.selected_array["frequency"])


def _nuclei(sound, spans: list[tuple[float, float]], f0_times: np.ndarray, f0: np.ndarray) -> int:
    """Syllable nuclei (de Jong & Wempe 2009): voiced intensity peaks inside the speech spans."""
    intensity = sound.to_intensity(minimum_pitch=NUCLEI_WINDOW_PITCH_HZ, time_step=PITCH_STEP_S)
    db, times = intensity.values[0], np.asarray(intensity.xs())
    if len(db) < 3 or len(f0) == 0:
        return 0
    threshold = np.percentile(db, 99) + NUCLEI_SILENCE_DB
    i = np.arange(1, len(db) - 1)
    peaks = i[(db[i] > db[i - 1]) & (db[i] >= db[i + 1]) & (db[i] > threshold)]
    kept: list[int] = []
    for k in peaks:  # two peaks are two syllables only with a dip of MIN_DIP below the lower one between them
        if kept and db[kept[-1]: k + 1].min() > min(db[kept[-1]], db[k]) - NUCLEI_MIN_DIP_DB:
            if db[k] > db[kept[-1]]:
                kept[-1] = int(k)
            continue
        kept.append(int(k))
    t = times[kept]
    nearest = np.clip(np.searchsorted(f0_times, t), 0, len(f0) - 1)
    inside = np.zeros(len(t), dtype=bool)
    for a, b in spans:
        inside |= (t >= a) & (t <= b)
    return int(np.count_nonzero((f0[nearest] > 0) & inside))


_VOWELS = re.compile(r"[aeiouy]+")


def count_syllables(word: str) -> int:
    """Syllables of an English word by vowel groups, less a silent final e, -ed and -es; digits count one each."""
    w = re.sub(r"[^a-z0-9]", "", word.lower())
    digits = sum(ch.isdigit() for ch in w)
    w = re.sub(r"[0-9]", "", w)
    n = len(_VOWELS.findall(w))
    if n > 1 and w.endswith("e") and not w.endswith(("le", "ee", "ye")):
        n -= 1  # some, home, there (but table, free)
    elif n > 1 and w.endswith("ed") and not w.endswith(("ted", "ded")):
        n -= 1  # walked, loved (but wanted, needed)
    elif n > 1 and w.endswith("es") and not re.search(r"(s|x|z|ch|sh|c|g)es$", w):
        n -= 1  # makes, times (but places, wishes)
    if w and n == 0:
        n = 1  # "hmm", "shh"
    return n + digits


# ---------------------------------------------------------------------------------------------
# judging


def _scores(r: VoiceReading, reference: VoiceReading | None, *, timing: bool = True) -> dict[str, float]:
    """Each cue's deviation in arousal units (clipped), against the reference or the norms.

    Without ``timing`` (a noisy clip) the rate is left out."""
    if reference is not None:
        raw = {"level": (r.level_dbfs - reference.level_dbfs) / UNIT_LEVEL_DB,
               "rate": math.log(max(r.speaking_rate, 1e-3) / max(reference.speaking_rate, 1e-3))
               / math.log(UNIT_RATE_RATIO),
               "span": (r.f0_range_semitones - reference.f0_range_semitones) / UNIT_SEMITONES,
               "height": 12 * math.log2(r.f0_median_hz / reference.f0_median_hz) / UNIT_SEMITONES}
    else:
        raw = {"level": (r.level_dbfs - NORM_LEVEL_DBFS) / UNIT_LEVEL_DB_NO_REFERENCE,
               "rate": math.log(max(r.speaking_rate, 1e-3) / NORM_RATE_SYL_S) / math.log(UNIT_RATE_RATIO),
               "span": (r.f0_range_semitones - NORM_SPAN_SEMITONES) / UNIT_SEMITONES}
    if not timing:
        del raw["rate"]
    return {k: float(np.clip(v, -SCORE_LIMIT, SCORE_LIMIT)) for k, v in raw.items()}


def _cues(r: VoiceReading, scores: Mapping[str, float], reference: VoiceReading | None, *, timing: bool) -> str:
    """The deviating cues in a few words: "voice: high pitch, loud, fast"."""
    words = []
    for key, high, low in (("height", "high pitch", "low pitch"), ("span", "wide pitch range", "monotone"),
                           ("level", "loud", "quiet"), ("rate", "fast", "slow")):
        s = scores.get(key, 0.0)
        if s >= CUE_SCORE:
            words.append(high)
        elif s <= -CUE_SCORE:
            words.append(low)
    limit = reference.pause_ratio + PAUSE_CUE_OVER_REFERENCE if reference is not None else PAUSE_CUE_RATIO
    if timing and r.pause_ratio >= limit:
        words.append("long pauses")
    return "voice: " + (", ".join(words) if words else "typical pitch, loudness and pace")


def coarse_distribution(arousal: float, span_score: float = 0.0) -> dict[str, float]:
    """A soft guess over COARSE from arousal (and a small tilt by the F0 span score); sums to 1."""
    logits = {c: -((arousal - AROUSAL_CENTRE[c]) ** 2) / (2 * AROUSAL_WIDTH ** 2)
              + SPAN_TILT.get(c, 0.0) * float(np.clip(span_score, -1.0, 1.0)) for c in COARSE}
    top = max(logits.values())
    weights = {c: math.exp(v - top) for c, v in logits.items()}
    total = sum(weights.values())
    return {c: weights[c] / total for c in COARSE}
