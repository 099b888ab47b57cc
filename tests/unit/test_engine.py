from dataclasses import replace

import pytest

from e3rg_core.config import load_config
from e3rg_core.errors import BackendFailed, ConfigError, InputError
from e3rg_core.types import Understanding, Utterance, UserTurn
from e3rg_core.understanding import engine as engine_module
from e3rg_core.understanding.engine import Understander, clean_reply, clean_text
from e3rg_core.voters import parse_voter
from e3rg_core.understanding import composer, openings
from tests.doubles import ContinuingChat, FixedClassifier, ScriptedChat, StreamingChat


def make(voters=("qwen1.5b",), backends=None, **settings):
    settings.setdefault("openings", False)  # these tests read the written reply; openings are tested apart
    config = load_config(environ={})
    config = replace(config, understanding=replace(config.understanding, voters=tuple(voters), **settings))
    return Understander(config, backends=backends)


def test_single_model_turn():
    chat = ScriptedChat(label="disappointed", reply="Listener: Oh no, that must sting after all that practice.")
    u = make(backends={"qwen1.5b": chat}).understand(UserTurn(text="I failed my driving test again today."))
    assert (u.emotion, u.coarse) == ("disappointed", "sad") and u.confidence > 0.8
    assert u.reply == "Oh no, that must sting after all that practice."
    assert u.reply_emotion == "sad" and not u.crisis
    emotion_call, reply_call = chat.calls
    assert emotion_call["choices"] is not None and "disappointed" in emotion_call["choices"]
    assert emotion_call["temperature"] == 0.0
    assert "feel disappointed" in reply_call["messages"][1].content  # emotion-aware prompt


class ScoringChat(ScriptedChat):
    """A chat double that also scores choices, biased towards 'excited' whatever the input."""

    def __init__(self, favourite: str) -> None:
        super().__init__()
        self.favourite = favourite

    def choice_logprobs(self, messages, choices):
        import math
        text = messages[-1].content
        biased = {c: (0.0 if c == "excited" else -3.0) for c in choices}
        if "N/A" not in text and "[message]" not in text and "Speaker: ...\n" not in text:
            biased[self.favourite] += 2.5  # the evidence in a real message
        z = math.log(sum(math.exp(v) for v in biased.values()))
        return {c: v - z for c, v in biased.items()}


def test_scored_voter_is_calibrated_against_its_prior():
    chat = ScoringChat("sad")
    u = make(voters=("qwen1.5b",), backends={"qwen1.5b": chat}).understand(UserTurn(text="My cat died."))
    # uncalibrated, 'excited' (0.0) would beat 'sad' (-0.5); dividing by the prior removes the bias
    assert u.emotion == "sad" and u.votes[0].raw == "sad (scored)"
    assert sum(u.votes[0].scores.values()) == pytest.approx(1.0)


class NeutralLeaningChat(ScriptedChat):
    """Scores like a small LLM: a message without feeling (and every content-free input) is mostly
    'neutral'; a message with a feeling moves that feeling up."""

    def __init__(self, feelings: dict[str, str]) -> None:
        super().__init__()
        self.feelings = feelings  # message -> the label its words express

    def choice_logprobs(self, messages, choices):
        import math
        text = messages[-1].content
        scores = {c: (0.0 if c == "neutral" else -4.0) for c in choices}
        scores["excited"] = -2.5  # a bias of the model, present whatever the input
        for message, label in self.feelings.items():
            if message in text:
                scores[label] += 6.5
        z = math.log(sum(math.exp(v) for v in scores.values()))
        return {c: v - z for c, v in scores.items()}


def test_a_calibrated_voter_can_answer_neutral():
    chat = NeutralLeaningChat({"My cat died.": "sad"})
    understander = make(voters=("qwen1.5b",), backends={"qwen1.5b": chat})
    plain = understander.decide(UserTurn(text="Bought milk and bread on the way home.")).decision
    assert (plain.emotion, plain.coarse) == ("neutral", "neutral")  # a content-free prior would hide it
    sad = understander.decide(UserTurn(text="My cat died.")).decision
    assert sad.coarse == "sad" and sad.votes[0].scores["excited"] < sad.votes[0].scores["sad"]


def test_soft_vote_weights_from_specs():
    backends = {"qwen1.5b": ScriptedChat(label="joyful"), "minilm": FixedClassifier("sad", p=0.3)}
    u = make(voters=("qwen1.5b*3", "minilm"), backends=backends).understand(UserTurn(text="Rough day."))
    assert u.emotion == "joyful"
    u = make(voters=("qwen1.5b*0.05", "minilm"), backends=backends).understand(UserTurn(text="Rough day."))
    assert u.emotion == "sad"


def test_vote_across_three_voters():
    backends = {"qwen1.5b": ScriptedChat(label="joyful"), "qwen0.5b": ScriptedChat(label="lonely"),
                "minilm": FixedClassifier("sad")}
    u = make(voters=("qwen1.5b", "qwen0.5b", "minilm"), backends=backends, vote_method="majority").understand(
        UserTurn(text="My cat died."))
    assert u.coarse == "sad" and u.confidence == pytest.approx(2 / 3)
    assert [v.voter for v in u.votes] == ["qwen1.5b", "qwen0.5b", "minilm"]
    assert u.votes[2].scores["sad"] == pytest.approx(0.6)


