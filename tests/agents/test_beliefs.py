"""Beliefs from the opponents' moves (treppen_env/history.py, treppen_env/agent_core/belief_kernels.py, the search
agents' ``beliefs="greedy"``): the rebuilt decision positions are the opponents' own, the weights are
the opponent model's exact likelihoods, and nothing hidden is read."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from tests.env_helpers import swap_hidden
from treppen.agents import GreedyAgent, RolloutAgent
from treppen_env import raw_env
from treppen_env.actions import DRAW, parse_action
from treppen_env.agent_core import belief_kernels, feature_kernels, greedy_kernels
from treppen_env.cards import cards_to_bits, parse_card
from treppen_env.core import kernels
from treppen_env.core.layout import HAND, STOCK
from treppen_env.core.tables import rules_table
from treppen_env.engine import GameState, Phase
from treppen_env.history import History
from treppen_env.melds import MELD_BITS
from treppen_env.observation import encode, views
from treppen_env.rules import make_rules


@pytest.mark.parametrize(("rules", "players"), [("treppenromme", 2), ("rum500", 2), ("treppenromme", 4)])
def test_rebuilt_positions_are_what_the_opponent_saw(rules: str, players: int) -> None:
    """Over whole greedy deals, every rebuilt decision position looks to its opponent exactly as its
    own observation did then (3-4 players: its hand aside, and the ban, which is inferred)."""
    checked = 0
    for seed in range(12):
        env = raw_env(num_players=players, rules=rules)
        env.reset(seed=seed)
        history = History(make_rules(rules))
        agents = [GreedyAgent(rules=rules) for _ in range(players)]
        seen = {}  # (turn, action) -> the opponent's observation and hand size then
        while not env.game.deal_over:
            seat = env.possible_agents.index(env.agent_selection)
            obs = env.observe(env.agent_selection)
            action = agents[seat].act(obs)
            if seat:
                seen[(env.game.turn, action)] = (encode(env.game, seat), env.game.hands[seat].bit_count())
            else:
                history.observe(obs, env.game.known[0])
                for d in history.decisions:
                    want, size = seen[(d.turn, d.action)]
                    got = views(encode(d.state, d.seat))
                    skip = {"hand", "banned"} if players > 2 else {"hand"}
                    assert [k for k, v in views(want).items() if k not in skip and not np.array_equal(v, got[k])] == []
                    assert d.state.hands[d.seat].bit_count() == size
                    checked += 1
                history.acted(action)
            env.step(action)
    assert checked > 50


def bits(*cards: str) -> int:
    return cards_to_bits(parse_card(c) for c in cards)


def _decision_position(top: str) -> GameState:
    """The opponent (seat 1) to draw, the staircase's top card ``top``; its hand a placeholder."""
    own = bits("2C", "5C", "9D", "JD", "KS", "4H", "6S")
    opp = bits("7S", "7D", "3C", "8C", "QH", "2S", "TD")
    stairs = [parse_card(c) for c in ("AD", top)]
    used = own | opp | cards_to_bits(stairs)
    stock = [c for c in range(52) if not used >> c & 1]
    return GameState.from_position(
        make_rules("treppenromme"), np.random.default_rng(0), dealer=0, current=1, phase=Phase.DRAW,
        hands=[own, opp], staircase=stairs, stock=stock,
    )  # fmt: skip


def _beliefs_for(state: GameState, action: int, temperature: float = 2.0, epsilon: float = 0.05):
    b = belief_kernels.new_beliefs(
        8, temperature, epsilon, greedy_kernels.settings_row(), np.zeros((0, belief_kernels.LOCATIONS))
    )
    position = state.arrays()
    u64, i8, i64 = position.u64, position.i8, position.i64
    b.decisions.u64[0], b.decisions.i8[0], b.decisions.i64[0] = u64, i8, i64
    b.decisions.seat[0], b.decisions.action[0], b.undo.steps[0] = 1, action, 0  # its hand now is its hand then
    b.decisions.size[0] = 1
    return b


