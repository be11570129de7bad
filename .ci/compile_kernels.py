"""Compile every Numba kernel once, in one process, before the tests run.

The kernels are cached on disk (``cache=True``); without this step each pytest worker and each
process a test starts would compile the ones it meets first, side by side. Plays one seeded deal
of each preset through the env with greedy and random seats (mask, step, observation, the
greedy heuristic from observations) and one with the planner as an agent and as a search's
playouts, then playouts, a redeal and a random playout from a state, both search agents'
kernels (one IS-MCTS kernel, with or without a prior), the heuristic action features (from
observations and from a state), the batched env's step, a search with beliefs (and its card
beliefs), one with learned beliefs and the belief net's training positions, a search with an
action net in its playouts and as its prior and a zoo policy's action (its features of a batch
of one). Fails naming any kernel of treppen_env.core or
treppen_env.agent_core that none of these reached.
"""

from __future__ import annotations

import importlib
import pkgutil
import tempfile
import time
from pathlib import Path

import numpy as np
from numba.core.dispatcher import Dispatcher

import treppen_env
from treppen import agents
from treppen.agents import GreedyAgent, ISMCTSAgent, PlannerAgent, RandomAgent, RolloutAgent
from treppen.agents.action_net import feature_context, legal_rows, num_features
from treppen.agents.heuristic_features import heuristic_features
from treppen.arena.match import play_match
from treppen.train.belief_net_torch import record
from treppen_env import raw_env
from treppen_env.agent_core import action_net_kernels, feature_kernels, greedy_kernels, playout_kernels
from treppen_env.agent_hooks import heuristic_inputs, random_playout, redeal
from treppen_env.core.tables import rules_table
from treppen_env.engine import GameState
from treppen_env.rules import make_rules

start = time.process_time()
for preset in ("treppenromme", "rum500"):
    play_match(raw_env(num_players=3, rules=preset), [GreedyAgent(rules=preset), GreedyAgent(), RandomAgent()], seed=0)
    searchers = [RolloutAgent(rules=preset, playouts=8), ISMCTSAgent(rules=preset, playouts=8), GreedyAgent()]
    play_match(raw_env(num_players=3, rules=preset), searchers, seed=0)
    planners = [PlannerAgent(rules=preset), RolloutAgent(rules=preset, playouts=8, playout="planner")]
    play_match(raw_env(num_players=2, rules=preset), planners, seed=0)
    env = raw_env(num_players=2, rules=preset)
    env.reset(seed=0)
    observation = env.observe(env.agent_selection)
    heuristic_features(observation["observation"], observation["action_mask"], preset)
    state = GameState(make_rules(preset), 2, np.random.default_rng(0))
    state.deal(0)
    table, mask = rules_table(state.rules), state.legal_mask().astype(np.int8)
    out = np.zeros((mask.size, feature_kernels.NUM_FEATURES), dtype=np.float32)
    feature_kernels.action_features(
        heuristic_inputs(state, 0), mask, table, greedy_kernels.settings_row(), greedy_kernels.workspace(), out
    )
    playout_kernels.play_out(state, "greedy", count=2, observer=0)
    redeal(state.clone(), 0, seed=1)
    random_playout(state, seed=1)
    vec = treppen_env.vector_env(4, 3, preset, opponents=["greedy", "random"])
    vec.reset(seed=0)
    vec.step(vec.sample_actions())
    believer = RolloutAgent(rules=preset, playouts=8, beliefs="greedy")
    play_match(raw_env(num_players=2, rules=preset), [believer, GreedyAgent(rules=preset)], seed=0)
    believer.card_beliefs(observation, samples=2)
    if preset == "treppenromme":  # learned beliefs (2 players, treppenromme): the zoo's net, its training positions
        learned = RolloutAgent(rules=preset, playouts=8, beliefs="net")
        play_match(raw_env(num_players=2, rules=preset), [learned, GreedyAgent(rules=preset)], seed=0)
        record(20, seed=0)
    agents.load("ppo-2p" if preset == "treppenromme" else "ppo-rum500-2p", seed=0).act(observation)
    # the batched learner's kernels: legal rows, a (zero) net drawing from them, the observation's entries
    obs, masks = observation["observation"][None], observation["action_mask"][None]
    rows = legal_rows(obs, masks, feature_context(preset), "heuristic")
    shape = np.array([obs.shape[1], 4, num_features("heuristic"), 4], dtype=np.int64)
    weights = np.zeros((1, action_net_kernels.layout(*shape)["size"][0]), dtype=np.float32)
    picked = np.zeros(1, dtype=np.int64)
    action_net_kernels.net_moves(
        action_net_kernels.NetStack(weights=weights, shape=shape),
        obs,
        rows,
        picked,
        picked,
        np.ones(1, np.uint64),
        picked,
    )
    action_net_kernels.nonzero_entries(obs)
    # the search with that (zero) net in its playouts and as its prior
    with tempfile.TemporaryDirectory() as folder:
        net = Path(folder) / "final_model.npz"
        np.savez(net, w=weights[0], shape=shape, features=np.array("heuristic"))
        netted = RolloutAgent(rules=preset, playouts=8, net=str(net), playout="net", prior_k=2)
        play_match(raw_env(num_players=2, rules=preset), [netted, GreedyAgent(rules=preset)], seed=0)
print(f"kernels compiled (or loaded from the cache) in {time.process_time() - start:.1f} CPU s")

modules = [
    importlib.import_module(f"{package.__name__}.{info.name}")
    for package in (treppen_env.core, treppen_env.agent_core)
    for info in pkgutil.iter_modules(package.__path__)
]
kernels = [d for m in modules for d in vars(m).values() if isinstance(d, Dispatcher) and d.__module__ == m.__name__]
missed = [f"{k.__module__}.{k.__name__}" for k in kernels if not k.signatures]
if any(sum(k.stats.cache_hits.values()) for k in kernels):
    # a kernel loaded from the cache holds its callees' code: they get no signature of their own
    print("kernels loaded from the cache: which ones this script reaches is checked on a fresh cache")
elif missed:
    raise SystemExit(f"{len(missed)} of {len(kernels)} kernels were not compiled: {', '.join(missed)}")
else:
    print(f"all {len(kernels)} kernels of treppen_env.core and treppen_env.agent_core compiled")