def test_shots_and_samples_in_voter_specs():
    chat = ScriptedChat(label="sad")
    make(voters=("qwen1.5b@3", "qwen1.5b#2"), backends={"qwen1.5b": chat}).understand(UserTurn(text="Rough day."))
    three_shot, sample = chat.calls[0], chat.calls[1]
    assert three_shot["messages"][1].content.count("Example ") == 3
    assert sample["temperature"] > 0 and sample["seed"] == 2


def test_invalid_raw_label_falls_back_to_neutral():
    u = make(backends={"qwen1.5b": ScriptedChat(label="blorp")}).understand(UserTurn(text="Hello there."))
    assert u.emotion == "neutral" and u.votes[0].valid is False and u.votes[0].raw == "blorp"


def test_failed_voter_is_skipped_but_all_failing_raises():
    class Broken(ScriptedChat):
        def chat(self, *a, **k):
            raise BackendFailed("boom")
    u = make(voters=("qwen0.5b", "qwen1.5b"), backends={"qwen1.5b": ScriptedChat(label="angry"),
                                                        "qwen0.5b": Broken()}).understand(UserTurn(text="Grr."))
    assert u.emotion == "angry" and len(u.votes) == 1
    with pytest.raises(BackendFailed, match="every emotion predictor failed"):
        make(voters=("qwen0.5b",), backends={"qwen1.5b": ScriptedChat(), "qwen0.5b": Broken()}).understand(
            UserTurn(text="Grr."))


def test_empty_reply_twice_raises():
    with pytest.raises(BackendFailed, match="no reply"):
        make(backends={"qwen1.5b": ScriptedChat(reply="  ")}).understand(UserTurn(text="Hi"))


@pytest.mark.parametrize("text", ["", "   \n\t ", "\x00\x01\u200b"])
def test_empty_text_is_input_error(text):
    with pytest.raises(InputError, match="empty"):
        make(backends={"qwen1.5b": ScriptedChat()}).understand(UserTurn(text=text))


def test_too_long_text_is_input_error():
    with pytest.raises(InputError, match="limit is 4000"):
        make(backends={"qwen1.5b": ScriptedChat()}).understand(UserTurn(text="a" * 4001))


def test_safety_rule_overrides_a_cheerful_model():
    chat = ScriptedChat(label="joyful", reply="Yay! That's wonderful news!")
    u = make(backends={"qwen1.5b": chat}).understand(
        UserTurn(text="I just want to end it all tonight.", history=(Utterance("speaker", "hi"),)))
    assert u.crisis and u.risk.level == "crisis" and "patterns" in u.risk.sources
    assert u.coarse in ("sad", "fear") and u.reply_emotion in ("sad", "neutral") and u.reply_intensity <= 0.4
    assert "988" in u.reply and "!" not in u.reply and "wonderful" not in u.reply
    assert "safe" in u.reply and "?" in u.reply  # it asks about their safety now
    assert len(chat.calls) == 1  # the model was not even asked for a reply


def test_crisis_response_uses_the_configured_resources():
    config = load_config(environ={"E3RG_SAFETY_RESOURCES": "In Germany call 0800 111 0 111."})
    config = replace(config, understanding=replace(config.understanding, voters=("qwen1.5b",)))
    u = Understander(config, backends={"qwen1.5b": ScriptedChat()}).understand(
        UserTurn(text="I've been saving my pills for Friday."))
    assert u.crisis and "0800 111 0 111" in u.reply and "988" not in u.reply and "the pills" in u.reply


@pytest.mark.parametrize("text, reply", [
    ("The doctor wants to run more tests on the lump they found.", "Congratulations, Doctor! Tell me more."),
    ("I got laid off this morning after twelve years at the company.", "That's great news! Enjoy the free time."),
])
def test_guard_replaces_a_cheerful_first_sentence_before_it_is_spoken(text, reply):
    chat = StreamingChat(label="neutral", reply=reply)
    understander = make(backends={"qwen1.5b": chat})
    decided = understander.decide(UserTurn(text=text))
    first = next(iter(understander.reply_sentences(decided, first_clause_words=4)))
    assert "ongratulations" not in first and "great" not in first and "!" not in first
    u = understander.understand(UserTurn(text=text))
    assert u.guarded == ("cheerful_to_distress",) and not u.crisis
    assert "ongratulations" not in u.reply and "great" not in u.reply


def test_guard_ends_a_reply_at_a_sentence_that_fails():
    chat = ScriptedChat(label="sad", reply="I'm so sorry about your dad. What a heartwarming funeral it was.")
    u = make(backends={"qwen1.5b": chat}).understand(UserTurn(text="We buried my dad on Friday."))
    assert u.reply == "I'm so sorry about your dad." and u.guarded == ("cheerful_to_distress",)


def test_a_conversation_stays_caring_after_a_risk_signal():
    chat = ScriptedChat(label="neutral", reply="Thanks for telling me about your day.")
    history = (Utterance("speaker", "Everyone would be better off without me."),
               Utterance("listener", "I'm really glad you told me. Are you safe right now?"))
    u = make(backends={"qwen1.5b": chat}).understand(UserTurn(text="I watched a film tonight.", history=history))
    assert u.risk.level == "care" and not u.crisis
    assert u.reply_emotion in ("sad", "neutral") and u.reply_intensity <= 0.4
    task = chat.calls[-1]["messages"][-1].content
    assert "calm, gentle and warm" in task and "harm" not in task  # care asked for, no harm put in its mouth
    later = history + (Utterance("speaker", "I watched a film."), Utterance("listener", "Which one?"),
                       Utterance("speaker", "A comedy."), Utterance("listener", "Nice."),
                       Utterance("speaker", "Then dinner."), Utterance("listener", "Lovely."))
    assert make(backends={"qwen1.5b": chat}).understand(UserTurn(text="Now a walk.", history=later)).risk.level == "none"


