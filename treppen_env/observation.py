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
from typing import NamedTuple

import numpy as np

from treppen_env.cards import NUM_CARDS, NUM_RANKS, make_card
from treppen_env.engine import GameState, Phase

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
    ("phase", (len(Phase),)),
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


def _bits_rows(*bitsets: int) -> np.ndarray:
    """0/1 uint8 array of shape (len(bitsets), 52) of card bitsets, in one unpacking."""
    raw = np.frombuffer(b"".join(b.to_bytes(8, "little") for b in bitsets), np.uint8)
    return np.unpackbits(raw.reshape(len(bitsets), 8), axis=1, bitorder="little")[:, :NUM_CARDS]


class TableView(NamedTuple):
    """The table's per-card view (RULES §3, §4.3), as :func:`table_view` computes it.

    :param owned: uint8 (num_players, 52): row ``s`` marks the cards in melds that seat ``s`` laid
        first.
    :param features: float32 (52, 7): the ``table`` piece, columns :data:`TABLE_COLUMNS`.
    """

    owned: np.ndarray
    features: np.ndarray


def table_view(state: GameState) -> TableView:
    """The table's per-card view, from the melds and the lay-off slots (RULES §3, §4.3)."""
    owned = [0] * state.num_players
    in_set = in_run = low_end = high_end = 0
    for meld in state.melds:
        owned[meld.owner] |= meld.bits
        if meld.kind == "set":
            in_set |= meld.bits
        else:
            in_run |= meld.bits
            low_end |= 1 << make_card(meld.suit, meld.low)
            high_end |= 1 << make_card(meld.suit, (meld.low + meld.length - 1) % NUM_RANKS)
    rows = _bits_rows(*owned, in_set, in_run, low_end, high_end, *state.layoff_slots)
    n = state.num_players
    return TableView(rows[:n], np.ascontiguousarray(rows[n:].T, dtype=np.float32))


# Offsets of the pieces the encoder writes entry by entry.
_HAND = SLICES["hand"].start
_STAIRS = SLICES["staircase"].start
_OWNER = SLICES["meld_owner"]
_TABLE = SLICES["table"]
_KNOWN = SLICES["known"].start
_MUST_USE = SLICES["must_use"].start
_BANNED = SLICES["banned"].start
_HAND_SIZES = SLICES["hand_sizes"].start
_STOCK = SLICES["stock_size"].start
_PHASE = SLICES["phase"].start
_POINTS = SLICES["points"].start
_TOTALS = SLICES["totals"].start
_DEALER = SLICES["dealer"].start
_TO_MOVE = SLICES["to_move"].start
_SEATS = SLICES["seats"].start
_LAID = SLICES["laid_before"].start
_TURN = SLICES["turn"].start


class _SeatView:
    """One seat's observation buffer and the state values it was last written from (the values
    of an all-zero buffer at first, so the first encoding writes everything from scratch)."""

    __slots__ = (
        "banned",
        "dealer",
        "hand",
        "known",
        "laid_before",
        "must_use",
        "obs",
        "phase",
        "points",
        "stairs",
        "table",
        "to_move",
        "totals",
    )

    def __init__(self, num_players: int) -> None:
        self.obs = np.zeros(OBS_SIZE, dtype=np.float32)
        self.obs[_SEATS : _SEATS + num_players] = 1.0
        self.hand = 0
        self.known = [0] * num_players  # by relative seat; entry 0 unused
        self.stairs: list[int] = []
        self.table: tuple[GameState, int] | None = None
        self.must_use = self.banned = self.phase = self.dealer = self.to_move = -1
        self.points = [0] * num_players  # by absolute seat, as in the state
        self.totals = [0] * num_players
        self.laid_before = [False] * num_players


def _write_bits(obs: np.ndarray, start: int, old: int, new: int) -> None:
    """Write the entries ``start + card`` of the cards whose bit differs between ``old`` and ``new``."""
    changed = old ^ new
    while changed:
        low = changed & -changed
        card = low.bit_length() - 1
        obs[start + card] = 1.0 if new & low else 0.0
        changed ^= low


def _move_one_hot(obs: np.ndarray, start: int, old: int, new: int) -> None:
    """Move a one-hot entry of the piece at ``start`` from index ``old`` to ``new`` (-1: none)."""
    if old >= 0:
        obs[start + old] = 0.0
    if new >= 0:
        obs[start + new] = 1.0


