"""Stage 1 of E3RG: predict the user's emotion (optionally by vote) and write an empathetic reply.

Voters are model profiles from the config, written ``name[@shots][#sample][*weight]`` (see
``e3rg_core.voters``), e.g. ``["minilm", "qwen1.5b*0.5", "qwen1.5b@3", "qwen1.5b#1"]``.

An LLM voter that can score choices (llamacpp) votes with the calibrated probability of every label:
the label probabilities given a content-free message ("N/A") are the model's prior, and dividing by
that prior ("contextual calibration", Zhao et al. 2021) removes its bias towards a few labels. A
content-free message is itself a neutral one, though, so its neutral probability is evidence, not
bias: dividing by it left the voter unable to answer neutral (0 of 15 neutral dev messages). Neutral's
prior is instead the mean (log) prior of the other labels: neutral is calibrated as an average label
(a prior 1 or 2 nats lower, favouring neutral more, scored no better on the dev sets).
"""

from __future__ import annotations

import contextlib
import logging
import math
import re
import time
import unicodedata
from dataclasses import dataclass, field, replace
from typing import Any, Iterator, Mapping, Sequence

from e3rg_core import registry
from e3rg_core.config import Config, ModelProfile
from e3rg_core.emotions import CANDIDATES, normalize_label, wheel
from e3rg_core.errors import BackendFailed, BackendUnavailable, ConfigError, E3rgError, InputError
from e3rg_core.types import CORRECTION_VOTER, Decision, EmotionVote, RiskAssessment, Understanding, Utterance, UserTurn
from e3rg_core.understanding import composer, faults, openings, person, prompts, safety
from e3rg_core.understanding.base import (ChatModel, ChoiceScorer, ContinuingChat, EmotionClassifier, StreamingChat,
                                          TurnMedia)
from e3rg_core.understanding.sentences import ReplySentences, clean_reply  # noqa: F401 - clean_reply is re-exported
from e3rg_core.understanding.voting import vote as combine_votes
from e3rg_core.voters import VoterSpec, parse_voter

logger = logging.getLogger(__name__)

# The coarse class an avatar shows under the "soothe" policy (E3RG mirrors the user instead).
_SOOTHE = {"happy": "happy", "surprised": "surprised", "sad": "sad", "fear": "sad",
           "angry": "neutral", "disgusted": "neutral", "contempt": "neutral", "neutral": "neutral"}
HISTORY_CHARS = 600  # per earlier utterance in the prompt
# Faults that leave a written sentence out of the reply (the rest of the reply still stands).
SCREENED_FAULTS = ("advice_or_blame", "agreement_opener", "emotion_label", "third_person", "assistant_speak",
                   "speaker_voice", "judged", "invented", "repeated_opener")
# A reply is composed (opening, restatement, closing: ``composer``) rather than written whole by the
# model; a question to the avatar is still answered in the model's words. ``bench/replies.py --free``
# turns it off to measure the step.
COMPOSE = True
RESTATE_TOKENS = 32  # one short sentence
# How many more times an answer to a question is written when its first sentence is left out by the fault screen
# (the seeds move by 2 each time: the first writing already tries two for an empty reply).
ANSWER_RESAMPLES = 1
_CONTENT_FREE = ("N/A", "...", "[message]")  # inputs that carry no emotion, for calibration
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")


def strip_controls(text: str) -> str:
    """NFC, without control or bidi-override characters (they could spoof how the text displays)."""
    return _CONTROL.sub("", unicodedata.normalize("NFC", str(text)))


def _normalise(text: str) -> str:
    return strip_controls(text).strip()


def clean_text(text: str, *, max_chars: int) -> str:
    """Normalise user text: NFC, no control or bidi characters; raise on empty or too long."""
    text = _normalise(text)
    if not text:
        raise InputError("the message is empty; type something or record your voice")
    if len(text) > max_chars:
        raise InputError(f"the message has {len(text)} characters; the limit is {max_chars}")
    return text


def clip_history(history: tuple[Utterance, ...], *, max_utterances: int) -> tuple[Utterance, ...]:
    """The last ``max_utterances`` lines, cleaned, each cut to its last ``HISTORY_CHARS`` characters,
    so a long conversation never overflows the model's context."""
    out = []
    for u in history[-max_utterances:] if max_utterances > 0 else ():
        text = _normalise(u.text)
        if len(text) > HISTORY_CHARS:
            text = "…" + text[-HISTORY_CHARS:]
        if text:
            out.append(Utterance(u.role, text))
    return tuple(out)