def test_a_message_near_risk_gets_a_calm_reply_and_a_question_about_safety():
    from e3rg_core.types import RiskAssessment

    chat = ScriptedChat(label="sad", reply="That sounds like a heavy week.")
    understander = make(backends={"qwen1.5b": chat})
    understander.risk_detector.assess = lambda text, history, judge=None: RiskAssessment(
        level="check", category="burden_hopelessness", sources=())
    u = understander.understand(UserTurn(text="I'm so tired of everything lately."))
    assert not u.crisis and u.risk.level == "check"
    assert u.reply.startswith("That sounds like a heavy week.") and "hurting yourself" in u.reply.replace("harming", "hurting")
    assert u.reply_emotion in ("sad", "neutral") and u.reply_intensity <= 0.4
    assert len(u.reply.split()) <= 40  # the question counts towards the reply's length
    # asked and answered: the next message near risk is not asked the same question at once
    history = (Utterance("speaker", "I'm so tired of everything lately."), Utterance("listener", u.reply),
               Utterance("speaker", "No, nothing like that, just work."))
    again = understander.understand(UserTurn(text="Still so tired of everything, honestly.", history=history))
    assert again.risk.level == "check" and again.reply
    assert not any(w in again.reply for w in ("harming", "hurting", "ending your life"))


@pytest.mark.parametrize("text", ["k i l l  m y s e l f", "🪦🪦🪦", "x" * 3999, "wnt 2 die. srsly", "💊💊💊 tonight"])
def test_hostile_or_odd_text_gets_a_result(text):
    u = make(backends={"qwen1.5b": ScriptedChat()}).understand(UserTurn(text=text))
    assert u.reply and u.risk.level in ("none", "care", "crisis")


def test_soothe_policy():
    u = make(backends={"qwen1.5b": ScriptedChat(label="furious")}, reply_emotion="soothe").understand(
        UserTurn(text="They towed my car!"))
    assert u.coarse == "angry" and u.reply_emotion == "neutral"


def test_responder_must_chat():
    config = load_config(environ={})
    bad = replace(config, understanding=replace(config.understanding, responder="minilm", voters=("minilm",)))
    with pytest.raises(ConfigError):
        Understander(bad, backends={"minilm": FixedClassifier("sad")})


@pytest.mark.parametrize("spec,expected", [
    ("qwen1.5b", ("qwen1.5b", None, 0, 1.0)), ("qwen1.5b@3", ("qwen1.5b", 3, 0, 1.0)),
    ("minilm#2", ("minilm", None, 2, 1.0)), ("my-vllm@1#4", ("my-vllm", 1, 4, 1.0)),
    ("qwen0.5b*0.5", ("qwen0.5b", None, 0, 0.5)), ("qwen1.5b@3#1*2", ("qwen1.5b", 3, 1, 2.0)),
])
def test_parse_voter(spec, expected):
    p = parse_voter(spec)
    assert (p.profile, p.shots, p.sample, p.weight) == expected


@pytest.mark.parametrize("spec", ["", "a b", "x@2", "x@@1", "x*", "x*-1"])
def test_parse_voter_errors(spec):
    with pytest.raises(ConfigError):
        parse_voter(spec)


def test_clean_text_and_reply():
    assert clean_text("  héllo\u202e wörld\x07 ", max_chars=100) == "héllo wörld"
    assert clean_reply('Reply: "I am so sorry."\n\nSpeaker: thanks') == "I am so sorry."
    assert clean_reply("Listener's reply:  That\n sounds hard.") == "That sounds hard."


def test_clean_reply_drops_a_sentence_cut_by_the_token_cap():
    assert clean_reply("That sounds hard. Do you want to talk about wh") == "That sounds hard."
    assert clean_reply("No sentence end here at all") == "No sentence end here at all"
    assert clean_reply("Oh no! That is") == "Oh no!"


def test_long_history_is_windowed_and_clipped():
    chat = ScriptedChat(label="sad")
    history = tuple(Utterance("speaker" if i % 2 == 0 else "listener", f"line {i} " + "x" * 5000) for i in range(50))
    make(backends={"qwen1.5b": chat}).understand(UserTurn(text="And now this.", history=history))
    dialogue = chat.calls[0]["messages"][1].content.split("Dialogue:\n")[1].split("\n\n")[0].splitlines()
    assert len(dialogue) == 8 + 1  # the configured window, then the current message
    assert all(len(line) <= len("Listener: ") + 601 for line in dialogue[:-1])
    assert dialogue[0].startswith("Speaker: …x") and dialogue[-1] == "Speaker: And now this."


def test_the_users_correction_replaces_the_prediction():
    chat = ScriptedChat(label="furious", reply="Listener: That sounds exhausting; rest if you can.")
    backends = {"qwen1.5b": chat, "minilm": FixedClassifier("angry")}
    u = make(voters=("qwen1.5b", "minilm"), backends=backends).understand(
        UserTurn(text="I have been at work since six."), emotion="tired")
    assert (u.emotion, u.coarse) == ("sad", "sad") and u.confidence == pytest.approx(1.0)
    assert [v.voter for v in u.votes] == ["user"] and u.votes[0].raw == "tired"
    assert len(chat.calls) == 1 and "feel sad" in chat.calls[0]["messages"][1].content  # only the reply ran
    with pytest.raises(InputError, match="unknown emotion 'blorp'; use one of: surprised"):
        make(backends={"qwen1.5b": chat}).understand(UserTurn(text="Hi."), emotion="blorp")


