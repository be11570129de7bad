"""The observation tensor: one layout table read by both the writer and :func:`decode`.

An observation is a float32 vector of fixed size :data:`OBS_SIZE` for 2-4 players. Seats are
relative to the observer (0 = self, 1 = next to the left, ...) and padded to 4. It holds only what
the observer may know (docs/ARCHITECTURE.md "Environment"): never the stock order or an opponent's unseen cards.

Layout (:data:`LAYOUT`, ``name: shape`` - meaning):

- ``hand: (52,)`` - 1 for each card in the observer's hand.
- ``staircase: (52,)`` - depth / 52 of each staircase card (top card depth 1; RULES §4.1), else 0.
- ``meld_owner: (52, 4)`` - the card lies in a table meld laid first by relative seat k.
- ``table: (52, 7)`` - per card: in a set, in a run, the low end of its run, the high end of its
  run (melds never merge, §3.5), and fits a set / a run's low end / a run's high end now (§4.3).
- ``known: (3, 52)`` - cards each opponent publicly holds (taken from the staircase, not yet played).
- ``must_use: (52,)`` - the taken card the mover must meld or lay off at once (rum500, §4.2).
- ``banned: (52,)`` - the card the mover may not discard this turn (§4.4).
- ``hand_sizes: (4,)`` - cards in each seat's hand / 13.
- ``stock_size: (1,)`` - cards in the stock / 52.
- ``phase: (3,)`` - one-hot draw, meld/discard, deal over.
- ``points: (4,)`` - points booked this deal per seat / 100 (§5).
- ``totals: (4,)`` - game totals per seat / 1000, clipped to [-10, 10] (§7).
- ``dealer: (4,)``, ``to_move: (4,)`` - one-hot relative seats.
- ``seats: (4,)`` - 1 for the seats in play (2-4 players).
- ``laid_before: (4,)`` - the seat melded or laid off in an earlier turn of this deal (Rommé, §6.2).
- ``turn: (1,)`` - turns played this deal / ``max_turns`` (§6.5).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from treppen_env.cards import NUM_CARDS
from treppen_env.core.layout import NUM_PHASES
from treppen_env.core.observe import C_TOTALS_CLIP, OBS_PIECES, OBS_SEATS, TABLE_COLS, write_observation, write_table

if TYPE_CHECKING:  # the kernels' sources hold no engine (treppen_env/core/cache.py)
    from treppen_env.engine import GameState

LAYOUT_VERSION = 1
#: Columns of the ``table`` piece.
TABLE_COLUMNS = ("in_set", "in_run", "low_end", "high_end", "fits_set", "fits_low", "fits_high")
MAX_SEATS = 4
HAND_SCALE = 13.0
POINTS_SCALE = 100.0
TOTALS_SCALE = 1000.0
TOTALS_CLIP = 10.0

LAYOUT: tuple[tuple[str, tuple[int, ...]], ...] = (
    ("hand", (NUM_CARDS,)),
    ("staircase", (NUM_CARDS,)),
    ("meld_owner", (NUM_CARDS, MAX_SEATS)),
    ("table", (NUM_CARDS, 7)),
    ("known", (MAX_SEATS - 1, NUM_CARDS)),
    ("must_use", (NUM_CARDS,)),
    ("banned", (NUM_CARDS,)),
    ("hand_sizes", (MAX_SEATS,)),
    ("stock_size", (1,)),
    ("phase", (NUM_PHASES,)),
    ("points", (MAX_SEATS,)),
    ("totals", (MAX_SEATS,)),
    ("dealer", (MAX_SEATS,)),
    ("to_move", (MAX_SEATS,)),
    ("seats", (MAX_SEATS,)),
    ("laid_before", (MAX_SEATS,)),
    ("turn", (1,)),
)


def _offsets() -> dict[str, slice]:
    out, start = {}, 0
    for name, shape in LAYOUT:
        size = int(np.prod(shape))
        out[name] = slice(start, start + size)
        start += size
    return out


SLICES = _offsets()
#: Length of the observation vector.
OBS_SIZE = max(s.stop for s in SLICES.values())
_DEPTHS = (np.arange(NUM_CARDS + 1, dtype=np.float32) / NUM_CARDS).tolist()  # float32 values
#: Bounds of every entry (the totals are the only entries that may be negative or exceed 1).
OBS_LOW = -TOTALS_CLIP
OBS_HIGH = TOTALS_CLIP


def views(obs: np.ndarray) -> dict[str, np.ndarray]:
    """Named views (no copies) into a flat observation of shape (OBS_SIZE,), shaped as in LAYOUT."""
    return {name: obs[SLICES[name]].reshape(shape) for name, shape in LAYOUT}


class TableView(NamedTuple):
    """The table's per-card view (RULES §3, §4.3), as :func:`table_view` computes it.

    :param owned: uint8 (num_players, 52): row ``s`` marks the cards in melds that seat ``s`` laid
        first.
    :param features: float32 (52, 7): the ``table`` piece, columns :data:`TABLE_COLUMNS`.
    """

    owned: np.ndarray
    features: np.ndarray


#: Start of each piece :func:`treppen_env.core.observe.write_observation` writes, in the order of
#: ``observe.OBS_PIECES``; kernels that write observations take it and :data:`KERNEL_CONSTS`.
KERNEL_OFFSETS = np.array([SLICES[name].start for name in OBS_PIECES], dtype=np.int64)
#: The kernel's constants: staircase depths 0..52 (float32 values), then the scales.
KERNEL_CONSTS = np.array([*_DEPTHS, HAND_SCALE, POINTS_SCALE, TOTALS_SCALE, TOTALS_CLIP], dtype=np.float64)
_OWNER_SIZE = NUM_CARDS * MAX_SEATS
_TABLE_SIZE = _OWNER_SIZE + NUM_CARDS * len(TABLE_COLUMNS)
assert KERNEL_CONSTS.size == C_TOTALS_CLIP + 1 and OBS_SEATS == MAX_SEATS and len(TABLE_COLUMNS) == TABLE_COLS


def encode(state: GameState, seat: int) -> np.ndarray:
    """The observation of ``seat`` in ``state``: float32 array of shape (OBS_SIZE,), a new array.

    Depends only on the state and ``seat`` (docs/ARCHITECTURE.md "Environment"); opponents' hands enter only
    as sizes and as the cards they took from the staircase (``known``). Written in one kernel
    (:func:`treppen_env.core.observe.write_observation`) from the state's arrays.
    """
    obs = np.empty(OBS_SIZE, dtype=np.float32)
    position = state.arrays()
    u64, i8, i64 = position.u64, position.i8, position.i64
    write_observation(u64, i8, i64, state.tables.tab, seat, KERNEL_OFFSETS, KERNEL_CONSTS, obs)
    return obs


def table_view(state: GameState) -> TableView:
    """The table's per-card view, from the melds and the lay-off slots (RULES §3, §4.3)."""
    position = state.arrays()
    u64, i8, i64 = position.u64, position.i8, position.i64
    out = np.zeros(_TABLE_SIZE, dtype=np.float32)  # meld_owner, then table
    write_table(u64, i8, i64, 0, out, 0, _OWNER_SIZE)  # seat 0: relative seats are absolute
    owned = out[:_OWNER_SIZE].reshape(NUM_CARDS, MAX_SEATS)[:, : state.num_players].T.astype(np.uint8)
    return TableView(owned=owned, features=out[_OWNER_SIZE:].reshape(NUM_CARDS, len(TABLE_COLUMNS)))