class Understander:
    """Runs stage 1 with the models named in ``config.understanding``; loads them once."""

    def __init__(self, config: Config, *, backends: Mapping[str, Any] | None = None) -> None:
        self.config = config
        self.settings = config.understanding
        self.voters = [parse_voter(v) for v in self.settings.voters]
        self._backends: dict[str, Any] = dict(backends or {})
        self._priors: dict[tuple[str, int], dict[str, float]] = {}
        for name in {self.settings.responder, *(v.profile for v in self.voters)}:
            if name not in self._backends:
                self._backends[name] = self._create(config.profile(name))
        if not isinstance(self._backends[self.settings.responder], ChatModel):
            raise ConfigError(f"responder {self.settings.responder!r} cannot write replies")
        self.safety = config.safety
        judge = self.safety.judge
        if judge and judge not in self._backends:
            self._backends[judge] = self._create(config.profile(judge))
        if judge and not isinstance(self._backends[judge], ChoiceScorer):
            logger.warning("safety judge %r cannot score yes/no answers; the risk detector runs without it", judge)
        self.risk_detector = safety.RiskDetector(self._encoder() if self.safety.meaning else None,
                                                 second=self._second_encoder())
        self.news_reader = self._news_reader()

    def _encoder(self) -> Any:
        """The sentence encoder of the embedding voter if it is the embedded one, else the embedded one.

        The risk detector's first encoder is all-MiniLM-L6-v2 whatever the voters use (its thresholds
        were chosen with it); ``_second_encoder`` gives the second.
        """
        from e3rg_core.understanding.embedding import EMBEDDED_NAME, sentence_encoder

        for backend in self._backends.values():
            encoder = getattr(backend, "encoder", None)
            if encoder is not None and hasattr(encoder, "embed") and getattr(encoder, "model", None) == EMBEDDED_NAME:
                return encoder
        return sentence_encoder()

    def _second_encoder(self) -> Any:
        """all-mpnet-base-v2 for the risk detector's second reading (``[safety] second_encoder``), or None."""
        if not (self.safety.meaning and self.safety.second_encoder):
            return None
        from e3rg_core.understanding.embedding import MPNET_NAME, sentence_encoder

        try:
            return sentence_encoder(MPNET_NAME)
        except BackendUnavailable as exc:
            raise BackendUnavailable(f"the risk detector reads with {MPNET_NAME} too: {exc}; or set "
                                     "[safety] second_encoder = false (MiniLM alone: more false alarms)") from exc

    def _news_reader(self) -> Any:
        """The reader of a message's kind of news that checks the opening (``news.py``), or None when
        openings or ``news_check`` are off."""
        if not (self.settings.openings and self.settings.news_check):
            return None
        from e3rg_core.understanding.embedding import MPNET_NAME, sentence_encoder
        from e3rg_core.understanding.news import news_reader

        try:
            return news_reader(sentence_encoder(MPNET_NAME))
        except BackendUnavailable as exc:
            raise BackendUnavailable(f"the opening is checked with {MPNET_NAME}: {exc}; or set "
                                     "[understanding] news_check = false") from exc

    def assess_risk(self, turn: UserTurn) -> RiskAssessment:
        """The safety check of ``turn`` (already cleaned): patterns, meaning, history and the LLM judge."""
        return self.risk_detector.assess(turn.text, turn.history, judge=self.risk_judge(turn))

    def risk_judge(self, turn: UserTurn) -> safety.Judge | None:
        """The LLM's yes/no answer to "does this turn signal risk?" as a probability, asked only when called.

        It reads the emotion prompt's system message and dialogue, so a llama.cpp model evaluates
        only the question after the emotion call; ``None`` when no judge is configured or it cannot score.
        """
        scorer = self._backends.get(self.safety.judge) if self.safety.judge else None
        if not isinstance(scorer, ChoiceScorer):
            return None

        def judge() -> float | None:
            examples = prompts.select_examples(turn.text, self.settings.shots, seed=self.settings.seed)
            messages = prompts.risk_messages(turn, examples=examples, max_utterances=self.settings.history_utterances)
            try:
                logp = scorer.choice_logprobs(messages, ("yes", "no"))
            except E3rgError as exc:
                logger.warning("the safety judge failed (%s); deciding without it", exc)
                return None
            yes, no = math.exp(logp["yes"]), math.exp(logp["no"])
            return yes / (yes + no)

        return judge

    def _create(self, profile: ModelProfile) -> Any:
        options = profile.backend_options()
        if cache_subdir := registry.entry("understanding", profile.backend).cache_subdir:
            options.setdefault("cache_dir", str(self.config.cache_dir / cache_subdir))
        logger.info("loading model profile %s (%s)", profile.name, profile.backend)
        return registry.create("understanding", profile.backend, options)

    def backend(self, profile: str) -> Any:
        """The loaded backend of a profile."""
        return self._backends[profile]

    def vote(self, voter: VoterSpec, turn: UserTurn, media: TurnMedia | None = None) -> EmotionVote:
        """One voter's prediction of the user's emotion."""
        backend = self._backends[voter.profile]
        start = time.perf_counter()
        if isinstance(backend, EmotionClassifier):
            scores = dict(backend.classify(turn))
            label = max(scores, key=scores.get)
            return EmotionVote(voter.spec, label, label, True, time.perf_counter() - start, scores)
        shots = self.settings.shots if voter.shots is None else voter.shots
        messages = self._emotion_messages(turn, shots)
        has_media = media is not None and (media.audio_path is not None or media.video_path is not None)
        if isinstance(backend, ChoiceScorer) and voter.sample == 0 and not has_media:
            scores = self._calibrated(backend, voter.profile, shots, messages)
            label = max(scores, key=scores.get)
            return EmotionVote(voter.spec, label, f"{label} (scored)", True, time.perf_counter() - start, scores)
        raw = backend.chat(
            messages,
            max_tokens=8,
            temperature=0.0 if voter.sample == 0 else max(self.settings.temperature, 0.7),
            seed=self.settings.seed + voter.sample,
            choices=CANDIDATES,
            media=media,
        )
        label = normalize_label(raw)
        valid = label is not None
        if not valid:
            logger.warning("voter %s answered %r, which is no emotion label; using neutral", voter.spec, raw)
        return EmotionVote(voter.spec, label or "neutral", raw, valid, time.perf_counter() - start)

    def _emotion_messages(self, turn: UserTurn, shots: int) -> list:
        examples = prompts.select_examples(turn.text, shots, seed=self.settings.seed)
        return prompts.emotion_messages(turn, examples=examples, max_utterances=self.settings.history_utterances)

    def _calibrated(self, backend: Any, profile: str, shots: int, messages: list) -> dict[str, float]:
        """Label probabilities divided by the model's content-free prior, renormalised.

        A content-free message is itself neutral, so its neutral probability is evidence, not bias:
        neutral's prior is the other labels' mean log prior, less ``neutral_shift`` nats (a plain
        message that leans on nothing answers neutral), chosen on e3rg's dev sets and GoEmotions' dev
        split (docs/emotion.md). How much the voter counts is its weight in the config, nothing here.
        """
        neutral_shift = 2.0  # 1 with one embedding voter; 2 with MiniLM and MPNet (issue 21, fourth pass)
        key = (profile, shots)
        if key not in self._priors:
            runs = [backend.choice_logprobs(self._emotion_messages(UserTurn(text=t), shots), CANDIDATES)
                    for t in _CONTENT_FREE]
            prior = {c: math.log(sum(math.exp(r[c]) for r in runs) / len(runs)) for c in CANDIDATES}
            others = [v for c, v in prior.items() if c != "neutral"]
            prior["neutral"] = sum(others) / len(others) - neutral_shift
            self._priors[key] = prior
        prior = self._priors[key]
        logp = backend.choice_logprobs(messages, CANDIDATES)
        adjusted = {c: logp[c] - prior[c] for c in CANDIDATES}
        top = max(adjusted.values())
        z = sum(math.exp(v - top) for v in adjusted.values())
        return {c: math.exp(v - top) / z for c, v in adjusted.items()}

    def understand(self, turn: UserTurn, *, emotion: str | None = None,
                   extra_votes: Sequence[tuple[EmotionVote, float]] = ()) -> Understanding:
        """Predict the user's emotion and write the avatar's reply (``decide``, then the whole reply).

        ``emotion`` is the user's own correction ("not angry, tired"): a label or word that
        ``normalize_label`` knows. It replaces the prediction (no voters run) and the reply is
        written for it. ``extra_votes`` are (vote, weight) pairs from other predictors of this
        turn, such as the face and the voice (``e3rg_core.perception``); they join the vote.
        """
        decided = self.decide(turn, emotion=emotion, extra_votes=extra_votes)
        start = time.perf_counter()
        reply = " ".join(self.reply_sentences(decided))
        return self.finish(decided, reply, reply_s=time.perf_counter() - start)

    def decide(self, turn: UserTurn, *, emotion: str | None = None,
               extra_votes: Sequence[tuple[EmotionVote, float]] = ()) -> Decided:
        """The first half of the stage: the user's emotion and how the avatar will sound and look.

        This is all that speech and video need to begin, so a streamed turn knows the emotion
        before the first sentence of the reply exists. Arguments as for ``understand``.
        """
        s = self.settings
        corrected = None
        if emotion is not None:
            corrected = normalize_label(str(emotion)[:60])
            if corrected is None:
                raise InputError(f"unknown emotion {str(emotion)[:60]!r}; use one of: {', '.join(CANDIDATES)}")
        turn = UserTurn(
            text=clean_text(turn.text, max_chars=s.max_input_chars),
            history=clip_history(turn.history, max_utterances=s.history_utterances),
            audio_path=turn.audio_path,
            video_path=turn.video_path,
            cues=turn.cues,
            context=turn.context,
        )
        media = TurnMedia(turn.audio_path, turn.video_path)
        start = time.perf_counter()
        votes, failures = [], []
        for voter in self.voters if corrected is None else ():
            try:
                votes.append(self.vote(voter, turn, media))
            except InputError:
                raise
            except E3rgError as exc:
                logger.warning("voter %s failed: %s", voter.spec, exc)
                failures.append(f"{voter.spec}: {exc}")
        if corrected is not None:
            votes = [EmotionVote(CORRECTION_VOTER, corrected, str(emotion), True, 0.0, {corrected: 1.0})]
            result = combine_votes(votes, method=s.vote_method, map_name=s.emotion_map, weights={CORRECTION_VOTER: 1.0})
        elif not votes:
            raise BackendFailed("every emotion predictor failed: " + "; ".join(failures))
        else:
            weights = {v.spec: v.weight for v in self.voters}
            for vote, weight in extra_votes:
                if weight > 0:
                    votes.append(vote)
                    weights[vote.voter] = float(weight)
            # the embedding voter shares out its class head's probability among the labels (voting.py)
            heads = {v.spec for v in self.voters if isinstance(self._backends[v.profile], EmotionClassifier)}
            result = combine_votes(votes, method=s.vote_method, map_name=s.emotion_map, weights=weights,
                                   class_heads=heads)

        label, coarse = result.label, result.coarse
        emotion_s = time.perf_counter() - start
        risk = self.assess_risk(turn)
        if risk.level == "crisis":
            logger.info("risk detected (%s, by %s)", risk.category, ", ".join(risk.sources))
            if coarse not in ("sad", "fear"):
                label, coarse = "devastated", wheel("devastated", map_name=s.emotion_map).coarse
            reply_emotion, reply_intensity = "sad", 0.3
        elif risk.level in ("care", "check"):
            reply_emotion, reply_intensity = ("sad" if coarse in ("sad", "fear") else "neutral"), 0.3
        else:
            point = wheel(label, map_name=s.emotion_map)
            reply_emotion = coarse if s.reply_emotion == "mirror" else _SOOTHE[coarse]
            reply_intensity = point.intensity if reply_emotion == coarse else 0.4
        decision = Decision(
            emotion=label,
            coarse=coarse,
            intensity=wheel(label, map_name=s.emotion_map).intensity,
            distribution=result.distribution,
            coarse_distribution=result.coarse_distribution,
            confidence=result.confidence,
            votes=tuple(votes),
            reply_emotion=reply_emotion,
            reply_intensity=reply_intensity,
            risk=risk,
            timings_s={"emotion_s": emotion_s, "safety_s": time.perf_counter() - start - emotion_s},
        )
        return Decided(turn=turn, media=media, decision=decision)

    def reply_sentences(self, decided: Decided, *, first_clause_words: int = 0) -> Iterator[str]:
        """The reply, one clean sentence at a time, as it is made: composed (opening, restatement,
        closing: ``_composed_sentences``) when openings are on and the message asks nothing, else as
        the responder writes it.

        A responder that streams (``StreamingChat``) hands each sentence out as soon as it ends;
        another answers whole and its sentences follow at once. With ``first_clause_words`` the
        first piece may end at a comma (see ``ReplySentences``). An empty reply is asked for once
        more with another seed; a second empty one raises ``BackendFailed``.

        Safety holds on every path: a message that signals risk is answered with the crisis response
        (no model writes it); each written sentence passes the output guard before it is handed out
        (a first one that fails is replaced by a calm reply, a later one ends the reply); and a
        message that comes near risk less surely ("check") ends with a gentle question about safety,
        unless one of the avatar's last three replies asked it already.
        """
        u = decided.decision
        if u.crisis:
            yield from safety.crisis_sentences(decided.turn.text, u.risk, resources=self.resources)
            return
        said, words, own = 0, 0, 0
        ctx = self.reply_context(decided)
        listener = [h.text for h in decided.turn.history if h.role == "listener"]
        check_in = safety.check_in(decided.turn.text) if (
            u.risk.level == "check" and not safety.asked_recently(listener)) else ""
        if check_in:  # the question about safety is part of the reply's length
            ctx = replace(ctx, max_words=max(12, ctx.max_words - len(check_in.split())))
        news = self.read_news(decided.turn.text)  # None when openings or the reader are off
        fam, opening = self.opening(decided, ctx, news)
        partial = fam in openings.PARTIAL
        bad_before = openings.bad_news_before(ctx.earlier_user)
        # comfort is still due a turn after bad news ("whatever.")
        screen = replace(ctx, news="bad") if ctx.news == "neutral" and bad_before else ctx
        composed = COMPOSE and self.settings.openings
        # with a check-in the reassurance is said before it, without the closing ("am I a terrible parent?")
        reassurance = composer.reassured(decided.turn.text, ctx.earlier_user) if (
            composed and ctx.asks and (u.risk.level == "none" or check_in)) else ""
        if reassurance:
            source = self._reassuring_sentences(decided, ctx, reassurance, closing=not check_in)
        elif composed and not partial:
            source = self._composed_sentences(decided, ctx, fam=fam, opening=opening, closing=not check_in,
                                              bad_before=bad_before, news=news, first_clause_words=first_clause_words)
        else:
            source = self._written_sentences(decided, opening=opening, partial=partial,
                                             first_clause_words=first_clause_words)

        def calm() -> str:  # said instead when nothing written may be said
            return safety.safe_reply(decided.turn.text, u.coarse, caring=u.risk.level == "care", asked=ctx.asks)

        # An answer whose first sentence is left out is written once more with other seeds (``ANSWER_RESAMPLES``):
        # nothing of it was said yet, and an honest "not sure" or a gentle line leaves the question unanswered.
        resamples = ANSWER_RESAMPLES if partial and not reassurance else 0

        def written_again() -> Iterator[str]:  # the answer written anew, with the next seeds
            decided.guarded.append("answer written again")
            return self._written_sentences(decided, opening=opening, partial=partial,
                                           first_clause_words=first_clause_words,
                                           seed_offset=2 * (ANSWER_RESAMPLES - resamples))
        while source is not None:
            with contextlib.closing(source) as written:
                source = None
                for sentence in written:
                    verdict = safety.check(sentence, user_text=decided.turn.text, coarse=u.coarse, risk=u.risk)
                    if not verdict.ok:
                        logger.warning("the output guard stopped a reply sentence (%s)", verdict.reason)
                        decided.guarded.append(verdict.reason)
                        if partial and said == 0 and resamples and verdict.reason == "cheerful_to_distress":
                            # an answer begun too brightly for how the person feels is written once more
                            # ("I'd say it's a great idea!" to a worried question) before a calm reply
                            resamples -= 1
                            source = written_again()
                            break
                        if said == 0:
                            said += 1
                            yield calm()
                        break
                    # A sentence with a fault a caring listener would not make is left out, not spoken.
                    found = faults.faults(sentence, screen if said == 0 else replace(screen, previous_reply=""),
                                          names=SCREENED_FAULTS)
                    if found:
                        decided.guarded.append("left out: " + ", ".join(found))
                        if partial and said == 0:
                            # the answer's first sentence carried its start; what follows builds on it
                            if resamples:
                                resamples -= 1
                                source = written_again()
                            break
                        continue
                    n_words = len(sentence.split())
                    if said and words + n_words > ctx.max_words:
                        break  # the reply is long enough
                    said, words = said + 1, words + n_words
                    own += sentence is not opening
                    yield sentence
        if said == 0:
            decided.guarded.append("nothing fitting was written")
            yield calm()
        elif opening and not partial and own == 0 and not check_in:
            yield openings.follow_up(fam, decided.turn.text, seed=self.settings.seed)  # not the opening alone
        if check_in:
            yield check_in

    def reply_context(self, decided: Decided) -> faults.ReplyContext:
        """What the reply answers, for the fault detectors: the message, whether it is bad or good news,
        whether it asks the avatar something, and the conversation before it."""
        u, turn = decided.decision, decided.turn
        news = ("bad" if safety.distressed(turn.text, u.coarse, u.risk)
                else "good" if u.coarse in ("happy", "surprised") else "neutral")
        earlier = tuple(h.text for h in turn.history if h.role == "speaker")
        previous = next((h.text for h in reversed(turn.history) if h.role == "listener"), "")
        return faults.ReplyContext(turn.text, news=news, asks=composer.asks_listener(turn.text), earlier_user=earlier,
                                   previous_reply=previous, max_words=prompts.MAX_WORDS)

    @property
    def resources(self) -> str:
        """The help resources said in a crisis response (``[safety] resources``, or the built-in text)."""
        return self.safety.resources.strip() or safety.DEFAULT_RESOURCES

    def read_news(self, text: str) -> dict[str, float] | None:
        """The news reader's probabilities of good, bad and neither news in ``text`` (None when it is off)."""
        return self.news_reader.read(text) if self.news_reader is not None else None

    def opening(self, decided: Decided, ctx: faults.ReplyContext | None = None,
                news: Mapping[str, float] | None = None) -> tuple[str | None, str]:
        """The family and text of the reply's opening, chosen to fit the feeling (``(None, "")`` when the
        model should begin itself: a plain message, an uncertain emotion, or ``openings = false``); a
        question to the avatar gets the start of an answer, which the model completes. ``news`` is
        ``read_news`` of the message, read here when not given."""
        if not self.settings.openings:
            return None, ""
        u, turn = decided.decision, decided.turn
        ctx = ctx or self.reply_context(decided)
        news = news if news is not None else self.read_news(turn.text)
        fam = openings.family(turn.text, label=u.emotion, coarse=u.coarse, risk=u.risk, asks=ctx.asks,
                              confidence=u.confidence, earlier=ctx.earlier_user, news=news)
        opening = openings.choose(fam, turn.text, previous_reply=ctx.previous_reply, seed=self.settings.seed)
        answer = openings.ideas_asked(turn.text, composer.question(turn.text)) if (
            ctx.asks and openings.kind_of(fam) == "bad" and u.risk.level == "none") else None
        if answer is not None:
            # bad news with a request for ideas ("funeral's friday and they want me to read something. any ideas
            # for a nan who lived for her garden?"): met gently, then answered, not left at "I'm so sorry."
            return answer, f"{opening} {openings.choose(answer, turn.text, seed=self.settings.seed)}"
        return fam, opening

    def _composed_sentences(self, decided: Decided, ctx: faults.ReplyContext, *, fam: str | None, opening: str,
                            closing: bool = True, bad_before: bool = False, news: Mapping[str, float] | None = None,
                            first_clause_words: int = 0) -> Iterator[str]:
        """The composed reply (``composer``), before the guard: ``opening`` (spoken while the rest is made),
        a restatement of what happened, and a closing line from the bank (unless ``closing`` is false: a
        check-in question ends the reply instead). With no opening and no fitting restatement the model
        writes the reply itself, from its first sentence about what was said, or a short acknowledgment
        (``openings.ACKNOWLEDGE``) begins the closing. ``news`` is the news reader's reading of the
        message (``read_news``): without an opening, the closing fits it; a message the reader leans to
        good or bad news over neither (``openings.told_as_news``) may be said back as it came without an
        opening before it; and after a turn for the better (``openings.turned_for_the_better``) earlier bad
        news sets no gloomy closing. ``bad_before``: one of the speaker's last lines named bad news."""
        if opening:
            yield opening
        # thanks or praise for the avatar: nothing to say back, the door left open
        # without an opening, a message said back as it came reads as the avatar's own words ("Nothing much,
        # just the usual."), unless it is news the reader leans on ("third interview. nothing.") or theirs
        text = decided.turn.text
        restated = "" if fam in ("thanked", "praised", *composer.SEEN_OFF) else self._restatement(decided, ctx, fam=fam,
                                                                 echo=bool(opening) or openings.told_as_news(news))
        group = self._closing_group(decided, ctx, fam=fam, news=news, bad_before=bad_before)
        if not restated and not opening:
            # the model writes, but only from a sentence about what was said: on the dev sets its replies
            # here were mostly about nothing in the message ("I appreciate your guidance." to "whatever.",
            # "You seem neutral, and I'm glad you enjoyed the walk." to "Anyway, kettle's on.")
            about, spoke = faults.heard_words(ctx), False
            for sentence in self._written_sentences(decided, first_clause_words=first_clause_words):
                if spoke or faults.specific_words(sentence) & about:
                    spoke = True
                    yield sentence
                else:
                    decided.guarded.append("left out: about nothing that was said")
            if spoke:
                return
            # nothing it wrote was: a short acknowledgment that fits the news, and the closing (the message
            # said back after "I see." would still read as the avatar's own: "Nothing much, just the usual.")
            yield openings.choose(openings.ACKNOWLEDGE.get(group or "", "noted"), text,
                                  previous_reply=ctx.previous_reply, seed=self.settings.seed)
        if restated:
            yield restated
        if closing:
            yield self._closing_line(decided, ctx, group, said=" ".join((opening, restated)))

    def _reassuring_sentences(self, decided: Decided, ctx: faults.ReplyContext, reassurance: str, *,
                              closing: bool = True) -> Iterator[str]:
        """A question whether an ordinary feeling is all right, answered that it is (``composer.reassured``:
        "It's completely normal to feel numb more than sad."), and a gentle question about how they are. The
        model's own answers to these misread who felt what ("It's perfectly normal for children to cry at the
        school gate." to a parent) or built on facts nobody gave."""
        yield reassurance
        if closing:
            yield self._closing_line(decided, ctx, "feeling", said=reassurance)

    def _closing_line(self, decided: Decided, ctx: faults.ReplyContext, group: str | None, *, said: str) -> str:
        """The closing (``composer.closing``) of group ``group`` after ``said``: not a line any of the last three
        replies ended on ("How are you holding up?" twice in four turns reads as a script)."""
        listener = [h.text for h in decided.turn.history if h.role == "listener"][-3:]
        return composer.closing(group, decided.turn.text, said=said, previous_reply=" ".join(listener),
                                seed=self.settings.seed, earlier=ctx.earlier_user)

    @staticmethod
    def _closing_group(decided: Decided, ctx: faults.ReplyContext, *, fam: str | None,
                       news: Mapping[str, float] | None, bad_before: bool) -> str | None:
        """The closing's group (``composer.CLOSINGS``): the opening's family, or without one the group that
        fits the news. An unsure vote shares no joy, nor sets a gloomy closing alone where the reader leans to
        good news, and asks no light question just after bad news (or
        after a reply that met bad news: "whatever." after "'a very strong second choice'" gets "I hear
        you.", not "Ah, I see."); good news in the message's own words gets a glad one. Good news the reader
        alone is sure of gets an open question: it was wrong on a tenth of the dev sets' such messages ("got
        my dissertation mark back. 52." -> "Hold on to that one."). A message the reader leans to good news on,
        after bad news told only before it ("He's a bit better today, he asked for the newspaper." after a
        stroke), gets a gentle question, not "What's been hardest?"."""
        if fam:
            return fam
        text = decided.turn.text
        told = openings.told(text, news)
        if told == "good":
            return "glad"
        if openings.sure_news(news) == "good":
            return "feeling"
        # the vote's painful reading alone, which chose no opening, is not enough where the reader leans to
        # good news ("started learning the ukulele, can do four chords now" read as fear got "That's a lot
        # to deal with.")
        vote_only = ctx.news == "bad" and openings.leans_good(news) and told != "bad" \
            and not openings.bad_news_words(text)
        if (openings.laughing(text) and told != "bad" or openings.glad_tears(text, news)) \
                and not openings.bad_news_words(text):
            # told with a laugh, or the person's own tears told gladly ("she replied 'happens to the best of us' I
            # could cry"): no gloomy closing from the vote ("Go gently with yourself today." to "i cant stop crying
            # lol" after getting the job), a gentle question after bad news, else a plain one
            return "feeling" if bad_before else None
        if (ctx.news == "bad" and not vote_only or bad_before and not openings.leans_good(news)) \
                and not openings.turned_for_the_better(text, news):
            # good news in the message's own words that the reader does not bear out, against a painful vote, chose
            # no opening (``openings.family``); nor does it get a gloomy closing ("That's a lot to deal with." to
            # "slept 9 hours straight last night, first time in weeks"), but a gentle question
            return "feeling" if openings.tone(text) == "good" else "hard"
        if told == "bad" or bad_before or openings.opened_gently(ctx.previous_reply):
            return "feeling"
        return None

    def _sayable(self, sentence: str, decided: Decided, ctx: faults.ReplyContext) -> bool:
        """No fault a caring listener would not make, nothing the guard stops."""
        u = decided.decision
        return (not faults.faults(sentence, ctx, names=(*SCREENED_FAULTS, "tone_mismatch"))
                and safety.check(sentence, user_text=decided.turn.text, coarse=u.coarse, risk=u.risk).ok)

    def _echo(self, decided: Decided, ctx: faults.ReplyContext) -> str:
        """The message of short pieces said back as it came (``composer.echoed``), or the short piece it
        ends on (``composer.last_piece``), where it may be said (``_sayable``: no restatement check), else ""."""
        text = decided.turn.text
        sarcasm = openings.sarcastic(text)
        for said_back in (composer.echoed(text), composer.last_piece(text)):
            # not sarcasm's words said straight ("Truly living the dream.", "Gig's in ten days, brilliant.")
            if said_back and not (sarcasm and openings.sarcasm_words(said_back)) and self._sayable(said_back, decided, ctx):
                return said_back
        return ""

    def _restatement(self, decided: Decided, ctx: faults.ReplyContext, *, fam: str | None = None,
                     echo: bool = False) -> str:
        """What happened, said back to the person as "you": their own sentence turned (``composer.flipped``)
        where it fits, else (with ``echo``: after an opening that says how it lands, or for news the reader
        leans on) a message of short pieces said back as it came (``composer.echoed``: "Whole team, no
        warning."), or the short piece it ends on (``composer.last_piece``: "Fourth attempt."), else the
        model's short extraction, checked against the conversation and the fault detectors (asked twice), else
        "". The person's own words come first: on the dev conversations they fitted far more often than
        the embedded model's extraction (2 of about 46 of its candidates passed the checks, one of them
        wrong), and they cost no model call."""
        s, turn = self.settings, decided.turn
        responder = self._backends[s.responder]

        def fits(sentence: str, begins_you: bool = True) -> bool:
            return composer.restatement_ok(sentence, user_text=turn.text, earlier=ctx.earlier_user,
                                           begins_you=begins_you) and self._sayable(sentence, decided, ctx)

        turned = self._turned(turn.text, fam)
        if turned and fits(turned, begins_you=False):
            return turned
        said_back = self._echo(decided, ctx) if echo else ""  # the person's words as they came
        if said_back:
            return said_back
        examples = prompts.select_examples(turn.text, s.shots, seed=s.seed)
        messages = prompts.restatement_messages(turn, examples=examples, max_utterances=s.history_utterances)
        for attempt in range(2):
            options = dict(max_tokens=RESTATE_TOKENS, temperature=s.reply_temperature, seed=s.seed + attempt,
                           media=decided.media)
            if isinstance(responder, ContinuingChat):
                pieces = _begun("You", responder.continue_stream(messages, "You", **options))
            elif isinstance(responder, StreamingChat):
                pieces = responder.chat_stream(messages, **options)
            else:
                pieces = iter([responder.chat(messages, **options)])
            first = _first_sentence(pieces)
            if first and fits(first):
                return first
        decided.guarded.append("no fitting restatement")
        return ""

    @staticmethod
    def _turned(text: str, fam: str | None) -> str:
        """``composer.flipped`` of the part of ``text`` that fits the opening of family ``fam``: where the
        message tells other news first ("Got approved for the flat I wanted, then an hour later Mum rang to say
        Grandad's back in hospital.", "My name is Harold. My wife Joan passed away last spring..."), the
        first later part whose own words are of the opening's kind is said back, not "That's such a letdown.
        You got approved for the flat you wanted."; where none is, a plain one before a first part of the other
        kind, and "" rather than sarcasm's good words ("Love that for you.")."""
        def kind(said: str) -> str | None:
            return "bad" if openings.names_bad_news(said) else openings.tone(said)

        first, want = composer.flipped(text), openings.kind_of(fam)
        # sarcasm's good words are not said back straight ("Oh fantastic. The car's failed its MOT. ... Love that
        # for me." -> not "Love that for you."): another part of it is, or nothing
        sarcasm = openings.sarcastic(text)
        straight = not (sarcasm and openings.sarcasm_words(first))
        if not first or (want is None or kind(first) == want) and straight:
            return first
        # what the message says from each turn in it, then each of its sentences alone ("neighbour's started
        # learning the drums." before "love that for me", said in sarcasm)
        # a later part that names no one ("Posted it through my door with a note." after "A stranger returned my
        # wallet") goes on with someone named before it: alone, it would be said back as the person's deed
        parts = dict.fromkeys(part.strip() for part in (*composer.later_parts(text), *composer.sentences_of(text)))
        if sarcasm:  # and what follows a short lead-in ("Great news, Southern have cancelled my train again.")
            parts.update(dict.fromkeys(part.split(",", 1)[1].strip() for part in list(parts)
                                       if "," in part and len(part.split(",", 1)[0].split()) <= 3))
        others = [turned for part in parts  # the last part is often the last sentence too: turned once
                  if not person.lacks_subject(part) and (turned := composer.flipped(part)) and turned != first
                  and not (sarcasm and openings.sarcasm_words(turned))]
        if sarcasm and want is None:
            return next(iter(others), "")  # no opening to fit: the first part that is not sarcasm's words
        fitting = next((turned for turned in others if kind(turned) == want), None)
        if fitting or kind(first) is None:
            return fitting or (first if straight else "")
        plain = next((turned for turned in others if kind(turned) is None), None)
        # the first part is of the other kind; said anyway unless it is sarcasm's good words
        return plain or ("" if sarcasm else first)

    def _written_sentences(self, decided: Decided, *, opening: str = "", partial: bool = False,
                           first_clause_words: int = 0, seed_offset: int = 0) -> Iterator[str]:
        """The reply, one clean sentence at a time (before the guard): ``opening``, if any, then what
        the responder writes on from it. A ``partial`` opening ("I'd say") is no sentence of its own:
        the responder's first sentence completes it. ``seed_offset`` moves the sampling seeds (a reply
        written again)."""
        s = self.settings
        responder = self._backends[s.responder]
        turn = decided.turn
        examples = prompts.select_examples(turn.text, s.shots, seed=s.seed)
        messages = prompts.reply_messages(
            turn, emotion=decided.decision.emotion, style=s.response_prompt, examples=examples,
            max_utterances=s.history_utterances, caring=decided.decision.risk.level in ("care", "check"),
            opening=opening, asks=composer.asks_listener(turn.text), question=composer.question(turn.text),
        )
        if opening and not partial:
            yield opening  # spoken while the rest is written
        for attempt in range(2):
            options = dict(max_tokens=s.max_reply_tokens, temperature=s.reply_temperature,
                           seed=s.seed + seed_offset + attempt,
                           media=decided.media)
            if opening and isinstance(responder, ContinuingChat):
                pieces = responder.continue_stream(messages, opening, **options)
                if partial:
                    pieces = _begun(opening, pieces)
            elif isinstance(responder, StreamingChat):
                pieces = responder.chat_stream(messages, **options)
            else:
                pieces = iter([responder.chat(messages, **options)])
            splitter, said = ReplySentences(first_clause_words=first_clause_words), 0
            try:
                for piece in pieces:
                    for sentence in splitter.feed(piece):
                        if not partial and _same_words(sentence, opening):
                            continue  # a model that cannot be continued may write the opening again
                        said += 1
                        yield sentence
                    if splitter.stopped:
                        break  # the model went on to write the user's next line
            finally:
                close = getattr(pieces, "close", None)
                if close is not None:
                    close()  # stop generating when the reply is done or its consumer left
            for sentence in splitter.close():
                if not partial and _same_words(sentence, opening):
                    continue
                said += 1
                yield sentence
            if said or (opening and not partial):
                return
            logger.warning("responder gave an empty reply (attempt %d)", attempt + 1)
        raise BackendFailed(f"the responder {s.responder!r} produced no reply twice")

    def finish(self, decided: Decided, reply: str, *, reply_s: float) -> Understanding:
        """The whole stage's result once the reply is written."""
        timings = {**decided.decision.timings_s, "reply_s": reply_s}
        return Understanding.of(decided.decision, reply, timings_s=timings, guarded=tuple(decided.guarded))


