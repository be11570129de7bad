"""The planner (treppen.agents.planner, treppen_env.agent_core.planner_kernels and plan_value): an exhaustive
turn search, scripted positions, what it may read, and the same moves as an agent and inside the
playouts (RULES §4-§6; docs/guide/agents.md "The planner")."""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np
import pytest

from tests.agents.test_agents import _discard_position, built_env, run_turn
from tests.env_helpers import swap_hidden
from treppen import agents
from treppen.agents import GreedyAgent, PlannerAgent
from treppen_env.actions import DISCARD_BASE, MELD_BASE
from treppen_env.agent_core import greedy_kernels, plan_value, planner_kernels, playout_kernels
from treppen_env.agent_hooks import heuristic_inputs
from treppen_env.cards import cards_to_bits, parse_card
from treppen_env.engine import GameState, Phase
from treppen_env.observation import encode
from treppen_env.rules import make_rules

# ---------------------------------------------------------------------------- the turn search

#: Planner values that cost nothing for the cards left: a plan scores its booked points.
BOOKED_ONLY = plan_value.values_row(**{name: 0.0 for name in plan_value.DEFAULT_VALUES})


def _meld_phase(hand: list[str]) -> GameState:
    """Seat 0 of a 2-player treppenromme deal in its meld phase holding ``hand`` (after a deep
    take, say), seat 1 seven other cards, the staircase the 2C, the rest the stock."""
    mine = cards_to_bits(parse_card(c) for c in hand)
    rest = [c for c in range(52) if not mine >> c & 1 and c != parse_card("2C")]
    return GameState.from_position(
        make_rules("treppenromme"),
        np.random.default_rng(0),
        dealer=0,
        current=0,
        phase=Phase.MELD,
        hands=[mine, cards_to_bits(rest[:7])],
        staircase=[parse_card("2C")],
        stock=rest[7:],
    )


def _best_booked(state: GameState) -> int:
    """The most points the mover can book this turn by melds and lay-offs (RULES §4.3, §5.1),
    by enumerating every sequence of legal lays through the engine (positions memoized)."""
    seat = state.current

    @cache
    def best(key: bytes) -> int:
        s = positions[key]
        top = 0
        for a in np.flatnonzero(s.legal_mask()):
            if MELD_BASE <= a < DISCARD_BASE:
                nxt = s.clone()
                nxt.apply(int(a))
                gained = nxt.points[seat] - s.points[seat]
                top = max(top, gained + best(_remember(nxt)))
        return top

    positions: dict[bytes, GameState] = {}

    def _remember(s: GameState) -> bytes:
        key = b"".join(a.tobytes() for a in s.arrays())
        positions[key] = s
        return key

    return best(_remember(state))


def _planner_best(state: GameState, values: np.ndarray) -> float:
    """The planner's turn search's best score for the mover's hand (RULES §4.3-4.5)."""
    inputs = heuristic_inputs(state, state.current)
    tab = state.tables.tab
    work = greedy_kernels.workspace()
    d = greedy_kernels.planner_decision(inputs, np.zeros(3, dtype=np.uint64), tab, values, work)
    score, _ = greedy_kernels._plan(inputs.cards[greedy_kernels.HAND], d, -1, -1, False, -1)
    return score


HANDS = [
    # runs that overlap sets: 5-6-7 of hearts with the other 5s and 7s
    ["5H", "6H", "7H", "5S", "5D", "7S", "7D", "KC", "2S"],
    # a long run and sets cutting into it: which cards go where decides the points
    ["9S", "TS", "JS", "QS", "KS", "9H", "9D", "QH", "QD", "3C", "4D"],
    # the ace's value depends on where it lies (RULES §3.3): A-A-A, Q-K-A or A-2-3
    ["AS", "AH", "AD", "KS", "QS", "2S", "3S", "2H", "3H", "8C", "9D"],
]


@pytest.mark.parametrize("hand", HANDS)
def test_turn_search_finds_the_most_points_a_brute_force_finds(hand: list[str]) -> None:
    """With values that cost nothing for the cards kept, the planner's best plan books exactly the
    most points that any sequence of legal melds and lay-offs books (no hand here can go out)."""
    state = _meld_phase(hand)
    assert _planner_best(state, BOOKED_ONLY) == _best_booked(state)


def test_a_hand_where_packing_the_best_meld_first_loses_points() -> None:
    """8S 8H 8D 8C 6H 7H 9S TS 9D TD: the 4-card set books 32 and leaves nothing to meld; three
    runs through the eights, 6H-7H-8H, 8S-9S-TS and 8D-9D-TD, book 21 + 27 + 27 = 75 (RULES §3.4-3.5).
    The search finds the 75 that the brute force finds."""
    state = _meld_phase(["8S", "8H", "8D", "8C", "6H", "7H", "9S", "TS", "9D", "TD", "2H", "KC"])
    assert _best_booked(state) == 75
    assert _planner_best(state, BOOKED_ONLY) == 75


# ---------------------------------------------------------------------------- scripted positions


def test_goes_out_when_it_wins_the_deal() -> None:
    """Seat 0 holds 5H-8H, KS KD and 2C and draws KC: it melds both and discards the 2C, going out
    Rommé (RULES §6.1-6.2)."""
    env = built_env(
        "treppenromme", 2, 0, hands={0: ["5H", "6H", "7H", "8H", "KS", "KD", "2C"]}, staircase="9D", stock=["KC"]
    )
    texts = run_turn(env, PlannerAgent(rules="treppenromme"))
    assert texts[0] == "draw"
    assert set(texts[1:3]) == {"meld 5H 6H 7H 8H", "meld KS KD KC"}
    assert texts[3:] == ["discard 2C"]
    assert env.infos["player_0"]["outcome"] == "romme"


