"""The observation tensor (treppen_env.observation): layout, exact values and decode() round trips
(docs/ARCHITECTURE.md "Environment", "Observations")."""

from __future__ import annotations

import copy

import numpy as np
import pytest

import treppen_env
from tests.env_helpers import (
    CONFIGS,
    cards,
    expected_view,
    play_out,
    play_texts,
    random_action,
    scenario_t,
    stack_deck,
    view_dict,
)
from treppen_env import observation
from treppen_env.actions import decode as decode_action
from treppen_env.cards import parse_card
from treppen_env.engine import GameState
from treppen_env.rules import make_rules


# ---------------------------------------------------------------- layout
def test_layout_is_contiguous_and_sized():
    start = 0
    for name, shape in observation.LAYOUT:
        piece = observation.SLICES[name]
        assert (piece.start, piece.stop) == (start, start + int(np.prod(shape)))
        start = piece.stop
    # 52 x (1 hand + 1 staircase + 4 owner + 7 table + 3 known + 1 must_use + 1 banned)
    # + 4 hand sizes + 1 stock + 3 phase + 4 x 6 seat pieces + 1 turn. A change here needs a new
    # LAYOUT_VERSION.
    assert observation.OBS_SIZE == start == 52 * 18 + 4 + 1 + 3 + 4 * 6 + 1 == 969
    assert observation.LAYOUT_VERSION == 1
    obs = np.arange(observation.OBS_SIZE, dtype=np.float32)
    views = observation.views(obs)
    assert views["table"].shape == (52, 7) and views["known"].shape == (3, 52)
    views["turn"][0] = -1  # views, not copies
    assert obs[-1] == -1


def test_decode_rejects_a_wrong_shape():
    with pytest.raises(ValueError, match=r"observation has shape \(10,\); expected \(969,\)"):
        observation.decode(np.zeros(10, dtype=np.float32))


# ---------------------------------------------------------------- a built table (scenario T)
def test_decode_of_a_built_table():
    env = scenario_t()
    # player_1's view: seats relative to player_1, so player_2 is 1 and player_0 is 2
    view = observation.decode(env.observe("player_1"))
    assert view.hand == cards("4D JD")
    assert view.staircase == cards("6S 2S")  # bottom to top
    assert sorted((m["owner"], m["kind"], m["cards"]) for m in view.melds) == [
        (0, "run", cards("6C 7C 8C")),
        (1, "run", cards("9C TC JC")),  # adjacent to 6C-8C but a meld of its own (RULES §3.5)
        (2, "run", cards("JH QH KH AH 2H 3H 4H")),  # low end to high end, through the corner
        (2, "set", cards("5S 5H 5D 5C")),  # completed by player_1: the owner stays player_0
    ]
    assert view.known == ((), cards("3S 4S"))  # player_0 took 3S 4S from the staircase
    assert view.hand_sizes == (2, 3, 4)
    assert view.stock_size == 52 - 3 * 8 - 1 - 3
    assert view.phase == "meld"
    assert view.points == (39, 43, 32)  # RULES §5: 6+7+8 + Q 10 + 3 + 5; 29 + J 10 + 4; K 10 + A 5 + 2 + 15
    assert view.totals == (0, 0, 0)
    assert (view.dealer, view.to_move, view.num_players) == (2, 2, 3)
    assert (view.must_use, view.banned) == (None, None)
    assert view.laid_before == (True, True, True)
    # the mover's own view
    mine = observation.decode(env.last()[0])
    assert mine.hand == cards("3S 4S 8S 9S")
    assert mine.known == ((), ())
    assert (mine.dealer, mine.to_move) == (0, 0)
    for seat, agent in enumerate(env.possible_agents):
        assert view_dict(observation.decode(env.observe(agent))) == expected_view(env.unwrapped.game, seat)


