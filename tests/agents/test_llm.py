"""The ``llm`` agent against a scripted chat endpoint on 127.0.0.1 (tests/chat_server.py): legal,
illegal, unreadable, slow, failing and malformed answers, each counted exactly; reading replies; the
key; the check of an endpoint before a tournament."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from tests import chat_server
from treppen import agents
from treppen.agents.greedy import GreedyAgent
from treppen.agents.llm import read_completion, read_move
from treppen_env import raw_env
from treppen_env.actions import action_to_str, parse_action


@pytest.fixture
def server():
    s = chat_server.start()
    yield s
    chat_server.stop(s)


@pytest.fixture
def meld_phase():
    """The observation of a seat to move in the meld phase (after its draw) of a seeded deal."""
    env = raw_env(num_players=2)
    env.reset(seed=3)
    env.step(parse_action("draw"))
    return env.observe(env.agent_selection)


def legal_texts(observation):
    return [action_to_str(int(a)) for a in np.flatnonzero(observation["action_mask"])]


def llm(server, **settings):
    extra = "".join(f",{k}={v}" for k, v in settings.items())
    return agents.load(f"llm,base_url={server.url},model=scripted{extra}", seed=1, rules="treppenromme")


@pytest.mark.parametrize(
    ("reply", "move"),
    [
        ("discard KC", "discard KC"),
        ("I keep the run. **Move:** `meld 7s 8s 9s`.", "meld 7S 8S 9S"),
        ("<think>maybe draw</think>\ntake 2", "take 2"),
        ("layoff 10♠ high", "layoff TS high"),
        ("draw or take 1? I draw.\ndiscard QH", "discard QH"),
        ("Move: discard ZZ, no: discard 2D", "discard 2D"),
        ("draw\n<think>or rather discard KC", "draw"),  # an unclosed block hides what follows, not what precedes
    ],
)
def test_a_reply_is_read_as_its_last_move(reply, move):
    assert read_move(reply) == parse_action(move)


@pytest.mark.parametrize(
    "reply",
    ["", "I pass.", "<think>discard KC</think> hmm", "meld KC", "<think>discard KC", "<THINK>x</think><think>draw"],
)
def test_a_reply_without_a_move_is_an_error(reply):
    with pytest.raises(ValueError, match="names no move in the notation"):
        read_move(reply)


def test_a_legal_reply_is_played_and_counted(server, meld_phase):
    move = legal_texts(meld_phase)[-1]
    server.script = [move]
    agent = llm(server)
    assert action_to_str(agent.act(meld_phase)) == move
    stats = agent.deal_stats()
    assert {k: v for k, v in stats.items() if k != "latency_s"} == {
        "decisions": 1,
        "replies": 1,
        "retries": 0,
        "fallbacks": 0,
        "errors": 0,
        "timeouts": 0,
        "prompt_tokens": 100,
        "completion_tokens": 2,
    }
    assert stats["latency_s"] > 0
    (request,) = server.requests
    assert request["model"] == "scripted" and request["temperature"] == 0.0
    system, user = request["messages"]
    assert "Treppenrommé" in system["content"] and "layoff C set|low|high" in system["content"]
    assert "your hand:" in user["content"] and f"- {move}\n" in user["content"] + "\n"


def test_an_illegal_reply_is_retried_once_with_the_reason(server, meld_phase):
    legal = legal_texts(meld_phase)
    server.script = ["take 1", legal[0]]
    agent = llm(server)
    assert action_to_str(agent.act(meld_phase)) == legal[0]
    stats = agent.deal_stats()
    assert (stats["decisions"], stats["replies"], stats["retries"], stats["fallbacks"]) == (1, 2, 1, 0)
    retry = server.requests[1]["messages"]
    assert [m["role"] for m in retry] == ["system", "user", "assistant", "user"]
    assert retry[2]["content"] == "take 1"
    reason = "That move is not legal now: take 1: you already drew this turn (RULES §4.1)."
    assert retry[3]["content"].startswith(reason)


def test_two_unreadable_replies_fall_back_to_greedy(server, meld_phase):
    server.script = ["I am not sure.", "Still thinking."]
    agent = llm(server)
    expected = GreedyAgent(seed=1, rules="treppenromme").act(meld_phase)
    assert agent.act(meld_phase) == expected
    stats = agent.deal_stats()
    assert (stats["replies"], stats["retries"], stats["fallbacks"], stats["errors"]) == (2, 1, 1, 0)
    assert stats["completion_tokens"] == 4 + 2  # words of the two replies
    assert server.requests[1]["messages"][3]["content"].startswith("I could not read a move: the reply")


@pytest.mark.parametrize(
    "entry",
    [("status", 500), ("status", 503), ("status", 429), ("slow", 2.0, "draw"), ("garbage",)],
    ids=["500", "503", "429", "slow", "not-json"],
)
def test_a_failed_request_falls_back_at_once(server, meld_phase, entry):
    server.script = [entry]
    agent = llm(server, timeout=0.5, fallback="random")
    action = agent.act(meld_phase)
    assert meld_phase["action_mask"][action] == 1
    stats = agent.deal_stats()
    assert (stats["replies"], stats["retries"], stats["fallbacks"], stats["errors"]) == (0, 0, 1, 1)
    assert stats["timeouts"] == (entry[0] == "slow")
    assert len(server.requests) == 1  # no retry of a failed request
    agent.reset()
    assert agent.deal_stats()["decisions"] == 0


def completion(content="draw", **fields):
    """A well-formed chat completion's body, with ``fields`` replacing its members."""
    body = {
        "id": "chat-1",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 7, "completion_tokens": 1, "total_tokens": 8},
    }
    return {**body, **fields}


