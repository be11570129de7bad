"""A language model at the table: :class:`LLMAgent` plays through any OpenAI-compatible chat endpoint
(llama.cpp's server, vLLM, Ollama, hosted APIs) with the ``openai`` client (docs/guide/llm.md).

Spec: ``llm,base_url=http://127.0.0.1:8080/v1,model=qwen3-8b,temperature=0.2`` (settings as
:class:`LLMAgent`'s keywords). Each decision is one conversation: a system message with the rules
(:func:`treppen.agents.rules_text.rules_summary`) and a user message with the table as the
observation shows it (:func:`treppen.agents.human.render_view`), the legal moves listed or not
(``legal_moves``, as the two variants of Kaggle's Game Arena), and the reply format. The reply is
read by :func:`read_move` (:func:`treppen_env.actions.parse_action` on the last move it names). An
unreadable or illegal reply gets one retry that says what was wrong; after a second failure, or
when the request itself fails (a timeout, a 5xx, a 429, no connection, or an answer that is not a
well-formed chat completion: :func:`read_completion`), the agent plays its ``fallback`` agent's
move. A 4xx other than 408/409/429 means the setup is wrong (the key, the model's name) and raises,
rather than rate the fallback under the model's name; :meth:`LLMAgent.check_ready` asks the
endpoint once, so that a tournament finds a wrong setup before its first deal.

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
from typing import TYPE_CHECKING, Any

from treppen.agents.base import Agent, RandomAgent, legal_actions
from treppen.agents.greedy import GreedyAgent
from treppen.agents.human import illegal_reason, render_view
from treppen.agents.rules_text import rules_summary
from treppen_env.actions import action_to_str, parse_action
from treppen_env.messages import cut, shorten
from treppen_env.observation import PublicView
from treppen_env.observation import decode as decode_observation
from treppen_env.rules import Rules, make_rules

if TYPE_CHECKING:  # imported when an agent is built: the package installs without the serve extra
    import openai

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
#: A ``<think>`` block; one that never closes runs to the end of the reply.
_THINKING = re.compile(r"<think>.*?(?:</think>|\Z)", re.IGNORECASE | re.DOTALL)


@dataclass
class DealStats:
    """What the model did since the agent's last reset (counts; seconds of wall time waited)."""

    decisions: int = 0  #: moves the agent was asked for
    replies: int = 0  #: answers the endpoint gave (a retry's answer counts too)
    retries: int = 0  #: decisions asked a second time after an unreadable or illegal reply
    fallbacks: int = 0  #: decisions played by the fallback agent
    errors: int = 0  #: requests that failed: timeout, no connection, 5xx, 408/409/429, no chat completion
    timeouts: int = 0  #: of the failed requests, those that got no answer within ``timeout``
    prompt_tokens: int = 0  #: as the endpoint reports them (0 when it does not)
    completion_tokens: int = 0
    latency_s: float = 0.0  #: wall seconds spent waiting for the endpoint, failed requests included

    def to_dict(self) -> dict[str, Any]:
        """The counts as a JSON object (``latency_s`` rounded to milliseconds)."""
        return {**asdict(self), "latency_s": round(self.latency_s, 3)}