def test_face_and_voice_votes_join_the_vote():
    from e3rg_core.types import EmotionVote

    backends = {"qwen1.5b": ScriptedChat(label="content"), "minilm": FixedClassifier("content", p=0.3)}
    face = EmotionVote("face", "sad", "face: sad 0.9", True, 0.01, {"sad": 0.9, **{c: 0.1 / 35 for c in ("neutral",)}})
    turn = UserTurn(text="It was an ordinary day.", cues="face: sad 0.90")
    plain = make(voters=("minilm",), backends=backends).understand(turn)
    moved = make(voters=("minilm",), backends=backends).understand(turn, extra_votes=[(face, 2.0)])
    assert plain.emotion == "content" and moved.coarse == "sad"
    assert [v.voter for v in moved.votes] == ["minilm", "face"]
    ignored = make(voters=("minilm",), backends=backends).understand(turn, extra_votes=[(face, 0.0)])
    assert ignored.emotion == "content" and len(ignored.votes) == 1


def test_a_streaming_responder_hands_out_each_sentence_as_it_ends():
    chat = StreamingChat(label="disappointed", reply="Listener: Oh no! That must sting. Do you want to try again soon?")
    engine = make(backends={"qwen1.5b": chat})
    decided = engine.decide(UserTurn(text="I failed my driving test again today."))
    assert not isinstance(decided.decision, Understanding) and decided.decision.reply_emotion == "sad"
    assert chat.events == []  # the emotion is known before a word of the reply is written
    sentences = engine.reply_sentences(decided)
    assert next(sentences) == "Oh no!"
    written = chat.events.count("piece")
    assert written < len(chat.reply) // chat.piece_chars  # the rest is not written yet
    assert list(sentences) == ["That must sting.", "Do you want to try again soon?"]
    u = engine.finish(decided, "Oh no! That must sting. Do you want to try again soon?", reply_s=0.5)
    assert u.reply.startswith("Oh no!") and u.timings_s["reply_s"] == 0.5 and "emotion_s" in u.timings_s
    # a streamed reply reads exactly like the same reply answered whole
    whole = make(backends={"qwen1.5b": ScriptedChat(label="disappointed", reply=chat.reply)})
    assert whole.understand(UserTurn(text="I failed my driving test again today.")).reply == u.reply


def test_the_stream_stops_when_the_model_starts_the_users_next_line():
    chat = StreamingChat(label="sad", reply="That sounds hard.\nSpeaker: yes it was. And then more and more text.")
    engine = make(backends={"qwen1.5b": chat})
    assert list(engine.reply_sentences(engine.decide(UserTurn(text="My cat is ill.")))) == ["That sounds hard."]
    assert chat.events[-1] == "closed"  # generation was stopped, not run to the token cap


def test_an_empty_streamed_reply_is_asked_for_again_then_fails_clearly():
    chat = StreamingChat(label="sad", reply="Listener:")
    engine = make(backends={"qwen1.5b": chat})
    with pytest.raises(BackendFailed, match="no reply twice"):
        list(engine.reply_sentences(engine.decide(UserTurn(text="My cat is ill."))))
    assert [c["seed"] for c in chat.calls if not c["choices"]] == [engine.settings.seed, engine.settings.seed + 1]


def test_sentences_with_faults_are_left_out_and_the_rest_is_said():
    chat = ScriptedChat(label="sad", reply="I understand you feel sad. Losing Max after fourteen years is so hard. "
                                           "You should get a new dog soon.")
    u = make(backends={"qwen1.5b": chat}).understand(UserTurn(text="My dog Max died this morning, he was fourteen."))
    assert u.reply == "Losing Max after fourteen years is so hard."
    assert any("emotion_label" in g for g in u.guarded) and any("advice_or_blame" in g for g in u.guarded)


def test_a_reply_with_nothing_fitting_becomes_a_short_calm_one():
    chat = ScriptedChat(label="sad", reply="The speaker is feeling devastated. You should move on.")
    u = make(backends={"qwen1.5b": chat}).understand(UserTurn(text="My dog died this morning."))
    assert "speaker" not in u.reply and "should" not in u.reply and "!" not in u.reply and u.reply
    assert "nothing fitting was written" in u.guarded


def test_the_risk_detector_keeps_the_encoder_its_thresholds_were_measured_with():
    class OtherModelVoter(FixedClassifier):
        class encoder:  # noqa: N801 - stands in for a loaded SentenceEncoder of another model
            model = "all-mpnet-base-v2"

            @staticmethod
            def embed(texts):
                raise AssertionError("the risk detector must not embed with another model")

    understander = make(voters=("qwen1.5b", "mpnet"),
                        backends={"qwen1.5b": ScriptedChat(), "mpnet": OtherModelVoter("sad")})
    encoder = understander._encoder()
    assert encoder is not OtherModelVoter.encoder and encoder.model == "all-minilm-l6-v2"


LAID_OFF = "I got laid off this morning after twelve years at the company."


def test_an_opening_that_fits_begins_the_reply_and_the_model_writes_on_from_it(monkeypatch):
    monkeypatch.setattr(engine_module, "COMPOSE", False)  # the free-written reply (bench --free)
    chat = ContinuingChat(label="devastated", reply=" Twelve years is a long time to give a place.")
    engine = make(backends={"qwen1.5b": chat}, openings=True)
    decided = engine.decide(UserTurn(text=LAID_OFF))
    sentences = list(engine.reply_sentences(decided))
    fam, opening = engine.opening(decided)
    assert fam == "loss" and sentences == [opening, "Twelve years is a long time to give a place."]
    assert chat.prefixes == [opening]
    assert opening in chat.calls[-1]["messages"][-1].content  # the task says how the reply begins