def _model_probability(state: GameState, hand: int, action: int, temperature: float, epsilon: float) -> float:
    """The opponent model's probability of ``action``, worked out here from the heuristic's scores."""
    rules = make_rules("treppenromme")
    position = state.arrays().copy()
    u64, i8, i64 = position.u64, position.i8, position.i64
    u64[HAND + 1] = hand  # the hypothesis (the placeholder stock is not read)
    tab, meld_bits = state.tables.tab, state.tables.meld_bits
    mask = np.zeros(898, dtype=np.int8)
    kernels.legal_mask(u64, i8, i64, tab, meld_bits, mask)
    inputs = greedy_kernels.empty_inputs()
    greedy_kernels.state_inputs(u64, i8, i64, 1, inputs)
    scores, out = np.empty(898), np.zeros((898, feature_kernels.NUM_FEATURES), dtype=np.float32)
    feature_kernels.action_scores(
        inputs, mask, rules_table(rules), greedy_kernels.settings_row(), greedy_kernels.workspace(), scores, out
    )
    legal = np.flatnonzero(mask)
    scored = legal[np.isfinite(scores[legal])]
    soft = np.exp((scores[scored] - scores[scored].max()) / temperature)
    p = epsilon / legal.size
    if np.isfinite(scores[action]):
        p += (1 - epsilon) * np.exp((scores[action] - scores[scored].max()) / temperature) / soft.sum()
    return p


def test_a_declined_card_that_would_complete_a_meld_weighs_by_the_exact_likelihood_ratio() -> None:
    """The opponent drew from the stock, declining the 7H: a deal giving it 7S 7D (the 7H completes a
    set) and one giving it no seven weigh by the ratio of the model's probabilities of that draw."""
    state = _decision_position("7H")
    b = _beliefs_for(state, DRAW)
    with_pair = bits("7S", "7D", "3C", "8C", "QH", "2S", "TD")
    without = bits("6D", "9C", "3C", "8C", "QH", "2S", "TD")
    scratch = belief_kernels.scratch().likelihood
    rng = np.ones(1, dtype=np.uint64)
    weights = []
    for hand in (with_pair, without):
        u64 = state.arrays().u64.copy()
        u64[HAND + 1] = hand
        weights.append(belief_kernels.log_weight(b, u64, state.tables.tab, MELD_BITS, rng, scratch))
    ratio = np.exp(weights[0] - weights[1])
    expected = _model_probability(state, with_pair, DRAW, 2.0, 0.05) / _model_probability(
        state, without, DRAW, 2.0, 0.05
    )
    assert ratio == pytest.approx(expected, rel=1e-9)
    assert ratio < 0.2  # declining a card that makes a set is unlikely for the greedy model
    # a take of it: the other way round
    take = parse_action("take 1")
    b_take = _beliefs_for(state, take)
    taken = []
    for hand in (with_pair, without):
        u64 = state.arrays().u64.copy()
        u64[HAND + 1] = hand
        taken.append(belief_kernels.log_weight(b_take, u64, state.tables.tab, MELD_BITS, rng, scratch))
    assert taken[0] > taken[1]


def _mid_deal(seed: int = 4, decisions: int = 30):
    """A 2-player deal played by a believing search (seat 0) against greedy up to its next draw."""
    env = raw_env(num_players=2)
    env.reset(seed=seed)
    agent = RolloutAgent(seed=1, playouts=16, beliefs="greedy")
    greedy = GreedyAgent()
    for _ in range(decisions):
        obs = env.observe(env.agent_selection)
        env.step(agent.act(obs) if env.agent_selection == "player_0" else greedy.act(obs))
    while not (env.agent_selection == "player_0" and env.game.phase == Phase.DRAW):
        obs = env.observe(env.agent_selection)
        env.step(agent.act(obs) if env.agent_selection == "player_0" else greedy.act(obs))
    return env, agent