def _begun(prefix: str, pieces: Iterator[str]) -> Iterator[str]:
    """``pieces`` with ``prefix`` put before the first one that has text (none if none has)."""
    started = False
    try:
        for piece in pieces:
            if not started and piece.strip():
                started = True
                yield prefix
            if started:
                yield piece
    finally:
        close = getattr(pieces, "close", None)
        if close is not None:
            close()


def _first_sentence(pieces: Iterator[str]) -> str:
    """The first clean sentence of a model's streamed text ("" if none); generation stops there."""
    splitter = ReplySentences()
    try:
        for piece in pieces:
            done = splitter.feed(piece)
            if done:
                return done[0]
            if splitter.stopped:
                break
    except E3rgError as exc:
        logger.warning("the responder failed while restating (%s)", exc)
        return ""
    finally:
        close = getattr(pieces, "close", None)
        if close is not None:
            close()
    rest = splitter.close()
    return rest[0] if rest else ""


def _same_words(a: str, b: str) -> bool:
    return bool(b) and re.findall(r"[a-z']+", safety.canonical(a)) == re.findall(r"[a-z']+", safety.canonical(b))


@dataclass(frozen=True)
class Decided:
    """Stage 1 up to the reply: the cleaned turn and the emotion (the ``Decision``)."""

    turn: UserTurn
    media: TurnMedia
    decision: Decision
    guarded: list[str] = field(default_factory=list)  # the output guard's reasons, as the reply is written