class Encoder:
    """Writes the observations of one game, each seat's from what changed since its last one.

    Every seat keeps a buffer and the state values it was written from; :meth:`encode` compares
    the state with them (card bitsets by XOR, lists by equality) and rewrites only the entries
    that differ, so a step costs what the moves since that seat's last observation changed
    (docs/ARCHITECTURE.md "Performance notes"). The table's per-card view (:func:`table_view`) is computed once
    per lay: it is cached on the state object and its ``table_version``, which the engine bumps at
    every deal, meld and lay-off, so a copied or replaced state is never served a stale table.
    The encoder holds no state of its own that the observation depends on: any state may be
    encoded at any time, and a fresh encoder writes from scratch.
    """

    def __init__(self) -> None:
        self._table_key: tuple[GameState, int] | None = None
        self._table: TableView | None = None
        self._seats: dict[tuple[int, int], _SeatView] = {}

    def table(self, state: GameState) -> TableView:
        """:func:`table_view` of ``state``, recomputed only after a lay (or for another state)."""
        key = self._table_key
        if key is None or key[0] is not state or key[1] != state.table_version or self._table is None:
            self._table = table_view(state)
            self._table_key = (state, state.table_version)
        return self._table

    def encode(self, state: GameState, seat: int) -> np.ndarray:
        """The observation of ``seat`` in ``state``: float32 array of shape (OBS_SIZE,), a new array.

        Depends only on the state and ``seat`` (docs/ARCHITECTURE.md "Environment"); opponents' hands enter only
        as sizes and as the cards they took from the staircase (``known``).
        """
        n = state.num_players
        view = self._seats.get((n, seat))
        if view is None:
            view = self._seats[(n, seat)] = _SeatView(n)
        obs = view.obs
        hands = state.hands
        if hands[seat] != view.hand:
            _write_bits(obs, _HAND, view.hand, hands[seat])
            view.hand = hands[seat]
        known = state.known
        for k in range(1, n):
            bits = known[(seat + k) % n]
            if bits != view.known[k]:
                _write_bits(obs, _KNOWN + (k - 1) * NUM_CARDS, view.known[k], bits)
                view.known[k] = bits
        stairs = state.staircase
        if stairs != view.stairs:
            obs[_STAIRS : _STAIRS + NUM_CARDS] = 0.0
            depth = len(stairs)
            for card in stairs:  # bottom to top; entry by entry beats building an index array here
                obs[_STAIRS + card] = _DEPTHS[depth]
                depth -= 1
            view.stairs = list(stairs)
        self._write_table(view, state, seat)
        _write_scalars(view, state, seat)
        return obs.copy()

    def _write_table(self, view: _SeatView, state: GameState, seat: int) -> None:
        """The ``meld_owner`` and ``table`` pieces, rewritten when the table changed (RULES §4.3)."""
        key = (state, state.table_version)
        if view.table is not None and view.table[0] is state and view.table[1] == key[1]:
            return
        n = state.num_players
        owned, features = self.table(state)
        # meld_owner (52 x 4): column k marks the cards of relative seat k's melds
        view.obs[_OWNER].reshape(NUM_CARDS, MAX_SEATS)[:, :n] = owned[[(seat + k) % n for k in range(n)]].T
        view.obs[_TABLE] = features.ravel()
        view.table = key


def encode(state: GameState, seat: int) -> np.ndarray:
    """The observation of ``seat`` in ``state``, written from scratch: float32 array of shape
    (OBS_SIZE,). See :meth:`Encoder.encode`; an env keeps one :class:`Encoder` to reuse work."""
    return Encoder().encode(state, seat)


def _write_scalars(view: _SeatView, state: GameState, seat: int) -> None:
    """Write the pieces from ``must_use`` on (one-card, per-seat and scalar) into ``view``'s buffer."""
    obs = view.obs
    n = state.num_players
    hands = state.hands
    if state.must_use != view.must_use:
        _move_one_hot(obs, _MUST_USE, view.must_use, state.must_use)
        view.must_use = state.must_use
    if state.banned != view.banned:
        _move_one_hot(obs, _BANNED, view.banned, state.banned)
        view.banned = state.banned
    for k in range(n):
        obs[_HAND_SIZES + k] = hands[(seat + k) % n].bit_count() / HAND_SCALE
    obs[_STOCK] = len(state.stock) / NUM_CARDS
    if state.phase != view.phase:
        _move_one_hot(obs, _PHASE, view.phase, state.phase)
        view.phase = int(state.phase)
    dealer = (state.dealer - seat) % n
    if dealer != view.dealer:
        _move_one_hot(obs, _DEALER, view.dealer, dealer)
        view.dealer = dealer
    to_move = (state.current - seat) % n
    if to_move != view.to_move:
        _move_one_hot(obs, _TO_MOVE, view.to_move, to_move)
        view.to_move = to_move
    if state.points != view.points:
        view.points = list(state.points)
        obs[_POINTS : _POINTS + n] = [state.points[(seat + k) % n] / POINTS_SCALE for k in range(n)]
    if state.totals != view.totals:
        view.totals = list(state.totals)
        obs[_TOTALS : _TOTALS + n] = [
            min(TOTALS_CLIP, max(-TOTALS_CLIP, state.totals[(seat + k) % n] / TOTALS_SCALE)) for k in range(n)
        ]
    if state.laid_before != view.laid_before:
        view.laid_before = list(state.laid_before)
        obs[_LAID : _LAID + n] = [state.laid_before[(seat + k) % n] for k in range(n)]
    obs[_TURN] = state.turn / state.rules.max_turns


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