class Encoder:
    """Writes the observations of one game (see :func:`encode`) and caches the table's per-card
    view (:func:`table_view`) on the state object and its ``table_version``, which the engine
    bumps at every deal, meld and lay-off, so a copied or replaced state is never served a stale
    table. Any state may be encoded at any time.
    """

    def __init__(self) -> None:
        self._table_key: tuple[GameState, int] | None = None
        self._table: TableView | None = None

    def table(self, state: GameState) -> TableView:
        """:func:`table_view` of ``state``, recomputed only after a lay (or for another state)."""
        key = self._table_key
        if key is None or key[0] is not state or key[1] != state.table_version or self._table is None:
            self._table = table_view(state)
            self._table_key = (state, state.table_version)
        return self._table

    def encode(self, state: GameState, seat: int) -> np.ndarray:
        """The observation of ``seat`` in ``state`` (:func:`encode`): float32 (OBS_SIZE,), a new array."""
        return encode(state, seat)


@dataclass(frozen=True)
class PublicView:
    """A readable form of one observation (:func:`decode`). Seats are relative to the observer.

    :param hand: the observer's cards (indices 0..51, ascending).
    :param staircase: staircase cards from bottom to top.
    :param melds: table melds as dicts ``owner`` (relative seat), ``kind`` (``"set"``/``"run"``)
        and ``cards`` (low end to high end).
    :param known: per opponent (relative seats 1..n-1) the cards it is publicly known to hold.
    :param hand_sizes: cards in each seat's hand.
    :param stock_size: cards in the stock.
    :param phase: ``"draw"``, ``"meld"`` or ``"deal_over"``.
    :param points: points booked this deal per seat.
    :param totals: game totals per seat.
    :param dealer: relative seat of the dealer; ``to_move``: relative seat to move.
    :param num_players: players in the game.
    """

    hand: tuple[int, ...]
    staircase: tuple[int, ...]
    melds: tuple[dict, ...]
    known: tuple[tuple[int, ...], ...]
    hand_sizes: tuple[int, ...]
    stock_size: int
    phase: str
    points: tuple[int, ...]
    totals: tuple[int, ...]
    dealer: int
    to_move: int
    num_players: int
    must_use: int | None
    banned: int | None
    laid_before: tuple[bool, ...]


