"""The planner: a heuristic that plans whole turns and values them in expected deal points
(docs/guide/agents.md, "The planner").

:class:`PlannerAgent` reads the public view of the observation and the action mask, never hidden
cards, plus what it remembers of the opponents' earlier turns. Its one implementation is the kernels
of :mod:`treppen_env.agent_core.planner_kernels` and :mod:`treppen_env.agent_core.plan_value`. Where the
greedy heuristic (:class:`treppen.agents.GreedyAgent`) weighs the cards a plan leaves by fixed
weights, the planner values the end of the turn by what those cards are likely to cost or bring
before the deal ends: the opponents' threat of going out (their hand sizes), the chance of melding
a kept card later, of going out next turn, and the danger of the discard read against the cards
the next seat discarded or declined.

Its memory: at the start of each of its turns it reads from the staircase what the opponent before
it discarded (the new top card, RULES §4.4) and, at 2 players, whether the opponent drew from the
stock over the card it had discarded (declined it, §4.1). At 2 players this is everything the
opponent showed; at 3 and 4 players it keeps the previous seat's discards only.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from treppen.agents.greedy import _NOT_TO_MOVE, GreedyAgent, _kernel_array, _mask
from treppen_env.actions import DISCARD_BASE
from treppen_env.agent_core import greedy_kernels, plan_value, planner_kernels, reader
from treppen_env.observation import SLICES
from treppen_env.rules import Rules

_DRAW_PHASE = 0


class PlannerAgent(GreedyAgent):
    """A rummy heuristic that plans whole turns (see the module docstring). Its settings are the
    planner's values (:data:`treppen_env.agent_core.plan_value.DEFAULT_VALUES`, tuned on duplicate
    decks of seed 1, docs/guide/agents.md "The planner").

    :param seed: seeds the generator (used only for ``epsilon`` exploration).
    :param rules: the preset name or :class:`treppen_env.rules.Rules`; ``None`` infers it as
        :class:`~treppen.agents.GreedyAgent` does.
    :param epsilon: probability of a uniformly random legal action instead.
    :param stock_gain: expected points gained by an unknown stock card (draw-phase baseline).
    :param take_margin: points a staircase take must beat the stock by.
    :param hold: a kept card's cost per point of its hand value, with no threat.
    :param threat: that cost's growth per unit of threat (an opponent holding one card is 1).
    :param decay: an opponent's threat is ``decay ** (hand size - 1)``, in [0, 1].
    :param card_cost: the cost of every card kept.
    :param credit: the credit per live card that would complete a partial meld with a kept card.
    :param urgency: how much the threat discounts that credit.
    :param near_out: the share of the going-out bonus counted for each unit of chance of going out
        next turn.
    :param memory: how much each card the next seat discarded or declined next to a discard
        (rank mates, suit neighbours) lowers that discard's danger.
    :param min_weight: the least a kept card costs.
    :param danger: the weight of a discard's danger.
    :param romme: the share of the Rommé's extra bonus (RULES §6.2) that keeping the melds in hand
        is worth, times the share of the hand they cover.
    :raises ValueError: for ``epsilon`` outside [0, 1], ``decay`` outside [0, 1], or a negative
        value of any other planner setting.
    """

    name = "planner"

    def __init__(
        self,
        seed: int | None = None,
        rules: str | Rules | None = None,
        epsilon: float = 0.0,
        stock_gain: float = plan_value.DEFAULT_VALUES["stock_gain"],
        take_margin: float = plan_value.DEFAULT_VALUES["take_margin"],
        hold: float = plan_value.DEFAULT_VALUES["hold"],
        threat: float = plan_value.DEFAULT_VALUES["threat"],
        decay: float = plan_value.DEFAULT_VALUES["decay"],
        card_cost: float = plan_value.DEFAULT_VALUES["card_cost"],
        credit: float = plan_value.DEFAULT_VALUES["credit"],
        urgency: float = plan_value.DEFAULT_VALUES["urgency"],
        near_out: float = plan_value.DEFAULT_VALUES["near_out"],
        memory: float = plan_value.DEFAULT_VALUES["memory"],
        min_weight: float = plan_value.DEFAULT_VALUES["min_weight"],
        danger: float = plan_value.DEFAULT_VALUES["danger"],
        romme: float = plan_value.DEFAULT_VALUES["romme"],
    ):
        super().__init__(seed, rules, epsilon)
        arguments = locals()
        given = {name: arguments[name] for name in plan_value.DEFAULT_VALUES}
        for name, value in given.items():
            if not value >= 0 or (name == "decay" and value > 1):
                allowed = "in [0, 1]" if name == "decay" else "at least 0"
                raise ValueError(f"planner setting {name}={value!r} must be {allowed}")
        self.values = plan_value.values_row(**given)
        self._memory = np.zeros(planner_kernels.MEMORY_SEATS, dtype=np.uint64)
        #: The card this agent last discarded and the stock's size then (RULES §4.4).
        self._after_discard: tuple[int, int] | None = None
        self._turn = -1.0

    def reset(self, seed: int | None = None) -> None:
        """Forget the inferred preset and the memory of the deal (see :class:`~treppen.agents.GreedyAgent`)."""
        super().reset(seed)
        self._forget()

    def __repr__(self) -> str:
        rules = None if self.rules is None else self.rules.name
        return f"PlannerAgent(rules={rules!r}, epsilon={self.epsilon})"

    def _forget(self) -> None:
        self._memory[:] = 0
        self._after_discard = None

    def act(self, observation: dict[str, Any]) -> int:
        """The planner's legal action for ``observation`` (see the module docstring).

        :raises ValueError: when the mask has no legal action (this agent is not to move), or
            when the observation vector does not have shape (OBS_SIZE,).
        """
        obs = _kernel_array(observation["observation"], np.float32)
        if obs.shape != (reader.OBS_SIZE,):
            raise ValueError(f"observation has shape {obs.shape}; expected ({reader.OBS_SIZE},)")
        inputs = reader.observation_inputs(obs)
        self._see(inputs, float(obs[SLICES["turn"]][0]))
        if self.epsilon:
            legal = np.flatnonzero(observation["action_mask"])
            if self.rng.random() < self.epsilon:
                return self._acted(inputs, int(legal[self.rng.integers(legal.size)]))
        return self._acted(inputs, self._decide(inputs, _mask(observation["action_mask"])))

    def _decide(self, inputs: greedy_kernels.Inputs, mask: np.ndarray) -> int:
        if greedy_kernels.must_use_evidence(inputs.scalars, mask):
            self._seen_must_use = True
        rows, index = self._rows()
        action = planner_kernels.planner_action(inputs, self._memory, mask, rows[index], self.values)
        if action < 0:
            raise ValueError(_NOT_TO_MOVE)
        return int(action)

    def _see(self, inputs: greedy_kernels.Inputs, turn: float) -> None:
        """Read the opponents' last moves from a draw-phase observation (see the module docstring)."""
        scalars = inputs.scalars
        if turn < self._turn:  # a new deal
            self._forget()
        self._turn = turn
        if scalars[greedy_kernels.PHASE] != _DRAW_PHASE or self._after_discard is None:
            return
        discard, stock = self._after_discard
        self._after_discard = None
        n = int(scalars[greedy_kernels.NUM_PLAYERS])
        length = int(scalars[greedy_kernels.STAIRS_LEN])
        if length == 0 or scalars[greedy_kernels.STOCK] > stock:  # a reshuffle (RULES §6.4): nothing certain
            return
        previous = n - 2  # the seat before this one, relative seat n - 1, in the memory's rows
        self._memory[previous] |= np.uint64(1) << np.uint64(inputs.stairs[length - 1])
        if n == 2 and scalars[greedy_kernels.STOCK] == stock - 1:
            self._memory[previous] |= np.uint64(1) << np.uint64(discard)

    def _acted(self, inputs: greedy_kernels.Inputs, action: int) -> int:
        """Note a discard and the stock it leaves, to read the next opponent's turn against."""
        if action >= DISCARD_BASE:
            self._after_discard = (action - DISCARD_BASE, int(inputs.scalars[greedy_kernels.STOCK]))
        return action