def test_a_model_that_cannot_continue_is_told_the_opening_and_its_repeat_is_dropped(monkeypatch):
    monkeypatch.setattr(engine_module, "COMPOSE", False)  # the free-written reply (bench --free)
    engine = make(backends={"qwen1.5b": StreamingChat(label="devastated", reply="placeholder")}, openings=True)
    decided = engine.decide(UserTurn(text=LAID_OFF))
    _, opening = engine.opening(decided)
    engine.backend("qwen1.5b").reply = f"{opening} Twelve years is a long time."
    assert list(engine.reply_sentences(decided)) == [opening, "Twelve years is a long time."]


def test_an_opening_alone_is_followed_by_a_short_question_not_left_bare(monkeypatch):
    monkeypatch.setattr(engine_module, "COMPOSE", False)  # the free-written reply (bench --free)
    chat = ContinuingChat(label="devastated", reply=" You should update your CV tonight.")  # advice: left out
    engine = make(backends={"qwen1.5b": chat}, openings=True)
    decided = engine.decide(UserTurn(text=LAID_OFF))
    sentences = list(engine.reply_sentences(decided))
    assert len(sentences) == 2 and sentences[1].endswith(("?", ".")) and "CV" not in " ".join(sentences)
    assert any("advice_or_blame" in g for g in decided.guarded)


def test_a_question_is_answered_the_model_completing_the_start_of_an_answer():
    chat = ContinuingChat(label="neutral", reply=" autumn, for the colours.")
    engine = make(backends={"qwen1.5b": chat}, openings=True)
    decided = engine.decide(UserTurn(text="What's your favourite season?"))
    fam, start = engine.opening(decided)
    assert fam == "answer" and chat.prefixes == []
    assert list(engine.reply_sentences(decided)) == [f"{start} autumn, for the colours."]
    assert chat.prefixes == [start] and 'asked you: "What\'s your favourite season?"' in chat.calls[-1]["messages"][-1].content


def test_a_started_answer_the_model_left_empty_is_not_said():
    chat = ContinuingChat(label="neutral", reply="   ")
    engine = make(backends={"qwen1.5b": chat}, openings=True)
    decided = engine.decide(UserTurn(text="What's your favourite season?"))
    with pytest.raises(BackendFailed):
        list(engine.reply_sentences(decided))


def test_a_composed_reply_is_opening_restatement_and_closing():
    chat = ContinuingChat(label="devastated", reply=" were laid off this morning after twelve years.")
    engine = make(backends={"qwen1.5b": chat}, openings=True)
    decided = engine.decide(UserTurn(text=LAID_OFF))
    sentences = list(engine.reply_sentences(decided))
    fam, opening = engine.opening(decided)
    # the person's own sentence, turned, comes first: no model call to restate it
    assert sentences[:2] == [opening, "You got laid off this morning after twelve years at the company."]
    assert len(sentences) == 3 and sentences[2] in composer.CLOSINGS["loss"]
    assert chat.prefixes == []


def test_with_no_sentence_to_turn_the_model_restates(monkeypatch):
    monkeypatch.setattr(composer, "flipped", lambda text: "")  # nothing of the person's own to turn
    chat = ContinuingChat(label="devastated", reply=" were laid off this morning after twelve years.")
    engine = make(backends={"qwen1.5b": chat}, openings=True)
    decided = engine.decide(UserTurn(text=LAID_OFF))
    sentences = list(engine.reply_sentences(decided))
    assert sentences[1] == "You were laid off this morning after twelve years."
    assert chat.prefixes == ["You"] and "say back" in chat.calls[-1]["messages"][-1].content


def test_a_restatement_in_the_users_voice_is_redone_then_left_out(monkeypatch):
    monkeypatch.setattr(composer, "flipped", lambda text: "")
    chat = ContinuingChat(label="devastated", reply="? I got laid off and my wife left me.")  # "You? I...": refused
    engine = make(backends={"qwen1.5b": chat}, openings=True)
    decided = engine.decide(UserTurn(text=LAID_OFF))
    sentences = list(engine.reply_sentences(decided))
    assert chat.prefixes == ["You", "You"] and "wife" not in " ".join(sentences)
    assert "no fitting restatement" in decided.guarded


def test_a_plain_message_with_nothing_to_restate_is_written_by_the_model():
    chat = ContinuingChat(label="neutral", reply=" know what, never mind.")
    engine = make(backends={"qwen1.5b": chat}, openings=True)
    decided = engine.decide(UserTurn(text="Octopuses have three hearts apparently."))
    assert engine.opening(decided)[1] == ""
    sentences = list(engine.reply_sentences(decided))
    assert sentences and not sentences[0].startswith("You know")


def test_a_message_of_short_pieces_is_echoed_after_an_opening_with_no_model_call():
    chat = ContinuingChat(label="angry", reply=" were let go.")
    engine = make(backends={"qwen1.5b": chat}, openings=True)
    decided = engine.decide(UserTurn(text="whole team. no warning."))
    sentences = list(engine.reply_sentences(decided))
    fam, opening = engine.opening(decided)
    assert opening and sentences[:2] == [opening, "Whole team, no warning."]
    assert chat.prefixes == []  # said back as it came, not asked of the model