def test_no_peeking_swapped_hidden_cards_change_no_action_weight_or_belief() -> None:
    env, agent = _mid_deal()
    assert agent.history.decisions  # the opponent's moves are weighed
    observations = [env.observe("player_0")]
    other = swap_hidden(env.game, 0, np.random.default_rng(5))
    assert other.hands[1] != env.game.hands[1]
    observations.append({"observation": encode(other, 0), "action_mask": other.legal_mask().copy()})
    results = []
    for obs in observations:
        twin = copy.deepcopy(agent)
        action = twin.act(obs)
        results.append((action, twin.belief_stats.copy(), twin.card_beliefs(obs)))
    assert results[0][0] == results[1][0]
    np.testing.assert_array_equal(results[0][1], results[1][1])
    np.testing.assert_array_equal(results[0][2], results[1][2])


def test_what_the_opponent_was_seen_to_do_moves_the_beliefs() -> None:
    env, agent = _mid_deal()
    obs = env.observe("player_0")
    believed = copy.deepcopy(agent).card_beliefs(obs)
    uniform = copy.deepcopy(agent)
    uniform.settings = uniform.settings.with_(beliefs="uniform")
    assert not np.allclose(believed, uniform.card_beliefs(obs))
    # the same turn, but the opponent declined another staircase card: other beliefs
    (draw,) = [d for d in agent.history.decisions[-2:] if d.action < 53]
    changed = copy.deepcopy(agent)
    (moved,) = [d for d in changed.history.decisions[-2:] if d.action < 53]
    state = moved.state
    stairs = list(state.staircase)
    swap = next(c for c in bits_to_cards_of(state.stock) if c != stairs[-1])
    stock = [swap if c == swap else c for c in state.stock]
    stock[stock.index(swap)] = stairs[-1]
    stairs[-1] = swap
    moved.state.staircase, moved.state.stock = stairs, stock
    assert draw.state.staircase[-1] != moved.state.staircase[-1]
    assert not np.allclose(believed, changed.card_beliefs(obs))


def bits_to_cards_of(cards) -> list[int]:
    return [int(c) for c in cards]


def test_card_beliefs_are_probabilities_of_the_hidden_cards() -> None:
    env, agent = _mid_deal()
    obs = env.observe("player_0")
    probs = agent.card_beliefs(obs, samples=200)
    hidden = env.game.hands[1] & ~env.game.known[1]
    assert probs.shape == (2, 52) and not probs[0].any()
    assert probs[1].sum() == pytest.approx(hidden.bit_count())
    seen = env.game.hands[0] | env.game.known[1] | cards_to_bits(env.game.staircase)
    assert all(probs[1, c] == 0 for c in range(52) if seen >> c & 1)  # never a card seen elsewhere
    agent.act(obs)
    assert (
        0 < agent.belief_stats[belief_kernels.ST_ESS] / agent.belief_stats[belief_kernels.ST_WEIGHED] <= 1
    )  # the effective sample share


def test_the_stock_after_a_reshuffle_is_dealt_from_the_reshuffled_cards() -> None:
    from treppen_env.agent_core import playout_kernels

    state = _decision_position("7H")
    stock = list(state.stock)
    opponent = bits_to_cards_of(c for c in range(52) if state.hands[1] >> c & 1)
    pool = cards_to_bits(stock[3:] + opponent[:3])  # as many cards as the stock holds
    tab, meld_bits = state.tables.tab, state.tables.meld_bits
    rng = np.ones(1, dtype=np.uint64)
    for _ in range(5):
        position = state.arrays().copy()
        u64, i8 = position.u64, position.i8
        assert playout_kernels.redeal(position, tab, meld_bits, 0, rng, 10, np.uint64(pool))
        assert cards_to_bits([int(c) for c in i8[STOCK : STOCK + len(stock)]]) == pool
        assert int(u64[HAND + 1]) == cards_to_bits(stock[:3] + opponent[3:])
    position = state.arrays().copy()
    i8 = position.i8
    playout_kernels.redeal(
        position, tab, meld_bits, 0, rng, 10, np.uint64(cards_to_bits(stock[:10]))
    )  # too few: any deal
    assert sorted(int(c) for c in i8[STOCK : STOCK + len(stock)]) != sorted(stock[:10])
