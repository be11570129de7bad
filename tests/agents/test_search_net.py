"""The search with a learned action net (agents/search_net.py, treppen_env/agent_core/playout_kernels.py): the
net in the playouts equals torch on saved weights, a seeded search with it is deterministic and
independent of the hidden cards, and its prior keeps the moves it finds most probable."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from tests.agents.test_search import discard_position, observe
from tests.env_helpers import swap_hidden
from treppen import agents
from treppen.agents import GreedyAgent, ISMCTSAgent, RolloutAgent
from treppen.agents.action_net import ActionNetAgent, feature_context, legal_rows
from treppen.agents.search_net import SearchNet, likely_moves
from treppen.agents.search_settings import RolloutSettings
from treppen.train.expert.policy_value_torch import KernelNet
from treppen.train.kernel.action_net_torch import ActionNet
from treppen_env.agent_core import greedy_kernels, playout_kernels
from treppen_env.engine import GameState
from treppen_env.observation import encode
from treppen_env.rules import make_rules


@pytest.fixture(scope="module")
def net_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small action net with spread logits (its weights twice their initial size), leaning to
    the heuristic's move."""
    torch.manual_seed(4)
    net = ActionNet(32, 16, "heuristic", pick_init=1.0)
    with torch.no_grad():
        for p in net.parameters():
            p.mul_(2.0)
    return net.save(tmp_path_factory.mktemp("net") / "final_model.npz")


def deal_states(preset: str, players: int, seed: int) -> list[GameState]:
    """Every position of a seeded greedy deal, in order (copies)."""
    rules = make_rules(preset)
    state = GameState(rules, players, np.random.default_rng(seed))
    state.deal(0)
    greedy, out = GreedyAgent(rules=rules), []
    while not state.deal_over:
        out.append(state.clone())
        state.apply(greedy.act(observe(state)))
    return out


@pytest.mark.parametrize(("preset", "players"), [("treppenromme", 2), ("rum500", 3)])
def test_the_net_in_the_playouts_equals_torch_on_saved_weights(net_file: Path, preset: str, players: int) -> None:
    """At every position of a deal the playout kernel writes the mover's observation, lists its
    legal moves and scores them as torch does (logits within 1e-5); the prior's probabilities are
    torch's softmax (within 1e-6); an argmax seat plays torch's most probable move."""
    rules = make_rules(preset)
    net = ActionNet.load(net_file)
    search_net = SearchNet(net_file, rules)
    work = search_net.scratch(RolloutSettings(net=str(net_file), net_pick="argmax"))
    ctx = feature_context(rules)
    settings, rng = greedy_kernels.settings_row(), np.zeros(1, dtype=np.uint64)
    positions = deal_states(preset, players, 2)
    for state in positions:
        pos = state.arrays().copy()
        playout_kernels.start(pos.u64, pos.i8, pos.i64, state.tables.tab, state.tables.meld_bits, work)
        n = playout_kernels.action_net_logits(pos, state.tables.tab, settings, work)
        obs = encode(state, state.current)[None]
        np.testing.assert_array_equal(work.net.obs, obs[0])
        rows = legal_rows(obs, state.legal_mask()[None].astype(np.int8), ctx, "heuristic")
        np.testing.assert_array_equal(work.net.rows.acts[:n], rows.acts)
        with torch.no_grad():
            logits, _ = net(torch.from_numpy(obs), torch.from_numpy(rows.feats), torch.from_numpy(rows.counts))
        np.testing.assert_allclose(work.net.logits[:n], logits[0].numpy(), atol=1e-5, rtol=0)
        probs = search_net.probabilities(observe(state))
        np.testing.assert_allclose(probs[rows.acts], torch.softmax(logits[0], 0).numpy(), atol=1e-6, rtol=0)
        assert probs.sum() == pytest.approx(1.0, abs=1e-9)
        best = int(rows.acts[int(logits[0].argmax())])
        assert playout_kernels.net_choice(pos, state.tables.tab, settings, rng, work) == best
    assert len(positions) > 30


def test_sampling_net_seats_draw_from_the_softmax(net_file: Path) -> None:
    """A sampling net seat's moves at one position follow the net's probabilities."""
    state = discard_position()
    pos = state.arrays().copy()
    search_net = SearchNet(net_file, state.rules)
    work = search_net.scratch(RolloutSettings(net=str(net_file)))
    playout_kernels.start(pos.u64, pos.i8, pos.i64, state.tables.tab, state.tables.meld_bits, work)
    rng = np.full(1, 3, dtype=np.uint64)
    draws = [
        playout_kernels.net_choice(pos, state.tables.tab, greedy_kernels.settings_row(), rng, work) for _ in range(4000)
    ]
    probs = search_net.probabilities(observe(state))
    counts = np.bincount(draws, minlength=probs.size) / len(draws)
    assert set(np.flatnonzero(counts)) <= set(np.flatnonzero(probs))
    np.testing.assert_allclose(counts, probs, atol=0.03)
    assert probs.max() < 0.9  # not one move only: the test can tell sampling from argmax


