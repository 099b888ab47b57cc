"""Serve the app for tests: real speech, video and speech recognition, a scripted understander.

    python -m tests.app.serve --port 7871 --data DIR --cache DIR [--real] [--auth u1:p1,u2:p2] [--shared]

The scripted understander (a test double) keeps a turn to a second or two; ``--real`` uses the
embedded default LLM and embedding voter instead. ``--auth`` turns logins on (``ui.auth``),
``--shared`` shares the conversations of visitors without one (``ui.shared_conversations``).
Prints ``READY <url>`` when it listens.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from dataclasses import replace

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

REPLIES = {
    "driving": ("disappointed", "Oh no, that must sting after all that practice. Do you want to talk about it?"),
    "sister": ("joyful", "That sounds lovely! An hour of laughing is a gift."),
    "": ("sad", "I'm sorry it has been so hard. I'm here with you."),
}


#: seconds per word of a streamed reply (the embedded 1.5B model writes about 8 words a second)
WORD_S = 0.12


class KeywordChat:
    """A chat double: picks the label and reply by a keyword of the user's message."""

    def __init__(self) -> None:
        self.calls = 0

    def _pick(self, messages):
        text = messages[-1].content.lower() if messages else ""
        # the prompt ends with the user's message; earlier turns come before it
        found = [(text.rfind(key), key) for key in REPLIES if key and key in text]
        return REPLIES[max(found)[1]] if found else REPLIES[""]

    def chat(self, messages, *, max_tokens, temperature=0.2, seed=None, choices=None, media=None):
        self.calls += 1
        label, reply = self._pick(messages)
        return label if choices else reply

    def chat_stream(self, messages, *, max_tokens, temperature=0.2, seed=None, media=None):
        """The reply a word at a time, as slowly as the embedded model writes on two cores."""
        import time

        reply = self.chat(messages, max_tokens=max_tokens, temperature=temperature, seed=seed, media=media)
        for i, word in enumerate(reply.split(" ")):
            time.sleep(WORD_S)
            yield word if i == 0 else " " + word


def build(data_dir: str, cache_dir: str, *, real: bool = False, size_px: int = 256, check_output: bool = True,
          auth: str = "", shared: bool = False):
    from e3rg_core.config import load_config
    from e3rg_core.ui.app import build_app
    from e3rg_core.ui.service import ChatService

    config = load_config(environ={"E3RG_DATA_DIR": data_dir, "E3RG_CACHE_DIR": cache_dir,
                                  "E3RG_VIDEO_SIZE_PX": str(size_px), "E3RG_UI_SECRET": "test-secret-of-the-app",
                                  "E3RG_PERCEPTION_CHECK_OUTPUT": str(check_output), "E3RG_UI_AUTH": auth,
                                  "E3RG_UI_SHARED_CONVERSATIONS": str(shared)})
    service = ChatService(config)
    if not real:
        from e3rg_core.understanding.engine import Understander

        # the scripted replies are spoken as written (the openings are tested in tests/unit/test_engine.py)
        config = replace(config, understanding=replace(config.understanding, voters=("qwen1.5b",), openings=False))
        service.pipeline._understander = Understander(config, backends={"qwen1.5b": KeywordChat()})
    demo, launch = build_app(config, service=service)
    return demo, launch, service


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--data", required=True)
    parser.add_argument("--cache", required=True)
    parser.add_argument("--real", action="store_true")
    parser.add_argument("--auth", default="", help="logins, user:password pairs joined by commas")
    parser.add_argument("--shared", action="store_true", help="visitors without a login share their conversations")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    demo, launch, service = build(args.data, args.cache, real=args.real, auth=args.auth, shared=args.shared)
    # a scripted understander gains nothing from a warmed-up turn; --real warms one as the app does
    service.pipeline.warm_up(first_turn=args.real)
    launch.update(server_name="127.0.0.1", server_port=args.port, quiet=True)
    demo.launch(prevent_thread_lock=True, **launch)
    print(f"READY http://127.0.0.1:{args.port}/", flush=True)
    try:
        demo.block_thread()
    finally:
        sys.stdout.flush()


if __name__ == "__main__":
    main()