def test_encoded_values_of_a_built_table():
    env = scenario_t()
    v = observation.views(env.observe("player_2")["observation"])
    stairs = np.zeros(52, dtype=np.float32)
    stairs[parse_card("6S")], stairs[parse_card("2S")] = 2 / 52, 1 / 52  # depth / 52, top card 1
    np.testing.assert_array_equal(v["staircase"], stairs)
    col = {name: i for i, name in enumerate(observation.TABLE_COLUMNS)}

    def column(name: str) -> list[int]:
        return sorted(np.flatnonzero(v["table"][:, col[name]]).tolist())

    assert column("in_set") == sorted(cards("5S 5H 5D 5C"))
    assert column("in_run") == sorted(cards("JH QH KH AH 2H 3H 4H 6C 7C 8C 9C TC JC"))
    assert column("low_end") == sorted(cards("JH 6C 9C"))
    assert column("high_end") == sorted(cards("4H 8C JC"))
    assert column("fits_set") == []  # the only set has four cards
    # low ends: TH, 5C (on the table already), 8C; high ends: 5H, 9C, QC
    # 5C, 8C, 5H and 9C would extend a run but lie in other melds: they can never be laid off (§3.5, §4.3)
    assert column("fits_low") == sorted(cards("TH"))
    assert column("fits_high") == sorted(cards("QC"))
    # owners relative to player_2: player_0 -> 1, player_1 -> 2, player_2 -> 0
    assert v["meld_owner"][parse_card("JH")].tolist() == [0, 1, 0, 0]
    assert v["meld_owner"][parse_card("5C")].tolist() == [0, 1, 0, 0]
    assert v["meld_owner"][parse_card("7C")].tolist() == [0, 0, 1, 0]
    assert v["meld_owner"][parse_card("TC")].tolist() == [1, 0, 0, 0]
    assert v["meld_owner"][parse_card("AC")].tolist() == [0, 0, 0, 0]
    np.testing.assert_array_equal(v["hand_sizes"], np.float32([3 / 13, 4 / 13, 2 / 13, 0]))
    np.testing.assert_array_equal(v["stock_size"], np.float32([24 / 52]))
    np.testing.assert_array_equal(v["phase"], [0, 1, 0])
    np.testing.assert_array_equal(v["points"], np.float32([0.43, 0.32, 0.39, 0]))
    np.testing.assert_array_equal(v["dealer"], [0, 1, 0, 0])
    np.testing.assert_array_equal(v["to_move"], [0, 1, 0, 0])
    np.testing.assert_array_equal(v["seats"], [1, 1, 1, 0])
    np.testing.assert_array_equal(v["turn"], np.float32([3 / 300]))
    # row k - 1 holds relative seat k: player_0 (1) took 3S 4S; row 2 pads the fourth seat
    assert np.flatnonzero(v["known"][0]).tolist() == sorted(cards("3S 4S"))
    assert v["known"][1].sum() == 0 and v["known"][2].sum() == 0


def test_banned_and_must_use_cards():
    # RULES §4.4: a single staircase card just taken may not be discarded; rum500 §4.2: the
    # deepest card taken must be played at once.
    env = treppen_env.env(num_players=2, rules="rum500")
    deck = stack_deck(2, "rum500", hands={1: "7H 8H".split()}, staircase="9H")
    env.reset(options={"deck": deck, "dealer": 0})
    play_texts(env, "take 1")
    view = observation.decode(env.last()[0])
    assert (view.banned, view.must_use) == (parse_card("9H"), parse_card("9H"))
    assert observation.decode(env.observe("player_0")).known == ((parse_card("9H"),),)
    play_texts(env, "meld 7H 8H 9H")
    assert observation.decode(env.last()[0]).must_use is None  # used: discards are open again


