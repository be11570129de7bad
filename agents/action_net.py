"""The batched learner's policy as an agent: a ``final_model.npz`` of ``backend: kernel`` played by
the kernels alone (no torch), and the legal-action rows it and the learner read.

A position's legal actions are described by :func:`legal_rows` (the kernel
:func:`treppen_env.agent_core.action_net_kernels.legal_features`: each legal action's static features and,
with ``features: heuristic``, the greedy heuristic's view of it, with ``features: planner`` the
planner's; the net file records its feature set); :class:`ActionNetAgent` scores
them with :func:`treppen_env.agent_core.action_net_kernels.action_logits` and plays the best (or samples).
``agents.load`` builds it from such a file or from a run folder holding ``final_model.npz``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from treppen.agents.action_features import ACTION_FEATURES, action_table
from treppen.agents.base import Agent, legal_actions
from treppen.agents.heuristic_features import VIEWS, view_values
from treppen_env.agent_core import action_net_kernels, greedy_kernels
from treppen_env.agent_core.action_net_kernels import FeatureContext, LegalRows
from treppen_env.agent_core.feature_kernels import NUM_FEATURES
from treppen_env.agent_core.policy_value_kernels import NUM_ACTIONS, sample_action
from treppen_env.core.tables import rules_table
from treppen_env.rules import Rules, make_rules

#: What a legal-action row holds beside the static table (``features`` of the config).
FEATURE_SETS = ("cards", *VIEWS)


def num_features(features: str) -> int:
    """Columns ``F`` of a legal-action row: the static table's, plus the heuristic's for
    ``features="heuristic"`` (the greedy heuristic's) or ``"planner"`` (the planner's)."""
    return ACTION_FEATURES + (NUM_FEATURES if features in VIEWS else 0)


def feature_context(rules: Rules | str) -> FeatureContext:
    """The :class:`~treppen_env.agent_core.action_net_kernels.FeatureContext` of ``rules`` for
    :func:`legal_rows`: the rules table, the greedy heuristic's settings and the static action table
    (RULES §5 values); :func:`legal_rows` sets the ``values`` of its feature set."""
    rules = make_rules(rules)
    return FeatureContext(
        tab=rules_table(rules),
        settings=greedy_kernels.settings_row(),
        values=view_values("heuristic"),
        table=np.ascontiguousarray(action_table(rules)),
    )


def legal_rows(obs: np.ndarray, masks: np.ndarray, ctx: FeatureContext, features: str) -> LegalRows:
    """The legal-action rows of observations (float32 (B, 969)) and their masks (int8 or bool
    (B, >= 898)), with the columns of the feature set ``features`` (:data:`FEATURE_SETS`) in the
    context ``ctx`` of :func:`feature_context`."""
    masks = masks.view(np.int8) if masks.dtype == np.bool_ else masks
    total = int(masks[:, :NUM_ACTIONS].sum(dtype=np.int64))
    rows = LegalRows(
        acts=np.empty(total, dtype=np.int64),
        feats=np.empty((total, num_features(features)), dtype=np.float32),
        offsets=np.empty(obs.shape[0] + 1, dtype=np.int64),
    )
    action_net_kernels.legal_features(obs, masks, ctx._replace(values=view_values(features)), rows)
    return rows


def load_weights(path: str | os.PathLike[str]) -> tuple[np.ndarray, np.ndarray, str]:
    """The flat weights (float32), shape (int64) and feature set of an action net's ``.npz``
    (:meth:`treppen.train.kernel.action_net_torch.ActionNet.save`).

    :raises FileNotFoundError: when there is no such file.
    :raises ValueError: when it is no action net or the weights do not fit the shape.
    """
    if not Path(path).is_file():
        raise FileNotFoundError(f"no action net at {str(path)!r} (a final_model.npz of backend: kernel)")
    with np.load(path) as data:
        if not {"w", "shape", "features"} <= set(data.files):
            raise ValueError(f"{str(path)!r} is no action net: it lacks w, shape or features")
        w, shape, features = data["w"].astype(np.float32), data["shape"].astype(np.int64), str(data["features"])
    size = (
        action_net_kernels.layout(*shape.tolist())["size"][0] if shape.shape == (action_net_kernels.SHAPE_SIZE,) else -1
    )
    if (
        features not in FEATURE_SETS
        or w.size != size
        or shape[action_net_kernels.SH_FEATURES] != num_features(features)
    ):
        raise ValueError(f"{str(path)!r}: {w.size} weights do not fit the shape {shape.tolist()} ({features})")
    return w, shape, features


def is_action_net(path: Path) -> bool:
    """Whether ``path`` is a ``.npz`` of an action net (``w``, ``shape`` and ``features``)."""
    with np.load(path) as data:
        return {"w", "shape", "features"} <= set(data.files)


class ActionNetAgent(Agent):
    """The policy of an action net (see the module docstring).

    :param path: the net's ``.npz`` (``final_model.npz`` of a ``backend: kernel`` run).
    :param seed: seeds the agent's generator (sampling with ``deterministic=False``).
    :param deterministic: play the most probable legal action (default), else sample.
    :param rules: the game's rules (the heuristic's features and the action table, RULES §5).
    :raises FileNotFoundError: when there is no such file; ``ValueError`` when it is no such net.
    """

    name = "action_net"

    def __init__(
        self,
        path: str | os.PathLike[str],
        seed: int | None = None,
        deterministic: bool = True,
        rules: Rules | str = "treppenromme",
    ):
        super().__init__(seed)
        self.path = Path(path)
        self.w, self.shape, self.features = load_weights(self.path)
        self.deterministic = deterministic
        self.ctx = feature_context(rules)
        self._rng = np.zeros(1, dtype=np.uint64)

    def __repr__(self) -> str:
        return f"ActionNetAgent({str(self.path)!r}, deterministic={self.deterministic})"

    def act(self, observation: dict[str, Any]) -> int:
        """The policy's action for ``observation`` (a legal one of its mask)."""
        acts, logits = self._logits(observation)
        if self.deterministic:
            return int(acts[int(np.argmax(logits))])
        self._rng[0] = np.uint64(self.rng.integers(2**63))
        return int(acts[sample_action(logits, self._rng)])

    def action_probabilities(self, observation: dict[str, Any]) -> np.ndarray:
        """The policy's probability of every action (float64 (898,), 0 for the illegal ones): the
        softmax of its logits over the legal actions (a search's prior, e.g. ``ismcts,prior=FILE``)."""
        acts, logits = self._logits(observation)
        probs = np.zeros(NUM_ACTIONS)
        probs[acts] = np.exp(logits - logits.max())
        return probs / probs.sum()

    def _logits(self, observation: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        """The legal actions of ``observation`` (int64 (n,), ascending) and their logits (float64 (n,)).

        :raises ValueError: when the mask has no legal action.
        """
        legal_actions(observation)
        obs = np.asarray(observation["observation"], dtype=np.float32)[None]
        mask = (np.asarray(observation["action_mask"]) != 0).astype(np.int8)[None]
        rows = legal_rows(obs, mask, self.ctx, self.features)
        n = rows.acts.size
        logits = np.zeros(n)
        action_net_kernels.action_logits(self.w, self.shape, obs[0], rows.feats, n, logits)
        return rows.acts, logits
