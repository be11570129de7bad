"""Playouts and determinization kernels (treppen_env.agent_core.playout_kernels):
greedy seats decide as GreedyAgent does
from their observations, playouts reach the deal's end with the engine's scores (RULES §6), the
same seed repeats them, and a redeal keeps everything public (RULES §4.1-4.2)."""

from __future__ import annotations

import numpy as np
import pytest

from treppen.agents import GreedyAgent
from treppen_env.agent_core import greedy_kernels, playout_kernels
from treppen_env.agent_hooks import redeal
from treppen_env.engine import GameState
from treppen_env.observation import encode
from treppen_env.rules import make_rules

CASES = [(preset, n) for preset in ("treppenromme", "rum500") for n in (2, 3, 4)]


def positions(preset: str, players: int, seed: int, deals: int = 3):
    """States along seeded deals, mixed play: greedy seats and uniformly random seats."""
    rules = make_rules(preset)
    greedy = GreedyAgent(rules=rules)
    rng = np.random.default_rng(seed)
    for deal in range(deals):
        state = GameState(rules, players, np.random.default_rng(seed + deal))
        state.deal(deal % players)
        random_seat = int(rng.integers(players + 1))  # players: nobody plays at random
        while not state.deal_over:
            yield state
            mask = state.legal_mask().copy()
            if state.current == random_seat:
                legal = np.flatnonzero(mask)
                state.apply(int(legal[rng.integers(legal.size)]))
            else:
                state.apply(greedy.act({"observation": encode(state, state.current), "action_mask": mask}))


def state_action(state: GameState, agent: GreedyAgent) -> int:
    """The greedy kernel's action from the state's arrays
    (:func:`treppen_env.agent_core.greedy_kernels.state_inputs`)."""
    inputs = greedy_kernels.empty_inputs()
    position = state.arrays()
    u64, i8, i64 = position.u64, position.i8, position.i64
    greedy_kernels.state_inputs(u64, i8, i64, state.current, inputs)
    mask = state.legal_mask().astype(np.int8)
    return int(greedy_kernels.greedy_action(inputs, mask, state.tables.tab, agent._current_settings()))


@pytest.mark.parametrize(("preset", "players"), CASES)
def test_a_greedy_seat_decides_from_the_state_as_from_its_observation(preset, players):
    """Read from the state or from the mover's observation, the heuristic makes the same move."""
    agent = GreedyAgent(rules=preset)
    checked = 0
    for state in positions(preset, players, seed=10 * players):
        obs = {"observation": encode(state, state.current), "action_mask": state.legal_mask().copy()}
        assert state_action(state, agent) == agent.act(obs)
        checked += 1
    assert checked > 100


@pytest.mark.parametrize(("preset", "players"), CASES)
def test_a_greedy_playout_is_the_deal_greedy_agents_play(preset, players):
    """A playout with greedy at every seat ends as the same deal played move by move through the
    engine with GreedyAgent at every seat: the same deal points (RULES §6)."""
    rules = make_rules(preset)
    for seed in range(3):
        state = GameState(rules, players, np.random.default_rng(seed))
        state.deal(seed % players)
        for _ in range(4 + seed):  # into the deal
            state.apply(int(np.flatnonzero(state.legal_mask())[0]))
        (points,) = playout_kernels.play_out(state, "greedy", count=1, seed=seed)
        agent = GreedyAgent(rules=rules)
        while not state.deal_over:
            state.apply(agent.act({"observation": encode(state, state.current), "action_mask": state.legal_mask()}))
        assert points.tolist() == state.deal_points


def test_playouts_repeat_with_their_seed_and_leave_the_state_alone():
    rules = make_rules("treppenromme", stock_exhausted="reshuffle")
    state = GameState(rules, 3, np.random.default_rng(5))
    state.deal(1)
    before = [a.copy() for a in state.arrays()]
    first = playout_kernels.play_out(state, "random", count=20, seed=7)
    assert (playout_kernels.play_out(state, "random", count=20, seed=7) == first).all()
    assert not (playout_kernels.play_out(state, "random", count=20, seed=8) == first).all()
    assert all((a == b).all() for a, b in zip(state.arrays(), before, strict=True))
    assert first.shape == (20, 3)


def test_bad_playout_requests_are_clear_errors():
    state = GameState(make_rules("treppenromme"), 2, np.random.default_rng(0))
    state.deal(0)
    with pytest.raises(ValueError, match="unknown playout policy"):
        playout_kernels.play_out(state, "smart")
    with pytest.raises(ValueError, match="3 seat policies for 2 players"):
        playout_kernels.play_out(state, ["greedy"] * 3)


@pytest.mark.parametrize(("preset", "players"), CASES)
def test_a_redeal_keeps_the_public_part_and_deals_the_hidden_cards(preset, players):
    """Each opponent keeps its publicly known cards and its hand size; the observer's hand, the
    staircase, the table and the stock size stay; only unseen cards move (RULES §4.1)."""
    reached = set()
    for k, state in enumerate(positions(preset, players, seed=3 + players, deals=1)):
        if k % 5:
            continue
        observer = (state.current + k) % players
        copy = state.clone(np.random.default_rng(0))
        tab, meld_bits = copy.tables.tab, copy.tables.meld_bits
        assert playout_kernels.redeal(copy.arrays(), tab, meld_bits, observer, np.full(1, k, dtype=np.uint64), 1000)
        copy.validate()
        assert copy.hands[observer] == state.hands[observer]
        assert copy.staircase == state.staircase and copy.melds == state.melds
        assert len(copy.stock) == len(state.stock)
        assert copy.legal_mask().any()  # the mover can move: a must-use card stays playable (RULES §4.2)
        for s in range(players):
            assert copy.known[s] & ~copy.hands[s] == 0
            assert int(copy.hands[s]).bit_count() == int(state.hands[s]).bit_count()
            if s != observer:
                reached |= {(s, c) for c in range(52) if copy.hands[s] >> c & 1 and not state.hands[s] >> c & 1}
    assert reached, "a redeal never moved a card"


def test_gamestate_redeal_keeps_what_the_observer_sees():
    state = next(s for k, s in enumerate(positions("rum500", 3, seed=11, deals=1)) if k == 12).clone()
    copy = state.clone()
    redeal(copy, 1, seed=4)
    copy.validate()
    assert copy.hands[1] == state.hands[1] and copy.known == state.known and copy.staircase == state.staircase
    assert [int(h).bit_count() for h in copy.hands] == [int(h).bit_count() for h in state.hands]
    with pytest.raises(ValueError, match=r"observer 3 is not a seat 0\.\.2"):
        redeal(copy, 3, seed=0)
