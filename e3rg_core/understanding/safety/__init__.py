"""Safety: a message that signals a risk of suicide or self-harm gets a calm, caring answer with a way
to reach help, and no reply may affirm self-harm or answer distress cheerfully, whatever the models said.

* ``detector.RiskDetector`` reads the message and the conversation (patterns, meaning, history, an LLM judge);
* ``response.crisis_sentences`` is the avatar's answer to risk; ``response.check_in`` the question added
  to a calm reply when a message comes near risk less surely;
* ``guard.check`` checks every reply sentence before it is spoken; ``guard.safe_reply`` replaces one that fails.

The engine (``e3rg_core.understanding.engine``) applies all three on every path: the page, the API,
the CLI, the evaluation and streamed turns. This is not a clinical tool: it can miss risk and raise
false alarms (``bench/safety.py`` measures both).
"""

from e3rg_core.understanding.safety.detector import Judge, RiskDetector, Thresholds
from e3rg_core.understanding.safety.guard import Verdict, check, distressed, safe_reply
from e3rg_core.understanding.safety.response import DEFAULT_RESOURCES, asked_recently, check_in, crisis_sentences
from e3rg_core.understanding.safety.text import canonical

__all__ = ["DEFAULT_RESOURCES", "asked_recently", "Judge", "RiskDetector", "Thresholds", "Verdict", "canonical", "check", "check_in",
           "crisis_sentences", "distressed", "safe_reply"]