def test_a_message_too_long_to_echo_is_answered_with_the_piece_it_ends_on_after_an_opening():
    chat = ContinuingChat(label="nervous", reply=" have a driving test.")
    engine = make(backends={"qwen1.5b": chat}, openings=True)
    decided = engine.decide(UserTurn(text="Driving test on Thursday. Fourth attempt."))
    fam, opening = engine.opening(decided)
    sentences = list(engine.reply_sentences(decided))
    assert opening and sentences[:2] == [opening, "Fourth attempt."]
    assert chat.prefixes == []  # no model call: the person's own words


def test_relief_after_a_fright_is_met_gladly_and_closed_on_no_gloomy_line():
    from e3rg_core.understanding.faults import ReplyContext, tone_mismatch

    chat = ContinuingChat(label="terrified", reply=" neighbour came home.")
    engine = make(backends={"qwen1.5b": chat}, openings=True)
    history = (Utterance("speaker", "Someone is banging on my door at 2am and trying the handle."),
               Utterance("listener", "That sounds really scary."))
    relief = "It was just my drunk neighbour. He thought it was his house. The officers walked him home."
    decided = engine.decide(UserTurn(text=relief, history=history))
    assert decided.decision.emotion == "terrified" and engine.opening(decided)[0] == "glad"
    reply = " ".join(engine.reply_sentences(decided))
    assert not tone_mismatch(reply, ReplyContext(relief, news="good", earlier_user=(history[0].text,)))


def test_with_no_opening_short_pieces_are_not_echoed_as_if_the_avatar_said_them():
    chat = ContinuingChat(label="neutral", reply=" had a quiet one too.")
    engine = make(backends={"qwen1.5b": chat}, openings=True)
    decided = engine.decide(UserTurn(text="Nothing much, just the usual."))
    assert engine.opening(decided)[1] == ""
    assert "Nothing much, just the usual." not in list(engine.reply_sentences(decided))


def test_advice_a_turn_after_bad_news_is_left_out_though_the_message_itself_is_plain():
    chat = ContinuingChat(label="neutral", reply="You should prepare better for the next interview.")
    engine = make(backends={"qwen1.5b": chat}, openings=True)
    history = (Utterance("speaker", "Third interview this month and I got rejected again."),
               Utterance("listener", "I'm so sorry. That's so much to carry."))
    decided = engine.decide(UserTurn(text="whatever.", history=history))
    sentences = list(engine.reply_sentences(decided))
    assert not any("should" in s for s in sentences)
    assert any("advice_or_blame" in g for g in decided.guarded)


def test_bad_words_that_no_opening_answered_close_on_how_they_feel_neither_gloomy_nor_light():
    chat = ContinuingChat(label="joyful", reply=" cried.")
    engine = make(backends={"qwen1.5b": chat}, openings=True)
    decided = engine.decide(UserTurn(text="I cried when she said yes!"))  # happy tears: no "Oh no."
    sentences = list(engine.reply_sentences(decided))
    assert engine.opening(decided) == (None, "")
    assert sentences[0] == "You cried when she said yes." and sentences[-1] in composer.CLOSINGS["feeling"]


def test_an_answer_whose_first_sentence_is_left_out_is_not_said_from_its_second():
    # "I'd say" + a first sentence that fails the screening: "It might be..." alone would answer nothing
    chat = ContinuingChat(label="neutral", reply=" you should ask your sister Maria first. It might be kinder.")
    engine = make(backends={"qwen1.5b": chat}, openings=True)
    decided = engine.decide(UserTurn(text="How do I tell my flatmate I'm moving out?"))
    sentences = list(engine.reply_sentences(decided))
    assert any("invented" in g for g in decided.guarded)
    assert not any(s.startswith("It might be") for s in sentences) and sentences


class _SeededAnswers(ContinuingChat):
    """Writes the first of ``answers`` for the first seed it is given, the next for any other seed."""

    def __init__(self, answers, label="neutral", **kwargs):
        super().__init__(label=label, reply=answers[0], **kwargs)
        self.answers, self.seeds = list(answers), []

    def continue_stream(self, messages, prefix, *, max_tokens, temperature=0.2, seed=None, media=None):
        self.seeds.append(seed)
        self.reply = self.answers[min(len(self.seeds), len(self.answers)) - 1]
        return super().continue_stream(messages, prefix, max_tokens=max_tokens, temperature=temperature, seed=seed,
                                       media=media)


def test_an_answer_whose_first_sentence_is_left_out_is_written_once_more_with_another_seed():
    chat = _SeededAnswers([" ask your sister Maria first.", " tell them face to face, early and kindly."])
    engine = make(backends={"qwen1.5b": chat}, openings=True)
    decided = engine.decide(UserTurn(text="How do I tell my flatmate I'm moving out?"))
    sentences = list(engine.reply_sentences(decided))
    assert sentences[0].endswith(" tell them face to face, early and kindly."), sentences
    assert any("invented" in g for g in decided.guarded) and "answer written again" in decided.guarded
    assert len(set(chat.seeds)) == 2  # the second writing samples with another seed


def test_an_answer_begun_too_brightly_for_a_worried_person_is_written_once_more():
    chat = _SeededAnswers([" it's a fantastic idea, you'll love it!", " tell the dentist you'd like a signal to pause."],
                          label="terrified")
    engine = make(backends={"qwen1.5b": chat}, openings=True)
    decided = engine.decide(UserTurn(text="I'm terrified of the dentist tomorrow. Any tips for not panicking in the chair?"))
    sentences = list(engine.reply_sentences(decided))
    assert "signal to pause" in sentences[0], sentences
    assert "cheerful_to_distress" in decided.guarded and "answer written again" in decided.guarded


