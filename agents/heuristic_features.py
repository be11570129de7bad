"""Heuristic action features of observations: what the greedy heuristic computes about every
legal action (:mod:`treppen_env.agent_core.features`), read from the observation and its action mask.

The features depend only on the observation vector and the mask, so they hold only what the
mover may see (docs/ARCHITECTURE.md "Observations"). The action-feature policy
(:mod:`treppen.train.policy_net`, ``features: heuristic``) computes them at every step beside its card
features.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from treppen_env.actions import NUM_ACTIONS
from treppen_env.agent_core import greedy as G
from treppen_env.agent_core.features import FEATURE_NAMES, NUM_FEATURES, batch_features
from treppen_env.observation import OBS_SIZE
from treppen_env.rules import Rules, make_rules

__all__ = ["FEATURE_NAMES", "NUM_FEATURES", "heuristic_features", "rules_row"]


@lru_cache(maxsize=8)
def _preset_row(rules: Rules) -> np.ndarray:
    return G.rules_row(rules)


def rules_row(rules: Rules | str | np.ndarray) -> np.ndarray:
    """The kernels' rules row (float64 (RULES_ROW_SIZE,)) of ``rules``: a preset name, a
    :class:`Rules`, or a row already (returned as float64).

    :raises ValueError: for an unknown preset, or a row of another length.
    """
    if isinstance(rules, np.ndarray):
        if rules.shape != (G.RULES_ROW_SIZE,):
            raise ValueError(f"a rules row has shape ({G.RULES_ROW_SIZE},); got {rules.shape}")
        return np.ascontiguousarray(rules, dtype=np.float64)
    return _preset_row(make_rules(rules))


_SETTINGS = G.settings_row()


def heuristic_features(
    obs: np.ndarray, masks: np.ndarray, rules: Rules | str | np.ndarray = "treppenromme"
) -> np.ndarray:
    """The heuristic's features of every action (:mod:`treppen_env.agent_core.features`, columns
    :data:`FEATURE_NAMES`) for a batch of positions, under the greedy heuristic's default settings.

    :param obs: observation vectors, float32 (B, 969) or (969,).
    :param masks: their action masks, bool or 0/1 (B, 898) or (898,).
    :param rules: the game's rules (a preset name, :class:`Rules` or :func:`rules_row`): meld and
        lay-off values, the must-use rule (RULES §4.2, §5).
    :return: float32 (B, 898, NUM_FEATURES) (or (898, NUM_FEATURES) for one position); zero rows
        for illegal actions.
    :raises ValueError: when the shapes do not match.
    """
    obs = np.ascontiguousarray(obs, dtype=np.float32)
    masks = np.ascontiguousarray(masks != 0, dtype=np.int8)
    single = obs.ndim == 1
    if single:
        obs, masks = obs[None], masks[None]
    if obs.ndim != 2 or obs.shape[1] != OBS_SIZE or masks.shape != (obs.shape[0], NUM_ACTIONS):
        raise ValueError(
            f"observations {obs.shape} and masks {masks.shape} must be (B, {OBS_SIZE}) and (B, {NUM_ACTIONS})"
        )
    out = np.empty((obs.shape[0], NUM_ACTIONS, NUM_FEATURES), dtype=np.float32)
    batch_features(obs, masks, rules_row(rules), _SETTINGS, out)
    return out[0] if single else out
