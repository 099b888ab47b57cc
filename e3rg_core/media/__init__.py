"""Decoding and encoding audio and video (soundfile, the ffmpeg binary of imageio-ffmpeg); no model code."""
