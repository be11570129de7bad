"""The OpenSpiel game (treppen.openspiel, docs/guide/openspiel.md): OpenSpiel's own checks, the
same deals as the AEC env step for step, serialization, and no peeking at hidden cards."""

from __future__ import annotations

import numpy as np
import pytest

pyspiel = pytest.importorskip("pyspiel")

from tests.env_helpers import CONFIGS  # noqa: E402
from treppen.openspiel import GAME_NAME  # noqa: E402
from treppen.openspiel.game import UTILITY_BOUND  # noqa: E402
from treppen_env.aec import raw_env  # noqa: E402
from treppen_env.observation import OBS_SIZE  # noqa: E402

PRESETS = ("treppenromme", "rum500")


def load(players: int, rules: str):
    return pyspiel.load_game(GAME_NAME, {"players": players, "rules": rules})


def dealt(game, deck: list[int]):
    """The state after the chance nodes dealt ``deck`` (top first)."""
    state = game.new_initial_state()
    for i, card in enumerate(deck):
        assert state.is_chance_node()
        outcomes = state.chance_outcomes()
        assert len(outcomes) == 52 - i and card in dict(outcomes)
        state.apply_action(card)
    return state


def tensors(state, player: int) -> tuple[np.ndarray, np.ndarray]:
    return (
        np.asarray(state.observation_tensor(player), np.float32),
        np.asarray(state.information_state_tensor(player), np.float32),
    )


@pytest.mark.parametrize(("players", "rules"), CONFIGS)
def test_random_sim_test_with_serialization(players, rules):
    game = load(players, rules)
    pyspiel.random_sim_test(game, num_sims=2, serialize=True, verbose=False)
    assert game.observation_tensor_shape() == [OBS_SIZE]
    assert game.information_state_tensor_shape() == [OBS_SIZE + game.max_game_length()]
    assert game.max_game_length() == 2 * 300 + 52
    assert (game.num_players(), game.num_distinct_actions(), game.max_chance_outcomes()) == (players, 898, 52)
    assert (game.min_utility(), game.max_utility(), game.utility_sum()) == (-UTILITY_BOUND, UTILITY_BOUND, 0.0)
    assert game.get_type().utility == pyspiel.GameType.Utility.ZERO_SUM


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"players": 5}, "num_players=5 is not allowed: 2 to 4 players"),
        ({"rules": "gin"}, "rules='gin'; the OpenSpiel game plays one of the presets ['rum500', 'treppenromme']"),
    ],
)
def test_bad_parameters_are_named(params, message):
    with pytest.raises(Exception, match=message.replace("[", r"\[").replace("]", r"\]")):
        pyspiel.load_game(GAME_NAME, params)


def play_both(players: int, rules: str, seed: int) -> int:
    """Play one seeded deal of random legal actions through the game and the AEC env, checking the
    player to move, the legal actions, every player's tensors and the returns at every step."""
    rng = np.random.default_rng(seed)
    deck = rng.permutation(52).tolist()
    state = dealt(load(players, rules), deck)
    env = raw_env(num_players=players, rules=rules)
    env.reset(options={"deck": deck})
    steps = 0
    while True:
        for player, agent in enumerate(env.possible_agents):
            obs = env.observe(agent)
            observation, info_state = tensors(state, player)
            assert np.array_equal(observation, obs["observation"])
            assert np.array_equal(info_state[:OBS_SIZE], obs["observation"])
        if state.is_terminal():
            break
        agent = env.agent_selection
        assert state.current_player() == env.possible_agents.index(agent)
        legal = state.legal_actions()
        assert legal == np.flatnonzero(env.observe(agent)["action_mask"]).tolist()
        action = legal[rng.integers(len(legal))]
        state.apply_action(action)
        env.step(action)
        steps += 1
    assert all(env.terminations.values()) or all(env.truncations.values())
    assert state.returns() == [env.rewards[a] for a in env.possible_agents]
    assert abs(sum(state.returns())) < 1e-12
    assert steps <= state.get_game().max_game_length()
    return steps


@pytest.mark.parametrize(("players", "rules"), CONFIGS)
def test_equivalence_with_the_aec_env(players, rules):
    for seed in range(3 + (players == 2)):  # 20 deals in all
        assert play_both(players, rules, seed) > 0


