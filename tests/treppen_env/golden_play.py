"""Seeded random deals digested for the engine's golden file (tests/fixtures/engine_golden.json).

Each case plays one deal with a seeded generator choosing among the legal actions (for even
seeds preferring melds and lay-offs, so tables fill up; for odd seeds uniformly, so deals run long
and reach the stock's end, reshuffles and the turn cap) and digests, step by step, the legal mask, the chosen
action and every seat's observation, then the deal's outcome and points. The golden file was
written by the pure-Python engine this project had before its compiled core, so the kernels are
checked against recorded behaviour. Run as a script to print the digests.
"""

from __future__ import annotations

import hashlib
import json

import numpy as np

from treppen_env.engine import GameState
from treppen_env.observation import encode
from treppen_env.rules import make_rules

CASES = [
    (preset, players, options, seed)
    for preset, options in (
        ("treppenromme", {}),
        ("rum500", {}),
        ("treppenromme", {"stock_exhausted": "reshuffle", "max_turns": 150, "hand_penalty": True}),
        ("rum500", {"stock_exhausted": "reshuffle", "max_turns": 150}),
    )
    for players in (2, 3, 4)
    for seed in range(6)
]


def digest(preset: str, players: int, options: dict, seed: int) -> dict:
    """The digest of one seeded deal (see the module docstring)."""
    state = GameState(make_rules(preset, **options), players, np.random.default_rng(seed))
    state.deal(seed % players)
    rng = np.random.default_rng(seed + 100)
    h = hashlib.sha256()
    steps = 0
    while True:
        for seat in range(players):
            h.update(encode(state, seat).tobytes())
        if state.deal_over:
            break
        mask = state.legal_mask()
        h.update(mask.tobytes())
        legal = np.flatnonzero(mask)
        lays = legal[(legal >= 53) & (legal < 846)]
        prefer = 0.8 if seed % 2 == 0 else 0.0
        action = int(rng.choice(lays if lays.size and rng.random() < prefer else legal))
        h.update(action.to_bytes(2, "little"))
        state.apply(action)
        steps += 1
    return {
        "case": [preset, players, options, seed],
        "steps": steps,
        "outcome": state.outcome,
        "deal_points": state.deal_points,
        "sha256": h.hexdigest(),
    }


if __name__ == "__main__":
    print(json.dumps([digest(*case) for case in CASES], indent=1))