MALFORMED = {
    "choices-of-empty-object": ("json", {"choices": [{}]}),
    "choices-text": ("json", {"choices": "abc"}),
    "choices-empty": ("json", completion(choices=[])),
    "choices-missing": ("json", {"id": "chat-1"}),
    "message-text": ("json", completion(choices=[{"message": "draw"}])),
    "content-missing": ("json", completion(choices=[{"message": {"role": "assistant"}}])),
    "content-number": ("json", completion(choices=[{"message": {"content": 5}}])),
    "usage-tokens-text": ("json", completion(usage={"prompt_tokens": "abc", "completion_tokens": 1})),
    "usage-tokens-negative": ("json", completion(usage={"prompt_tokens": 3, "completion_tokens": -1})),
    "usage-text": ("json", completion(usage="abc")),
    "list-body": ("json", [completion()]),
    "number-body": ("json", 42),
    "html-body": ("html", "<html><body><h1>502 Bad Gateway</h1></body></html>"),
    "not-json": ("garbage",),
}


@pytest.mark.parametrize("entry", MALFORMED.values(), ids=MALFORMED.keys())
def test_an_answer_that_is_no_chat_completion_is_a_failed_request(server, meld_phase, entry):
    server.script = [entry]
    agent = llm(server)
    assert agent.act(meld_phase) == GreedyAgent(seed=1, rules="treppenromme").act(meld_phase)
    stats = agent.deal_stats()
    assert (stats["replies"], stats["retries"], stats["fallbacks"], stats["errors"]) == (0, 0, 1, 1)
    assert (stats["prompt_tokens"], stats["completion_tokens"]) == (0, 0)
    assert len(server.requests) == 1  # a failed request is not retried


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"<html>", "the answer is not JSON: b'<html>'"),
        (b"\xff\xfe", "the answer is not JSON"),
        (b"[1]", "the answer is [1], not an object"),
        (b'{"choices": "abc"}', "the answer's choices is 'abc', not a list"),
        (b'{"choices": []}', "the answer's choices are empty"),
        (b'{"choices": [{}]}', "choices[0]'s message is None, not an object"),
        (b'{"choices": [3]}', "choices[0] is 3, not an object"),
        (b'{"choices": [{"message": {}}]}', "choices[0].message has no content"),
        (b'{"choices": [{"message": {"content": [1]}}]}', "choices[0].message.content is [1], not text"),
        (b'{"choices": [{"message": {"content": "x"}}], "usage": []}', "usage is [], not an object"),
        (
            b'{"choices": [{"message": {"content": "x"}}], "usage": {"prompt_tokens": true}}',
            "usage.prompt_tokens is True, not a whole number",
        ),
        (
            b'{"choices": [{"message": {"content": "x"}}], "usage": {"completion_tokens": 1.5}}',
            "usage.completion_tokens is 1.5, not a whole number",
        ),
    ],
)
def test_read_completion_names_what_is_malformed(body, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        read_completion(body)


@pytest.mark.parametrize(
    ("data", "read"),
    [
        (completion("discard KC"), ("discard KC", 7, 1)),
        (completion(None), ("", 7, 1)),  # a reply without text: read as empty, then retried as unreadable
        (completion("draw", usage=None), ("draw", 0, 0)),
        ({"choices": [{"message": {"content": "draw"}}]}, ("draw", 0, 0)),
        (completion("draw", usage={"prompt_tokens": 5, "completion_tokens": None}), ("draw", 5, 0)),
    ],
)
def test_read_completion_reads_a_chat_completion(data, read):
    assert read_completion(json.dumps(data).encode()) == read


def test_a_reply_without_text_is_retried(server, meld_phase):
    legal = legal_texts(meld_phase)
    server.script = [("json", completion(None)), legal[0]]
    agent = llm(server)
    assert action_to_str(agent.act(meld_phase)) == legal[0]
    stats = agent.deal_stats()
    assert (stats["replies"], stats["retries"], stats["fallbacks"], stats["errors"]) == (2, 1, 0, 0)


@pytest.mark.parametrize(
    ("status", "cause"),
    [
        (400, "check model= and the key in \\$OPENAI_API_KEY"),
        (401, "the key in \\$OPENAI_API_KEY was not accepted"),
        (403, "the key in \\$OPENAI_API_KEY was not accepted"),
        (404, "is model=scripted a name it knows\\?"),
    ],
)
def test_a_refused_request_is_a_clear_error(server, meld_phase, status, cause):
    server.script = [("status", status)]
    with pytest.raises(ValueError, match=rf"refused the request for model 'scripted' with {status} .*; {cause}"):
        llm(server).act(meld_phase)


def test_check_ready_names_an_endpoint_that_cannot_be_reached():
    """(A refused key or model, and a timeout: tests/arena/test_llm_tournament.py, through the command.)"""
    agent = agents.load("llm,base_url=http://127.0.0.1:9/v1,model=x")
    message = r"^agent 'llm': cannot connect to http://127.0.0.1:9/v1 \(.+\); is the server running there\?$"
    with pytest.raises(ValueError, match=message):
        agent.check_ready()


@pytest.mark.parametrize("entry", ["yes", ("status", 500), ("status", 429), ("garbage",), ("json", {"choices": [{}]})])
def test_check_ready_passes_an_endpoint_that_answers(server, entry):
    server.script = [entry]
    agent = llm(server)
    agent.check_ready()  # what the run counts (failed requests, replies without a move) is no setup error
    assert len(server.requests) == 1 and agent.deal_stats()["decisions"] == 0


def test_without_the_legal_moves_the_prompt_lists_none(server, meld_phase):
    server.script = ["discard AS"]
    llm(server, legal_moves=False).act(meld_phase)
    user = server.requests[0]["messages"][1]["content"]
    assert "Legal moves" not in user and "- discard" not in user


def test_the_key_comes_from_the_environment_only(server, meld_phase, monkeypatch):
    monkeypatch.setenv("TREPPEN_TEST_KEY", "sk-test-123")
    agent = llm(server, api_key_env="TREPPEN_TEST_KEY")
    agent.act(meld_phase)
    assert server.requests[0]["_authorization"] == "Bearer sk-test-123"
    assert "sk-test" not in repr(agent)
    with pytest.raises(ValueError, match="has no setting 'api_key'"):
        llm(server, api_key="sk-test-123")


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("llm,base_url=http://127.0.0.1:9/v1", "needs model=NAME"),
        ("llm,model=m", "base_url='' must be an http"),
        ("llm,base_url=http://127.0.0.1:9/v1,model=m,fallback=rollout", "fallback='rollout'; choose one of"),
        ("llm,base_url=http://127.0.0.1:9/v1,model=m,timeout=0", "must be positive"),
    ],
)
def test_bad_settings_are_clear_errors(spec, message):
    with pytest.raises(ValueError, match=message):
        agents.load(spec)
