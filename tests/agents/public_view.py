"""A test helper: the decoded observation of an engine state, built straight from its fields.

It checks the observation path against an independent reading of the state: equal field for
field to ``decode(encode(state, seat))`` (melds in decode's order: sets by rank, then runs by their
low-end card), so greedy must decide alike from either.
"""

from __future__ import annotations

import numpy as np

from treppen_env.cards import bits_to_cards
from treppen_env.engine import GameState
from treppen_env.observation import TOTALS_CLIP, TOTALS_SCALE, Encoder, PublicView

_PHASE_NAMES = ("draw", "meld", "deal_over")
_NO_TABLE = np.zeros((52, 7), dtype=np.float32)


def public_view(state: GameState, seat: int, encoder: Encoder) -> tuple[PublicView, np.ndarray]:
    """What ``decode(encode(state, seat))`` and its ``table`` piece give, built without the vector.

    :return: the view and the ``table`` piece, float32 (52, 7).
    """
    n = state.num_players
    rel = [(seat + k) % n for k in range(n)]
    table_melds = state.melds  # each field read once: the engine's fields are views of its arrays
    hands, known, points, totals, laid = state.hands[:], state.known[:], state.points, state.totals, state.laid_before
    sets = sorted((m for m in table_melds if m.kind == "set"), key=lambda m: m.low)
    runs = sorted((m for m in table_melds if m.kind == "run"), key=lambda m: m.cards[0])
    melds = tuple({"owner": (m.owner - seat) % n, "kind": m.kind, "cards": m.cards} for m in (*sets, *runs))
    clip = TOTALS_CLIP * TOTALS_SCALE
    must_use, banned = state.must_use, state.banned
    view = PublicView(
        hand=tuple(bits_to_cards(hands[seat])),
        staircase=tuple(state.staircase),
        melds=melds,
        known=tuple(tuple(bits_to_cards(known[s])) for s in rel[1:]),
        hand_sizes=tuple(hands[s].bit_count() for s in rel),
        stock_size=len(state.stock),
        phase=_PHASE_NAMES[state.phase],
        points=tuple(points[s] for s in rel),
        totals=tuple(int(min(clip, max(-clip, totals[s]))) for s in rel),
        dealer=(state.dealer - seat) % n,
        to_move=(state.current - seat) % n,
        num_players=n,
        must_use=None if must_use < 0 else must_use,
        banned=None if banned < 0 else banned,
        laid_before=tuple(laid[s] for s in rel),
    )
    table = encoder.table(state).features if table_melds else _NO_TABLE
    return view, table
