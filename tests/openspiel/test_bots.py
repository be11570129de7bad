"""Bots both ways (treppen.openspiel.bots, docs/guide/openspiel.md): a treppen agent plays in
OpenSpiel's evaluate_bots, OpenSpiel's IS-MCTS plays a duplicate tournament of ours."""

from __future__ import annotations

import numpy as np
import pytest

pyspiel = pytest.importorskip("pyspiel")

from open_spiel.python.algorithms.evaluate_bots import evaluate_bots  # noqa: E402

from treppen import agents  # noqa: E402
from treppen.agents import GreedyAgent  # noqa: E402
from treppen.arena.tournament import run_tournament  # noqa: E402
from treppen.openspiel import GAME_NAME, bot  # noqa: E402
from treppen_env.aec import deal_rewards, raw_env  # noqa: E402
from treppen_env.observation import encode  # noqa: E402
from treppen_env.rules import make_rules  # noqa: E402


def bot_deal(seed: int):
    game = pyspiel.load_game(GAME_NAME, {"players": 2, "rules": "rum500"})
    state = game.new_initial_state()
    returns = evaluate_bots(state, [bot("greedy", seed=0), bot("random", seed=1)], np.random.RandomState(seed))
    return game, state, returns


def test_a_treppen_agent_plays_a_whole_deal_in_evaluate_bots():
    game, state, returns = bot_deal(seed=5)
    assert state.is_terminal()
    assert returns == deal_rewards(state.engine.deal_points) and abs(sum(returns)) < 1e-12
    _, again, returns_again = bot_deal(seed=5)
    assert again.history() == state.history() and returns_again == returns
    # seat 0 played greedy's moves, from the observations the AEC env gives it
    greedy, replay, checked = GreedyAgent(rules=game.rules), game.new_initial_state(), 0
    for action in state.history():
        if replay.current_player() == 0:
            engine = replay.engine
            mask = engine.legal_mask().copy()
            assert greedy.act({"observation": encode(engine, 0), "action_mask": mask}) == action
            checked += 1
        replay.apply_action(action)
    assert checked > 5


def test_a_bad_agent_spec_is_refused_at_once():
    with pytest.raises(ValueError, match="did you mean greedy"):
        bot("grredy")


def test_an_openspiel_bot_plays_a_duplicate_tournament():
    spec = "openspiel,bot=ismcts,simulations=8,evaluator=kernel"
    records = run_tournament({"ismcts": spec, "greedy": "greedy"}, players=2, decks=1, seed=3, rules="rum500")
    assert len(records) == 2 and [r["deck_id"] for r in records] == [0, 0]
    assert sorted(tuple(r["agents"]) for r in records) == [("greedy", "ismcts"), ("ismcts", "greedy")]
    for record in records:
        stats = record["agent_stats"]["ismcts"]
        assert 0 < stats["simulations"] <= 8 * stats["decisions"] and stats["simulations"] % 8 == 0
        assert sum(record["points"]) != 0 or record["outcome"] != "went_out"


def one_decision(spec: str) -> tuple[int, dict, dict]:
    env = raw_env(num_players=3, rules="treppenromme")
    env.reset(seed=11)
    observation = env.observe(env.agent_selection)
    agent = agents.load(spec, seed=2, rules="treppenromme")
    return agent.act(observation), observation, agent.deal_stats()


@pytest.mark.parametrize(
    ("spec", "simulations"),
    [
        ("openspiel,bot=ismcts,simulations=3", 3),  # OpenSpiel's own random rollouts, in Python
        ("openspiel,bot=ismcts,seconds=0.02,evaluator=kernel", None),
        ("openspiel,bot=random", None),
    ],
)
def test_one_decision_is_legal(spec, simulations):
    action, observation, stats = one_decision(spec)
    assert observation["action_mask"][action] == 1
    if "random" in spec.split(",")[1]:
        assert stats is None
    elif simulations is not None:
        assert stats == {"decisions": 1, "simulations": simulations}
    else:
        assert stats["decisions"] == 1 and stats["simulations"] >= 1


def test_a_decision_repeats_with_its_seed():
    assert (
        one_decision("openspiel,simulations=20,evaluator=kernel")[0]
        == one_decision("openspiel,simulations=20,evaluator=kernel")[0]
    )


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("openspiel,bot=mcts", "openspiel: bot='mcts'; choose one of ['ismcts', 'random']"),
        ("openspiel,evaluator=x", "openspiel: evaluator='x'; choose one of ['random', 'kernel']"),
        ("openspiel,simulations=1", "openspiel: simulations=1 must be a whole number of at least 2"),
        ("openspiel,rollouts=2.5", "openspiel: rollouts=2.5 must be a whole number of at least 1"),
        ("openspiel,simulations=5,seconds=1", "openspiel: give simulations or seconds per decision, not both"),
        ("openspiel,seconds=-1", "openspiel: seconds=-1 must be in (0, 600] CPU seconds per decision"),
        ("openspiel,uct_c=none", "agent 'openspiel': setting uct_c=None must be float"),
        ("openspiel,bot=random,rollouts=3", "openspiel: bot=random takes no search settings"),
        ("openspiel,foo=1", "agent 'openspiel' has no setting 'foo'; allowed: bot='ismcts', simulations=None"),
    ],
)
def test_bad_settings_are_named(spec, message):
    with pytest.raises(ValueError) as err:
        agents.load(spec)
    assert str(err.value).startswith(message)


def test_rules_options_are_refused():
    with pytest.raises(ValueError, match=r"rules options \{'max_turns': 50\} are not supported"):
        agents.load("openspiel", rules=make_rules("treppenromme", max_turns=50))


def test_resampling_keeps_the_information_state_and_deals_the_rest_afresh():
    game = pyspiel.load_game(GAME_NAME, {"players": 3, "rules": "treppenromme"})
    state = game.new_initial_state()
    rng = np.random.default_rng(4)
    while state.is_chance_node() or len(state.history()) < 52 + 30:
        legal = [a for a, _ in state.chance_outcomes()] if state.is_chance_node() else state.legal_actions()
        state.apply_action(legal[rng.integers(len(legal))])
    player = state.current_player()
    hands = set()
    for seed in range(5):
        sample = state.resample_from_infostate(player, lambda seed=seed: seed / 10)
        assert sample.information_state_string(player) == state.information_state_string(player)
        assert sample.information_state_tensor(player) == state.information_state_tensor(player)
        assert sample.legal_actions() == state.legal_actions()
        hands.add(tuple(sample.engine.hands[s] for s in range(3)))
    assert len(hands) == 5  # the unseen cards are dealt afresh each time
