"""Learned beliefs (treppen_env/agent_core/belief_net_kernels.py, belief_kernels.deal_learned, the search
agents' ``beliefs="net"``): the exact sampler, the history the kernels record and the one an agent
rebuilds, no peeking, and the deals' invariants."""

from __future__ import annotations

import itertools
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import chisquare

from tests.env_helpers import swap_hidden
from treppen.agents import GreedyAgent, RandomAgent, RolloutAgent
from treppen.agents.belief_net import load_belief_net, save_belief_net
from treppen_env import raw_env
from treppen_env.agent_core import belief_kernels, belief_net_kernels, playout_kernels
from treppen_env.agent_core.belief_kernels import IN_STOCK, LOCATIONS, deal_learned, sample_locations
from treppen_env.agent_core.belief_net_kernels import NUM_CARDS, NUM_INPUTS, NUM_REL, BeliefNet
from treppen_env.cards import bits_to_cards
from treppen_env.core.layout import HAND, KNOWN, STOCK, STOCK_LEN
from treppen_env.determinize import sample_state
from treppen_env.engine import GameState
from treppen_env.history import History
from treppen_env.rules import make_rules


def _enumerated(weights: np.ndarray, caps: list[int]) -> dict[tuple[int, ...], float]:
    """Every placement of the cards by capacity and its probability (the product of its weights, normalised)."""
    m, places = weights.shape
    found = {}
    for placement in itertools.product(range(places), repeat=m):
        if [placement.count(p) for p in range(places)] == caps:
            found[placement] = float(np.prod([weights[i, placement[i]] for i in range(m)]))
    total = sum(found.values())
    return {k: v / total for k, v in found.items()}


@pytest.mark.parametrize(
    ("weights", "caps"),
    [
        ([[0.5, 0.2, 0.3], [0.1, 0.6, 0.3], [0.3, 0.3, 0.4], [0.7, 0.2, 0.1], [0.2, 0.2, 0.6]], [2, 1, 2]),
        ([[0.9, 0.1], [0.5, 0.5], [0.2, 0.8], [0.6, 0.4], [0.05, 0.95], [0.3, 0.7]], [2, 4]),
        ([[1, 2, 3, 4], [4, 3, 2, 1], [1, 1, 1, 1], [0, 1, 5, 1], [2, 0, 1, 3], [1, 3, 0, 2]], [1, 2, 1, 2]),
    ],
)
def test_the_sampler_draws_placements_as_enumeration_weighs_them(weights: list[list[float]], caps: list[int]) -> None:
    """The frequencies of 30,000 sampled placements match the enumerated distribution (chi-square at
    a fixed seed), and no placement breaks a capacity or has weight 0."""
    w = np.array(weights, dtype=np.float64)
    exact = _enumerated(w, caps)
    rng = np.array([7], dtype=np.uint64)
    out = np.zeros(len(w), dtype=np.int64)
    draws = 30_000
    seen: Counter[tuple[int, ...]] = Counter()
    for _ in range(draws):
        assert sample_locations(w, np.array(caps, dtype=np.int64), rng, out)
        seen[tuple(int(x) for x in out)] += 1
    assert set(seen) <= {k for k, p in exact.items() if p > 0}
    keys = sorted(k for k, p in exact.items() if p > 0)
    result = chisquare([seen[k] for k in keys], [exact[k] * draws for k in keys])
    assert result.pvalue > 0.01


def test_the_sampler_refuses_when_no_placement_has_weight() -> None:
    """Two cards that may lie only in a place of one card: no placement; the output is untouched."""
    out = np.full(2, -5, dtype=np.int64)
    weights = np.array([[1.0, 0.0], [1.0, 0.0]])
    assert not sample_locations(weights, np.array([1, 1], dtype=np.int64), np.array([1], dtype=np.uint64), out)
    assert out.tolist() == [-5, -5]


