"""Perceiving the user: what they said (``asr``: speech recognition of a mic clip or a video's sound).

Nothing here loads a model at import; each perceiver loads its weights in its constructor.
"""
