"""Policies saved as NumPy weights, played without torch: :class:`NumpyPolicy` (an MLP snapshot),
:class:`ActionFeatureSnapshot` (an action-feature policy) and :class:`SnapshotAgent`.

The ``.npz`` format is written by :func:`treppen.train.sb3.pool.save_snapshot` (the opponent pool's snapshots)
and by the RLlib backend's export; ``agents.load`` plays such a file or a run folder holding one.
A NumPy forward pass on one observation costs far less than a torch one, so opponent seats in env
workers never run torch in their hot path.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from treppen.agents.action_features import NumpyActionFeatureNet
from treppen.agents.base import Agent
from treppen_env.actions import NUM_ACTIONS


class NumpyPolicy:
    """A snapshot's forward pass in NumPy: observation -> logits -> masked action.

    :param weights: (weight (out, in), bias (out,)) per linear layer, the last one the action head.
    :param activation: ``"tanh"`` or ``"relu"`` between layers.
    """

    def __init__(self, weights: Sequence[tuple[np.ndarray, np.ndarray]], activation: str = "tanh"):
        if activation not in ("tanh", "relu"):
            raise ValueError(f"activation={activation!r}; choose 'tanh' or 'relu'")
        # stored transposed and contiguous so that x @ w is a plain row-major product
        self.layers = [(np.ascontiguousarray(w.T, dtype=np.float32), b.astype(np.float32)) for w, b in weights]
        self.activation = activation
        self.head_rows = np.ascontiguousarray(self.layers[-1][0].T)  # (898, hidden): one row per action

    @classmethod
    def load(cls, path: str | Path) -> NumpyPolicy:
        """Read a snapshot written by :func:`save_snapshot` (an MLP or an action-feature policy)."""
        with np.load(path) as data:
            if "kind" in data and str(data["kind"]) == "action_features":
                return ActionFeatureSnapshot({k: data[k] for k in data.files if k not in ("kind", "steps")})
            n = int(data["layers"])
            weights = [(data[f"w{i}"], data[f"b{i}"]) for i in range(n)]
            return cls(weights, str(data["activation"]))

    def logits(self, obs: np.ndarray, legal: np.ndarray | None = None) -> np.ndarray:
        """Unmasked logits, shape (898,) for one observation or (B, 898) for a batch; with
        ``legal`` (action indices) only those columns, computed alone (a tenth of the head's work)."""
        x = np.asarray(obs, dtype=np.float32)
        *hidden, (w_out, b_out) = self.layers
        for w, b in hidden:
            x = x @ w + b
            x = np.tanh(x) if self.activation == "tanh" else np.maximum(x, 0)
        if legal is None:
            return x @ w_out + b_out
        return self.head_rows[legal] @ x + b_out[legal]

    def act(self, obs: np.ndarray, mask: np.ndarray, rng: np.random.Generator | None = None) -> int:
        """The argmax legal action, or with ``rng`` a sample from the masked softmax (Gumbel-max).

        :raises ValueError: when the mask has no legal action.
        """
        legal = np.flatnonzero(mask)
        if legal.size == 0:
            raise ValueError("the action mask has no legal action: this agent is not to move")
        scores = self.logits(obs, legal)
        if rng is not None:
            scores = scores - np.log(-np.log(rng.random(legal.size)))
        return int(legal[int(np.argmax(scores))])


class ActionFeatureSnapshot(NumpyPolicy):
    """A snapshot of an action-feature policy: :class:`treppen.agents.action_features.NumpyActionFeatureNet`
    behind :class:`NumpyPolicy`'s ``act`` (one observation at a time).

    :param arrays: the net's ``state_dict`` as NumPy arrays.
    """

    def __init__(self, arrays: dict[str, np.ndarray]):
        self.net = NumpyActionFeatureNet(arrays)

    def logits(self, obs: np.ndarray, legal: np.ndarray | None = None) -> np.ndarray:
        """Unmasked logits of one observation: (898,), or of the actions ``legal`` only."""
        return self.net.logits(obs, np.arange(NUM_ACTIONS) if legal is None else np.asarray(legal))


class SnapshotAgent(Agent):
    """An agent playing a :class:`NumpyPolicy`.

    :param policy: the snapshot's forward pass.
    :param deterministic: argmax action instead of sampling.
    :param seed: seeds the sampling generator.
    """

    name = "snapshot"

    def __init__(self, policy: NumpyPolicy, deterministic: bool = False, seed: int | None = None):
        super().__init__(seed)
        self.policy = policy
        self.deterministic = deterministic

    def act(self, observation: dict[str, Any]) -> int:
        rng = None if self.deterministic else self.rng
        return self.policy.act(observation["observation"], observation["action_mask"], rng)
