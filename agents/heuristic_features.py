"""Heuristic action features of observations: what the greedy heuristic (or the planner) computes
about every legal action (:mod:`treppen_env.agent_core.feature_kernels`), read from the observation and its
action mask.

The features depend only on the observation vector and the mask, so they hold only what the
mover may see (docs/ARCHITECTURE.md "Observations"). The action-feature policy
(:mod:`treppen.train.common.action_feature_net`, ``features: heuristic`` or ``features: planner``) computes them
at every step beside its card features.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from treppen_env.actions import NUM_ACTIONS
from treppen_env.agent_core import greedy_kernels, plan_value
from treppen_env.agent_core.feature_kernels import FEATURE_NAMES, NUM_FEATURES, batch_features
from treppen_env.cards import NUM_CARDS
from treppen_env.core import layout
from treppen_env.core.tables import rules_table
from treppen_env.melds import NUM_MELDS
from treppen_env.observation import OBS_SIZE
from treppen_env.rules import Rules, make_rules

__all__ = ["FEATURE_NAMES", "NUM_FEATURES", "VIEWS", "heuristic_features", "rules_row", "view_values"]

#: The feature sets (config ``features``) with a heuristic's columns, by the heuristic they show:
#: ``heuristic`` the greedy heuristic's view of each action, ``planner`` the planner's.
VIEWS = {"heuristic": "greedy", "planner": "planner"}


def view_values(features: str) -> np.ndarray:
    """The heuristic of a feature set's columns as the kernels take it
    (:func:`treppen_env.agent_core.feature_kernels.decision_features`): float64 of size 0 for the greedy
    heuristic (``heuristic``, and ``cards``, which has no such columns), the planner's default
    values (:func:`treppen_env.agent_core.plan_value.values_row`) for ``planner``."""
    return plan_value.values_row() if features == "planner" else np.zeros(0)


# The rules as a saved policy holds them (the ``heuristic_rules`` buffer of a policy with heuristic
# features, ``features: heuristic``, and of its NumPy snapshot): a float64 row. The kernels read the
# rules core's int64 table (:func:`treppen_env.core.tables.rules_table`); :func:`_kernel_table` puts
# a row's entries in the table's slots.
R_VALUES = 0  # points of laying candidate meld i (RULES §3.3-3.4, §5.1)
R_ALLOWED = NUM_MELDS  # 1.0 when candidate i is a legal meld (RULES §3.1-3.2)
R_LAYOFF = 2 * NUM_MELDS  # points of laying off card c onto target t at R_LAYOFF + 3c + t (§5.2)
R_CORNER = R_LAYOFF + 3 * NUM_CARDS  # 1.0: runs turn the corner (RULES §3.2)
R_MUST_USE_TAKEN = R_CORNER + 1  # 1.0: the deepest taken card must be played (RULES §4.2)
R_GOING_OUT_CREDIT = R_CORNER + 2  # 1.0: going out books the opponents' hands (RULES §6.2)
R_ROMME_DOUBLE = R_CORNER + 3  # 1.0: that credit doubles after a Rommé (RULES §6.2)
RULES_ROW_SIZE = R_CORNER + 4
#: The table's slots of each run of the row: (row start, table start, length).
_ROW_IN_TABLE = (
    (R_VALUES, layout.T_MELD_VALUE, NUM_MELDS),
    (R_ALLOWED, layout.T_ALLOWED, NUM_MELDS),
    (R_LAYOFF, layout.T_LAYOFF_VALUE, 3 * NUM_CARDS),
    (R_CORNER, layout.T_CORNER_RUNS, 1),
    (R_MUST_USE_TAKEN, layout.T_MUST_USE_TAKEN, 1),
    (R_GOING_OUT_CREDIT, layout.T_GOING_OUT_CREDIT, 1),
    (R_ROMME_DOUBLE, layout.T_ROMME_DOUBLE, 1),
)


@lru_cache(maxsize=8)
def _preset_row(rules: Rules) -> np.ndarray:
    table = rules_table(rules)
    row = np.zeros(RULES_ROW_SIZE)
    for start, slot, size in _ROW_IN_TABLE:
        row[start : start + size] = table[slot : slot + size]
    row.flags.writeable = False
    return row


def rules_row(rules: Rules | str | np.ndarray) -> np.ndarray:
    """The rules as a saved policy holds them: a float64 row (RULES_ROW_SIZE,) of meld values,
    allowed melds, lay-off values and flags, of ``rules`` (a preset name, a :class:`Rules`, or a
    row already, returned as float64).

    :raises ValueError: for an unknown preset, or a row of another length.
    """
    if isinstance(rules, np.ndarray):
        if rules.shape != (RULES_ROW_SIZE,):
            raise ValueError(f"a rules row has shape ({RULES_ROW_SIZE},); got {rules.shape}")
        return np.ascontiguousarray(rules, dtype=np.float64)
    return _preset_row(make_rules(rules))


def _kernel_table(rules: Rules | str | np.ndarray) -> np.ndarray:
    """The int64 rules table the kernels read (read-only): a preset's or a :class:`Rules`' own, or
    a saved row's entries in the table's slots (the heuristic reads no other slot)."""
    if not isinstance(rules, np.ndarray):
        return rules_table(make_rules(rules))
    row = rules_row(rules)
    table = np.zeros(layout.TAB_SIZE, dtype=np.int64)
    for start, slot, size in _ROW_IN_TABLE:
        table[slot : slot + size] = row[start : start + size]
    table.flags.writeable = False
    return table


_SETTINGS = greedy_kernels.settings_row()


def heuristic_features(
    obs: np.ndarray,
    masks: np.ndarray,
    rules: Rules | str | np.ndarray = "treppenromme",
    values: np.ndarray | None = None,
) -> np.ndarray:
    """The heuristic's features of every action (:mod:`treppen_env.agent_core.feature_kernels`, columns
    :data:`FEATURE_NAMES`) for a batch of positions, under the greedy heuristic's default settings
    or the planner's.

    :param obs: observation vectors, float32 (B, 969) or (969,).
    :param masks: their action masks, bool or 0/1 (B, 898) or (898,).
    :param rules: the game's rules (a preset name, :class:`Rules` or :func:`rules_row`): meld and
        lay-off values, the must-use rule (RULES §4.2, §5).
    :param values: ``None`` (or size 0) for the greedy heuristic's view, else the planner's settings
        (float64 (:data:`~treppen_env.agent_core.plan_value.NUM_VALUES`,), :func:`view_values`)
        for the planner's, its memory empty.
    :return: float32 (B, 898, NUM_FEATURES) (or (898, NUM_FEATURES) for one position); zero rows
        for illegal actions.
    :raises ValueError: when the shapes do not match, or ``values`` is neither empty nor a
        planner's settings row.
    """
    values = np.zeros(0) if values is None else np.array(values, dtype=np.float64)
    if values.shape not in ((0,), (plan_value.NUM_VALUES,)):
        raise ValueError(
            f"values has shape {values.shape}; expected (0,) (greedy) or ({plan_value.NUM_VALUES},) (the planner)"
        )
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
    batch_features(obs, masks, _kernel_table(rules), _SETTINGS, values, out)
    return out[0] if single else out