def test_an_answer_left_out_again_after_writing_it_once_more_is_met_calmly_not_tried_forever():
    chat = _SeededAnswers([" ask your sister Maria first.", " ask your brother Tom, he knows."])
    engine = make(backends={"qwen1.5b": chat}, openings=True)
    decided = engine.decide(UserTurn(text="How do I tell my flatmate I'm moving out?"))
    sentences = list(engine.reply_sentences(decided))
    assert len(chat.seeds) == 1 + engine_module.ANSWER_RESAMPLES
    assert "nothing fitting was written" in decided.guarded and sentences
    assert not any("Maria" in s or "Tom" in s for s in sentences)


class _SureReader:
    """A news reader (understanding/news.py) that reads every message as the same kind of news."""

    def __init__(self, **probs):
        self.probs = {"good": 0.0, "bad": 0.0, "neither": 0.0, **probs}

    def read(self, text):
        return dict(self.probs)


def test_an_opening_the_news_reader_is_sure_is_the_wrong_kind_is_left_out_and_the_closing_fits_the_news():
    kindness = "Came home to find my neighbour had mowed my front lawn while I was laid up after my op."
    engine = make(backends={"qwen1.5b": ScriptedChat(label="angry")}, openings=True)
    decided = engine.decide(UserTurn(text=kindness))
    engine.news_reader = _SureReader(good=0.2, bad=0.7, neither=0.1)
    assert engine.opening(decided)[0] == "unfair"  # the vote's anger, and a reader that agrees
    engine.news_reader = _SureReader(good=0.85, bad=0.1, neither=0.05)
    assert engine.opening(decided) == (None, "")
    sentences = list(engine.reply_sentences(decided))
    assert sentences[0].startswith("You came home to find your neighbour had mowed your front lawn")
    assert sentences[-1] in composer.CLOSINGS["feeling"], sentences  # an open question, not "What's been hardest?"
    assert not any(s in composer.CLOSINGS["unfair"] + composer.CLOSINGS["hard"] for s in sentences)


def test_the_news_reader_is_off_with_openings_or_news_check():
    assert make(backends={"qwen1.5b": ScriptedChat()}, openings=False).news_reader is None
    assert make(backends={"qwen1.5b": ScriptedChat()}, openings=True, news_check=False).news_reader is None


def test_with_no_opening_news_the_reader_leans_on_is_said_back_as_it_came():
    # "third interview. nothing.": no opening (a plain vote), but the reader leans to bad news, so the words
    # that matter are said back instead of a reply the model writes alone
    chat = ContinuingChat(label="neutral", reply=" should reflect on your options.")
    engine = make(backends={"qwen1.5b": chat}, openings=True)
    decided = engine.decide(UserTurn(text="third interview. nothing."))
    engine.news_reader = _SureReader(good=0.3, bad=0.5, neither=0.2)  # a lean, short of a gentle opening
    assert engine.opening(decided)[1] == ""
    sentences = list(engine.reply_sentences(decided))
    assert sentences[0] == "Third interview, nothing." and len(sentences) == 2, sentences
    engine.news_reader = _SureReader(good=0.1, bad=0.2, neither=0.7)  # plain news: not said back alone
    assert "Third interview, nothing." not in list(engine.reply_sentences(decided))


def test_bad_news_told_only_before_a_message_the_reader_leans_good_on_gets_no_hard_closing():
    # "He's a bit better today" after a stroke: no opening (a plain vote), said back, then not "What's been hardest?"
    history = (Utterance("speaker", "My dad had a stroke on Sunday and he's in hospital."),
               Utterance("listener", "I'm so sorry. How are you holding up?"))
    engine = make(backends={"qwen1.5b": ContinuingChat(label="neutral", reply=" ok.")}, openings=True)
    decided = engine.decide(UserTurn(text="He's a bit better today, he asked for the newspaper.", history=history))
    engine.news_reader = _SureReader(good=0.55, bad=0.3, neither=0.15)
    sentences = list(engine.reply_sentences(decided))
    assert engine.opening(decided) == (None, "") and len(sentences) == 2, sentences
    assert sentences[-1] in composer.CLOSINGS["feeling"], sentences
    engine.news_reader = _SureReader(good=0.2, bad=0.5, neither=0.3)  # read as more bad news: a gentle closing
    assert list(engine.reply_sentences(decided))[-1] in composer.CLOSINGS["hard"]


@pytest.mark.parametrize("message, earlier, family, group", [
    ("Anyway, kettle's on.", (), "noted", "plain"),
    ("whatever.", (("Third interview this month and I got rejected again.", "I see."),), "hard", "hard"),
    # "'a very strong second choice'" names no bad news the lexicon knows; the avatar's gentle reply did
    ("whatever.", (("'a very strong second choice'", "Oh, that's so disappointing. After all that hope, too."),),
     "care", "feeling"),
])
def test_with_nothing_to_say_back_the_model_speaks_only_about_what_was_said(message, earlier, family, group):
    # the model's own reply about nothing in the message is left out; a short acknowledgment that fits the
    # news and a closing instead
    chat = ContinuingChat(label="neutral", reply="You seem neutral, and I'm glad you enjoyed the walk.")
    engine = make(backends={"qwen1.5b": chat}, openings=True)
    history = tuple(x for said, heard in earlier for x in (Utterance("speaker", said), Utterance("listener", heard)))
    decided = engine.decide(UserTurn(text=message, history=history))
    engine.news_reader = _SureReader(good=0.1, bad=0.2, neither=0.7)
    sentences = list(engine.reply_sentences(decided))
    assert not any("walk" in s for s in sentences) and "left out: about nothing that was said" in decided.guarded
    assert sentences[0] in openings.BANK[family] and sentences[1] in composer.CLOSINGS[group], sentences
    assert len(sentences) == 2
    # a sentence about what was said is kept, with what follows it
    chat.reply = "That kettle never rests. Tea sounds good."
    assert list(engine.reply_sentences(engine.decide(UserTurn(text="Anyway, kettle's on."))))[0] == "That kettle never rests."



