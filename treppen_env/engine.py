"""The rules engine: one deal (and a game of deals) as a mutable state with an exact legal mask.

NumPy arrays and Numba kernels (no RL imports). :class:`GameState` deals (RULES §2), runs the turn
phases draw -> meld/discard (RULES §4) with booking at lay time (§5), ends deals (§6) and games
(§7). The position is a fixed layout of three arrays (:mod:`treppen_env.core.layout`); legality,
the actions and the end of a deal are kernels over them (:mod:`treppen_env.core.kernels`), one per
rule, and this module is their validated Python face: it deals, checks outside input
(:mod:`treppen_env.validation`), explains illegal actions (:mod:`treppen_env.explain`) and reads the
arrays back as cards. The agents' kernels run on a state through :mod:`treppen_env.agent_hooks`;
the engine holds none. Randomness comes only from the ``numpy.random.Generator`` passed in.
"""

from __future__ import annotations

import copy
import operator
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import overload

import numpy as np

from treppen_env import actions
from treppen_env.cards import (
    FULL_DECK,
    NUM_CARDS,
    NUM_RANKS,
    bits_to_cards,
    make_card,
    parse_card,
    parse_deck,
)
from treppen_env.core import kernels, layout
from treppen_env.core.tables import rules_table
from treppen_env.explain import illegal_reason
from treppen_env.melds import MELD_BITS
from treppen_env.rules import Rules
from treppen_env.validation import check_meld_row, validate_arrays

OUTCOMES = ("went_out", "romme", "stock_exhausted", "max_turns")


class Phase(IntEnum):
    """Where the player to move is in their turn (RULES §4)."""

    DRAW = layout.DRAW  #: draw from the stock or take from the staircase (§4.1)
    MELD = layout.MELD  #: meld, lay off or discard (§4.3-4.4)
    DEAL_OVER = layout.DEAL_OVER  #: the deal has ended (§6)


_KINDS = ("set", "run")  # meld kinds by their code in the meld table (layout.SET, layout.RUN)


class IllegalActionError(ValueError):
    """An action that the rules forbid in the current position; the message says why."""


@dataclass
class TableMeld:
    """A meld on the table. ``low`` is the rank of a set, or the low-end rank of a run.

    ``bits`` is the card bitset; a run holds ranks ``low .. low + length - 1`` (mod 13).
    """

    owner: int
    kind: str
    suit: int
    low: int
    length: int
    bits: int

    @property
    def cards(self) -> tuple[int, ...]:
        """Cards from the low end to the high end (a set in suit order)."""
        if self.kind == "set":
            return tuple(bits_to_cards(self.bits))
        return tuple(make_card(self.suit, (self.low + i) % NUM_RANKS) for i in range(self.length))


class _SeatBits(Sequence[int]):
    """Per-seat card bitsets of a state (hands or known cards), read and written as Python ints.

    A live view of the ``u64`` array: ``state.hands[s]`` reads seat ``s``'s hand and
    ``state.hands[s] = bits`` writes it (the state is validated again before it is played on).
    """

    __slots__ = ("_base", "_state")

    def __init__(self, state: GameState, base: int):
        self._state = state
        self._base = base

    def __len__(self) -> int:
        return self._state.num_players

    @overload
    def __getitem__(self, index: int) -> int: ...
    @overload
    def __getitem__(self, index: slice) -> list[int]: ...
    def __getitem__(self, index: int | slice) -> int | list[int]:
        state = self._state
        bits = state._list_u64 if state._list_u64 is not None else state._bitsets()
        if type(index) is int and 0 <= index < state.num_players:  # the common case, first
            return bits[self._base + index]
        if isinstance(index, slice):
            return bits[self._base : self._base + len(self)][index]
        return bits[self._base + seat_index(operator.index(index), len(self))]

    def __setitem__(self, index: int, bits: int) -> None:
        self._state._u64[self._base + seat_index(index, len(self))] = _as_bits(bits)
        self._state._touch()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(list(self))


