"""The self-play opponent pool: policy snapshots as NumPy weights, and the env that plays them.

A snapshot is the learner's policy MLP (hidden layers + action head) saved as a small ``.npz``
file. Opponents play snapshots with :class:`NumpyPolicy`, a NumPy forward pass (masked argmax, or
a sample from the masked softmax), so the env workers never run torch in their hot path
(docs/ARCHITECTURE.md "Training notes": a frozen torch policy's forward on one observation costs more than an env step).

:class:`SelfPlayEnv` is :class:`treppen_env.SingleAgentEnv` whose opponent seats are
:class:`PoolOpponent` objects: at every episode start each seat draws who plays it, random,
greedy or one of the snapshots, with the configured probabilities. The trainer refreshes the
snapshot list in every worker with ``vec_env.env_method("set_pool", paths)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from treppen.agents.base import Agent, RandomAgent
from treppen.agents.snapshot import NumpyPolicy, SnapshotAgent
from treppen.train.common.config import OPPONENT_KINDS
from treppen.train.common.pool_agents import make_agent
from treppen_env.files import atomic_write
from treppen_env.rules import Rules, make_rules
from treppen_env.single_agent import SingleAgentEnv

_ACTIVATIONS = {"Tanh": "tanh", "ReLU": "relu"}


# --------------------------------------------------------------------------- snapshots


def policy_weights(policy: Any) -> tuple[list[tuple[np.ndarray, np.ndarray]], str]:
    """The (weight, bias) pairs of a MaskablePPO ``MlpPolicy``'s action path and its activation.

    The action path is ``mlp_extractor.policy_net`` (Linear, activation, ...) then ``action_net``;
    the features extractor must be a plain flatten (the default for a 1-D Box observation).

    :raises ValueError: for a policy of another shape (e.g. a custom features extractor).
    """
    import torch.nn as nn
    from stable_baselines3.common.torch_layers import FlattenExtractor

    if not isinstance(policy.pi_features_extractor, FlattenExtractor):
        raise ValueError(f"snapshots need a FlattenExtractor, got {type(policy.pi_features_extractor).__name__}")
    layers = [*policy.mlp_extractor.policy_net, policy.action_net]
    linears = [m for m in layers if isinstance(m, nn.Linear)]
    acts = {type(m).__name__ for m in layers if not isinstance(m, nn.Linear)}
    if not acts <= set(_ACTIVATIONS) or len(acts) > 1:
        raise ValueError(f"snapshots support one activation of {sorted(_ACTIVATIONS)}, got {sorted(acts)}")
    activation = _ACTIVATIONS[acts.pop()] if acts else "tanh"
    weights = [
        (m.weight.detach().cpu().numpy().astype(np.float32), m.bias.detach().cpu().numpy().astype(np.float32))
        for m in linears
    ]
    return weights, activation


def save_snapshot(policy: Any, path: str | Path, steps: int = 0) -> Path:
    """Save the action path of ``policy`` as a ``.npz`` file (atomically).

    :param policy: a MaskablePPO ``MlpPolicy`` or :class:`treppen.train.sb3.policy_net.ActionFeaturePolicy`
        (``model.policy``).
    :param path: the target file, ending in ``.npz``.
    :param steps: training steps at the time of the snapshot (stored alongside).
    :return: the path written.
    """
    from treppen.train.sb3.policy_net import ActionFeaturePolicy

    arrays: dict[str, Any]
    if isinstance(policy, ActionFeaturePolicy):
        arrays = {k: v.detach().cpu().numpy() for k, v in policy.net.state_dict().items()}
        arrays |= {"kind": np.array("action_features"), "steps": np.array(steps)}
    else:
        weights, activation = policy_weights(policy)
        arrays = {f"w{i}": w for i, (w, _) in enumerate(weights)}
        arrays |= {f"b{i}": b for i, (_, b) in enumerate(weights)}
        arrays |= {"activation": np.array(activation), "steps": np.array(steps), "layers": np.array(len(weights))}
    return atomic_write(path, lambda tmp: np.savez(tmp, **arrays), suffix=".npz")


# --------------------------------------------------------------------------- the pool


class OpponentPool:
    """Who may sit at an opponent seat: probabilities per kind and the loaded snapshots.

    :param probs: probability of ``"random"``, ``"greedy"``, ``"snapshot"`` (one of the recent
        snapshots), ``"best"`` (the keep-best model, :mod:`treppen.train.common.keep_best`) and ``"agent"`` (one of
        ``specs``), normalised; while there is no snapshot or no best, its share goes to the
        others in proportion.
    :param deterministic: snapshots play their argmax action.
    :param specs: agent specs (``agents.load``) of the ``"agent"`` kind.
    :raises ValueError: for an unknown kind, a negative weight, no weight on random and greedy, or
        weight on ``"agent"`` without specs.
    """

    def __init__(self, probs: dict[str, float], deterministic: bool = False, specs: Sequence[str] = ()):
        unknown = sorted(set(probs) - set(OPPONENT_KINDS))
        if unknown:
            raise ValueError(f"unknown opponent kind(s) {unknown}; choose from {list(OPPONENT_KINDS)}")
        self.probs = np.array([float(probs.get(k, 0.0)) for k in OPPONENT_KINDS])
        if (self.probs < 0).any() or self.probs[:2].sum() <= 0:
            raise ValueError(
                f"opponent probabilities {probs} must be >= 0, with random or greedy above 0 "
                "(the pool starts without snapshots)"
            )
        if self.probs[4] > 0 and not specs:
            raise ValueError(f"opponent probabilities {probs} give 'agent' weight but no agent specs are named")
        self.deterministic = deterministic
        self.specs = tuple(specs)
        self.snapshots: dict[str, NumpyPolicy] = {}
        self.best: NumpyPolicy | None = None

    def set_snapshots(self, paths: Sequence[str | Path]) -> None:
        """Keep exactly the snapshots at ``paths``, loading new ones and dropping the others."""
        keep = {str(p): self.snapshots.get(str(p)) for p in paths}
        self.snapshots = {p: policy or NumpyPolicy.load(p) for p, policy in keep.items()}

    def set_best(self, path: str | Path) -> None:
        """Load the keep-best snapshot (again: its file is replaced at every promotion)."""
        self.best = NumpyPolicy.load(path)

    def draw(self, rng: np.random.Generator) -> tuple[str, NumpyPolicy | int | None]:
        """Draw a kind and, for ``"snapshot"``, one of the snapshots uniformly (``"best"``: the best
        snapshot; ``"agent"``: the index of one of the specs, uniformly)."""
        probs = self.probs.copy()
        probs[2] *= bool(self.snapshots)
        probs[3] *= self.best is not None
        kind = OPPONENT_KINDS[int(rng.choice(len(OPPONENT_KINDS), p=probs / probs.sum()))]
        if kind == "snapshot":
            policies = list(self.snapshots.values())
            return kind, policies[int(rng.integers(len(policies)))]
        if kind == "best":
            return kind, self.best
        if kind == "agent":
            return kind, int(rng.integers(len(self.specs)))
        return kind, None


class PoolOpponent(Agent):
    """One opponent seat; at every episode start (``reset``) it draws who plays it from the pool.

    :param pool: the shared pool.
    :param seed: seeds this seat's generator (draws and the agents' own choices).
    :param use_greedy: build a GreedyAgent (only when the pool can draw greedy).
    :param rules: the game's rules (for the greedy agent).
    """

    name = "pool"

    def __init__(
        self, pool: OpponentPool, seed: int | None = None, use_greedy: bool = True, rules: Rules | None = None
    ):
        super().__init__(seed)
        self.pool = pool
        self.agents: dict[str, Agent] = {"random": RandomAgent(seed=seed)}
        if use_greedy:
            self.agents["greedy"] = make_agent("greedy", seed=seed, rules=rules)
        self.named = [make_agent(spec, seed=seed) for spec in pool.specs]
        self.kind = "random"
        self.current: Agent = self.agents["random"]

    def reset(self, seed: int | None = None) -> None:
        super().reset(seed)
        for agent in (*self.agents.values(), *self.named):
            agent.reset(seed)
        self.kind, policy = self.pool.draw(self.rng)
        if policy is None:
            self.current = self.agents[self.kind]
        elif isinstance(policy, int):
            self.current = self.named[policy]
        else:
            self.current = SnapshotAgent(policy, self.pool.deterministic)
            self.current.rng = self.rng  # samples from this seat's generator

    def act(self, observation: dict[str, Any]) -> int:
        return self.current.act(observation)


class SelfPlayEnv(SingleAgentEnv):
    """:class:`SingleAgentEnv` with pool opponents at every other seat and a random learner seat.

    ``info["opponents"]`` at the end of an episode lists the kinds that played it.

    :param num_players: 2 to 4.
    :param rules: the rules (a :class:`~treppen_env.rules.Rules` object, or a preset name).
    :param probs: probabilities of the opponent kinds (see :class:`OpponentPool`).
    :param deterministic: snapshots play their argmax action.
    :param seed: seeds the opponent seats (the deals are seeded through ``reset``).
    :param specs: agent specs of the ``"agent"`` kind.
    """

    def __init__(
        self,
        num_players: int = 2,
        rules: Rules | str = "treppenromme",
        probs: dict[str, float] | None = None,
        deterministic: bool = False,
        seed: int | None = None,
        specs: Sequence[str] = (),
    ):
        probs = probs or {"random": 1.0}
        self.pool = OpponentPool(probs, deterministic, specs)
        seeds = np.random.SeedSequence(seed).spawn(num_players - 1)
        use_greedy = probs.get("greedy", 0.0) > 0
        rules = make_rules(rules)
        opponents = [PoolOpponent(self.pool, int(s.generate_state(1)[0]), use_greedy, rules) for s in seeds]
        super().__init__(opponents, num_players=num_players, rules=rules, seat="random")

    def set_pool(self, paths: Sequence[str]) -> int:
        """Replace the snapshots the opponents may draw; returns how many are loaded."""
        self.pool.set_snapshots(paths)
        return len(self.pool.snapshots)

    def set_best(self, path: str) -> bool:
        """Load the keep-best snapshot the opponents may draw as ``"best"``."""
        self.pool.set_best(path)
        return True

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        obs, reward, terminated, truncated, info = super().step(action)
        if terminated or truncated:
            info["opponents"] = [o.kind for o in self.opponents if isinstance(o, PoolOpponent)]
        return obs, reward, terminated, truncated, info