def test_does_not_feed_the_card_next_to_what_the_opponent_took() -> None:
    """The next seat took 9D 9C from the staircase: the planner keeps the 9S (it would complete
    their set, RULES §4.1) and discards another card."""
    texts = run_turn(_discard_position(opponent_takes=True), PlannerAgent(rules="treppenromme"))
    assert texts[0] == "draw"
    assert texts[-1] != "discard 9S"
    assert texts[-1].startswith("discard")


def test_keeps_a_pair_the_staircase_can_complete() -> None:
    """Seat 0 holds the pair 8S 8H with the 8D on the staircase below two cards, and junk: it does
    not break the pair (the 8D can still be taken, RULES §4.1)."""
    env = built_env(
        "treppenromme",
        2,
        0,
        hands={0: ["8S", "8H", "2C", "4D", "6C", "JD", "KC"]},
        staircase="8D",
        stock=["QS", "TH", "3S"],
    )
    env.step(0)
    env.step(DISCARD_BASE + parse_card("QS"))  # seat 0: 8D QS
    env.step(0)
    env.step(DISCARD_BASE + parse_card("TH"))  # seat 1: 8D QS TH
    texts = run_turn(env, PlannerAgent(rules="treppenromme"))
    kept = texts[-1].split()[-1]
    assert texts[-1].startswith("discard") and kept not in ("8S", "8H")


# ---------------------------------------------------------------------------- what it reads


def _deal_states(preset: str, players: int, seed: int):
    """The states of one seeded deal played by planners at every seat."""
    rules = make_rules(preset)
    state = GameState(rules, players, np.random.default_rng(seed))
    state.deal(seed % players)
    agent = PlannerAgent(rules=rules)
    while not state.deal_over:
        yield state
        state.apply(agent.act({"observation": encode(state, state.current), "action_mask": state.legal_mask()}))


@pytest.mark.parametrize(("preset", "players"), [("treppenromme", 2), ("rum500", 3)])
def test_reads_only_what_the_mover_may_see(preset: str, players: int) -> None:
    """Two states that differ only in cards the mover cannot see give the same action."""
    rng = np.random.default_rng(5)
    agent = PlannerAgent(rules=preset)
    checked = 0
    for seed in range(3):
        for state in _deal_states(preset, players, seed):
            seat = state.current
            other = swap_hidden(state, seat, rng)
            actions = {
                agent.act({"observation": encode(s, seat), "action_mask": s.legal_mask().copy()})
                for s in (state, other)
            }
            assert len(actions) == 1
            checked += 1
    assert checked > 30


@pytest.mark.parametrize("seed", range(6))
def test_plays_the_same_moves_as_an_agent_and_in_a_playout(seed: int) -> None:
    """A 2-player deal played by two planner agents from their observations, move by move equal to
    the planner seats of a playout (their memory kept by the kernels, RULES §4.1, §4.4)."""
    preset = "treppenromme" if seed % 2 else "rum500"
    rules = make_rules(preset)
    state = GameState(rules, 2, np.random.default_rng(seed))
    state.deal(seed % 2)
    players = [PlannerAgent(rules=rules), PlannerAgent(rules=rules)]
    tab, meld_bits = state.tables.tab, state.tables.meld_bits
    agent = players[0]
    playout = playout_kernels.Playout(
        policies=playout_kernels.seat_policies("planner", 2),
        settings=greedy_kernels.settings_row(),
        values=agent.values,
    )
    work = playout_kernels.scratch()
    position = state.arrays()
    u64, i8, i64 = position.u64, position.i8, position.i64
    playout_kernels.start(u64, i8, i64, tab, meld_bits, work)
    moves = 0
    while not state.deal_over:
        mover = state.current
        mine = players[mover].act({"observation": encode(state, mover), "action_mask": state.legal_mask()})
        work.mask[: playout_kernels.NUM_ACTIONS] = state.legal_mask()
        theirs = playout_kernels.planner_choice(u64, i8, i64, tab, playout, work)
        assert mine == theirs, f"move {moves}"
        planner_kernels.remember(work.memory, i8, i64, mine)
        state.apply(mine)
        moves += 1
    assert moves > 10
    assert work.memory.any()


# ---------------------------------------------------------------------------- the agent


def test_load_by_name_with_settings_and_errors() -> None:
    agent = agents.load("planner,threat=0.5", rules="rum500")
    assert isinstance(agent, PlannerAgent)
    assert agent.values[plan_value.V_THREAT] == 0.5
    with pytest.raises(ValueError, match=r"decay=2.0 must be in \[0, 1\]"):
        PlannerAgent(decay=2.0)
    with pytest.raises(ValueError, match=r"credit=-1\.0 must be at least 0"):
        PlannerAgent(credit=-1.0)


def test_every_seat_of_every_table_plays_legal_moves() -> None:
    """Planners and greedy at 2-4 players of both presets play whole deals (the mask's legal moves
    only; an illegal move raises in the raw env)."""
    import treppen_env

    for players in (2, 3, 4):
        for preset in ("treppenromme", "rum500"):
            env = treppen_env.raw_env(num_players=players, rules=preset)
            seats: list[Any] = [
                PlannerAgent(rules=preset) if s % 2 == 0 else GreedyAgent(rules=preset) for s in range(players)
            ]
            for seed in range(3):
                env.reset(seed=seed)
                for a in seats:
                    a.reset()
                outcomes = set()
                for mover in env.agent_iter():
                    obs, _, terminated, truncated, info = env.last()
                    if terminated or truncated:
                        outcomes.add(info["outcome"])
                        env.step(None)
                    else:
                        env.step(seats[int(mover.split("_")[1])].act(obs))
                assert len(outcomes) == 1
                assert outcomes <= {"went_out", "romme", "stock_exhausted", "max_turns"}
