"""Perceiving the user's recorded turn, and the avatar's own output.

* ``asr``: speech recognition of a mic clip or a video's sound (Whisper base, word timings), with
  ``_whisper``, faster-whisper's model with its encoder on its own threads;
* ``voice``: the voice's prosody (pitch, range, loudness, rate, pauses) as arousal cues;
* ``face``: the facial expression over sampled webcam frames (mini-Xception FER2013);
* ``fusion``: all three for one turn: cues for the prompt, the face and voice as weighted voters;
* ``consistency``: the same readers on the avatar's generated video and audio.

Nothing here loads a model at import; readers load their weights on first use.
"""