def _history_matches(players: list, seeds: range) -> int:
    """Play 2-player deals; at every draw of either seat compare the history its own
    :class:`History` rebuilt with the one the kernels recorded, and the belief net's inputs from
    the agent's sampled root with those from the engine's state. Returns the positions compared."""
    rules = make_rules("treppenromme")
    compared = 0
    for seed in seeds:
        env = raw_env(num_players=2)
        env.reset(seed=seed)
        histories = [History(rules), History(rules)]
        recorded = belief_net_kernels.new_history()
        agents = players(seed)
        while not env.game.deal_over:
            seat = env.possible_agents.index(env.agent_selection)
            obs = env.observe(env.agent_selection)
            action = agents[seat].act(obs)
            histories[seat].observe(obs, env.game.known[seat])
            if env.game.phase.name == "DRAW":
                rebuilt = histories[seat].table
                for name in ("discarded", "declined", "laid"):
                    assert getattr(rebuilt, name)[1].tolist() == getattr(recorded, name)[1 - seat].tolist(), name
                root = sample_state(obs, rules, np.random.default_rng(seed), bits_to_cards(env.game.known[seat]))
                mine, kernels_own = np.zeros(NUM_INPUTS, np.float32), np.zeros(NUM_INPUTS, np.float32)
                belief_net_kernels.belief_inputs(root.arrays(), 0, rebuilt, mine)
                belief_net_kernels.belief_inputs(env.game.arrays(), seat, recorded, kernels_own)
                assert np.array_equal(mine, kernels_own)
                compared += 1
            histories[seat].acted(action)
            belief_net_kernels.note_action(env.game.arrays(), env.game.tables.meld_bits, action, recorded)
            env.step(action)
    return compared


def test_an_agent_rebuilds_the_history_the_kernels_record() -> None:
    """Over greedy deals and deals of a random seat against greedy (the opponent moving first in
    every deal for one of the seats), each seat's rebuilt history and its belief-net inputs equal
    the kernels' own, bit for bit: the net reads in play what it read in training."""
    compared = _history_matches(
        lambda seed: [GreedyAgent(), GreedyAgent()] if seed % 2 else [RandomAgent(seed=seed), GreedyAgent()], range(16)
    )
    assert compared > 400


def _mid_deal(seed: int, turns: int = 6) -> GameState:
    """A 2-player greedy deal after ``turns`` turns, with the history the kernels recorded."""
    env = raw_env(num_players=2)
    env.reset(seed=seed)
    greedy = GreedyAgent()
    while env.game.turn < turns and not env.game.deal_over:
        env.step(greedy.act(env.observe(env.agent_selection)))
    return env.game


def _random_net(seed: int) -> BeliefNet:
    rng = np.random.default_rng(seed)
    shapes = [(NUM_INPUTS, 16), (16,), (16, 16), (16,), (16, NUM_CARDS * NUM_REL), (NUM_CARDS * NUM_REL,)]
    return BeliefNet(*(rng.normal(0, 0.3, s).astype(np.float32) for s in shapes))


def _history_with_discards(state: GameState, cards: list[int]) -> belief_net_kernels.TableHistory:
    history = belief_net_kernels.new_history()
    for card in cards:
        history.discarded[1 - state.current, card] = 1
    return history


def test_no_peeking_hidden_cards_swapped_change_nothing_what_was_seen_does() -> None:
    """Swap the hidden cards of a position (the same public history): the net's probabilities and
    the deals sampled under one seed are bit-equal. Change what the opponent was seen to discard:
    the probabilities change."""
    net = _random_net(0)
    for seed in range(6):
        state = _mid_deal(seed)
        if state.deal_over:
            continue
        seat = state.current
        history = _history_with_discards(state, [c for c in state.staircase][:2])
        swapped = swap_hidden(state, seat, np.random.default_rng(seed))
        probs = belief_net_kernels.card_probabilities(net, state.arrays(), seat, history)
        assert np.array_equal(probs, belief_net_kernels.card_probabilities(net, swapped.arrays(), seat, history))
        deals = []
        for position in (state.arrays().copy(), swapped.arrays().copy()):
            assert deal_learned(position, state.tables, seat, probs, np.uint64(0), np.array([3], dtype=np.uint64), 10)
            deals.append(
                (position.u64[HAND : HAND + 2].tolist(), position.i8[STOCK : STOCK + position.i64[STOCK_LEN]].tolist())
            )
        assert deals[0] == deals[1]
        other = _history_with_discards(state, [c for c in state.staircase][-1:])
        assert not np.array_equal(probs, belief_net_kernels.card_probabilities(net, state.arrays(), seat, other))


