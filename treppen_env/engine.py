"""The rules engine: one deal (and a game of deals) as a mutable state with an exact legal mask.

Pure Python and NumPy (no RL imports). :class:`GameState` deals (RULES §2), runs the turn phases
draw -> meld/discard (RULES §4) with booking at lay time (§5), ends deals (§6) and games (§7).
Every rule is applied in one ``_apply_<phase>`` / ``_legal_<phase>`` method pair per phase.
Randomness comes only from the ``numpy.random.Generator`` passed in.
"""

from __future__ import annotations

import copy
import operator
from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum

import numpy as np

from treppen_env import actions as A
from treppen_env.cards import (
    NUM_CARDS,
    NUM_RANKS,
    bits_to_cards,
    card_flags,
    card_to_str,
    hand_points,
    make_card,
    parse_deck,
)
from treppen_env.melds import (
    MAX_RUN,
    MELDS,
    layoff_value,
    meld_values,
    melds_within,
)
from treppen_env.rules import Rules

OUTCOMES = ("went_out", "romme", "stock_exhausted", "max_turns")


class Phase(IntEnum):
    """Where the player to move is in their turn (RULES §4)."""

    DRAW = 0  #: draw from the stock or take from the staircase (§4.1)
    MELD = 1  #: meld, lay off or discard (§4.3-4.4)
    DEAL_OVER = 2  #: the deal has ended (§6)


# The members as module globals: the hot path compares phases several times a step, and a class
# attribute of an Enum costs several times a global's lookup on Python 3.11.
_DRAW, _MELD, _DEAL_OVER = Phase.DRAW, Phase.MELD, Phase.DEAL_OVER


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