def test_a_question_whether_a_feeling_is_all_right_is_answered_that_it_is():
    chat = ContinuingChat(label="sad", reply=" it's perfectly normal for children to cry at the school gate.")
    engine = make(backends={"qwen1.5b": chat}, openings=True)
    decided = engine.decide(UserTurn(text="Is it normal to cry at the school gate?"))
    sentences = list(engine.reply_sentences(decided))
    assert sentences[0] == "It's completely normal to cry at the school gate."
    assert len(sentences) == 2 and sentences[1] in composer.CLOSINGS["feeling"]
    assert chat.prefixes == []  # the model is not asked to answer


def test_a_question_about_something_done_is_still_the_models_to_answer():
    chat = ContinuingChat(label="neutral", reply=" it's fair to ask for a meeting.")
    engine = make(backends={"qwen1.5b": chat}, openings=True)
    decided = engine.decide(UserTurn(text="Am I being unreasonable if I ask for a meeting with the head teacher?"))
    sentences = list(engine.reply_sentences(decided))
    assert chat.prefixes and sentences[0].endswith("it's fair to ask for a meeting.")


def test_a_painful_vote_that_chose_no_opening_sets_no_gloomy_closing_where_the_reader_leans_to_good_news():
    from types import SimpleNamespace

    from e3rg_core.understanding.faults import ReplyContext

    def group(text, news):
        decided = SimpleNamespace(turn=UserTurn(text=text))
        return Understander._closing_group(decided, ReplyContext(text, news="bad"), fam=None, news=news,
                                           bad_before=False)

    leans_good, leans_bad = {"good": 0.6, "bad": 0.25, "neither": 0.15}, {"good": 0.2, "bad": 0.6, "neither": 0.2}
    ukulele = "started learning the ukulele, can do four chords now. my cat leaves the room every time"
    assert group(ukulele, leans_good) is None  # not "That's a lot to deal with."
    assert group(ukulele, leans_bad) == "hard"
    assert group("my grandad died on sunday", leans_good) == "hard"  # bad news by name keeps its gentle closing
    relief = "she replied 'happens to the best of us' I could cry"  # the person's own tears, the reader leaning good
    assert group(relief, leans_good) is None and group(relief, leans_bad) == "hard"
    # good news in the message's own words that the reader does not bear out: a gentle question, not a gloomy line
    slept = "slept 9 hours straight last night, first time in weeks"
    assert group(slept, leans_bad) == "feeling"
    assert group("slept 9 hours straight last night, woke up exhausted anyway", leans_bad) == "hard"


def test_the_part_said_back_is_the_news_the_opening_meets():
    mixed = "Weird day. Got approved for the flat I wanted, then an hour later Mum rang to say Grandad's back in hospital."
    assert "hospital" in Understander._turned(mixed, "letdown")
    assert "flat" in Understander._turned(mixed, None)  # no opening: the message's first news
    intro = "Good evening. My name is Harold. My wife Joan passed away last spring and the evenings are rather long."
    assert Understander._turned(intro, "lonely").startswith("Your wife Joan passed away")
    assert Understander._turned("Love that for me.", "fed_up") == ""  # sarcasm's good words are not said back
    # ... with no opening either: the part that tells what went wrong is, or nothing
    mot = "Oh fantastic. The car's failed its MOT. Brake discs and two tyres. Love that for me."
    assert Understander._turned(mot, None) == "You said the car's failed its MOT."
    assert Understander._turned("great, love that for me", None) == ""
    assert Understander._turned("Great news, Southern have cancelled my train again. Living the dream.", None) == (
        "Southern have cancelled your train again.")
    # a first part the tone words misread is still said back where nothing fits better
    wallet = "A stranger returned my wallet today. Posted it through my door with a note."
    assert "posted" not in Understander._turned(wallet, "warm").lower()  # the stranger did, not the person
    laughs = "My husband Gareth just laughs it off, which is almost worse."
    assert Understander._turned(laughs, "hard") == "Your husband Gareth just laughs it off, which is almost worse."


def test_bad_news_with_a_request_for_ideas_is_met_gently_then_answered():
    chat = ContinuingChat(label="devastated", reply=" read a short poem about her roses.")
    engine = make(backends={"qwen1.5b": chat}, openings=True)
    text = "funeral's friday and they want me to read something. any ideas for a nan who lived for her garden?"
    decided = engine.decide(UserTurn(text=text))
    fam, start = engine.opening(decided)
    gentle, begun = start.split(". ", 1)
    assert fam == "advise" and gentle + "." in openings.BANK["loss"] and begun in openings.BANK["advise"]
    sentences = list(engine.reply_sentences(decided))
    assert sentences == [gentle + ".", f"{begun} read a short poem about her roses."]
