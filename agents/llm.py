"""A language model at the table: :class:`LLMAgent` plays through any OpenAI-compatible chat endpoint
(llama.cpp's server, vLLM, Ollama, hosted APIs) with the ``openai`` client (docs/guide/llm.md).

Spec: ``llm,base_url=http://127.0.0.1:8080/v1,model=qwen3-8b,temperature=0.2`` (settings as
:class:`LLMAgent`'s keywords). Each decision is one conversation: a system message with the rules
(:func:`treppen.agents.rules_text.rules_summary`) and a user message with the table as the
observation shows it (:func:`treppen.agents.human.render_view`), the legal moves listed or not
(``legal_moves``, as the two variants of Kaggle's Game Arena), and the reply format. The reply is
read by :func:`read_move` (:func:`treppen_env.actions.parse_action` on the last move it names). An
unreadable or illegal reply gets one retry that says what was wrong; after a second failure, or
when the request itself fails (a timeout, a 5xx, a 429, no connection), the agent plays its
``fallback`` agent's move. A 4xx other than 408/409/429 means the setup is wrong (the key, the
model's name) and raises, rather than rate the fallback under the model's name.

:meth:`LLMAgent.deal_stats` counts, since the last :meth:`~LLMAgent.reset` (one deal in a
tournament): decisions, replies, retries, fallbacks, failed requests, tokens and seconds waited;
``treppen tournament`` keeps them per deal in ``results.jsonl`` and prints them beside the Elo.

The API key is read from the environment variable named by ``api_key_env`` (default
``OPENAI_API_KEY``) and nowhere else: there is no setting that takes a key, so a key never reaches a
spec, a tournament's files or a game record.
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import asdict, dataclass
from typing import Any

from treppen.agents.base import Agent, RandomAgent, legal_actions
from treppen.agents.greedy import GreedyAgent
from treppen.agents.human import illegal_reason, render_view
from treppen.agents.rules_text import rules_summary
from treppen_env.actions import action_to_str, parse_action
from treppen_env.observation import PublicView
from treppen_env.observation import decode as decode_observation
from treppen_env.rules import Rules, make_rules

#: Agents that can stand in for the model: ``fallback`` names one.
FALLBACKS = {"greedy": GreedyAgent, "random": RandomAgent}
#: HTTP statuses after which the request failed but the setup may be right (the decision falls back).
TRANSIENT_STATUSES = (408, 409, 429)
REPLY_FORMAT = "Reply with exactly one move in the notation, alone on the last line of your reply (e.g. discard KC)."
_CARD = r"(?:10|[2-9TJQKA])[SHDC♠♥♦♣]"
#: A move in the notation, anywhere in a reply (:func:`read_move` takes the last one that parses).
MOVE_PATTERN = re.compile(
    rf"\b(?:draw|take\s+\d+|discard\s+{_CARD}|layoff\s+{_CARD}\s+(?:set|low|high)|meld(?:\s+{_CARD}){{3,13}})(?!\w)",
    re.IGNORECASE,
)
_THINKING = re.compile(r"<think>.*?</think>", re.IGNORECASE | re.DOTALL)


@dataclass
class DealStats:
    """What the model did since the agent's last reset (counts; seconds of wall time waited)."""

    decisions: int = 0  #: moves the agent was asked for
    replies: int = 0  #: answers the endpoint gave (a retry's answer counts too)
    retries: int = 0  #: decisions asked a second time after an unreadable or illegal reply
    fallbacks: int = 0  #: decisions played by the fallback agent
    errors: int = 0  #: requests that failed: timeout, no connection, 5xx, 408/409/429
    prompt_tokens: int = 0  #: as the endpoint reports them (0 when it does not)
    completion_tokens: int = 0
    latency_s: float = 0.0  #: wall seconds spent waiting for the endpoint, failed requests included

    def to_dict(self) -> dict[str, Any]:
        """The counts as a JSON object (``latency_s`` rounded to milliseconds)."""
        return {**asdict(self), "latency_s": round(self.latency_s, 3)}


