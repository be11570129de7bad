"""The PettingZoo environment (treppen_env.aec): API contract, determinism, privacy, rewards,
scripted deals, bad input and import purity (docs/ARCHITECTURE.md "Environment")."""

from __future__ import annotations

import copy
import functools
import json
import logging
import pickle
import random
import subprocess
import sys
import warnings

import numpy as np
import pytest
from pettingzoo.test import api_test, seed_test

import treppen_env
from tests.env_helpers import B_DECK, B_TURN_1, CONFIGS, play_out, play_texts, random_action, stack_deck, swap_hidden
from treppen_env import observation
from treppen_env.actions import NUM_ACTIONS, action_to_str, encode_discard, parse_action
from treppen_env.cards import parse_card

# PettingZoo's api_test warns about every dict observation of an env not on its own list of
# classic games; any other warning is a defect.
EXPECTED_API_WARNINGS = {
    "Observation is not a NumPy array",
    "Observation space for each agent probably should be gymnasium.spaces.box or gymnasium.spaces.discrete",
}
MAKERS = {"env": treppen_env.env, "raw_env": treppen_env.raw_env}


def mask_texts(obs: dict) -> list[str]:
    """The legal actions of an observation's mask as text, in action-index order."""
    return [action_to_str(a) for a in np.flatnonzero(obs["action_mask"])]


def trajectory(env, seed: int, actions_seed: int, disturb: bool = False) -> list:
    """Every ``last()`` of a seeded random game as JSON-comparable data."""
    env.reset(seed=seed)
    rng = np.random.default_rng(actions_seed)
    out = []
    for agent in env.agent_iter():
        obs, reward, term, trunc, info = env.last()
        out.append(
            (
                agent,
                obs["observation"].tolist(),
                obs["action_mask"].tolist(),
                reward,
                term,
                trunc,
                json.dumps(info, sort_keys=True),
            )
        )
        if disturb:  # a seeded env must not read the global generators (rlcard determinism test)
            np.random.seed(len(out))
            random.seed(len(out))
        env.step(None if term or trunc else random_action(obs, rng))
    return out


# ---------------------------------------------------------------- PettingZoo API (docs/ARCHITECTURE.md "Environment")
@pytest.mark.parametrize("maker", sorted(MAKERS))
@pytest.mark.parametrize(("num_players", "rules"), CONFIGS)
def test_api_test_passes(maker, num_players, rules):
    _api_test_over_seeds(MAKERS[maker], num_players, rules, range(3))


# slow: PettingZoo's api_test on 30 more seeds per game finds nothing that the 3 seeds above and the
# default run's invariant and privacy sweeps miss; run -m slow after changing the AEC wrapper.
@pytest.mark.slow
@pytest.mark.parametrize("maker", sorted(MAKERS))
@pytest.mark.parametrize(("num_players", "rules"), CONFIGS)
def test_api_test_passes_many_seeds(maker, num_players, rules):
    _api_test_over_seeds(MAKERS[maker], num_players, rules, range(3, 33))


def _api_test_over_seeds(make, num_players, rules, seeds):
    for seed in seeds:
        env = make(num_players=num_players, rules=rules)
        # api_test resets with seed 0 itself; seeding the action spaces varies the play.
        for i, agent in enumerate(env.possible_agents):
            env.action_space(agent).seed(100 * seed + i)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            api_test(env, num_cycles=1000)
        assert {str(w.message) for w in caught} <= EXPECTED_API_WARNINGS