def searchers(net: Path) -> dict[str, object]:
    """Search agents that play with the net, by name (each made with a seed)."""
    return {
        "rollout-net": lambda seed: RolloutAgent(seed=seed, playouts=24, net=str(net), playout="net"),
        "rollout-own-argmax": lambda seed: RolloutAgent(
            seed=seed, playouts=24, net=str(net), own_playout="net", net_pick="argmax"
        ),
        "rollout-prior": lambda seed: RolloutAgent(seed=seed, playouts=24, net=str(net), playout="net", prior_k=3),
        "ismcts-net": lambda seed: ISMCTSAgent(seed=seed, playouts=24, net=str(net), playout="net"),
    }


@pytest.mark.parametrize("name", ["rollout-net", "rollout-own-argmax", "rollout-prior", "ismcts-net"])
def test_a_search_with_the_net_never_peeks_and_repeats_with_its_seed(net_file: Path, name: str) -> None:
    """Positions that look the same to the searcher but hide different cards: the same action,
    from the same seed; the same agent reseeded repeats its action."""
    make = searchers(net_file)[name]
    state = discard_position()
    rng = np.random.default_rng(0)
    for trial in range(3):
        other = swap_hidden(state, state.current, rng)
        assert other.hands != state.hands
        first, second = make(trial), make(trial)
        action = first.act(observe(state))
        assert second.act(observe(other)) == action
        assert first.simulations == 24
        first.reset(seed=trial)
        assert first.act(observe(state)) == action


def test_the_searched_deal_with_net_playouts_is_the_recorded_one(net_file: Path) -> None:
    """A whole seeded deal of the search with net playouts against greedy: legal moves, and the
    same deal on every run (its length and points)."""
    results = []
    for _ in range(2):
        state = GameState(make_rules("treppenromme"), 2, np.random.default_rng(7))
        state.deal(0)
        seats = [RolloutAgent(seed=1, playouts=6, net=str(net_file), playout="net"), GreedyAgent()]
        moves = 0
        while not state.deal_over:
            state.apply(seats[state.current].act(observe(state)))
            moves += 1
        results.append((moves, state.deal_points))
    assert results[0] == results[1]


def test_the_prior_keeps_the_most_probable_moves_and_greedys() -> None:
    choices = np.array([10, 11, 12, 13, 14])
    probs = np.zeros(898)
    probs[choices] = [0.05, 0.4, 0.3, 0.15, 0.1]
    assert likely_moves(choices, probs, 2, 1.0).tolist() == [10, 11, 12]
    assert likely_moves(choices, probs, 0, 0.6).tolist() == [10, 11, 12]
    assert likely_moves(choices, probs, 0, 0.4).tolist() == [10, 11]
    assert likely_moves(choices, probs, 0, 0.75).tolist() == [10, 11, 12, 13]
    assert likely_moves(choices, probs, 1, 0.75).tolist() == [10, 11]
    assert likely_moves(choices, probs, 0, 1.0).tolist() == choices.tolist()
    assert likely_moves(choices, probs, 9, 1.0).tolist() == choices.tolist()


def test_the_prior_limits_the_searched_moves(net_file: Path) -> None:
    obs = observe(discard_position())
    probs = ActionNetAgent(net_file).action_probabilities(obs)
    full = RolloutAgent(seed=0, playouts=40).analyse(obs)
    limited = RolloutAgent(seed=0, playouts=40, net=str(net_file), prior_k=2).analyse(obs)
    greedy = next(e.action for e in full if e.greedy)
    top = sorted((e.action for e in full), key=lambda a: -probs[a])[:2]
    assert {e.action for e in limited} == {greedy, *top}
    assert len(full) > 4 and sum(e.playouts for e in limited) == 40


def test_the_action_nets_probabilities_are_its_softmax_over_the_legal_moves(net_file: Path) -> None:
    agent = ActionNetAgent(net_file)
    for state in deal_states("treppenromme", 2, 3)[::5]:
        obs = observe(state)
        probs = agent.action_probabilities(obs)
        assert probs.sum() == pytest.approx(1.0) and (probs[obs["action_mask"] == 0] == 0).all()
        assert int(np.argmax(probs)) == agent.act(obs)
    assert isinstance(agents.load(f"ismcts,playouts=4,prior={net_file}").settings.prior, ActionNetAgent)


def test_net_settings_that_cannot_work_are_clear_errors(net_file: Path, tmp_path: Path) -> None:
    small = KernelNet(8).save(tmp_path / "small.npz")
    with pytest.raises(ValueError, match="prior_k and prior_mass take the net's probabilities: give net="):
        agents.load("rollout,prior_k=3")
    with pytest.raises(ValueError, match=r"prior_mass=1.5 must be in \(0, 1\]"):
        agents.load(f"rollout,net={net_file},prior_mass=1.5")
    with pytest.raises(ValueError, match="prior_k and prior_mass needs an action net's probabilities"):
        agents.load(f"rollout,net={small},prior_k=3")
    with pytest.raises(ValueError, match="value_turns=4 needs the small net's value head"):
        agents.load(f"rollout,net={net_file},value_turns=4")
    with pytest.raises(ValueError, match=r"net_pick='best'; choose one of \['sample', 'argmax'\]"):
        agents.load(f"rollout,net={net_file},net_pick=best")
    with pytest.raises(FileNotFoundError, match="no network at"):
        agents.load(f"rollout,net={tmp_path / 'none.npz'},playout=net")