def read_move(reply: str) -> int:
    """The move a model's reply names: the last match of :data:`MOVE_PATTERN` that
    :func:`~treppen_env.actions.parse_action` reads, after dropping ``<think>`` blocks (one that
    never closes hides the rest of the reply).

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


def read_completion(body: bytes) -> tuple[str, int, int]:
    """The reply's text and its token counts in the body of a chat completion (any bytes: what
    an endpoint answers is data, read defensively).

    A well-formed completion is a JSON object whose ``choices`` is a non-empty list whose first item
    is an object with a ``message`` object that holds ``content``: text, or null (a reply without
    text, read as ``""``). ``usage`` may be missing or null; otherwise it is an object whose
    ``prompt_tokens`` and ``completion_tokens``, where given and not null, are whole numbers >= 0.

    :param body: the answer's body.
    :return: ``(text, prompt_tokens, completion_tokens)``, a count the endpoint does not report 0.
    :raises ValueError: saying what is not as above (not JSON, a field missing or of another type).
    """
    try:
        data = json.loads(body)
    except ValueError:  # JSONDecodeError, UnicodeDecodeError
        raise ValueError(f"the answer is not JSON: {shorten(body[:200])}") from None
    choices = _member(data, "choices", list, "the answer")
    if not choices:
        raise ValueError("the answer's choices are empty")
    message = _member(choices[0], "message", dict, "choices[0]")
    if "content" not in message:
        raise ValueError("choices[0].message has no content")
    content = message["content"]
    if content is not None and not isinstance(content, str):
        raise ValueError(f"choices[0].message.content is {shorten(content)}, not text")
    usage = data.get("usage")
    if usage is None:
        return content or "", 0, 0
    if not isinstance(usage, dict):
        raise ValueError(f"the answer's usage is {shorten(usage)}, not an object")
    counts = [usage.get(key) or 0 for key in ("prompt_tokens", "completion_tokens")]
    for key, count in zip(("prompt_tokens", "completion_tokens"), counts, strict=True):
        if type(count) is not int or count < 0:
            raise ValueError(f"usage.{key} is {shorten(count)}, not a whole number >= 0")
    return content or "", counts[0], counts[1]


#: JSON's name of each type a member of a chat completion must have, for messages.
_JSON_KINDS: dict[type, str] = {list: "a list", dict: "an object"}


def _member(owner: Any, key: str, kind: type, where: str) -> Any:
    """``owner[key]`` when ``owner`` is a JSON object and the member is of ``kind``.

    :raises ValueError: naming ``where`` and ``key`` otherwise.
    """
    if not isinstance(owner, dict):
        raise ValueError(f"{where} is {shorten(owner)}, not an object")
    value = owner.get(key)
    if not isinstance(value, kind):
        raise ValueError(f"{where}'s {key} is {shorten(value)}, not {_JSON_KINDS[kind]}")
    return value


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

    def check_ready(self) -> None:
        """Ask the endpoint once, with this agent's model and settings, so that a setup that cannot
        work stops a tournament before its first deal. A request that fails for a passing cause (a
        5xx, 408/409/429) and an answer that is no chat completion pass: a run counts those as
        failed requests and warns when the fallback plays too many decisions.

        :raises ValueError: naming ``base_url`` and the cause: no connection, no answer within
            ``timeout``, the key refused (401, 403), the model unknown (404), another 4xx.
        """
        import openai

        try:
            self._request([{"role": "user", "content": "Are you there? Reply with the word yes."}])
        except openai.APIStatusError as err:
            refusal = self._refusal(err)
            if refusal is not None:
                raise refusal from None
        except openai.APITimeoutError:
            raise ValueError(
                f"agent 'llm': {self.base_url} gave no answer within timeout={self.timeout:g} s; is the server "
                "up there, and is timeout= long enough for the model?"
            ) from None
        except openai.APIConnectionError as err:
            cause = err.__cause__ or err
            raise ValueError(
                f"agent 'llm': cannot connect to {self.base_url} ({cut(str(cause), 200)}); is the server running there?"
            ) from None

    def _request(self, messages: list[dict[str, str]]) -> bytes:
        """Send one chat completion request; return the body of the answer, unread.

        :raises openai.APIError: when the request fails (no connection, a timeout, an error status).
        """
        extra = {} if self.max_tokens is None else {"max_tokens": self.max_tokens}
        response = self.client.chat.completions.with_raw_response.create(  # type: ignore[call-overload]  # dicts
            model=self.model,
            messages=messages,
            temperature=self.temperature,
            seed=int(self.rng.integers(2**31)),
            **extra,
        )
        return bytes(response.http_response.content)

    def _refusal(self, err: openai.APIStatusError) -> ValueError | None:
        """The error for a status that says the setup is wrong (a 4xx other than 408/409/429), else None."""
        status = err.status_code
        if status in TRANSIENT_STATUSES or status >= 500:
            return None
        causes = {
            401: f"the key in ${self.api_key_env} was not accepted",
            403: f"the key in ${self.api_key_env} was not accepted",
            404: f"is model={self.model} a name it knows?",
        }
        cause = causes.get(status, f"check model= and the key in ${self.api_key_env}")
        return ValueError(
            f"agent 'llm': {self.base_url} refused the request for model {self.model!r} with {status} "
            f"({cut(str(err.message), 200)}); {cause}"
        )

    def _ask(self, messages: list[dict[str, str]]) -> str | None:
        """One chat completion: the reply's text, or None when the request failed (counted in
        ``errors``, and in ``timeouts`` when no answer came in time).

        :raises ValueError: when the endpoint refuses the request (see :meth:`_refusal`).
        """
        import openai

        started = time.perf_counter()
        try:
            body = self._request(messages)
        except openai.APIStatusError as err:
            refusal = self._refusal(err)
            if refusal is not None:
                raise refusal from None
            self.stats.errors += 1
            return None
        except openai.APIError as err:  # a timeout, no connection
            self.stats.errors += 1
            self.stats.timeouts += isinstance(err, openai.APITimeoutError)
            return None
        finally:
            self.stats.latency_s += time.perf_counter() - started
        try:
            text, prompt_tokens, completion_tokens = read_completion(body)
        except ValueError:  # an answer that is no chat completion is a failed request
            self.stats.errors += 1
            return None
        self.stats.replies += 1
        self.stats.prompt_tokens += prompt_tokens
        self.stats.completion_tokens += completion_tokens
        return text

    def __repr__(self) -> str:
        return f"LLMAgent(model={self.model!r}, base_url={self.base_url!r})"