@pytest.mark.parametrize("players", [2, 3, 4])
def test_learned_deals_keep_sizes_known_cards_and_the_stock_pool(players: int) -> None:
    """Over random mid-deal positions and random beliefs, every learned deal gives each seat its
    hand size and its publicly known cards, leaves the observer's hand and the public cards alone,
    deals every unseen card once, and after a reshuffle fills the stock from its pool only."""
    rng = np.random.default_rng(players)
    for seed in range(12):
        env = raw_env(num_players=players)
        env.reset(seed=seed)
        greedy = GreedyAgent()
        while env.game.turn < 3 * players and not env.game.deal_over:
            env.step(greedy.act(env.observe(env.agent_selection)))
        state = env.game
        if state.deal_over:
            continue
        observer = state.current
        root = state.arrays()
        unseen = 0
        for s in range(players):
            if s != observer:
                unseen |= state.hands[s] & ~state.known[s]
        stock = set(state.stock)
        unseen_cards = set(bits_to_cards(unseen)) | stock
        pool = 0
        if seed % 2:  # a reshuffled stock: its cards come from this pool only
            pool_cards = rng.choice(sorted(unseen_cards), size=len(stock) + 2, replace=False)
            for c in pool_cards:
                pool |= 1 << int(c)
        probs = np.zeros((NUM_CARDS, LOCATIONS))
        probs[sorted(unseen_cards)] = rng.dirichlet(np.ones(LOCATIONS), size=len(unseen_cards))
        for draw in range(5):
            position = root.copy()
            assert deal_learned(
                position, state.tables, observer, probs, np.uint64(pool), np.array([draw + 1], dtype=np.uint64), 100
            )
            dealt = set()
            for s in range(players):
                hand = int(position.u64[HAND + s])
                assert hand.bit_count() == state.hands[s].bit_count()
                assert hand & state.known[s] == state.known[s] and int(position.u64[KNOWN + s]) == state.known[s]
                if s == observer:
                    assert hand == state.hands[s]
                else:
                    dealt |= set(bits_to_cards(hand & ~state.known[s]))
            new_stock = position.i8[STOCK : STOCK + len(stock)].tolist()
            assert sorted(dealt | set(new_stock)) == sorted(unseen_cards) and len(dealt) + len(new_stock) == len(
                unseen_cards
            )
            if pool:
                assert all(pool >> c & 1 for c in new_stock)


def test_a_search_with_learned_beliefs_plays_and_refuses_what_it_cannot(tmp_path: Path) -> None:
    """``beliefs=net`` with a saved net plays legal moves of whole deals; a missing file, a file of
    another shape, a file of no arrays, a net without beliefs=net, rum500 and a 4-player table are
    refused with errors that name the setting."""
    path = tmp_path / "net.npz"
    save_belief_net(path, _random_net(1), num_players=2)
    assert load_belief_net(path)[1] == 2
    env = raw_env(num_players=2)
    env.reset(seed=3)
    agent = RolloutAgent(seed=0, playouts=20, beliefs="net", belief_net=str(path))
    greedy = GreedyAgent()
    moves = 0
    while not env.game.deal_over and moves < 40:
        seat = env.possible_agents.index(env.agent_selection)
        obs = env.observe(env.agent_selection)
        action = agent.act(obs) if seat == 0 else greedy.act(obs)
        assert obs["action_mask"][action]
        env.step(action)
        moves += 1
    with pytest.raises(ValueError, match="belief_net="):
        RolloutAgent(beliefs="net", belief_net=str(tmp_path / "missing.npz"))
    np.savez(tmp_path / "bad.npz", w1=np.zeros((3, 3), np.float32))
    with pytest.raises(ValueError, match=r"belief_net=.*lacks"):
        RolloutAgent(beliefs="net", belief_net=str(tmp_path / "bad.npz"))
    (tmp_path / "text.npz").write_text("not a net")
    with pytest.raises(ValueError, match=r"belief_net=.*not an \.npz file of arrays"):
        RolloutAgent(beliefs="net", belief_net=str(tmp_path / "text.npz"))
    with pytest.raises(ValueError, match="read only with beliefs='net', not 'greedy'"):
        RolloutAgent(beliefs="greedy", belief_net=str(path))
    with pytest.raises(ValueError, match="treppenromme only"):
        RolloutAgent(beliefs="net", belief_net=str(path), rules="rum500")
    four = raw_env(num_players=4)
    four.reset(seed=0)
    with pytest.raises(ValueError, match="2-player"):
        RolloutAgent(playouts=5, beliefs="net", belief_net=str(path)).act(four.observe(four.agent_selection))