def read_move(reply: str) -> int:
    """The move a model's reply names: the last match of :data:`MOVE_PATTERN` that
    :func:`~treppen_env.actions.parse_action` reads, after dropping ``<think>`` blocks.

    :param reply: the model's text.
    :return: an action index 0..897 (legal or not).
    :raises ValueError: when the reply names no move in the notation.
    """
    text = _THINKING.sub(" ", reply)
    for match in reversed(MOVE_PATTERN.findall(text)):
        try:
            return parse_action(match)
        except ValueError:
            continue
    shown = " ".join(text.split())
    shown = shown if len(shown) <= 80 else f"{shown[:77]}..."
    forms = "draw, take D, meld ..., layoff ..., discard C"
    raise ValueError(f"the reply {shown!r} names no move in the notation ({forms})")


class LLMAgent(Agent):
    """Plays by asking a chat model (see the module docstring).

    :param seed: seeds the agent's generator (the per-request ``seed`` sent to the endpoint) and the fallback.
    :param rules: the game's rules (a preset name or :class:`~treppen_env.rules.Rules`); the prompt states them.
    :param base_url: the endpoint's OpenAI API root, e.g. ``http://127.0.0.1:8080/v1``.
    :param model: the model's name at the endpoint.
    :param temperature: sampling temperature sent with each request.
    :param legal_moves: list the legal moves in the prompt (False: the model must find them).
    :param fallback: the agent that moves when the model does not: ``greedy`` or ``random``.
    :param timeout: seconds to wait for one reply before the request counts as failed.
    :param max_tokens: the most tokens a reply may hold (None: the endpoint's limit).
    :param api_key_env: the environment variable holding the API key (unset: no key is sent).
    :raises ValueError: for a missing ``model``, a ``base_url`` that is not http(s), an unknown
        ``fallback`` or a non-positive ``timeout`` or ``max_tokens``.
    :raises ImportError: when the ``openai`` package is not installed (``pip install 'treppen[serve]'``).
    """

    name = "llm"

    def __init__(
        self,
        seed: int | None = None,
        rules: Rules | str | None = None,
        base_url: str = "",
        model: str = "",
        temperature: float = 0.0,
        legal_moves: bool = True,
        fallback: str = "greedy",
        timeout: float = 60.0,
        max_tokens: int | None = None,
        api_key_env: str = "OPENAI_API_KEY",
    ):
        super().__init__(seed)
        if not model:
            raise ValueError("agent 'llm' needs model=NAME, the model's name at the endpoint (e.g. llm,model=qwen3-8b)")
        if not str(base_url).startswith(("http://", "https://")):
            raise ValueError(
                f"agent 'llm': base_url={base_url!r} must be an http(s) URL, e.g. http://127.0.0.1:8080/v1"
            )
        if fallback not in FALLBACKS:
            raise ValueError(f"agent 'llm': fallback={fallback!r}; choose one of {sorted(FALLBACKS)}")
        if not timeout > 0 or (max_tokens is not None and (not isinstance(max_tokens, int) or max_tokens < 1)):
            raise ValueError(f"agent 'llm': timeout={timeout!r} and max_tokens={max_tokens!r} must be positive")
        try:
            import openai
        except ImportError:
            raise ImportError("agent 'llm' needs the openai package: pip install 'treppen[serve]'") from None
        self.rules = make_rules(rules or "treppenromme")
        self.base_url, self.model, self.temperature = str(base_url), str(model), float(temperature)
        self.legal_moves, self.timeout, self.max_tokens = legal_moves, float(timeout), max_tokens
        self.api_key_env = api_key_env
        self.fallback = FALLBACKS[fallback](seed=seed, **({"rules": self.rules} if fallback == "greedy" else {}))
        key = os.environ.get(api_key_env) or "no-key"  # local servers take any key; the client needs one
        self.client = openai.OpenAI(base_url=self.base_url, api_key=key, timeout=self.timeout, max_retries=0)
        self.system = f"You are playing a card game.\n\n{rules_summary(self.rules)}"
        self.stats = DealStats()

    def reset(self, seed: int | None = None) -> None:
        """Start a deal: the counts start again at zero (:meth:`deal_stats`)."""
        super().reset(seed)
        self.fallback.reset(seed)
        self.stats = DealStats()

    def deal_stats(self) -> dict[str, Any]:
        """The counts since the last :meth:`reset` (:class:`DealStats` as a dict)."""
        return self.stats.to_dict()

    def act(self, observation: dict[str, Any]) -> int:
        """Ask the model for a move (one retry after an unreadable or illegal reply), else the fallback's.

        :raises ValueError: when the endpoint refuses the request itself (a 4xx other than
            408/409/429: a wrong key, model name or setting), naming the status and its message.
        """
        moves = [int(a) for a in legal_actions(observation)]
        view = decode_observation(observation)
        self.stats.decisions += 1
        messages = [{"role": "system", "content": self.system}, {"role": "user", "content": self.prompt(view, moves)}]
        for attempt in range(2):
            reply = self._ask(messages)
            if reply is None:
                break
            try:
                action = read_move(reply)
            except ValueError as err:
                problem = f"I could not read a move: {err}."
            else:
                if action in moves:
                    return action
                problem = f"That move is not legal now: {illegal_reason(action, view)}."
            if attempt == 0:
                self.stats.retries += 1
                messages += [
                    {"role": "assistant", "content": reply},
                    {"role": "user", "content": f"{problem} {REPLY_FORMAT}"},
                ]
        self.stats.fallbacks += 1
        return self.fallback.act(observation)

    def prompt(self, view: PublicView, moves: list[int]) -> str:
        """The user message of a decision: the table, the legal moves (with ``legal_moves``) and the reply format."""
        parts = [f"The table as you see it ({view.num_players} players):", render_view(view, moves)]
        if self.legal_moves:
            parts.append(f"Legal moves ({len(moves)}):\n" + "\n".join(f"- {action_to_str(a)}" for a in moves))
        parts.append(f"Choose your move. {REPLY_FORMAT}")
        return "\n\n".join(parts)

    def _ask(self, messages: list[dict[str, str]]) -> str | None:
        """One chat completion: the reply's text, or None when the request failed (counted in ``errors``)."""
        import openai

        extra = {} if self.max_tokens is None else {"max_tokens": self.max_tokens}
        started = time.perf_counter()
        try:
            response = self.client.chat.completions.create(  # type: ignore[call-overload]  # messages as plain dicts
                model=self.model,
                messages=messages,
                temperature=self.temperature,
                seed=int(self.rng.integers(2**31)),
                **extra,
            )
        except openai.APIStatusError as err:
            if err.status_code not in TRANSIENT_STATUSES and err.status_code < 500:
                raise ValueError(
                    f"agent 'llm': {self.base_url} refused the request for model {self.model!r} with "
                    f"{err.status_code} ({err.message}); check model= and the key in ${self.api_key_env}"
                ) from None
            self.stats.errors += 1
            return None
        except (openai.APIError, json.JSONDecodeError):  # a timeout, no connection, a body that is not JSON
            self.stats.errors += 1
            return None
        finally:
            self.stats.latency_s += time.perf_counter() - started
        self.stats.replies += 1
        usage = getattr(response, "usage", None)
        self.stats.prompt_tokens += int(getattr(usage, "prompt_tokens", 0) or 0)
        self.stats.completion_tokens += int(getattr(usage, "completion_tokens", 0) or 0)
        choices = getattr(response, "choices", None) or []
        return (choices[0].message.content or "") if choices else ""

    def __repr__(self) -> str:
        return f"LLMAgent(model={self.model!r}, base_url={self.base_url!r})"
