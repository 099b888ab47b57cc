"""Regenerate the sample's user clips with the embedded voices: 16 kHz mono 16-bit WAV.

    python e3rg_core/eval/sample/make_media.py

Each clip is the speaker's last line of one conversation, named as AvaMERG names its media
(``dia{conversation_id}utt{index}_{speakerID}.wav``), spoken in the emotion of its gold label (under
the "hit" map) by the voice of the speaker's gender, pitched by age. Conversations 00005 and 00006
have no clips on purpose: they are the sample's text-only turns.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))  # run as a script from anywhere in the checkout

CONVERSATIONS = ("00001", "00002", "00003", "00004")
SAMPLE_RATE_HZ = 16000
PITCH_BY_AGE = {"child": 4.0, "young": 1.0, "middle-aged": 0.0, "elderly": -2.0}  # semitones


def main() -> None:
    import numpy as np
    import soundfile
    from scipy.signal import resample_poly

    from e3rg_core.emotions import normalize_label, wheel
    from e3rg_core.eval.avamerg import media_name
    from e3rg_core.memory.profiles import VoiceSettings
    from e3rg_core.speech.embedded import EmbeddedSpeaker

    data = json.loads((HERE / "dialogues.json").read_text(encoding="utf-8"))
    out_dir = HERE / "media"
    out_dir.mkdir(exist_ok=True)
    for old in out_dir.glob("*.wav"):
        old.unlink()
    speaker = EmbeddedSpeaker(seed=0)
    total = 0
    with tempfile.TemporaryDirectory() as tmp:
        for conv in data:
            if conv["conversation_id"] not in CONVERSATIONS:
                continue
            turn = conv["turns"][-1]
            line = turn["dialogue_history"][-1]
            profile = conv["speaker_profile"]
            point = wheel(normalize_label(turn["chain_of_empathy"]["speaker_emotion"]) or "neutral")
            voice = VoiceSettings(voice="joe" if profile["gender"] == "male" else "heart",
                                  pitch_shift_semitones=PITCH_BY_AGE[profile["age"]])
            speech = speaker.synthesize(line["utterance"], emotion=point.coarse, intensity=point.intensity,
                                        voice=voice, out_path=Path(tmp) / "clip.wav")
            samples, rate = soundfile.read(str(speech.wav_path), dtype="float32")
            samples = resample_poly(samples, SAMPLE_RATE_HZ, rate).astype(np.float32)
            path = out_dir / media_name(conv["conversation_id"], line["index"], str(profile["ID"]), ".wav")
            soundfile.write(str(path), np.clip(samples, -1, 1), SAMPLE_RATE_HZ, subtype="PCM_16")
            total += path.stat().st_size
            print(f"{path.name}: {len(samples) / SAMPLE_RATE_HZ:.2f} s, {point.coarse}")
    print(f"{total / 1000:.0f} kB in {out_dir}")


if __name__ == "__main__":
    main()