@pytest.mark.slow
@pytest.mark.parametrize(("players", "rules"), CONFIGS)
def test_equivalence_with_the_aec_env_on_1000_deals(players, rules):
    for seed in range(1000 // len(CONFIGS) + (players == 2 and rules == "treppenromme") * (1000 % len(CONFIGS))):
        play_both(players, rules, 1000 + seed)


def random_deal(players: int, rules: str, seed: int) -> tuple[list[int], list[int]]:
    """A seeded deck and the random legal actions of one deal of it."""
    rng = np.random.default_rng(seed)
    deck = rng.permutation(52).tolist()
    state = dealt(load(players, rules), deck)
    actions = []
    while not state.is_terminal():
        legal = state.legal_actions()
        actions.append(legal[rng.integers(len(legal))])
        state.apply_action(actions[-1])
    return deck, actions


def same_state(a, b) -> None:
    assert str(a) == str(b)
    assert a.history() == b.history()
    assert a.current_player() == b.current_player()
    assert a.is_terminal() == b.is_terminal()
    assert a.returns() == b.returns()
    if not a.is_chance_node() and not a.is_terminal():
        assert a.legal_actions() == b.legal_actions()
    for player in range(a.num_players()):
        assert a.information_state_string(player) == b.information_state_string(player)
        for x, y in zip(tensors(a, player), tensors(b, player), strict=True):
            assert np.array_equal(x, y)


@pytest.mark.parametrize("rules", PRESETS)
def test_every_state_serializes_and_plays_on_identically(rules):
    deck, actions = random_deal(3, rules, seed=7)
    game = load(3, rules)
    state = game.new_initial_state()
    for step, action in enumerate([*deck, *actions]):
        _, copy = pyspiel.deserialize_game_and_state(pyspiel.serialize_game_and_state(game, state))
        same_state(state, copy)
        if step % 100 == 60:  # from here on, a copy plays the rest of the deal as the original does
            _, other = pyspiel.deserialize_game_and_state(pyspiel.serialize_game_and_state(game, state))
            for later in [*deck, *actions][step:]:
                other.apply_action(later)
            assert other.is_terminal()
            assert other.history() == [*deck, *actions]
            assert other.returns() == load_played(game, deck, actions).returns()
        state.apply_action(action)
        copy.apply_action(action)
        same_state(state, copy)


def load_played(game, deck: list[int], actions: list[int]):
    state = dealt(game, deck)
    for action in actions:
        state.apply_action(action)
    return state


def hidden_swap(deck: list[int], actions: list[int], players: int, rules: str) -> tuple[int, list[int]] | None:
    """An observer and a deck that differs from ``deck`` only in two cards it never sees while
    ``actions`` are played: a card the next seat was dealt and held unseen throughout, swapped with
    one still in the stock or that seat drew later and held unseen. None when there is no such pair."""
    game = load(players, rules)
    end = load_played(game, deck, actions).engine
    dealt = players * game.rules.cards_dealt(players)
    for observer in range(players):
        other = (observer + 1) % players
        unseen = [c for c in range(52) if (end.hands[other] & ~end.known[other]) >> c & 1]
        xs = [c for c in unseen if deck.index(c) < dealt]
        ys = [*end.stock, *(c for c in unseen if deck.index(c) > dealt)]
        if xs and ys:
            swapped = list(deck)
            i, j = deck.index(xs[0]), deck.index(ys[0])
            swapped[i], swapped[j] = ys[0], xs[0]
            return observer, swapped
    return None


@pytest.mark.parametrize("rules", PRESETS)
def test_no_peeking_at_cards_the_player_cannot_see(rules):
    """Until the deal ends: then the hands are scored, which shows their values (RULES §6)."""
    players, checked = 2, 0
    for seed in range(10):
        deck, actions = random_deal(players, rules, seed)
        actions = actions[: min(60, len(actions) - 1)]  # the deal's first moves, not its end
        found = hidden_swap(deck, actions, players, rules)
        if found is None:
            continue
        observer, other_deck = found
        other = (observer + 1) % players
        game = load(players, rules)
        a, b = game.new_initial_state(), game.new_initial_state()
        other_saw_it = False
        for action_a, action_b in zip([*deck, *actions], [*other_deck, *actions], strict=True):
            a.apply_action(action_a)
            b.apply_action(action_b)
            assert a.information_state_string(observer) == b.information_state_string(observer)
            assert a.observation_string(observer) == b.observation_string(observer)
            for x, y in zip(tensors(a, observer), tensors(b, observer), strict=True):
                assert np.array_equal(x, y)
            other_saw_it |= not np.array_equal(tensors(a, other)[1], tensors(b, other)[1])
        assert other_saw_it  # the swapped cards were in a hand: its holder's view differs
        checked += 1
    assert checked >= 5


@pytest.mark.parametrize(
    ("obs_type", "pieces"),
    [
        (dict(perfect_recall=False), ["hand", "staircase", "turn"]),
        (dict(perfect_recall=True), ["hand", "staircase", "turn", "moves"]),
        (dict(perfect_recall=False, private_info=pyspiel.PrivateInfoType.NONE), ["staircase", "turn"]),
        (dict(perfect_recall=False, private_info=pyspiel.PrivateInfoType.ALL_PLAYERS), ["hands", "staircase"]),
        (dict(perfect_recall=False, public_info=False), ["hand"]),
    ],
)
def test_an_observer_per_observation_type(obs_type, pieces):
    game = load(3, "treppenromme")
    observer = game.make_py_observer(pyspiel.IIGObservationType(**obs_type))
    assert set(pieces) <= set(observer.dict) and len(observer.dict) == len(set(observer.dict))
    deck, actions = random_deal(3, "treppenromme", seed=1)
    state = load_played(game, deck, actions[:10])
    observer.set_from(state, 1)
    engine = state.engine
    if "hands" in observer.dict:
        for k in range(3):  # relative seats: row k is seat 1 + k
            cards = [c for c in range(52) if engine.hands[(1 + k) % 3] >> c & 1]
            assert np.flatnonzero(observer.dict["hands"][k]).tolist() == cards
        assert observer.dict["hands"][3].sum() == 0
    if "hand" in observer.dict:
        assert np.flatnonzero(observer.dict["hand"]).tolist() == [c for c in range(52) if engine.hands[1] >> c & 1]
    if "moves" in observer.dict:
        assert np.rint(observer.dict["moves"][:11] * 898).astype(int).tolist() == [a + 1 for a in actions[:10]] + [0]
    text = observer.string_from(state, 1)
    assert text.startswith("p1 | hand " if "hand" in observer.dict else "p1 | ")
    assert ("moves " in text) == ("moves" in observer.dict)
