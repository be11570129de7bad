"""A rummy heuristic that acts from the observation only (docs/ARCHITECTURE.md "Agents").

:class:`GreedyAgent` reads the public view of the observation and the action mask (or the same
public parts of an engine state, :meth:`GreedyAgent.decide_state`), never hidden cards. Its one
implementation is the kernels of :mod:`treppen_env.agent_core.greedy_kernels`, which read the observation as plain
arrays of what the mover may see. Each decision scores hands with one
function, the turn plan: the best way to lay a hand out this turn as card-disjoint melds and
lay-off chains (a card laid off onto a table run's end, then the next card of that suit onto the
new end, ...), scored as

    booked points + going-out bonus - weight of the cards left in hand (after the best discard)

where a card left in hand weighs its hand value plus a per-card cost, less a credit for every
live card (not seen on the table, in its own hand or in an opponent's known cards) that would
turn it and its partners into a meld.

- Draw phase (RULES §4.1-4.2): every legal staircase take whose deepest card the plan uses
  (a deep card taken for nothing is never considered) is scored against drawing from the stock
  (the current hand's plan plus a small expected gain of an unknown card); the stock wins ties.
- Meld phase (RULES §4.3-4.5): play the first step of the best plan (going out when a plan
  empties the hand, or leaves one card to discard); with nothing left to lay, discard the card
  with the highest weight that an opponent is least likely to use (not fitting a table meld's
  open end, not completing or extending a meld with an opponent's known cards).

Only actions whose mask bit is set are ever returned, so both presets and 2-4 players work; in
``rum500`` the plan must contain the card to be used (``must_use``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from treppen.agents.base import Agent, legal_actions
from treppen_env.agent_core import greedy_kernels, reader
from treppen_env.agent_hooks import heuristic_inputs
from treppen_env.core.tables import rules_table
from treppen_env.engine import GameState
from treppen_env.observation import PublicView
from treppen_env.rules import PRESETS, Rules, make_rules

_NOT_TO_MOVE = "the action mask has no legal action: this agent is not to move"


def _rows(*rules: Rules) -> np.ndarray:
    """Rules tables stacked for the kernels (int64 (len(rules), TAB_SIZE), read-only as every rules
    table the kernels read: :func:`treppen_env.core.tables.rules_table`)."""
    tables = np.stack([rules_table(r) for r in rules])
    tables.flags.writeable = False
    return tables


#: Rules rows of an agent that infers the preset: row 0 treppenromme, row 1 rum500.
_INFERRED_ROWS = _rows(PRESETS["treppenromme"], PRESETS["rum500"])


class GreedyAgent(Agent):
    """Heuristic rummy player acting from the observation only (see the module docstring).

    :param seed: seeds the agent's generator (used only for ``epsilon`` exploration); with
        ``epsilon=0`` the agent is deterministic.
    :param rules: the preset name or :class:`treppen_env.rules.Rules` of the game; it sets the
        meld values and whether runs turn the corner. ``None`` infers the preset from the
        observations: ``rum500`` once a must-use card or a filtered take mask is seen (until
        :meth:`reset`), ``treppenromme`` otherwise.
    :param epsilon: probability of playing a uniformly random legal action instead.
    :param stock_gain: expected points gained by an unknown stock card (draw-phase baseline).
    :param take_margin: points a staircase take must beat the stock by.
    :param card_cost: weight of every card kept in hand, on top of its hand value.
    :param out_credit: weight of each live card that would complete a partial meld.
    :param min_weight: the least a card kept in hand weighs (so a meld is never worth keeping).
    """

    name = "greedy"

    def __init__(
        self,
        seed: int | None = None,
        rules: str | Rules | None = None,
        epsilon: float = 0.0,
        stock_gain: float = 3.0,
        take_margin: float = 2.0,
        card_cost: float = 1.0,
        out_credit: float = 5.0,
        min_weight: float = 1.0,
    ):
        super().__init__(seed)
        if not 0.0 <= epsilon <= 1.0:
            raise ValueError(f"epsilon={epsilon!r} must be in [0, 1]")
        self.rules = None if rules is None else make_rules(rules)
        self.epsilon = epsilon
        self.stock_gain = stock_gain
        self.take_margin = take_margin
        self.card_cost = card_cost
        self.out_credit = out_credit
        self.min_weight = min_weight
        self._seen_must_use = False
        self._settings_key: tuple[float, ...] = ()
        self._settings = np.zeros(greedy_kernels.NUM_SETTINGS)
        self._rules_key: Rules | None = None
        self._rules_rows = _INFERRED_ROWS

    def reset(self, seed: int | None = None) -> None:
        """Forget the preset inferred from earlier observations (when ``rules`` is ``None``).

        :param seed: when given, reseed the generator (used only for ``epsilon``).
        """
        super().reset(seed)
        self._seen_must_use = False

    def __repr__(self) -> str:
        rules = None if self.rules is None else self.rules.name
        return f"GreedyAgent(rules={rules!r}, epsilon={self.epsilon})"

    # ------------------------------------------------------------------ decisions
    def act(self, observation: dict[str, Any]) -> int:
        """The heuristic's legal action for ``observation`` (see the module docstring).

        :raises ValueError: when the mask has no legal action (this agent is not to move), or
            when the observation vector does not have shape (OBS_SIZE,).
        """
        if self.epsilon:
            legal = legal_actions(observation)
            if self.rng.random() < self.epsilon:
                return int(legal[self.rng.integers(legal.size)])
        obs = _kernel_array(observation["observation"], np.float32)
        if obs.shape != (reader.OBS_SIZE,):
            raise ValueError(f"observation has shape {obs.shape}; expected ({reader.OBS_SIZE},)")
        mask = _mask(observation["action_mask"])
        rows, index = self._rows()
        action, evidence = reader.observation_action(
            obs, mask, rows, index, self.rules is None, self._current_settings()
        )
        if evidence:
            self._seen_must_use = True  # only the must-use rule filters takes (RULES §4.2)
        if action < 0:
            raise ValueError(_NOT_TO_MOVE)
        return int(action)

    def decide(self, view: PublicView, table: np.ndarray, mask: np.ndarray, legal: np.ndarray) -> int:
        """The heuristic's action from an observation already decoded (no epsilon exploration).


        :param view: the decoded observation (:func:`treppen_env.observation.decode`).
        :param table: the observation's ``table`` piece, float32 (52, 7).
        :param mask: the action mask, int8 (898,); ``legal``: its legal actions, ascending.
        """
        return self._decide(reader.view_inputs(view, table), mask)

    def decide_state(self, state: GameState) -> int:
        """The heuristic's action for the player to move in an engine state, from what that
        player may see (:func:`treppen_env.agent_hooks.heuristic_inputs`; no epsilon
        exploration).

        :raises ValueError: when the deal is over (nobody is to move).
        """
        return self._decide(heuristic_inputs(state, state.current), state.legal_mask())

    def _decide(self, inputs: greedy_kernels.Inputs, mask: np.ndarray) -> int:
        mask = _mask(mask)
        if greedy_kernels.must_use_evidence(inputs.scalars, mask):
            self._seen_must_use = True
        rows, index = self._rows()
        action = greedy_kernels.greedy_action(inputs, mask, rows[index], self._current_settings())
        if action < 0:
            raise ValueError(_NOT_TO_MOVE)
        return int(action)

    def _rows(self) -> tuple[np.ndarray, int]:
        """The kernels' rules tables and the one to use (an inferring agent: 1 once rum500 is seen)."""
        if self.rules is None:
            return _INFERRED_ROWS, 1 if self._seen_must_use else 0
        if self._rules_key is not self.rules:
            self._rules_rows, self._rules_key = _rows(self.rules), self.rules
        return self._rules_rows, 0

    def _current_settings(self) -> np.ndarray:
        """The constructor settings as the kernels read them (rebuilt when an attribute changed)."""
        key = (self.stock_gain, self.take_margin, self.card_cost, self.out_credit, self.min_weight)
        if key != self._settings_key:
            self._settings = greedy_kernels.settings_row(
                **{name: getattr(self, name) for name in greedy_kernels.DEFAULT_SETTINGS}
            )
            self._settings_key = key
        return self._settings


def _mask(mask: Any) -> np.ndarray:
    """The action mask as the kernels read it: int8 (898,)."""
    mask = np.asarray(mask)
    if mask.dtype != np.int8:
        mask = (mask != 0).astype(np.int8)
    return _kernel_array(mask, np.int8)


def _kernel_array(x: Any, dtype: type) -> np.ndarray:
    """``x`` as a C-contiguous, writeable array of ``dtype``: the kernels are compiled (and cached)
    for such arrays, so a read-only or strided view is copied rather than compiled for anew."""
    x = np.asarray(x, dtype=dtype)
    if not (x.flags.c_contiguous and x.flags.writeable):
        x = np.array(x, order="C")
    return x
