"""``treppen play`` as a person meets it: the human agent's input handling and texts, and the CLI's
names (docs/ARCHITECTURE.md "Command line"; RULES §4 for the phases, §5 for booked points)."""

from __future__ import annotations

import io
from typing import Any

import numpy as np

import treppen_env
from tests.env_helpers import stack_deck
from treppen.agents import HumanAgent
from treppen.agents.human import PROMPT, render_view
from treppen_env.actions import DISCARD_BASE, DRAW, parse_action
from treppen_env.observation import decode

NO_MELD_HAND = ["2C", "5D", "9H", "KS", "7C", "JD", "4S"]


def _env(hand: list[str], stock: list[str]) -> Any:
    env = treppen_env.raw_env(num_players=2)
    env.reset(options={"deck": stack_deck(2, "treppenromme", 0, hands={0: hand}, staircase="9D", stock=stock)})
    return env


def _human(lines: list[str]) -> tuple[HumanAgent, list[str], list[str]]:
    answers, prompts, out = iter(lines), [], []

    def read(prompt: str) -> str:
        prompts.append(prompt)
        return next(answers)

    return HumanAgent(input_fn=read, output_fn=out.append), prompts, out


def test_empty_line_asks_again_and_help_works_as_question_mark():
    env = _env(NO_MELD_HAND, ["AH"])
    human, prompts, out = _human(["", "   ", "help", "HELP", "?", "draw"])
    assert human.act(env.observe("player_0")) == DRAW
    assert prompts == [PROMPT] * 6 and "? for help" in PROMPT
    text = "\n".join(out)
    assert "cannot read" not in text  # an empty line is no error, it just asks again
    assert text.count("type a move as listed") == 3 and text.count("your hand:") == 4


def test_the_drawn_card_is_named_and_a_discard_only_phase_reads_discard():
    env = _env(NO_MELD_HAND, ["AH"])
    human, _, out = _human(["draw", "discard AH"])
    assert "(draw)" in render_view(decode(env.observe("player_0")))
    assert human.act(env.observe("player_0")) == DRAW
    env.step(DRAW)
    obs = env.observe("player_0")
    assert np.flatnonzero(obs["action_mask"]).min() >= DISCARD_BASE  # nothing to meld or lay off
    out.clear()
    assert human.act(obs) == parse_action("discard AH")
    text = "\n".join(out)
    assert "to move: you (discard)" in text and "(meld)" not in text
    assert "you drew AH from the stock" in text


def test_a_meld_phase_reads_meld_and_taking_names_no_drawn_card():
    env = _env(["5H", "6H", "7H", "8H", "KS", "KD", "2C"], ["KC"])
    human, _, out = _human(["take 1", "meld 5H 6H 7H"])
    assert human.act(env.observe("player_0")) == parse_action("take 1")
    env.step(parse_action("take 1"))
    out.clear()
    assert human.act(env.observe("player_0")) == parse_action("meld 5H 6H 7H")
    text = "\n".join(out)
    assert "to move: you (meld)" in text and "you drew" not in text


def test_booked_points_are_explained():
    text = render_view(decode(_env(NO_MELD_HAND, ["AH"]).observe("player_0")))
    assert "booked this deal (meld and lay-off points, RULES §5): you 0 (total 0), P+1 0 (total 0)" in text


def test_treppen_play_names_seats_as_the_table_does(monkeypatch, capsys, tmp_path):
    from treppen.apps import cli

    monkeypatch.setattr("sys.stdin", io.StringIO("0\n" * 5000))
    assert (
        cli.main(["play", "--opponents", "random", "greedy", "--seat", "1", "--seed", "3", "--record", str(tmp_path)])
        == 0
    )
    out = capsys.readouterr().out
    first = out.splitlines()[0]
    assert (
        first
        == "You sit at seat 1; P+2 = random, P+1 = greedy. Type a move or its number; ? or help explains, quit leaves."
    )
    assert "player_" not in out
    assert "P+1: " in out and "P+2: " in out and "\n  you: " in out
