"""Rendering (treppen_env.render, the env's render modes; docs/ARCHITECTURE.md "Environment")."""

from __future__ import annotations

import pytest

import treppen_env
from tests.env_helpers import B_DECK, play_texts, scenario_t
from treppen_env.render import render_text

# Scenario T (see env_helpers) with player_0 to move: its own hand is shown, the others' as counts.
T_TEXT = """\
deal 1, turn 3, dealer P0, to move P0 (meld)
stock: 24 cards
staircase (2, top last):
  6S   (take 2)
    2S   (take 1)
melds:
  P0 run JH QH KH AH 2H 3H 4H
  P0 set 5S 5H 5D 5C
  P1 run 6C 7C 8C
  P2 run 9C TC JC
P0: 3S 4S 8S 9S  | booked 32, total 0
P1: 2 cards  | booked 39, total 0
P2: 3 cards  | booked 43, total 0"""


def test_ansi_render_draws_the_table():
    env = scenario_t(render_mode="ansi")
    assert env.render() == T_TEXT


def test_render_text_for_another_observer_and_all_hands():
    state = scenario_t().unwrapped.game
    # player_1 sees player_0's publicly known cards (taken from the staircase, RULES §4.1)
    lines = render_text(state, observer=1).splitlines()
    assert lines[-3:] == [
        "P0: 4 cards, known: 3S 4S  | booked 32, total 0",
        "P1: 4D JD  | booked 39, total 0",
        "P2: 3 cards  | booked 43, total 0",
    ]
    # observer None shows every hand
    assert render_text(state).splitlines()[-1] == "P2: 7S 2D AC  | booked 43, total 0"  # suit then rank


def test_ansi_render_at_deal_end_and_staircase_steps():
    env = treppen_env.env(num_players=2, render_mode="ansi", max_turns=2)
    env.reset(options={"deck": B_DECK, "dealer": 0})
    play_texts(env, "draw", "meld 5S 5H 5D", "meld 9C TC JC", "discard 6H", "draw", "discard 7H")
    text = env.render()
    assert "staircase (3, top last):\n  2S   (take 3)\n    6H   (take 2)\n      7H   (take 1)\n" in text
    assert "melds:\n  P0 set 5S 5H 5D\n  P0 run 9C TC JC\n" in text
    assert text.endswith("deal over: max_turns, deal points [44, 0]")


def test_human_render_prints(capsys):
    env = scenario_t(render_mode="human")
    out = capsys.readouterr().out
    assert out.endswith(T_TEXT + "\n")  # printed after every step
    assert out.count("stock: ") == 16  # one table per scripted step
    assert env.render() is None
    assert capsys.readouterr().out == T_TEXT + "\n"


def test_render_needs_a_mode_and_a_reset():
    env = treppen_env.raw_env()
    env.reset(seed=0)
    with pytest.raises(ValueError, match="render_mode is None"):
        env.render()
    with pytest.raises(RuntimeError, match=r"call reset\(\)"):
        treppen_env.raw_env(render_mode="ansi").render()