@pytest.mark.parametrize(
    ("rules", "options", "dealer", "seat", "run", "points"),
    [
        # RULES §3.2: a 13-card run is laid with a chosen low end; treppenromme turns the corner.
        # 5..10 = 45, J Q K = 30, the ace in the middle 5 (§3.3), 2 3 4 = 9
        ("treppenromme", {"hand_size_two_players": 13}, 0, 0, "5S 6S 7S 8S 9S TS JS QS KS AS 2S 3S 4S", 89),
        # rum500: no corner, so A..K with the ace low (1) + 2..10 (54) + 30
        ("rum500", {}, 0, 1, "AD 2D 3D 4D 5D 6D 7D 8D 9D TD JD QD KD", 85),
    ],
)
def test_decode_of_thirteen_card_runs(rules, options, dealer, seat, run, points):
    env = treppen_env.env(num_players=2, rules=rules, **options)
    deck = stack_deck(2, rules, dealer, hands={seat: run.split()}, staircase="2C", **options)
    env.reset(options={"deck": deck, "dealer": dealer})
    assert env.agent_selection == f"player_{seat}"
    play_texts(env, "draw", "meld " + run)
    for observer in (0, 1):
        view = observation.decode(env.observe(f"player_{observer}"))
        assert [(m["owner"], m["kind"], m["cards"]) for m in view.melds] == [((seat - observer) % 2, "run", cards(run))]
        assert view.points[(seat - observer) % 2] == points
        assert view.hand_sizes[(seat - observer) % 2] == 1
    v = observation.views(env.observe("player_0")["observation"])
    assert v["table"][:, 4:].sum() == 0  # nothing fits a 13-card run


def test_totals_are_scaled_and_clipped():
    state = GameState(make_rules("rum500"), 2, np.random.default_rng(0))
    state.deal(0)
    state.totals = [12345, -37]
    obs = observation.encode(state, 1)
    np.testing.assert_array_equal(observation.views(obs)["totals"], np.float32([-0.037, 10.0, 0, 0]))
    assert observation.decode(obs).totals == (-37, 10000)  # totals beyond +-10000 are clipped
    space = treppen_env.raw_env().observation_space("player_0")["observation"]
    assert space.contains(obs)


# ---------------------------------------------------------------- random positions
def round_trip_all(env) -> None:
    """decode(observe(agent)) equals the engine state, seen from that agent, for every agent."""
    raw = env.unwrapped
    state = raw.game
    for seat, agent in enumerate(raw.possible_agents):
        obs = raw.observe(agent)
        assert view_dict(observation.decode(obs)) == expected_view(state, seat)
        if seat == state.current:  # the bare vector decodes as the dict does
            assert observation.decode(obs["observation"]) == observation.decode(obs)


def run_round_trips(num_players: int, rules: str, seeds, **kwargs) -> int:
    """Round trips at every decision of random deals; returns the deals played."""
    checked = deals = 0
    kinds = set()
    for seed in seeds:
        env = treppen_env.raw_env(num_players=num_players, rules=rules, **kwargs)
        env.reset(seed=seed, options={"dealer": seed % num_players})

        def check(e):
            nonlocal checked
            round_trip_all(e)
            checked += 1
            kinds.update(m.kind for m in e.unwrapped.game.melds)

        play_out(env, np.random.default_rng(seed), on_step=check)
        round_trip_all(env)  # and at the end
        deals += env.game.deals_played
    assert checked > 50 * len(seeds)
    assert kinds == {"set", "run"}
    return deals


@pytest.mark.parametrize(("num_players", "rules"), CONFIGS)
def test_decode_round_trip_in_random_deals(num_players, rules):
    run_round_trips(num_players, rules, seeds=range(3))


@pytest.mark.parametrize(("num_players", "rules", "seed"), [(3, "rum500", 2), (4, "treppenromme", 1)])
def test_decode_round_trip_over_a_game(num_players, rules, seed):
    # several deals: game totals and the rotating dealer (RULES §2.1, §7.1)
    deals = run_round_trips(num_players, rules, seeds=[seed], episode="game", target=150, max_turns=60)
    assert deals >= 3