def test_recorded_positions_label_every_unseen_card_and_sum_to_each_place() -> None:
    """The training positions: every card the mover cannot see has a label, each place's labels
    count its hidden cards (the stock's size, each seat's hidden cards), and seen cards have none."""
    from treppen_env.agent_core import greedy_kernels, plan_value

    rules = make_rules("treppenromme")
    state = GameState(rules, 2, np.random.default_rng(0))
    state.deal()
    playout = playout_kernels.Playout(
        policies=np.zeros(2, dtype=np.int64), settings=greedy_kernels.settings_row(), values=plan_value.values_row()
    )
    plan = belief_net_kernels.DealPlan(
        per_hand=7,
        dealer_first=True,
        choices=np.array([playout_kernels.GREEDY, playout_kernels.PLANNER]),
        random_share=0.1,
    )
    out = belief_net_kernels.Recording(
        inputs=np.zeros((600, NUM_INPUTS), np.float32),
        places=np.zeros((600, NUM_CARDS), np.int8),
        turns=np.zeros(600, np.int64),
    )
    assert (
        belief_net_kernels.record_deals(
            state.arrays().copy(), state.tables, playout, playout_kernels.scratch(), plan, 5, out
        )
        == 600
    )
    x, places = out.inputs, out.places
    unseen = x[:, belief_net_kernels.P_UNSEEN * NUM_CARDS : (belief_net_kernels.P_UNSEEN + 1) * NUM_CARDS]
    assert np.array_equal(unseen > 0, places >= 0)
    stock = np.rint(x[:, belief_net_kernels.S_STOCK] * NUM_CARDS)
    hidden = np.rint(x[:, belief_net_kernels.S_HIDDEN] * belief_net_kernels.HAND_SCALE)
    assert np.array_equal((places == belief_net_kernels.REL_STOCK).sum(1), stock)
    assert np.array_equal((places == 1).sum(1), hidden)
    assert (places <= 1).all() and out.turns.max() > 10


def test_card_probabilities_sum_to_one_per_unseen_card_and_the_places_to_their_sizes() -> None:
    """Each unseen card's probabilities sum to 1 over the places that hide cards; the sampler's
    deals count each place's size (the constraint the net's marginals are conditioned on)."""
    state = _mid_deal(4)
    seat = state.current
    probs = belief_net_kernels.card_probabilities(
        _random_net(2), state.arrays(), seat, belief_net_kernels.new_history()
    )
    rows = probs.sum(1)
    unseen = set(bits_to_cards(state.hands[1 - seat] & ~state.known[1 - seat])) | set(state.stock)
    assert np.allclose(rows[sorted(unseen)], 1.0) and np.all(rows[[c for c in range(52) if c not in unseen]] == 0)
    assert np.all(probs[:, [s for s in range(belief_kernels.MAX_SEATS) if s != 1 - seat]] == 0)
    assert probs[sorted(unseen), IN_STOCK].min() > 0 and probs[sorted(unseen), 1 - seat].min() > 0
