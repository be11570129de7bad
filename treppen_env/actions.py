"""The ``Discrete(898)`` action space: block offsets, encoders, decoding and text (docs/ARCHITECTURE.md "Actions").

=============  ========  ==================================================================
block          indices   meaning
=============  ========  ==================================================================
draw stock     0         take the top stock card (RULES §4.1)
take           1-52      index d: take the top d staircase cards (RULES §4.1-4.2)
meld set       53-117    rank x 5: 3-card sets omitting S, H, D, C, then the 4-card set
meld run       118-689   suit x low-end rank x length 3..13
lay off        690-845   card x target (0 set, 1 low end of a run, 2 high end; RULES §4.3)
discard        846-897   discard card c (RULES §4.4)
=============  ========  ==================================================================

Text forms: ``"draw"``, ``"take 3"``, ``"meld QH KH AH 2H"``, ``"layoff 7S set"``,
``"layoff 2H low"``, ``"layoff 2H high"``, ``"discard TD"``.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np

from treppen_env.cards import NUM_CARDS, NUM_RANKS, card_to_str, cards_to_str, parse_card, rank_of, suit_of
from treppen_env.melds import MELDS, NUM_MELDS, NUM_SET_MELDS, run_index

TARGETS = ("set", "low", "high")
TARGET_SET, TARGET_LOW, TARGET_HIGH = range(3)

DRAW = 0
TAKE_BASE = 0  # take d is action TAKE_BASE + d, d = 1..52
MELD_BASE = 1 + NUM_CARDS
MELD_SET_BASE = MELD_BASE
MELD_RUN_BASE = MELD_BASE + NUM_SET_MELDS
LAYOFF_BASE = MELD_BASE + NUM_MELDS
DISCARD_BASE = LAYOFF_BASE + NUM_CARDS * len(TARGETS)
NUM_ACTIONS = DISCARD_BASE + NUM_CARDS

KINDS = ("draw", "take", "meld", "layoff", "discard")


@dataclass(frozen=True)
class Action:
    """A decoded action. Unused fields are -1.

    :param kind: one of ``"draw"``, ``"take"``, ``"meld"``, ``"layoff"``, ``"discard"``.
    :param depth: for ``take``, the number of staircase cards taken (1..52).
    :param meld: for ``meld``, the candidate index 0..636 in :data:`treppen_env.melds.MELDS`.
    :param card: for ``layoff`` and ``discard``, the card 0..51.
    :param target: for ``layoff``, 0 (set), 1 (low end of a run) or 2 (high end).
    """

    kind: str
    depth: int = -1
    meld: int = -1
    card: int = -1
    target: int = -1

    @property
    def cards(self) -> tuple[int, ...]:
        """Cards the action moves out of the hand (meld cards low to high, or the one card)."""
        if self.kind == "meld":
            return MELDS[self.meld].cards
        return (self.card,) if self.card >= 0 else ()

    def __str__(self) -> str:
        if self.kind == "draw":
            return "draw"
        if self.kind == "take":
            return f"take {self.depth}"
        if self.kind == "meld":
            return "meld " + cards_to_str(self.cards)
        if self.kind == "layoff":
            return f"layoff {card_to_str(self.card)} {TARGETS[self.target]}"
        return f"discard {card_to_str(self.card)}"


def encode_take(depth: int) -> int:
    """Action taking the top ``depth`` staircase cards (1..52)."""
    if not 1 <= depth <= NUM_CARDS:
        raise ValueError(f"take depth {depth} is not in 1..{NUM_CARDS}")
    return TAKE_BASE + depth


def encode_meld(meld: int) -> int:
    """Action laying candidate meld ``meld`` (0..636)."""
    if not 0 <= meld < NUM_MELDS:
        raise ValueError(f"meld index {meld} is not in 0..{NUM_MELDS - 1}")
    return MELD_BASE + meld


def encode_layoff(card: int, target: int | str) -> int:
    """Action laying off ``card`` onto ``target`` (0/``"set"``, 1/``"low"``, 2/``"high"``)."""
    if isinstance(target, str):
        if target not in TARGETS:
            raise ValueError(f"lay-off target {target!r} is not one of {list(TARGETS)}")
        target = TARGETS.index(target)
    if not 0 <= target < len(TARGETS):
        raise ValueError(f"lay-off target {target} is not in 0..2")
    card_to_str(card)
    return LAYOFF_BASE + len(TARGETS) * card + target


def encode_discard(card: int) -> int:
    """Action discarding ``card``."""
    card_to_str(card)
    return DISCARD_BASE + card


def check_action(action: object) -> int:
    """``action`` as a plain ``int`` if it is an index of the ``Discrete(898)`` action space.

    Python ints and NumPy integers (scalars, or 0-d arrays as Gymnasium's ``Discrete.contains``
    accepts) in 0..897 are actions; ``bool`` (``True`` is no "take 1"), floats (``1.0`` is not
    action 1), ``None``, text and out-of-range numbers (``-1`` is not the last action) are not.
    The env's step methods call this only off their fast path (``type(action) is int`` in range).

    :raises ValueError: naming the action and the space.
    """
    value = action[()] if isinstance(action, np.ndarray) and action.ndim == 0 else action
    if isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_)):
        index = int(value)
        if 0 <= index < NUM_ACTIONS:
            return index
    raise ValueError(
        f"action {action!r} is not in the action space Discrete({NUM_ACTIONS}): "
        f"an action is an int (or NumPy integer) 0..{NUM_ACTIONS - 1}"
    )


def decode(action: int) -> Action:
    """Decode an action index 0..897 into an :class:`Action`.

    :raises ValueError: when ``action`` is not an index of the action space.
    """
    a = int(action)
    if a != action or not 0 <= a < NUM_ACTIONS:
        raise ValueError(f"action {action!r} is not in 0..{NUM_ACTIONS - 1}")
    if a == DRAW:
        return Action("draw")
    if a < MELD_BASE:
        return Action("take", depth=a - TAKE_BASE)
    if a < LAYOFF_BASE:
        return Action("meld", meld=a - MELD_BASE)
    if a < DISCARD_BASE:
        card, target = divmod(a - LAYOFF_BASE, len(TARGETS))
        return Action("layoff", card=card, target=target)
    return Action("discard", card=a - DISCARD_BASE)


def action_to_str(action: int) -> str:
    """Text of action index ``action``, e.g. ``"meld QH KH AH 2H"``.

    :raises ValueError: when ``action`` is not in 0..897.
    """
    return str(decode(action))


def parse_action(text: str) -> int:
    """Action index of ``text`` in the forms listed in the module docstring (case-insensitive).

    A meld's cards may come in any order when they form one set or one run; a 13-card run (or a
    wrapping one) is read from its low end, in the order given.

    :raises ValueError: naming the text and the accepted forms when it is not an action (a meld of
        fewer than three cards says so: RULES §3.1, §3.2).
    """
    words = text.split()
    verb = words[0].lower() if words else ""
    try:
        if verb == "draw" and len(words) == 1:
            return DRAW
        if verb == "take" and len(words) == 2:
            return encode_take(int(words[1]))
        if verb == "discard" and len(words) == 2:
            return encode_discard(parse_card(words[1]))
        if verb == "layoff" and len(words) == 3:
            return encode_layoff(parse_card(words[1]), words[2].lower())
        if verb == "meld" and len(words) >= 4:
            return encode_meld(_meld_of([parse_card(w) for w in words[1:]]))
        if verb == "meld":
            raise ValueError(f"a meld needs at least three cards, {len(words) - 1} given (RULES §3.1, §3.2)")
    except ValueError as err:
        raise ValueError(f"cannot read action {text!r}: {err}") from None
    raise ValueError(
        f"cannot read action {text!r}; expected 'draw', 'take D', 'meld C C C ...', "
        "'layoff C set|low|high' or 'discard C' (cards such as QH, TS, 10♠)"
    )


def _meld_of(cards: list[int]) -> int:
    if len(set(cards)) != len(cards):
        raise ValueError("a meld holds each card once")
    ranks = {rank_of(c) for c in cards}
    suits = [suit_of(c) for c in cards]
    if len(ranks) == 1 and len(cards) in (3, 4):
        missing = set(range(4)) - set(suits)
        return (next(iter(missing)) if missing else 4) + 5 * ranks.pop()
    if len(set(suits)) == 1:
        suit = suits[0]
        low = rank_of(cards[0])
        if all(rank_of(c) == (low + i) % NUM_RANKS for i, c in enumerate(cards)):
            return run_index(suit, low, len(cards))
        lows = [r for r in ranks if (r - 1) % NUM_RANKS not in ranks]
        if len(lows) == 1 and all((lows[0] + i) % NUM_RANKS in ranks for i in range(len(cards))):
            return run_index(suit, lows[0], len(cards))
    raise ValueError(f"{cards_to_str(cards)} is neither a set nor a run")
