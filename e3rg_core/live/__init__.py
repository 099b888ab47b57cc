"""Hands-free conversation (issue 23): the server side of an open microphone.

* ``vad``: the ``Endpointer``, Silero VAD over a stream, saying where turns start and end;
* ``chunks``: the browser's streamed WAV pieces (their header may not fit them) as samples;
* ``listener``: a conversation's ``Listener``: pieces in, ``Utterance`` values (WAV, times, words) out,
  with recognition running while the person speaks;
* ``echo``: whether speech heard while the avatar talks is the person (``decide_barge_in``) or the
  reply coming back through the speakers;
* ``control``: ``TurnControl``, the current reply's cancel token and what of it was heard.

Nothing here imports gradio or loads a model at import; the Silero session loads with the first
``Endpointer``.
"""

from e3rg_core.live.control import Interruption, Reply, SpokenPart, TurnControl, spoken_part
from e3rg_core.live.echo import (BargeIn, BargeInOptions, BargeInReason, EchoOptions, EchoReading, decide_barge_in,
                                 echo_score, played_reference, reply_word_share)
from e3rg_core.live.listener import Listener, ListenerOptions, ListenerState, SpeechSoFar, Transcribe, Utterance
from e3rg_core.live.vad import Endpointer, EndpointerOptions, SpeechEnd, SpeechStart

__all__ = [
    "BargeIn", "BargeInOptions", "BargeInReason", "EchoOptions", "EchoReading", "Endpointer", "EndpointerOptions",
    "Interruption", "Listener", "ListenerOptions", "ListenerState", "Reply", "SpeechEnd", "SpeechSoFar",
    "SpeechStart", "SpokenPart", "Transcribe", "TurnControl", "Utterance", "decide_barge_in", "echo_score",
    "played_reference", "reply_word_share", "spoken_part",
]