def decode(observation: np.ndarray | dict) -> PublicView:
    """Turn an observation (the vector, or the env's dict holding it) into a :class:`PublicView`.

    :raises ValueError: when the vector does not have shape (OBS_SIZE,).
    """
    obs = observation["observation"] if isinstance(observation, dict) else observation
    obs = np.asarray(obs)
    if obs.shape != (OBS_SIZE,):
        raise ValueError(f"observation has shape {obs.shape}; expected ({OBS_SIZE},)")
    v = views(obs)
    n = round(float(v["seats"].sum()))
    depth = np.rint(v["staircase"] * NUM_CARDS).astype(np.intp)
    in_stairs = np.flatnonzero(depth)
    flags = [v[name].any() for name in ("must_use", "banned")]
    return PublicView(
        hand=tuple(np.flatnonzero(v["hand"]).tolist()),
        staircase=tuple(in_stairs[np.argsort(-depth[in_stairs])].tolist()),
        melds=_decode_melds(v),
        known=tuple(tuple(np.flatnonzero(row).tolist()) for row in v["known"][: n - 1]),
        hand_sizes=tuple(round(x * HAND_SCALE) for x in v["hand_sizes"][:n].tolist()),
        stock_size=round(float(v["stock_size"][0]) * NUM_CARDS),
        phase=("draw", "meld", "deal_over")[int(np.argmax(v["phase"]))],
        points=tuple(round(x * POINTS_SCALE) for x in v["points"][:n].tolist()),
        totals=tuple(round(x * TOTALS_SCALE) for x in v["totals"][:n].tolist()),
        dealer=int(np.argmax(v["dealer"])),
        to_move=int(np.argmax(v["to_move"])),
        num_players=n,
        must_use=int(np.argmax(v["must_use"])) if flags[0] else None,
        banned=int(np.argmax(v["banned"])) if flags[1] else None,
        laid_before=tuple(x > 0 for x in v["laid_before"][:n].tolist()),
    )


def _decode_melds(v: dict[str, np.ndarray]) -> tuple[dict, ...]:
    """Table melds from the ``table`` and ``meld_owner`` pieces: sets grouped by rank, runs walked
    from each low-end card up to the next high-end card (melds never merge, RULES §3.5)."""
    melds = []
    owner = np.argmax(v["meld_owner"], axis=1).tolist()
    table = v["table"]
    in_set = np.flatnonzero(table[:, 0]).tolist()
    for rank in sorted({c % 13 for c in in_set}):
        members = tuple(c for c in in_set if c % 13 == rank)
        melds.append({"owner": owner[members[0]], "kind": "set", "cards": members})
    in_run = table[:, 1].tolist()
    high_end = table[:, 3].tolist()
    for low in np.flatnonzero(table[:, 2]).tolist():
        run = [low]
        while not high_end[run[-1]]:
            nxt = run[-1] // 13 * 13 + (run[-1] % 13 + 1) % 13
            assert in_run[nxt], "run cards must be contiguous"
            run.append(nxt)
        melds.append({"owner": owner[low], "kind": "run", "cards": tuple(run)})
    return tuple(melds)