class _CardRow(Sequence[int]):
    """The staircase or the stock of a state, bottom to top, as a live sequence of card indices
    (a view of the ``i8`` array and its length slot; item assignment writes through)."""

    __slots__ = ("_len_slot", "_start", "_state")

    def __init__(self, state: GameState, start: int, len_slot: int):
        self._state = state
        self._start = start
        self._len_slot = len_slot

    def __len__(self) -> int:
        return self._state._ints()[self._len_slot]

    @overload
    def __getitem__(self, index: int) -> int: ...
    @overload
    def __getitem__(self, index: slice) -> list[int]: ...
    def __getitem__(self, index: int | slice) -> int | list[int]:
        return self._state._smalls()[self._start : self._start + len(self)][index]

    def __setitem__(self, index: int, card: int) -> None:
        n = len(self)
        if not -n <= index < n:
            raise IndexError(f"card index {index} out of range for {n} cards")
        self._state._i8[self._start + index % n] = parse_card(card)
        self._state._touch()

    def __iter__(self) -> Iterator[int]:
        return iter(self[:])

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and self[:] == list(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(self[:])


def seat_index(index: int, n: int) -> int:
    """``index`` as a seat 0..n-1 (negative counts from the last seat), or IndexError."""
    if not -n <= index < n:
        raise IndexError(f"seat {index} out of range for {n} players")
    return index % n


def _as_bits(bits: int) -> int:
    bits = operator.index(bits)
    if not 0 <= bits <= FULL_DECK:
        raise ValueError(f"card bitset {bits:#x} is not a set of cards 0..{NUM_CARDS - 1}")
    return bits


def _scalar(slot: int, doc: str) -> property:
    """A property reading and writing the int64 slot ``slot``."""

    def get(self: GameState) -> int:
        return self._ints()[slot]

    def put(self: GameState, value: int) -> None:
        self._i64[slot] = operator.index(value)
        self._touch()

    return property(get, put, doc=doc)


def _per_seat(slot: int, doc: str, kind: type = int) -> property:
    """A property reading (as a new list) and writing the int64 per-seat slots from ``slot``."""

    def get(self: GameState) -> list:
        values = self._ints()[slot : slot + self.num_players]
        return values if kind is int else [kind(v) for v in values]

    def put(self: GameState, values: Sequence[int]) -> None:
        if len(values) != self.num_players:
            raise ValueError(f"{len(values)} values for {self.num_players} seats")
        self._i64[slot : slot + self.num_players] = [operator.index(v) for v in values]
        self._touch()

    return property(get, put, doc=doc)


_PHASES = (Phase.DRAW, Phase.MELD, Phase.DEAL_OVER)


class GameState:
    """A game of Treppenrommé in progress, positioned inside one deal.

    Seats are 0..n-1 clockwise. The position lives in three NumPy arrays laid out as
    :mod:`treppen_env.core.layout` lists, and every rule is a compiled kernel of
    :mod:`treppen_env.core.kernels` over them; this class is their validated, readable face.
    Hands, melds' cards and the publicly known cards read as 52-bit ``int`` bitsets (see
    :mod:`treppen_env.cards`); the staircase and the stock read as sequences bottom to top (the
    stock's last card is its top). Fields may be assigned (tests, determinization): the state is
    then validated (:meth:`validate`) before the next legal mask or action.

    :param rules: the rules (see :func:`treppen_env.rules.make_rules`).
    :param num_players: 2 to 4.
    :param rng: the only source of randomness (deals and reshuffles).
    :raises ValueError: for an impossible player count (RULES §8).
    """

    def __init__(self, rules: Rules, num_players: int, rng: np.random.Generator):
        rules.check_players(num_players)
        self.rules = rules
        self.num_players = num_players
        self.rng = rng
        self._tab = rules_table(rules)
        position = layout.new_arrays(num_players)
        self._u64, self._i8, self._i64 = position.u64, position.i8, position.i64
        self._mask = np.zeros(actions.NUM_ACTIONS, dtype=np.int8)
        self._spare = np.zeros(actions.NUM_ACTIONS, dtype=np.int8)
        self._mask_valid = False
        self._dirty = False
        self._stale()
        self._views()

    def _views(self) -> None:
        """The live views of the per-seat bitsets (made once per state object)."""
        self._hands = _SeatBits(self, layout.HAND)
        self._known = _SeatBits(self, layout.KNOWN)

    # ------------------------------------------------------------------ deal (RULES §2)
    def deal(self, dealer: int = 0, deck: Sequence[int | str] | None = None) -> None:
        """Start a new deal with ``dealer`` dealing from ``deck`` (top first) or a shuffled pack.

        The deck is dealt one card at a time clockwise starting left of the dealer (RULES §2.2),
        the next card starts the staircase (§2.3) and the rest is the stock, top first.

        :raises ValueError: for a dealer outside the seats or a deck that is not the 52 cards.
        """
        n = self.num_players
        if isinstance(dealer, bool) or not isinstance(dealer, (int, np.integer)) or not 0 <= dealer < n:
            raise ValueError(f"dealer={dealer!r} is not a seat 0..{n - 1}")
        cards = self.rng.permutation(NUM_CARDS).tolist() if deck is None else parse_deck(deck)
        order = np.array(cards, dtype=np.int8)  # reset in place: arrays() stay the state's
        per_hand, first = self.rules.cards_dealt(n), self.rules.dealer_plays_first
        kernels.deal(self._u64, self._i8, self._i64, order, int(dealer), per_hand, first)
        self._touch()
        self._check()

    def next_deal(self, deck: Sequence[int | str] | None = None) -> None:
        """Deal the next deal of the game, the deal passing one seat to the left (RULES §2.1)."""
        self.deal((self.dealer + 1) % self.num_players, deck)

    @classmethod
    def from_position(
        cls,
        rules: Rules,
        rng: np.random.Generator,
        *,
        dealer: int,
        current: int,
        phase: Phase,
        hands: Sequence[int],
        staircase: Sequence[int],
        stock: Sequence[int],
        melds: Sequence[TableMeld] = (),
        known: Sequence[int] | None = None,
        points: Sequence[int] | None = None,
        totals: Sequence[int] | None = None,
        laid_before: Sequence[bool] | None = None,
        laid_this_turn: bool = False,
        banned: int = -1,
        must_use: int = -1,
        turn: int = 0,
        deals_played: int = 0,
    ) -> GameState:
        """A state inside a deal built from its parts (a determinization, a test position),
        validated before anything is played on it.

        :param hands: one card bitset per seat (the number of seats is ``len(hands)``).
        :param staircase: bottom to top; ``stock``: bottom to top (the last card is the top).
        :raises ValueError: naming the problem when the parts are not a position of a deal: a
            card in two places or in none, a meld that is not one, a must-use or banned card
            that is not in the mover's hand, ... (see :meth:`validate`).
        """
        n = len(hands)
        state = cls(rules, n, rng)
        state._i64[layout.DEALT] = 1
        state.dealer, state.current, state.phase = dealer, current, phase
        state.hands = hands
        state.staircase = staircase
        state.stock = stock
        state.melds = melds
        state.known = [0] * n if known is None else known
        state.points = [0] * n if points is None else points
        state.totals = [0] * n if totals is None else totals
        state.laid_before = [False] * n if laid_before is None else laid_before
        state.laid_this_turn = laid_this_turn
        state.banned, state.must_use, state.turn = banned, must_use, turn
        state.deals_played = deals_played
        state._check()
        return state

    # ------------------------------------------------------------------ fields
    dealer = _scalar(layout.DEALER, "The dealing seat (RULES §2.1).")
    current = _scalar(layout.CURRENT, "The seat to move.")
    turn = _scalar(layout.TURN, "Turns completed this deal (RULES §6.5).")
    banned = _scalar(layout.BANNED, "The card the mover may not discard this turn, -1 for none (RULES §4.4).")
    must_use = _scalar(layout.MUST_USE, "The taken card the mover must play at once, -1 for none (RULES §4.2).")
    deals_played = _scalar(layout.DEALS_PLAYED, "Deals finished in this game (RULES §7).")
    points = _per_seat(layout.POINTS, "Points booked this deal per seat (RULES §5); a new list.")
    totals = _per_seat(layout.TOTALS, "Game totals per seat (RULES §7.1); a new list.")
    laid_before = _per_seat(
        layout.LAID_BEFORE, "Per seat: melded or laid off in an earlier turn of this deal (RULES §6.2).", bool
    )

    @property
    def phase(self) -> Phase:
        """Where the player to move is in their turn (RULES §4)."""
        return _PHASES[self._ints()[layout.PHASE]]

    @phase.setter
    def phase(self, value: int) -> None:
        self._i64[layout.PHASE] = Phase(value)
        self._touch()

    @property
    def laid_this_turn(self) -> bool:
        """Whether the mover has melded or laid off this turn (RULES §6.2)."""
        return bool(self._ints()[layout.LAID_THIS_TURN])

    @laid_this_turn.setter
    def laid_this_turn(self, value: bool) -> None:
        self._i64[layout.LAID_THIS_TURN] = bool(value)
        self._touch()

    @property
    def hands(self) -> _SeatBits:
        """Each seat's hand as a card bitset (a live view; assign an item or the whole list)."""
        self._need_deal("hands")
        return self._hands

    @hands.setter
    def hands(self, hands: Sequence[int]) -> None:
        self._set_seat_bits(layout.HAND, hands)

    @property
    def known(self) -> _SeatBits:
        """Per seat the cards it took from the staircase and still holds (public; RULES §4.1)."""
        self._need_deal("known")
        return self._known

    @known.setter
    def known(self, known: Sequence[int]) -> None:
        self._set_seat_bits(layout.KNOWN, known)

    @property
    def staircase(self) -> _CardRow:
        """The staircase, bottom to top (a live view; RULES §2.3, §4.1)."""
        self._need_deal("staircase")
        return _CardRow(self, layout.STAIRS, layout.STAIRS_LEN)

    @staircase.setter
    def staircase(self, cards: Sequence[int]) -> None:
        self._set_cards(layout.STAIRS, layout.STAIRS_LEN, cards)

    @property
    def stock(self) -> _CardRow:
        """The stock, bottom to top: its last card is the top (a live view; RULES §2.2)."""
        self._need_deal("stock")
        return _CardRow(self, layout.STOCK, layout.STOCK_LEN)

    @stock.setter
    def stock(self, cards: Sequence[int]) -> None:
        self._set_cards(layout.STOCK, layout.STOCK_LEN, cards)

    @property
    def melds(self) -> list[TableMeld]:
        """The table melds in the order laid (new :class:`TableMeld` objects: changing one does not
        change the state; assign the whole list to do that)."""
        self._need_deal("melds")
        k = self._ints()[layout.NUM_MELDS]
        rows = self._smalls()[layout.MELDS : layout.MELDS + layout.MELD_COLS * k]
        bits = self._bitsets()[layout.MELD_BITS : layout.MELD_BITS + k]
        c = layout.MELD_COLS
        return [
            TableMeld(rows[c * i], _KINDS[rows[c * i + 1]], rows[c * i + 2], rows[c * i + 3], rows[c * i + 4], bits[i])
            for i in range(k)
        ]

    @melds.setter
    def melds(self, melds: Sequence[TableMeld]) -> None:
        if len(melds) > layout.MAX_MELDS:
            raise ValueError(f"{len(melds)} table melds: at most {layout.MAX_MELDS} fit on the table")
        for i, m in enumerate(melds):
            if m.kind not in _KINDS:
                raise ValueError(f"table meld {i} has kind {m.kind!r}; expected 'set' or 'run'")
            row = layout.MELDS + layout.MELD_COLS * i
            for col, value in (
                (layout.M_OWNER, m.owner),
                (layout.M_SUIT, m.suit),
                (layout.M_LOW, m.low),
                (layout.M_LENGTH, m.length),
            ):
                if not -1 <= value <= NUM_RANKS:
                    raise ValueError(f"table meld {i} has {value} in a field that holds -1..13: {m}")
                self._i8[row + col] = value
            self._i8[row + layout.M_KIND] = _KINDS.index(m.kind)
            self._u64[layout.MELD_BITS + i] = _as_bits(m.bits)
        self._i64[layout.NUM_MELDS] = len(melds)
        self._touch()

    @property
    def table_version(self) -> int:
        """Bumped at every deal, meld and lay-off: caches of the table are keyed on it."""
        return self._ints()[layout.TABLE_VERSION]

    @property
    def layoff_slots(self) -> tuple[int, int, int]:
        """Card bitsets that can be laid off now onto a set, a run's low end and a run's high end
        (RULES §4.3). A card on the table is never a slot."""
        self._check()
        s = self._bitsets()[layout.SLOTS : layout.SLOTS + 3]
        return (s[0], s[1], s[2])

    @property
    def outcome(self) -> str | None:
        """How the deal ended (one of :data:`OUTCOMES`), ``None`` while it runs (RULES §6)."""
        code = self._ints()[layout.OUTCOME]
        return None if code == layout.NO_OUTCOME else OUTCOMES[code - 1]

    @property
    def went_out(self) -> int | None:
        """The seat that went out, else ``None`` (RULES §6.1)."""
        seat = self._ints()[layout.WENT_OUT]
        return None if seat < 0 else seat

    @property
    def deal_points(self) -> list[int] | None:
        """The ended deal's points per seat (RULES §6.2-6.4), ``None`` while it runs."""
        ints = self._ints()
        if ints[layout.OUTCOME] == layout.NO_OUTCOME:
            return None
        return ints[layout.DEAL_POINTS : layout.DEAL_POINTS + self.num_players]

    def arrays(self) -> layout.Position:
        """The validated arrays of the state (:class:`treppen_env.core.layout.Position`), not copies:
        for kernels that read them; write only through the kernels."""
        self._check()
        self._stale()  # the caller may write
        return layout.Position(u64=self._u64, i8=self._i8, i64=self._i64)

    def kernel_wrote(self) -> None:
        """Note that a kernel changed the position through :meth:`arrays` (a playout, a redeal):
        the legal mask and the arrays' Python lists are computed afresh when next read."""
        self._mask_valid = False
        self._stale()

    @property
    def tables(self) -> layout.Tables:
        """The rules table and the candidate melds' bitsets the kernels read
        (:class:`treppen_env.core.layout.Tables`)."""
        return layout.Tables(tab=self._tab, meld_bits=MELD_BITS)

    def _need_deal(self, name: str) -> None:
        if not self._ints()[layout.DEALT]:
            raise AttributeError(f"GameState.{name}: no deal has been dealt yet (call deal())")

    def _set_seat_bits(self, base: int, values: Sequence[int]) -> None:
        if len(values) != self.num_players:
            raise ValueError(f"{len(values)} card bitsets for {self.num_players} seats")
        for s, bits in enumerate(values):
            self._u64[base + s] = _as_bits(bits)
        self._touch()

    def _set_cards(self, start: int, len_slot: int, cards: Sequence[int]) -> None:
        if len(cards) > NUM_CARDS:
            raise ValueError(f"{len(cards)} cards: a pile holds at most {NUM_CARDS}")
        if not all(type(c) is int and 0 <= c < NUM_CARDS for c in cards):  # else text or a NumPy integer
            cards = [parse_card(c) for c in cards]
        self._i8[start : start + len(cards)] = cards
        self._i64[len_slot] = len(cards)
        self._touch()

    def _touch(self) -> None:
        """Note that the arrays were written from outside the kernels: validate before playing."""
        self._dirty = True
        self._mask_valid = False
        self._stale()

    def _stale(self) -> None:
        """Drop the arrays' Python lists (:meth:`_ints` ...) after the arrays changed."""
        self._list_u64: list[int] | None = None
        self._list_i8: list[int] | None = None
        self._list_i64: list[int] | None = None

    def _bitsets(self) -> list[int]:
        """The ``u64`` array as a list of Python ints, made once per change of the arrays."""
        if self._list_u64 is None:
            self._list_u64 = self._u64.tolist()
        return self._list_u64

    def _smalls(self) -> list[int]:
        """The ``i8`` array as a list of Python ints, made once per change of the arrays."""
        if self._list_i8 is None:
            self._list_i8 = self._i8.tolist()
        return self._list_i8

    def _ints(self) -> list[int]:
        """The ``i64`` array as a list of Python ints, made once per change of the arrays."""
        if self._list_i64 is None:
            self._list_i64 = self._i64.tolist()
        return self._list_i64

    def _check(self) -> None:
        """Validate the arrays once after outside writes and rebuild the table's lay-off slots."""
        if self._dirty:
            self.validate()
            kernels.refresh_table(self._u64, self._i8, self._i64, self._tab)
            self._dirty = False
            self._stale()

    def validate(self) -> None:
        """Check that the arrays hold a position of a deal (RULES §1.1, §3, §4), before any kernel
        runs on them.

        :raises ValueError: naming the problem: a card in two places or in none, a card index
            outside 0..51, a table meld that is not a legal meld, known cards not in their holder's
            hand, a must-use or banned card that is not the mover's, a counter out of range.
        """
        validate_arrays(self.rules, self.num_players, self._u64, self._i8, self._i64)

    # ------------------------------------------------------------------ queries
    @property
    def deal_over(self) -> bool:
        """Whether the current deal has ended (RULES §6)."""
        return self._ints()[layout.PHASE] == layout.DEAL_OVER

    def game_over(self) -> bool:
        """Whether the game has ended: a total reached the target with one highest (RULES §7.1)."""
        if not self.deal_over:
            return False
        totals = self.totals
        best = max(totals)
        return best >= self.rules.target and totals.count(best) == 1

    def winner(self) -> int | None:
        """The seat with the highest total once the game is over, else ``None`` (RULES §7.1)."""
        return self.totals.index(max(self.totals)) if self.game_over() else None

    def settlement(self) -> list[int]:
        """Points each seat collects at the end of a game: the winner collects from each opponent
        the difference of their totals, the others pay it (RULES §7.2). Zero before the end."""
        win = self.winner()
        if win is None:
            return [0] * self.num_players
        totals = self.totals
        pay = [totals[win] - t for t in totals]
        return [sum(pay) if i == win else -pay[i] for i in range(self.num_players)]

    def legal_mask(self) -> np.ndarray:
        """Legal actions of the player to move: int8 array of shape (898,), 1 = legal.

        Exact (RULES §4): an action is legal if and only if its bit is 1, and at least one bit is
        set until the deal ends. The array is owned by the state: copy it before changing it.
        """
        if not self._mask_valid:
            self._check()
            kernels.legal_mask(self._u64, self._i8, self._i64, self._tab, MELD_BITS, self._mask)
            self._mask_valid = True
        return self._mask

    def legal_actions(self) -> list[int]:
        """Sorted legal action indices of the player to move."""
        return np.flatnonzero(self.legal_mask()).tolist()

    def clone(self, rng: np.random.Generator | None = None) -> GameState:
        """An independent copy that plays on exactly as this state would (the inner loop of search).

        Copies the three state arrays and the mask; the rules and their table are shared.

        :param rng: the copy's generator (reshuffles, RULES §6.4); ``None`` copies this state's
            generator, so the copy also reshuffles as this state would.
        """
        new = object.__new__(GameState)
        new.__dict__.update(self.__dict__)
        new.rng = copy.deepcopy(self.rng) if rng is None else rng
        new._u64 = self._u64.copy()
        new._i8 = self._i8.copy()
        new._i64 = self._i64.copy()
        new._mask = self._mask.copy()
        new._spare = np.empty_like(self._spare)
        new._stale()
        new._views()
        return new

    def _can_play(self, card: int, cards: int) -> bool:
        """Whether ``card`` can be melded with ``cards`` or laid off at once (RULES §4.2)."""
        self._check()
        return bool(kernels.can_play(self._u64, self._tab, MELD_BITS, card, np.uint64(cards)))

    # ------------------------------------------------------------------ actions
    def apply(self, action: int) -> None:
        """Play ``action`` (an index 0..897) for the player to move.

        :raises IllegalActionError: (a ``ValueError``) naming the action, the phase and the rule
            it breaks, when the action is not legal here; the state is then unchanged.
        """
        try:
            action = operator.index(action)
        except TypeError:
            raise IllegalActionError(f"action {action!r} is not an action index 0..{actions.NUM_ACTIONS - 1}") from None
        mask = self._mask if self._mask_valid else self.legal_mask()
        if not (0 <= action < actions.NUM_ACTIONS) or not mask[action]:
            raise IllegalActionError(illegal_reason(self, action))
        spare = self._spare
        status = kernels.step(self._u64, self._i8, self._i64, self._tab, MELD_BITS, spare, action)
        self._stale()
        if status == kernels.STEP_RESHUFFLE:
            self._reshuffle(spare)
            self._stale()
        self._spare, self._mask = mask, spare

    def _reshuffle(self, mask: np.ndarray) -> None:
        """RULES §6.4, ``stock_exhausted="reshuffle"``: the staircase except its top card, shuffled
        by the state's generator, becomes the stock; the turn then ends."""
        rest = self.staircase[:-1]
        stock = [int(c) for c in self.rng.permutation(rest)]
        if sorted(stock) != sorted(rest):
            raise ValueError("the reshuffled stock is not the staircase's cards below its top (RULES §6.4)")
        kernels.reshuffle(self._u64, self._i8, self._i64, self._tab, MELD_BITS, mask, np.array(stock, dtype=np.int8))


def can_play_on(rules: Rules, melds: Sequence[TableMeld], card: int, cards: int) -> bool:
    """Whether ``card`` can be laid off onto the table ``melds`` or melded with the bitset
    ``cards`` (which holds it) under ``rules`` (RULES §4.2): the must-use test on a table alone.

    :raises ValueError: when a meld is not a legal meld (RULES §3.1-3.2).
    """
    probe = GameState(rules, max(2, 1 + max((m.owner for m in melds), default=0)), np.random.default_rng(0))
    probe.melds = melds
    for i in range(len(melds)):
        check_meld_row(rules, probe.num_players, i, probe._i8, int(probe._u64[layout.MELD_BITS + i]))
    kernels.refresh_table(probe._u64, probe._i8, probe._i64, probe._tab)
    return bool(kernels.can_play(probe._u64, probe._tab, MELD_BITS, card, np.uint64(cards)))
