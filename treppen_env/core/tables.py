"""The rules table the kernels read: options and per-card, per-meld values of one rule set.

Built once per :class:`~treppen_env.rules.Rules` in Python from the pure functions of
:mod:`treppen_env.melds` and :mod:`treppen_env.cards` (the slots are listed in
:mod:`treppen_env.core.layout`), then passed to every kernel with the candidate melds' bitsets
:data:`treppen_env.melds.MELD_BITS`.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from treppen_env.cards import ACE, HAND_POINTS, NUM_CARDS, NUM_RANKS
from treppen_env.core import layout
from treppen_env.melds import MELDS, NUM_MELDS, allowed_melds, layoff_value, meld_values
from treppen_env.rules import Rules

assert NUM_MELDS == layout.NUM_MELD_CANDIDATES


@lru_cache(maxsize=32)
def rules_table(rules: Rules) -> np.ndarray:
    """The int64 rules table of ``rules`` (shape (TAB_SIZE,), read-only; RULES §3, §5, §6, §8)."""
    tab = np.zeros(layout.TAB_SIZE, dtype=np.int64)
    tab[layout.T_CORNER_RUNS] = rules.corner_runs
    tab[layout.T_MUST_USE_TAKEN] = rules.must_use_taken
    tab[layout.T_GOING_OUT_CREDIT] = rules.going_out_credit
    tab[layout.T_ROMME_DOUBLE] = rules.romme_double
    tab[layout.T_HAND_PENALTY] = rules.hand_penalty
    tab[layout.T_RESHUFFLE] = rules.stock_exhausted == "reshuffle"
    tab[layout.T_MAX_TURNS] = rules.max_turns
    tab[layout.T_ALLOWED : layout.T_ALLOWED + NUM_MELDS] = allowed_melds(rules)
    tab[layout.T_MELD_VALUE : layout.T_MELD_VALUE + NUM_MELDS] = meld_values(rules)
    for card in range(NUM_CARDS):
        for target in range(layout.NUM_TARGETS):
            tab[layout.T_LAYOFF_VALUE + layout.NUM_TARGETS * card + target] = layoff_value(rules, card, target)
        tab[layout.T_HAND_VALUE + card] = rules.ace_hand if card % NUM_RANKS == ACE else HAND_POINTS[card]
    shape = tab[layout.T_SHAPE :].reshape(NUM_MELDS, layout.SHAPE_COLS)
    for m, meld in enumerate(MELDS):
        shape[m] = (layout.SET if meld.kind == "set" else layout.RUN, meld.suit, meld.low, meld.length)
    tab.flags.writeable = False
    return tab