# slow: 30 deals per game (about 14 CPU seconds) of the round trip that the default run checks on 3,
# and the golden digests pin the encoding besides; run -m slow after changing the observation.
@pytest.mark.slow
@pytest.mark.parametrize(("num_players", "rules"), CONFIGS)
def test_decode_round_trip_many_deals(num_players, rules):
    run_round_trips(num_players, rules, seeds=range(10, 40))


# ---------------------------------------------------------------- the env's cached encoder
def check_cached_against_scratch(env, rng: np.random.Generator) -> None:
    """The mover's observation (through ``last()``, as agents read it) and one other agent's equal
    a from-scratch encoding of the same state."""
    raw = env.unwrapped
    state = raw.game
    obs = env.last()[0]["observation"]
    np.testing.assert_array_equal(obs, observation.encode(state, raw.possible_agents.index(env.agent_selection)))
    seat = int(rng.integers(raw.num_players))
    np.testing.assert_array_equal(
        raw.observe(raw.possible_agents[seat])["observation"], observation.encode(state, seat)
    )


def run_cached_encoder(num_players: int, rules: str, seeds, **kwargs) -> int:
    """Random deals with a deep copy of the env taken at a random decision and both played on with
    the same actions; every observation of either equals a from-scratch encoding. Returns the
    number of checks."""
    checks = 0
    for seed in seeds:
        env = treppen_env.env(num_players=num_players, rules=rules, **kwargs)
        env.reset(seed=seed)
        rng = np.random.default_rng(seed)
        twin = None
        copy_at = int(rng.integers(1, 60))
        step = 0
        while env.agents:
            agent = env.agent_selection
            step += 1
            pair = [env] if twin is None else [env, twin]
            for e in pair:
                check_cached_against_scratch(e, rng)
                checks += 1
            if env.terminations[agent] or env.truncations[agent]:
                for e in pair:
                    e.step(None)
                continue
            action = random_action(env.last()[0], rng)
            for e in pair:
                e.step(action)
            if step == copy_at:
                twin = copy.deepcopy(env)
            elif twin is not None and rng.random() < 0.05:
                env, twin = twin, copy.deepcopy(twin)  # play on in the copy (and in a copy of it)
    return checks


@pytest.mark.parametrize(("num_players", "rules"), CONFIGS)
def test_cached_observation_equals_scratch_encoding(num_players, rules):
    assert run_cached_encoder(num_players, rules, seeds=range(4)) > 400


def test_cached_observation_over_a_game_of_deals():
    # the next deal reuses the state object: the table cache must not survive the deal (RULES §2.1)
    assert run_cached_encoder(3, "treppenromme", seeds=[5], episode="game", target=150, max_turns=60) > 300


# slow: 50 deals per game (about 12 CPU seconds) of the cache check that the default run makes on 4
# and over a game of deals; run -m slow after changing the observation cache.
@pytest.mark.slow
@pytest.mark.parametrize(("num_players", "rules"), CONFIGS)
def test_cached_observation_equals_scratch_encoding_many_deals(num_players, rules):
    run_cached_encoder(num_players, rules, seeds=range(10, 60))


def test_table_version_counts_deals_and_lays():
    """The table cache key: every deal, meld and lay-off bumps it, nothing else does (RULES §4.3)."""
    state = GameState(make_rules("treppenromme"), 3, np.random.default_rng(3))
    state.deal(0)
    rng = np.random.default_rng(3)
    lays = 0
    for _ in range(4):
        before = state.table_version
        expected = before
        while not state.deal_over:
            action = int(rng.choice(state.legal_actions()))
            kind = decode_action(action).kind
            state.apply(action)
            lays += kind in ("meld", "layoff")
            expected += kind in ("meld", "layoff")
            assert state.table_version == expected, kind
        state.next_deal()
        assert state.table_version == expected + 1
    assert lays > 10