@pytest.mark.parametrize(
    "kwargs",
    [
        {"num_players": 3, "episode": "game", "target": 100},
        {"num_players": 4, "rules": "rum500", "max_turns": 5},
        {"num_players": 2, "reward": "points", "stock_exhausted": "reshuffle"},
    ],
)
def test_api_test_passes_with_options(kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        api_test(treppen_env.env(**kwargs), num_cycles=1000)
    assert {str(w.message) for w in caught} <= EXPECTED_API_WARNINGS


@pytest.mark.parametrize(("num_players", "rules"), CONFIGS)
def test_seed_test_passes(num_players, rules):
    seed_test(lambda: treppen_env.env(num_players=num_players, rules=rules), num_cycles=500)
    seed_test(lambda: treppen_env.raw_env(num_players=num_players, rules=rules), num_cycles=500)


def test_spaces_and_agents():
    env = treppen_env.env(num_players=3)
    env.reset(seed=0)
    assert env.possible_agents == ["player_0", "player_1", "player_2"]
    assert env.agents == env.possible_agents
    space = env.observation_space("player_1")
    assert space["observation"].shape == (observation.OBS_SIZE,)
    assert space["observation"].dtype == np.float32
    assert space["action_mask"].shape == (NUM_ACTIONS,) == (898,)
    assert space["action_mask"].dtype == np.int8
    assert env.action_space("player_2").n == 898
    assert env.metadata["name"] == "treppen_v0"
    obs = env.observe("player_0")
    assert obs["observation"].dtype == np.float32 and obs["action_mask"].dtype == np.int8
    # D is fixed for 2-4 players (seats padded to 4)
    for n in (2, 4):
        other = treppen_env.raw_env(num_players=n)
        other.reset(seed=0)
        assert other.observe("player_1")["observation"].shape == (observation.OBS_SIZE,)


# ---------------------------------------------------------------- determinism and copies
def deal_of(env) -> tuple:
    game = env.unwrapped.game
    return tuple(game.hands), tuple(game.staircase), tuple(game.stock)


@pytest.mark.parametrize(("num_players", "rules"), CONFIGS)
def test_seeds_give_different_deals_and_same_seed_same_deal(num_players, rules):
    env = treppen_env.env(num_players=num_players, rules=rules)
    deals = []
    for seed in range(20):
        env.reset(seed=seed)
        deals.append(deal_of(env))
    assert len(set(deals)) == 20
    for seed in (0, 7, 19):
        env.reset(seed=seed)
        assert deal_of(env) == deals[seed]
        fresh = treppen_env.env(num_players=num_players, rules=rules)
        fresh.reset(seed=seed)
        assert deal_of(fresh) == deals[seed]
    # an unseeded reset continues the seeded generator, so it deals again differently
    env.reset(seed=3)
    env.reset()
    assert deal_of(env) not in deals[3:4]


@pytest.mark.parametrize("maker", sorted(MAKERS))
def test_same_seed_replays_identically_despite_global_rngs(maker):
    first = trajectory(MAKERS[maker](num_players=3), seed=11, actions_seed=5)
    second = trajectory(MAKERS[maker](num_players=3), seed=11, actions_seed=5, disturb=True)
    assert first == second
    assert first[-1][4] or first[-1][5]  # the game ran to its end


@pytest.mark.parametrize("maker", sorted(MAKERS))
@pytest.mark.parametrize(("num_players", "rules"), [(2, "treppenromme"), (4, "rum500")])
def test_deepcopy_mid_deal_continues_identically(maker, num_players, rules):
    env = MAKERS[maker](num_players=num_players, rules=rules, episode="game", target=100)
    env.reset(seed=4)
    rng = np.random.default_rng(4)
    for _ in range(25):
        env.step(random_action(env.last()[0], rng))
    twin = copy.deepcopy(env)
    assert twin.unwrapped.game is not env.unwrapped.game
    assert deal_of(twin) == deal_of(env)
    for _ in range(300):
        agent = env.agent_selection
        assert twin.agent_selection == agent
        obs, reward, term, trunc, info = env.last()
        obs2, reward2, term2, trunc2, info2 = twin.last()
        np.testing.assert_array_equal(obs["observation"], obs2["observation"])
        np.testing.assert_array_equal(obs["action_mask"], obs2["action_mask"])
        assert (reward, term, trunc, info) == (reward2, term2, trunc2, info2)
        if term or trunc:
            break
        action = random_action(obs, rng)
        env.step(action)
        twin.step(action)
    # the copy is independent: stepping one leaves the other alone
    before = deal_of(env)
    if twin.agents and not twin.terminations[twin.agent_selection]:
        twin.step(random_action(twin.last()[0], rng))
        assert deal_of(env) == before


@pytest.mark.parametrize("maker", sorted(MAKERS))
def test_pickled_env_replays_identically(maker):
    # EzPickle (PettingZoo's convention): pickling keeps the constructor arguments, so the
    # unpickled env, reset with the same seed, replays the same game.
    env = MAKERS[maker](num_players=3, rules="rum500", reward="points", max_turns=40)
    env.reset(seed=2)
    clone = pickle.loads(pickle.dumps(env))
    assert clone.unwrapped.rules == env.unwrapped.rules
    assert clone.unwrapped.rules.max_turns == 40
    assert clone.unwrapped.reward_mode == "points"
    assert trajectory(clone, seed=9, actions_seed=1) == trajectory(env, seed=9, actions_seed=1)


# ---------------------------------------------------------------- privacy (docs/ARCHITECTURE.md "Observations")
def check_privacy(raw, other, rng: np.random.Generator, stats: dict) -> None:
    """Every agent's observation is unchanged by what it cannot see (compared through ``other``,
    an env of the same shape holding a swapped copy of the state); only the mover has a mask."""
    state = raw.game
    mover = -1 if state.deal_over else state.current
    for seat, agent in enumerate(raw.possible_agents):
        obs = raw.observe(agent)
        if seat == mover:
            np.testing.assert_array_equal(obs["action_mask"], state.legal_mask())
            assert obs["action_mask"].any()
        else:
            assert not obs["action_mask"].any()
        other.state_ = swap_hidden(state, seat, rng)
        changed = any(other.state_.hands[s] != state.hands[s] for s in range(state.num_players))
        stats["checks"] += 1
        stats["changed"] += changed or other.state_.stock != state.stock
        obs2 = other.observe(agent)
        np.testing.assert_array_equal(obs["observation"], obs2["observation"], err_msg=f"{agent} sees hidden cards")
        np.testing.assert_array_equal(obs["action_mask"], obs2["action_mask"], err_msg=f"{agent}'s mask leaks")


def run_privacy(num_players: int, rules: str, seeds) -> None:
    stats = {"checks": 0, "changed": 0}
    for seed in seeds:
        env = treppen_env.raw_env(num_players=num_players, rules=rules)
        other = treppen_env.raw_env(num_players=num_players, rules=rules)
        env.reset(seed=seed)
        rng = np.random.default_rng(seed)
        play_out(env, rng, on_step=functools.partial(check_privacy, other=other, rng=rng, stats=stats))
        check_privacy(env, other, rng, stats)  # at the end of the deal too
    assert stats["checks"] > 100 * num_players * len(seeds) // 2
    assert stats["changed"] >= 0.9 * stats["checks"]  # the swaps really changed hidden cards


@pytest.mark.parametrize(("num_players", "rules"), CONFIGS)
def test_observation_hides_stock_and_unseen_cards(num_players, rules):
    run_privacy(num_players, rules, seeds=range(3))


@pytest.mark.parametrize(("num_players", "rules"), CONFIGS)
def test_observation_hides_stock_and_unseen_cards_many_deals(num_players, rules):
    """No peeking over 30 more deals of each game (about 16 CPU seconds in all)."""
    run_privacy(num_players, rules, seeds=range(100, 130))


def test_privacy_check_detects_a_visible_change():
    # control: the same comparison does see a change in the observer's own hand
    env = treppen_env.raw_env(num_players=2)
    env.reset(seed=1)
    state = env.game
    other = state.clone()
    mine = next(c for c in range(52) if state.hands[0] >> c & 1)
    stock_card = other.stock[0]
    other.hands[0] ^= (1 << mine) | (1 << stock_card)
    other.stock[0] = mine
    before = env.observe("player_0")["observation"]
    env.state_ = other
    assert not np.array_equal(before, env.observe("player_0")["observation"])


def test_known_cards_are_shown_to_every_opponent():
    # RULES §4.1: cards taken from the staircase are public until played
    env = treppen_env.env(num_players=2)
    env.reset(options={"deck": B_DECK, "dealer": 0})
    play_texts(env, *B_TURN_1, "take 1")
    assert observation.decode(env.observe("player_0")).known == ((parse_card("6H"),),)
    assert observation.decode(env.observe("player_1")).known == ((),)


# ---------------------------------------------------------------- scripted deals and masks
@pytest.mark.parametrize(
    ("num_players", "rules", "dealer", "per_hand", "first", "legal"),
    [
        (2, "treppenromme", 0, 7, 0, ["draw", "take 1"]),
        # rum500 (RULES §4.2): the staircase card (AD, 9H, 3D) fits no meld with the first hand
        (2, "rum500", 0, 13, 1, ["draw"]),
        (3, "rum500", 2, 7, 0, ["draw"]),
        (4, "treppenromme", 3, 7, 3, ["draw", "take 1"]),
        (4, "rum500", 1, 7, 2, ["draw"]),
    ],
)
def test_reset_deals_the_given_deck(num_players, rules, dealer, per_hand, first, legal):
    # docs/ARCHITECTURE.md "Environment": one card at a time clockwise from the seat left of the dealer, then the
    # first staircase card, then the stock top first; RULES §2.2 (13 cards in rum500 with 2
    # players), §2.4 (treppenromme: the dealer plays first; rum500: the player left of the dealer).
    env = treppen_env.env(num_players=num_players, rules=rules)
    env.reset(options={"deck": list(range(52)), "dealer": dealer})
    dealt = num_players * per_hand
    for seat, agent in enumerate(env.possible_agents):
        view = observation.decode(env.observe(agent))
        k = (seat - dealer - 1) % num_players  # 0 for the seat left of the dealer
        assert view.hand == tuple(range(k, dealt, num_players))
        assert view.staircase == (dealt,)
        assert view.stock_size == 52 - dealt - 1
        assert view.dealer == (dealer - seat) % num_players
        assert view.hand_sizes == (per_hand,) * num_players
    assert env.agent_selection == f"player_{first}"
    assert mask_texts(env.last()[0]) == legal
    env.step(parse_action("draw"))
    assert dealt + 1 in observation.decode(env.observe(f"player_{first}")).hand  # the stock's top card


def test_reset_accepts_deck_text_and_the_two_player_example():
    # docs/ARCHITECTURE.md "Environment": with 2 players and dealer 0, deck[0] goes to seat 1, deck[1] to seat 0, ...,
    # deck[14] is the first staircase card and deck[15] the top of the stock.
    deck = ["AS", "2S", "3S", "4S", "5S", "6S", "7S", "8S", "9S", "10S", "J♠", "qs", "KS", "AH", "2H", "3H"]
    deck += [c for c in range(52) if c > 15]
    env = treppen_env.env(num_players=2)
    env.reset(options={"deck": deck, "dealer": 0})
    assert observation.decode(env.observe("player_1")).hand == (0, 2, 4, 6, 8, 10, 12)  # AS 3S 5S 7S 9S JS KS
    assert observation.decode(env.observe("player_0")).hand == (1, 3, 5, 7, 9, 11, 13)  # 2S 4S ... QS AH
    assert observation.decode(env.observe("player_0")).staircase == (parse_card("2H"),)
    env.step(parse_action("draw"))
    assert parse_card("3H") in observation.decode(env.observe("player_0")).hand


def test_scripted_deal_masks_and_result():
    env = treppen_env.env(num_players=2)
    env.reset(options={"deck": B_DECK, "dealer": 0})
    assert env.agent_selection == "player_0"  # treppenromme: the dealer plays first (RULES §2.4)
    assert mask_texts(env.last()[0]) == ["draw", "take 1"]  # RULES §4.1, one staircase card
    env.step(parse_action("draw"))  # draws 6H
    assert mask_texts(env.last()[0]) == [
        "meld 5S 5H 5D",
        "meld 9C TC JC",
        "meld 9C TC JC QC",
        "meld TC JC QC",
        *(f"discard {c}" for c in "5S 5H 6H 5D 9C TC JC QC".split()),
    ]
    play_texts(env, *B_TURN_1[1:])
    assert env.agent_selection == "player_1"
    assert mask_texts(env.last()[0]) == ["draw", "take 1", "take 2"]
    env.step(parse_action("take 1"))  # takes 6H: it may not be discarded this turn (RULES §4.4)
    assert mask_texts(env.last()[0]) == [
        "meld KS KH KD",
        "layoff 5C set",  # onto player_0's 5S 5H 5D (RULES §4.3)
        "layoff 8C low",  # before player_0's 9C TC JC
        *(f"discard {c}" for c in "4S KS 7H KH KD 5C 8C".split()),
    ]
    assert not env.observe("player_0")["action_mask"].any()
    play_texts(env, "layoff 5C set", "layoff 8C low", "meld KS KH KD", "discard 7H", "draw")  # draws 3C
    assert mask_texts(env.last()[0]) == ["layoff QC high", "discard 3C", "discard QC"]
    play_texts(env, "layoff QC high", "discard 3C")
    # player_0 went out (not Rommé: it melded in an earlier turn, RULES §6.2): booked 15 + 29 + 10,
    # plus player_1's hand 4S 6H = 10; player_1 booked 5 + 8 + 30 (RULES §5).
    info = {"deal_points": {"player_0": 64, "player_1": 43}, "outcome": "went_out", "went_out": "player_0"}
    seen = {}
    for agent in env.agent_iter():
        _, reward, term, trunc, agent_info = env.last()
        seen[agent] = (reward, term, trunc, agent_info)
        env.step(None)
    assert seen == {
        "player_0": (pytest.approx(0.21), True, False, info),
        "player_1": (pytest.approx(-0.21), True, False, info),
    }
    assert env.agents == []


# ---------------------------------------------------------------- rewards and infos (docs/ARCHITECTURE.md "Rewards")
ROMME_HANDS = {
    0: "5S 5H 5D 9C TC JC QC".split(),
    1: "AS KH 3D 4S 7H 8D 6C".split(),  # 15 + 10 + 3 + 4 + 7 + 8 + 6 = 53 (ace in hand 15, §3.3)
    2: "2S 3H 4D 6S 7D 8H 9S".split(),  # 39
}


def romme_deal(num_players: int, **kwargs) -> dict:
    """player_0 (dealer, first to play) goes out Rommé on its first turn: draws 2D, melds 5S 5H 5D
    (15) and 9C TC JC QC (39), discards 2D (RULES §6.2). Returns each agent's final last()."""
    env = treppen_env.env(num_players=num_players, **kwargs)
    hands = {s: ROMME_HANDS[s] for s in range(num_players)}
    env.reset(options={"deck": stack_deck(num_players, hands=hands, stock=["2D"]), "dealer": 0})
    play_texts(env, "draw", "meld 5S 5H 5D", "meld 9C TC JC QC", "discard 2D")
    return play_out(env, np.random.default_rng(0))


@pytest.mark.parametrize(
    ("num_players", "kwargs", "points", "rewards"),
    [
        # 54 booked + 2 x 53 (Rommé doubles the credit); zero-sum (p_i - mean others) / 100
        (2, {}, [160, 0], [1.6, -1.6]),
        (2, {"reward": "points"}, [160, 0], [1.6, 0.0]),
        # option hand_penalty: the holder also loses its hand, doubled after a Rommé
        (2, {"hand_penalty": True}, [160, -106], [2.66, -2.66]),
        (2, {"hand_penalty": True, "reward": "points"}, [160, -106], [1.6, -1.06]),
        # 54 + 2 x (53 + 39) = 238; others: (0 - 238 / 2) / 100
        (3, {}, [238, 0, 0], [2.38, -1.19, -1.19]),
    ],
)
def test_rewards_at_deal_end(num_players, kwargs, points, rewards):
    final = romme_deal(num_players, **kwargs)
    agents = [f"player_{i}" for i in range(num_players)]
    info = {"deal_points": dict(zip(agents, points, strict=True)), "outcome": "romme", "went_out": "player_0"}
    for agent, reward in zip(agents, rewards, strict=True):
        _, got, term, trunc, got_info = final[agent]
        assert got == pytest.approx(reward, abs=1e-12)
        assert (term, trunc, got_info) == (True, False, info)


@pytest.mark.parametrize(("num_players", "rules"), CONFIGS)
def test_random_deals_are_zero_sum(num_players, rules):
    outcomes = set()
    for seed in range(6):
        for reward_mode in ("zero_sum", "points"):
            env = treppen_env.env(num_players=num_players, rules=rules, reward=reward_mode)
            env.reset(seed=seed)
            final = play_out(env, np.random.default_rng(seed))
            info = final["player_0"][4]
            pts = [info["deal_points"][a] for a in env.possible_agents]
            assert pts == env.unwrapped.game.deal_points
            outcomes.add(info["outcome"])
            for i, agent in enumerate(env.possible_agents):
                _, reward, term, trunc, agent_info = final[agent]
                assert agent_info == info and set(info) == {"deal_points", "outcome", "went_out"}
                others = (sum(pts) - pts[i]) / (num_players - 1)
                want = pts[i] / 100 if reward_mode == "points" else (pts[i] - others) / 100
                assert reward == pytest.approx(want, abs=1e-12)
                assert (term, trunc) == (True, False)
            if reward_mode == "zero_sum":
                assert sum(final[a][1] for a in env.possible_agents) == pytest.approx(0.0, abs=1e-12)
            went_out = env.unwrapped.game.went_out
            assert info["went_out"] == (None if went_out is None else f"player_{went_out}")
    assert outcomes <= {"went_out", "romme", "stock_exhausted"}


@pytest.mark.parametrize("maker", sorted(MAKERS))
def test_max_turns_is_a_truncation(maker):
    # RULES §6.5: the cut-off ends the deal as in §6.4 and is reported as a truncation
    env = MAKERS[maker](num_players=2, max_turns=2)
    env.reset(options={"deck": B_DECK, "dealer": 0})
    play_texts(env, *B_TURN_1, "take 1", "layoff 5C set", "discard 7H")
    info = {"deal_points": {"player_0": 44, "player_1": 5}, "outcome": "max_turns", "went_out": None}
    assert env.terminations == {"player_0": False, "player_1": False}
    assert env.truncations == {"player_0": True, "player_1": True}
    final = play_out(env, np.random.default_rng(0))
    assert final == {
        "player_0": (final["player_0"][0], pytest.approx(0.39), False, True, info),
        "player_1": (final["player_1"][0], pytest.approx(-0.39), False, True, info),
    }


def test_max_turns_in_a_game_starts_the_next_deal():
    env = treppen_env.env(num_players=2, max_turns=2, episode="game", target=100)
    env.reset(options={"deck": B_DECK, "dealer": 0})
    play_texts(env, *B_TURN_1, "take 1", "layoff 5C set", "discard 7H")
    game = env.unwrapped.game
    assert game.deals_played == 1 and game.dealer == 1 and game.phase == 0
    assert env.agent_selection == "player_1"  # the new dealer plays first (RULES §2.1, §2.4)
    assert env.terminations == env.truncations == {"player_0": False, "player_1": False}
    assert env.infos["player_1"]["totals"] == {"player_0": 44, "player_1": 5}
    assert env.infos["player_1"]["outcome"] == "max_turns"


@pytest.mark.parametrize("num_players", [2, 3, 4])
def test_game_episode_plays_deals_until_the_target(num_players):
    # RULES §7.1: deals until a total reaches the target with one highest; the deal rotates (§2.1)
    env = treppen_env.env(num_players=num_players, episode="game", target=200)
    env.reset(seed=num_players, options={"dealer": 1})
    rng = np.random.default_rng(num_players)
    agents = env.possible_agents
    totals = dict.fromkeys(agents, 0)
    summed = dict.fromkeys(agents, 0.0)
    deals = 0
    for _ in range(20000):
        obs, _, term, trunc, _ = env.last()
        if term or trunc:
            break
        mover = env.agent_selection
        env.step(random_action(obs, rng))
        for agent in agents:
            summed[agent] += env.rewards[agent]
        game = env.unwrapped.game
        if game.deals_played == deals:
            continue
        deals += 1
        info = env.infos[mover]
        assert all(env.infos[a] == info for a in agents)
        for agent in agents:
            totals[agent] += info["deal_points"][agent]
        assert info["totals"] == totals
        pts = [info["deal_points"][a] for a in agents]
        for i, agent in enumerate(agents):
            assert env.rewards[agent] == pytest.approx((pts[i] - (sum(pts) - pts[i]) / (num_players - 1)) / 100)
        best = max(totals.values())
        if best >= 200 and list(totals.values()).count(best) == 1:
            assert all(env.terminations.values())
            break
        assert not any(env.terminations.values()) and not any(env.truncations.values())
        assert game.dealer == (1 + deals) % num_players
        assert env.agent_selection == agents[game.dealer]  # treppenromme: the dealer plays first
        # each agent sees the deal's infos at its next last(), then they are cleared
        first = env.agent_selection
        assert env.last()[4] == info
        env.step(random_action(env.last()[0], rng))  # a draw: it cannot end the deal
        assert env.infos[first] == {}
        assert all(env.infos[a] == info for a in agents if a != first)
    else:
        pytest.fail("the game did not end")
    assert deals >= 2
    assert max(totals.values()) >= 200
    assert env.unwrapped.game.totals == [totals[a] for a in agents]
    assert sum(summed.values()) == pytest.approx(0.0, abs=1e-9)  # zero-sum deal by deal


@pytest.mark.parametrize(("target", "terminated"), [(100, True), (1000, False)])
def test_game_ends_at_the_target_or_is_cut_off_at_max_deals(target, terminated):
    # RULES §7.1: a game ends when a total reaches the target with one highest; a game that has not
    # ended after max_deals deals is cut off, reported as a truncation (like max_turns, §6.5).
    final = romme_deal(2, episode="game", target=target, max_deals=1)
    info = {
        "deal_points": {"player_0": 160, "player_1": 0},
        "outcome": "romme",
        "went_out": "player_0",
        "totals": {"player_0": 160, "player_1": 0},
    }
    assert {a: f[1:] for a, f in final.items()} == {
        "player_0": (pytest.approx(1.6), terminated, not terminated, info),
        "player_1": (pytest.approx(-1.6), terminated, not terminated, info),
    }


def test_game_where_nobody_reaches_the_target_stops_at_max_deals():
    env = treppen_env.env(num_players=3, episode="game", target=100_000, max_deals=4)
    env.reset(seed=0)
    final = play_out(env, np.random.default_rng(0))
    game = env.unwrapped.game
    assert game.deals_played == 4 and not game.game_over()
    totals = dict(zip(env.possible_agents, game.totals, strict=True))
    assert {a: (term, trunc, info["totals"]) for a, (_, _, term, trunc, info) in final.items()} == {
        a: (False, True, totals) for a in env.possible_agents
    }
    assert treppen_env.raw_env().rules.max_deals == 200  # the default (treppen_env.rules.Rules)


# ---------------------------------------------------------------- bad input (docs/ARCHITECTURE.md "Bad input")
def test_raw_env_rejects_illegal_actions_with_text_and_reason():
    env = treppen_env.raw_env(num_players=2)
    env.reset(options={"deck": B_DECK, "dealer": 0})
    before = env.observe("player_0")
    with pytest.raises(ValueError) as err:
        env.step(encode_discard(parse_card("5S")))
    assert str(err.value) == (
        "player_0: illegal action discard 5S (action 850) for player 0 in the draw phase: "
        "draw from the stock or take from the staircase first (RULES §4.1)"
    )
    after = env.observe("player_0")  # the state is unchanged
    np.testing.assert_array_equal(before["observation"], after["observation"])
    np.testing.assert_array_equal(before["action_mask"], after["action_mask"])
    play_texts(env, *B_TURN_1, "take 1")
    with pytest.raises(ValueError, match=r"discard 6H .*may not be discarded \(RULES §4\.4\)"):
        env.step(parse_action("discard 6H"))
    with pytest.raises(ValueError, match=r"take 1 .*already drew this turn \(RULES §4\.1\)"):
        env.step(parse_action("take 1"))
    env.step(parse_action("discard 7H"))  # a legal action still works
    assert env.agent_selection == "player_0"


def pettingzoo_chain(**kwargs):
    """raw_env in PettingZoo's own classic wrapper chain, which ClassicWrapper stands for."""
    from pettingzoo.utils.wrappers import AssertOutOfBoundsWrapper, OrderEnforcingWrapper, TerminateIllegalWrapper

    return OrderEnforcingWrapper(TerminateIllegalWrapper(AssertOutOfBoundsWrapper(treppen_env.raw_env(**kwargs)), -1))


def guide_loop_with_illegal_move(env, illegal_at: int) -> list[tuple]:
    """The environment guide's ``agent_iter()`` loop, with decision ``illegal_at`` an illegal action: every
    ``(agent, reward, terminated, truncated, info)`` of ``last()``."""
    rng = np.random.default_rng(0)
    seen = []
    for agent in env.agent_iter():
        obs, reward, terminated, truncated, info = env.last()
        seen.append((agent, reward, terminated, truncated, info))
        if terminated or truncated:
            env.step(None)
        elif len(seen) == illegal_at + 1:
            env.step(int(np.flatnonzero(obs["action_mask"] == 0)[-1]))  # "discard KC"
        else:
            env.step(random_action(obs, rng))
    return seen


@pytest.mark.parametrize(("num_players", "illegal_at"), [(2, 0), (3, 0), (3, 4)])
def test_illegal_move_in_the_agent_iter_loop_ends_it_as_pettingzoo_does(caplog, num_players, illegal_at):
    # PettingZoo's classic convention (TerminateIllegalWrapper + OrderEnforcingWrapper): warn, -1
    # to the offender, 0 to the others, every agent done; the loop runs to its end, each agent
    # gets its final last(), and env.agents ends empty.
    env = treppen_env.env(num_players=num_players)
    env.reset(seed=0)
    with caplog.at_level(logging.WARNING):
        seen = guide_loop_with_illegal_move(env, illegal_at)
    assert "Illegal move made, game terminating with current player losing" in caplog.text
    assert env.agents == []
    offender = seen[illegal_at][0]
    final = seen[illegal_at + 1 :]
    assert final == [
        (a, -1.0 if a == offender else 0.0, True, True, {"illegal_action": "discard KC"} if a == offender else {})
        for a in env.possible_agents
    ]
    # the same as PettingZoo's own chain around raw_env (which does not name the action)
    chain = pettingzoo_chain(num_players=num_players)
    chain.reset(seed=0)
    reference = guide_loop_with_illegal_move(chain, illegal_at)
    assert chain.agents == []
    for got, want in zip(seen, reference, strict=True):
        assert got[:4] == want[:4]
        assert {k: v for k, v in got[4].items() if k != "illegal_action"} == want[4]


@pytest.mark.parametrize("maker", sorted(MAKERS))
def test_after_every_agent_is_done_step_warns_and_last_raises(maker, caplog):
    # PettingZoo's OrderEnforcingWrapper warns on a step once agents is empty and does nothing;
    # raw_env does the same, and last() says why it has nothing to give (not a bare KeyError).
    env = MAKERS[maker](num_players=2)
    env.reset(seed=1)
    play_out(env, np.random.default_rng(1))
    assert env.agents == []
    with caplog.at_level(logging.WARNING):
        env.step(None)
        env.step(0)
    assert caplog.text.count("step() called after all agents are terminated or truncated. Should reset() first") == 2
    assert env.agents == []
    with pytest.raises(RuntimeError, match=r"^last\(\): every agent is done \(agents is empty\); call reset\(\)"):
        env.last()
    env.reset(seed=1)  # a reset starts over
    assert env.agents == ["player_0", "player_1"] and env.last()[1:] == (0.0, False, False, {})


def test_raw_env_before_reset_raises():
    env = treppen_env.raw_env(num_players=2)
    for call in (lambda: env.step(0), env.last, lambda: env.observe("player_0")):
        with pytest.raises(RuntimeError, match=r"^call reset\(\) before using the environment$"):
            call()


# Not actions: out of range (-1 is not the last action), bool (True is not "take 1"), floats (1.0
# is not action 1), None for a live agent, text, arrays that are not 0-d integers.
NOT_ACTIONS = [898, -1, 1.5, True, np.True_, None, "draw", np.float64(0.0), np.array([0]), np.array(0.0)]


def single_agent_env(**kwargs):
    """The SingleAgentEnv layer with a random opponent (its own tests: tests/treppen_env/test_single_agent.py)."""
    from treppen.agents.base import RandomAgent

    return treppen_env.SingleAgentEnv(RandomAgent(seed=0), seat=0, **kwargs)


LAYERS = {**MAKERS, "SingleAgentEnv": single_agent_env}


def raw_of(env):
    """The raw_env under any layer."""
    return env.aec if isinstance(env, treppen_env.SingleAgentEnv) else env.unwrapped


@pytest.mark.parametrize("action", NOT_ACTIONS, ids=repr)
@pytest.mark.parametrize("layer", sorted(LAYERS))
def test_actions_outside_the_space_raise_in_every_layer(layer, action):
    env = LAYERS[layer](num_players=2)
    env.reset(seed=0, options={"deck": B_DECK, "dealer": 0})
    raw = raw_of(env)
    before = deal_of(raw)
    agent = "" if layer == "SingleAgentEnv" else "player_0: "  # the single-agent env has one agent
    with pytest.raises(ValueError) as err:
        env.step(action)
    assert str(err.value) == (
        f"{agent}action {action!r} is not in the action space Discrete(898): an action is an int (or NumPy "
        "integer) 0..897"
    )
    assert (raw.game.current, raw.game.phase, raw.game.turn, deal_of(raw)) == (0, 0, 0, before)  # no move
    assert raw.terminations == raw.truncations == {"player_0": False, "player_1": False}


@pytest.mark.parametrize("action", [np.int64(1), np.uint8(1), np.int32(1), np.array(1), 1], ids=repr)
@pytest.mark.parametrize("layer", sorted(LAYERS))
def test_numpy_integers_are_actions_in_every_layer(layer, action):
    # Gymnasium's Discrete.sample() gives np.int64; Discrete.contains also takes 0-d integer arrays.
    env = LAYERS[layer](num_players=2)
    env.reset(seed=0, options={"deck": B_DECK, "dealer": 0})
    env.step(action)  # take 1: player_0 takes 2S (scenario B, RULES §4.1)
    raw = raw_of(env)
    assert (raw.game.phase, raw.game.staircase) == (1, [])
    assert parse_card("2S") in observation.decode(raw.observe("player_0")).hand


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"render_mode": "rgb_array"}, "render_mode='rgb_array'"),
        ({"episode": "match"}, "episode='match'"),
        ({"reward": "win_loss"}, "reward='win_loss'"),
        ({"num_players": 1}, "num_players=1"),
        ({"num_players": 5}, "num_players=5"),
        ({"num_players": "2"}, "num_players='2'"),
        ({"rules": "gin"}, "unknown rules preset 'gin'"),
        ({"jokers": 2}, r"unknown rules option\(s\) \['jokers'\]"),
        ({"max_turns": 0}, "max_turns=0 must be at least 1"),
        ({"max_deals": 0}, "max_deals=0 must be at least 1"),
        ({"stock_exhausted": "redeal"}, "stock_exhausted='redeal'"),
        ({"num_players": 4, "hand_size": 13}, "leaves no stock"),
    ],
)
@pytest.mark.parametrize("maker", sorted(MAKERS))
def test_bad_construction_raises(maker, kwargs, message):
    with pytest.raises(ValueError, match=message):
        MAKERS[maker](**kwargs)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"deck": list(range(51))}, "got 51 cards, missing: KC"),
        ({"deck": [*range(51), 0]}, "got 52 cards, repeated: AS, missing: KC"),
        ({"deck": ["XX", *range(1, 52)]}, "not a card: 'XX'"),
        (
            {"deck": " ".join(map(str, range(52)))},
            r"deck '0 1 2 3 4 5 6 7 8 9 '\.\.\. is one string; give a sequence of 52",
        ),
        ({"deck": list(range(52)), "dealer": 2}, r"dealer=2 is not a seat 0\.\.1"),
        ({"dealer": -1}, r"dealer=-1 is not a seat 0\.\.1"),
    ],
)
def test_bad_reset_options_raise(options, message):
    env = treppen_env.env(num_players=2)
    with pytest.raises(ValueError, match=message):
        env.reset(options=options)


def test_unknown_reset_options_are_ignored():
    env = treppen_env.env(num_players=2)
    env.reset(seed=0, options={"options": 1})  # as api_test passes
    assert env.agents == ["player_0", "player_1"]


# ---------------------------------------------------------------- import purity (docs/ARCHITECTURE.md "Layout")
def test_rules_engine_imports_no_rl_libraries():
    code = (
        "import sys\n"
        "import treppen_env, treppen_env.cards, treppen_env.rules, treppen_env.melds\n"
        "import treppen_env.actions, treppen_env.engine\n"
        "print(sorted(m for m in ('pettingzoo', 'gymnasium', 'torch', 'agents', 'train') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
