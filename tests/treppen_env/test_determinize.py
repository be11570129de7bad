"""Determinization: states sampled from one player's observation (docs/ARCHITECTURE.md "Agents")."""

from __future__ import annotations

import numpy as np
import pytest

from treppen_env.cards import NUM_CARDS, bits_to_cards
from treppen_env.determinize import sample_state, unseen_cards
from treppen_env.engine import GameState, Phase
from treppen_env.observation import decode, encode
from treppen_env.rules import make_rules


def lay_first(legal: list[int], rng: np.random.Generator) -> int:
    """A random legal action that prefers melds, lay-offs and takes, so positions get rich."""
    lays = [a for a in legal if 1 <= a < 846]
    return int(rng.choice(lays if lays and rng.random() < 0.7 else legal))


def positions(preset: str, players: int, seed: int, **options: object):
    """Every position of one random deal, as (state, observation of each seat)."""
    state = GameState(make_rules(preset, **options), players, np.random.default_rng(seed))
    state.deal(seed % players)
    rng = np.random.default_rng(seed + 99)
    while not state.deal_over:
        yield state
        state.apply(lay_first(state.legal_actions(), rng))


def check_legal_state(sample: GameState) -> None:
    """Every card in exactly one place, known cards in their hands, and the deal plays to its end."""
    places = [*sample.hands, sum(1 << c for c in sample.staircase), sum(1 << c for c in sample.stock)]
    places += [m.bits for m in sample.melds]
    assert sum(p.bit_count() for p in places) == NUM_CARDS
    assert np.bitwise_or.reduce(np.array(places, dtype=object)) == (1 << NUM_CARDS) - 1
    assert all(k & ~h == 0 for k, h in zip(sample.known, sample.hands, strict=True))
    rng = np.random.default_rng(0)
    while not sample.deal_over:
        sample.apply(lay_first(sample.legal_actions(), rng))


@pytest.mark.parametrize(
    ("preset", "players", "options"),
    [
        ("treppenromme", 2, {}),
        ("treppenromme", 3, {}),
        ("treppenromme", 4, {}),
        ("rum500", 2, {}),
        ("rum500", 4, {"stock_exhausted": "reshuffle"}),
    ],
)
def test_samples_are_legal_states_with_the_same_observation(preset: str, players: int, options: dict) -> None:
    rules = make_rules(preset, **options)
    rng = np.random.default_rng(players)
    checked = 0
    for seed in range(2):
        for i, state in enumerate(positions(preset, players, seed, **options)):
            if i % 2:
                continue
            for seat in range(players):
                obs = encode(state, seat)
                truth = [state.known[seat]]
                sample = sample_state(obs, rules, rng, own_known=bits_to_cards(truth[0]))
                assert np.array_equal(encode(sample, 0), obs)
                if seat == state.current:
                    assert np.array_equal(sample.legal_mask(), state.legal_mask())
                # what the others see of the observer is right too, its own known cards included
                for k in range(1, players):
                    theirs = encode(state, (seat + k) % players)
                    mine = encode(sample, k)
                    assert decode(mine).known[-k] == decode(theirs).known[-k]
                if not state.laid_before[state.current]:
                    assert sample.laid_this_turn == state.laid_this_turn
                if checked % 7 == 0:
                    check_legal_state(sample)
                checked += 1
    assert checked > 60


def test_each_unseen_card_reaches_each_place_it_could_be() -> None:
    """Over many samples every unseen card lands in each opponent's hidden cards and in the stock,
    about as often as a uniform deal puts it there (3 players: two opponents and the stock)."""
    rng = np.random.default_rng(1)
    state = next(s for i, s in enumerate(positions("treppenromme", 3, 4)) if i >= 12 and s.phase == Phase.DRAW)
    obs = encode(state, state.current)
    view = decode(obs)
    hidden = list(bits_to_cards(unseen_cards(view)))
    slots = [view.hand_sizes[k] - len(view.known[k - 1]) for k in (1, 2)] + [view.stock_size]
    assert len(hidden) == sum(slots) and min(slots) > 0
    trials = 600
    counts = np.zeros((len(hidden), 3))
    for _ in range(trials):
        sample = sample_state(obs, "treppenromme", rng)
        places = [
            sample.hands[1] & ~sample.known[1],
            sample.hands[2] & ~sample.known[2],
            sum(1 << c for c in sample.stock),
        ]
        for i, card in enumerate(hidden):
            counts[i] += [p >> card & 1 for p in places]
    assert np.all(counts.sum(axis=1) == trials)  # each card is in exactly one of these places
    expected = trials * np.array(slots) / len(hidden)
    assert np.all(counts > 0)
    assert np.all(np.abs(counts - expected) < 5 * np.sqrt(expected) + 1)


def test_known_cards_stay_with_their_holder() -> None:
    rng = np.random.default_rng(2)
    for state in positions("treppenromme", 2, 7):
        if state.known[1 - state.current]:
            break
    else:
        pytest.fail("the seed must give a position with a publicly known card")
    obs = encode(state, state.current)
    other = 1 - state.current
    for _ in range(20):
        sample = sample_state(obs, "treppenromme", rng)
        assert sample.known[1] == state.known[other]
        assert sample.hands[1] & state.known[other] == state.known[other]


def test_same_generator_gives_the_same_sample_and_the_truth_does_not_matter() -> None:
    state = next(s for i, s in enumerate(positions("treppenromme", 2, 3)) if i == 10)
    obs = encode(state, state.current)
    a = sample_state(obs, "treppenromme", np.random.default_rng(5))
    b = sample_state(
        {"observation": obs.copy(), "action_mask": state.legal_mask()}, "treppenromme", np.random.default_rng(5)
    )
    assert (a.hands, a.stock) == (b.hands, b.stock)


def test_bad_observations_are_rejected() -> None:
    state = GameState(make_rules(), 2, np.random.default_rng(0))
    state.deal(0)
    obs = encode(state, 0)
    bad = obs.copy()
    bad[decode.__globals__["SLICES"]["stock_size"]] = 0.0
    with pytest.raises(ValueError, match="does not add up"):
        sample_state(bad, "treppenromme", np.random.default_rng(0))
    over = obs.copy()
    phase = decode.__globals__["SLICES"]["phase"]
    over[phase] = [0, 0, 1]
    with pytest.raises(ValueError, match="deal that is over"):
        sample_state(over, "treppenromme", np.random.default_rng(0))