class GameState:
    """A game of Treppenrommé in progress, positioned inside one deal.

    Seats are 0..n-1 clockwise. Hands, melds' cards and the publicly known cards are 52-bit
    ``int`` bitsets (see :mod:`treppen_env.cards`); the staircase is a list bottom to top and the
    stock a list whose last element is the top card.

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
        self.totals = [0] * num_players
        self.deals_played = 0
        self._values = meld_values(rules)
        self._mask = np.zeros(A.NUM_ACTIONS, dtype=np.int8)
        self._mask_valid = False
        self.table_version = 0

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
        per_hand = self.rules.cards_dealt(n)
        self.dealer = int(dealer)
        self.hands = [0] * n
        for i, card in enumerate(cards[: n * per_hand]):
            self.hands[(self.dealer + 1 + i) % n] |= 1 << card
        self.staircase = [cards[n * per_hand]]
        self.stock = cards[n * per_hand + 1 :][::-1]
        self.melds: list[TableMeld] = []
        self.points = [0] * n
        self.known = [0] * n
        self.laid_before = [False] * n
        self.laid_this_turn = False
        self.banned = -1
        self.must_use = -1
        self.turn = 0
        self.current = self.dealer if self.rules.dealer_plays_first else (self.dealer + 1) % n
        self.phase = _DRAW
        self.outcome: str | None = None
        self.went_out: int | None = None
        self.deal_points: list[int] | None = None
        self._refresh_table()
        self._mask_valid = False

    def next_deal(self, deck: Sequence[int | str] | None = None) -> None:
        """Deal the next deal of the game, the deal passing one seat to the left (RULES §2.1)."""
        self.deal((self.dealer + 1) % self.num_players, deck)

    # ------------------------------------------------------------------ queries
    @property
    def deal_over(self) -> bool:
        """Whether the current deal has ended (RULES §6)."""
        return self.phase == _DEAL_OVER

    def game_over(self) -> bool:
        """Whether the game has ended: a total reached the target with one highest (RULES §7.1)."""
        if not self.deal_over:
            return False
        best = max(self.totals)
        return best >= self.rules.target and self.totals.count(best) == 1

    def winner(self) -> int | None:
        """The seat with the highest total once the game is over, else ``None`` (RULES §7.1)."""
        return self.totals.index(max(self.totals)) if self.game_over() else None

    def settlement(self) -> list[int]:
        """Points each seat collects at the end of a game: the winner collects from each opponent
        the difference of their totals, the others pay it (RULES §7.2). Zero before the end."""
        win = self.winner()
        if win is None:
            return [0] * self.num_players
        pay = [self.totals[win] - t for t in self.totals]
        return [sum(pay) if i == win else -pay[i] for i in range(self.num_players)]

    def legal_mask(self) -> np.ndarray:
        """Legal actions of the player to move: int8 array of shape (898,), 1 = legal.

        Exact (RULES §4): an action is legal if and only if its bit is 1, and at least one bit is
        set until the deal ends. The array is owned by the state: copy it before changing it.
        """
        if not self._mask_valid:
            self._mask[:] = 0
            if self.phase == _DRAW:
                self._legal_draw(self._mask)
            elif self.phase == _MELD:
                self._legal_meld(self._mask)
            self._mask_valid = True
        return self._mask

    def legal_actions(self) -> list[int]:
        """Sorted legal action indices of the player to move."""
        return np.flatnonzero(self.legal_mask()).tolist()

    def clone(self, rng: np.random.Generator | None = None) -> GameState:
        """An independent copy that plays on exactly as this state would (the inner loop of search).

        Copies only the mutable containers (hands, staircase, stock, melds, points, ...); the
        immutable table view, rules and candidate tables are shared. No generic deepcopy.

        :param rng: the copy's generator (reshuffles, RULES §6.4); ``None`` copies this state's
            generator, so the copy also reshuffles as this state would.
        """
        new = object.__new__(GameState)
        new.__dict__.update(self.__dict__)
        new.rng = copy.deepcopy(self.rng) if rng is None else rng
        new.totals = list(self.totals)
        new._mask = self._mask.copy()
        if "hands" in self.__dict__:  # a deal has been dealt
            new.hands = list(self.hands)
            new.staircase = list(self.staircase)
            new.stock = list(self.stock)
            new.melds = [TableMeld(m.owner, m.kind, m.suit, m.low, m.length, m.bits) for m in self.melds]
            new.points = list(self.points)
            new.known = list(self.known)
            new.laid_before = list(self.laid_before)
            new.deal_points = None if self.deal_points is None else list(self.deal_points)
        return new

    # ------------------------------------------------------------------ legality
    def _legal_draw(self, mask: np.ndarray) -> None:
        """RULES §4.1-4.2: the stock's top card, or the top d staircase cards."""
        if self.stock:
            mask[A.DRAW] = 1
        depth = len(self.staircase)
        if not self.rules.must_use_taken:
            mask[A.TAKE_BASE + 1 : A.TAKE_BASE + depth + 1] = 1
            return
        hand = self.hands[self.current]
        taken = 0
        for d in range(1, depth + 1):
            deepest = self.staircase[-d]
            taken |= 1 << deepest
            if self._can_play(deepest, hand | taken):
                mask[A.TAKE_BASE + d] = 1

    def _can_play(self, card: int, cards: int) -> bool:
        """Whether ``card`` can be melded with ``cards`` or laid off at once (RULES §4.2)."""
        if (1 << card) & self._slots_any:
            return True
        return any(MELDS[m].bits >> card & 1 for m in melds_within(cards, self.rules.corner_runs))

    def _legal_meld(self, mask: np.ndarray) -> None:
        """RULES §4.3-4.5: melds, lay-offs and the discard, with the must-use and dead-end rules."""
        hand = self.hands[self.current]
        layable = hand
        melds = melds_within(hand, self.rules.corner_runs)
        if self.must_use >= 0:
            layable = 1 << self.must_use
            melds = [m for m in melds if MELDS[m].bits & layable]
        for m in melds:
            mask[A.MELD_BASE + m] = 1
        for target, slots in enumerate(self.layoff_slots):
            for card in bits_to_cards(layable & slots):
                mask[A.LAYOFF_BASE + 3 * card + target] = 1
        if self.must_use < 0:
            discardable = hand & ~(1 << self.banned) if self.banned >= 0 else hand
            mask[A.DISCARD_BASE :] = np.frombuffer(card_flags(discardable), np.int8)
        if self.banned >= 0 and hand >> self.banned & 1:
            self._mask_dead_ends(mask, hand, melds)

    def _mask_dead_ends(self, mask: np.ndarray, hand: int, melds: list[int]) -> None:
        """RULES §4.5: clear melds and lay-offs that would leave only the banned card, unless that
        card could then be laid off. ``melds`` are the legal meld candidates."""
        rest = hand ^ (1 << self.banned)
        if rest.bit_count() == 1:  # laying off the one other card
            card = rest.bit_length() - 1
            actions = [A.LAYOFF_BASE + 3 * card + t for t in range(3) if mask[A.LAYOFF_BASE + 3 * card + t]]
        else:
            actions = [A.MELD_BASE + m for m in melds if MELDS[m].bits == rest]
        for a in actions:
            trial = self.clone(rng=self.rng)  # the trial only lays: it never draws on the generator
            trial._lay(A.decode(a))
            if not (1 << self.banned) & trial._slots_any:
                mask[a] = 0

    # ------------------------------------------------------------------ actions
    def apply(self, action: int) -> None:
        """Play ``action`` (an index 0..897) for the player to move.

        :raises IllegalActionError: (a ``ValueError``) naming the action, the phase and the rule
            it breaks, when the action is not legal here; the state is then unchanged.
        """
        try:
            # A NumPy integer (as Gymnasium spaces sample) must not leak into the card lists and bitsets.
            action = operator.index(action)
        except TypeError:
            raise IllegalActionError(f"action {action!r} is not an action index 0..{A.NUM_ACTIONS - 1}") from None
        mask = self.legal_mask()
        if not (0 <= action < A.NUM_ACTIONS) or not mask[action]:
            raise IllegalActionError(self._illegal_reason(action))
        self._mask_valid = False
        if action < A.MELD_BASE:
            self._apply_draw(action)
        elif action >= A.DISCARD_BASE:
            self._apply_discard(action - A.DISCARD_BASE)
        else:
            self._lay(A.decode(action))
            if self.hands[self.current] == 0:
                self._end_deal("went_out")

    def _apply_draw(self, action: int) -> None:
        """RULES §4.1-4.2, §4.4: draw the stock's top card or take the top d staircase cards."""
        seat = self.current
        if action == A.DRAW:
            self.hands[seat] |= 1 << self.stock.pop()
        else:
            depth = action - A.TAKE_BASE
            taken = self.staircase[-depth:]
            del self.staircase[-depth:]
            bits = sum(1 << c for c in taken)
            self.hands[seat] |= bits
            self.known[seat] |= bits
            if depth == 1:
                self.banned = taken[0]
            if self.rules.must_use_taken:
                self.must_use = taken[0]
        self.phase = _MELD

    def _lay(self, act: A.Action) -> None:
        """RULES §4.3, §5: lay a meld or lay off a card, booking its value at once."""
        seat = self.current
        if act.kind == "meld":
            shape = MELDS[act.meld]
            bits = shape.bits
            self.melds.append(TableMeld(seat, shape.kind, shape.suit, shape.low, shape.length, bits))
            self.points[seat] += self._values[act.meld]
        else:
            bits = 1 << act.card
            meld = self.melds[self._slot_owner[act.target][act.card]]
            meld.bits |= bits
            meld.length += 1
            if act.target == A.TARGET_LOW:
                meld.low = (meld.low - 1) % NUM_RANKS
            self.points[seat] += layoff_value(self.rules, act.card, act.target)
        self.hands[seat] &= ~bits
        self.known[seat] &= ~bits
        if self.must_use >= 0 and bits >> self.must_use & 1:
            self.must_use = -1
        if self.banned >= 0 and bits >> self.banned & 1:
            self.banned = -1  # the banned card left the hand: nothing is banned any more (§4.4)
        self.laid_this_turn = True
        self._refresh_table()

    def _apply_discard(self, card: int) -> None:
        """RULES §4.4, §6.1, §6.4-6.5: discard onto the staircase and end the turn."""
        seat = self.current
        self.hands[seat] &= ~(1 << card)
        self.known[seat] &= ~(1 << card)
        self.staircase.append(card)
        if self.hands[seat] == 0:
            self._end_deal("went_out")
            return
        self.laid_before[seat] |= self.laid_this_turn
        self.turn += 1
        if not self.stock:
            if self.rules.stock_exhausted == "reshuffle" and len(self.staircase) > 1:
                rest = self.staircase[:-1]
                self.stock = self.rng.permutation(rest).tolist()
                self.staircase = self.staircase[-1:]
            else:
                self._end_deal("stock_exhausted")
                return
        if self.turn >= self.rules.max_turns:
            self._end_deal("max_turns")
            return
        self.current = (seat + 1) % self.num_players
        self.phase = _DRAW
        self.banned = -1
        self.laid_this_turn = False

    # ------------------------------------------------------------------ end of deal (RULES §6)
    def _end_deal(self, outcome: str) -> None:
        """Score the deal (RULES §6.2-6.5) and add it to the game totals (§7.1)."""
        rules = self.rules
        in_hand = [hand_points(h, rules.ace_hand) for h in self.hands]
        result = list(self.points)
        factor = 1
        if outcome == "went_out":
            self.went_out = self.current
            if not self.laid_before[self.current]:
                outcome = "romme"
                if rules.romme_double:
                    factor = 2
            if rules.going_out_credit:
                result[self.current] += factor * sum(in_hand)
        if rules.hand_penalty:
            result = [r - factor * h for r, h in zip(result, in_hand, strict=True)]
        self.outcome = outcome
        self.deal_points = result
        self.totals = [t + r for t, r in zip(self.totals, result, strict=True)]
        self.deals_played += 1
        self.phase = _DEAL_OVER
        self.banned = -1
        self.must_use = -1

    # ------------------------------------------------------------------ table bookkeeping
    def _refresh_table(self) -> None:
        """Recompute where cards can be laid off after a meld or lay-off (RULES §4.3).

        ``_slot_owner[target][card]`` is the table index of the meld that ``card`` can be laid off
        onto at ``target`` (set, low end, high end) and :attr:`layoff_slots` their bitsets. A card
        on the table (in another meld) can never be laid off, so it is no slot. Bumps
        :attr:`table_version`, which caches of the table (the observation's) are keyed on.
        """
        owners: tuple[dict[int, int], dict[int, int], dict[int, int]] = ({}, {}, {})
        corner = self.rules.corner_runs
        on_table = 0
        for i, meld in enumerate(self.melds):
            on_table |= meld.bits
            if meld.kind == "set":
                if meld.length == 3:
                    missing = next(bits_to_cards(_rank_bits(meld.low) & ~meld.bits))
                    owners[A.TARGET_SET][missing] = i
                continue
            if meld.length == MAX_RUN:
                continue
            if corner or meld.low >= 1:
                owners[A.TARGET_LOW][make_card(meld.suit, (meld.low - 1) % NUM_RANKS)] = i
            if corner or meld.low + meld.length <= NUM_RANKS:
                owners[A.TARGET_HIGH][make_card(meld.suit, (meld.low + meld.length) % NUM_RANKS)] = i
        self._slot_owner = tuple({c: i for c, i in d.items() if not on_table >> c & 1} for d in owners)
        slots = tuple(sum(1 << c for c in d) for d in self._slot_owner)
        self.layoff_slots: tuple[int, int, int] = (slots[0], slots[1], slots[2])
        self._slots_any = slots[0] | slots[1] | slots[2]
        self.table_version += 1

    # ------------------------------------------------------------------ errors
    def _illegal_reason(self, action: int) -> str:
        """Explain why ``action`` is illegal here (slow path, only on error)."""
        try:
            act = A.decode(action)
        except ValueError as err:
            return str(err)
        text = f"illegal action {act} (action {action}) for player {self.current}"
        if self.phase == Phase.DEAL_OVER:
            return f"{text}: the deal is over (RULES §6)"
        if self.phase == Phase.DRAW:
            if act.kind == "draw":
                return f"{text}: the stock is empty (RULES §6.4)"
            if act.kind == "take":
                if act.depth > len(self.staircase):
                    return f"{text}: the staircase holds only {len(self.staircase)} cards (RULES §4.1)"
                deepest = card_to_str(self.staircase[-act.depth])
                return f"{text}: the deepest card taken, {deepest}, cannot be played at once (RULES §4.2)"
            return f"{text} in the draw phase: draw from the stock or take from the staircase first (RULES §4.1)"
        hand = self.hands[self.current]
        if act.kind in ("draw", "take"):
            return f"{text}: already drew this turn (RULES §4.1)"
        missing = [c for c in act.cards if not hand >> c & 1]
        if missing:
            return f"{text}: {' '.join(card_to_str(c) for c in missing)} not in hand"
        if self.must_use >= 0:
            return (
                f"{text}: {card_to_str(self.must_use)} taken from the staircase must be melded or "
                "laid off first (RULES §4.2)"
            )
        if act.kind == "discard":
            return f"{text}: a single staircase card just taken may not be discarded (RULES §4.4)"
        if act.kind == "meld":
            return f"{text}: not a legal meld under these rules (RULES §3.1-3.2) or it leaves a dead end (§4.5)"
        return (
            f"{text}: no meld on the table takes {card_to_str(act.card)} at its "
            f"{A.TARGETS[act.target]} (RULES §4.3), or it leaves a dead end (§4.5)"
        )


def _rank_bits(rank: int) -> int:
    return sum(1 << make_card(s, rank) for s in range(4))
