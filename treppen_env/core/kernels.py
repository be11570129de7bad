"""The rules engine's kernels: legality, the turn's actions, the table and the end of a deal.

Every kernel is a small :func:`~treppen_env.core.cache.kernel` function over the state's three arrays
``u64`` (uint64 card bitsets), ``i8`` (int8 cards and meld rows) and ``i64`` (int64 counters),
whose slots :mod:`treppen_env.core.layout` lists, and the read-only rules table ``tab`` (int64,
:func:`treppen_env.core.tables.rules_table`) with the candidate melds' bitsets ``meld_bits``
(uint64, shape (637,), :data:`treppen_env.melds.MELD_BITS`). A kernel allocates no Python objects;
it trusts its arrays, which :class:`treppen_env.engine.GameState` validates whenever they come
from outside input. The entry points are :func:`legal_mask`, :func:`step`, :func:`reshuffle`,
:func:`can_play` and :func:`refresh_table`, and the enumerator of the melds within a hand,
:func:`list_melds` (:func:`mark_melds` marks them, as the legal mask does).
"""

from __future__ import annotations

import numpy as np

from treppen_env.core.bits import bit, count, has, lowest
from treppen_env.core.cache import kernel
from treppen_env.core.layout import (
    BANNED,
    CURRENT,
    DEAL_OVER,
    DEAL_POINTS,
    DEALER,
    DEALS_PLAYED,
    DEALT,
    DRAW,
    HAND,
    KNOWN,
    LAID_BEFORE,
    LAID_THIS_TURN,
    M_KIND,
    M_LENGTH,
    M_LOW,
    M_OWNER,
    M_SUIT,
    MAX_TURNS_OUTCOME,
    MELD,
    MELD_BITS,
    MELD_COLS,
    MELDS,
    MUST_USE,
    NUM_CARDS,
    NUM_MELD_CANDIDATES,
    NUM_MELDS,
    NUM_PLAYERS,
    NUM_RANKS,
    NUM_TARGETS,
    OUTCOME,
    PHASE,
    POINTS,
    ROMME,
    SET,
    SHAPE_COLS,
    SLOT_OWNER,
    SLOTS,
    STAIRS,
    STAIRS_LEN,
    STOCK,
    STOCK_EXHAUSTED,
    STOCK_LEN,
    T_ALLOWED,
    T_CORNER_RUNS,
    T_GOING_OUT_CREDIT,
    T_HAND_PENALTY,
    T_HAND_VALUE,
    T_LAYOFF_VALUE,
    T_MAX_TURNS,
    T_MELD_VALUE,
    T_MUST_USE_TAKEN,
    T_RESHUFFLE,
    T_ROMME_DOUBLE,
    T_SHAPE,
    TABLE_VERSION,
    TOTALS,
    TURN,
    WENT_OUT,
    WENT_OUT_OUTCOME,
)

# Action blocks (treppen_env.actions, restated as plain ints: the kernels must not import the
# engine's Python modules; a test checks they agree).
A_DRAW = 0
A_TAKE_BASE = 0
A_MELD_BASE = 1 + NUM_CARDS
A_LAYOFF_BASE = A_MELD_BASE + NUM_MELD_CANDIDATES
A_DISCARD_BASE = A_LAYOFF_BASE + NUM_TARGETS * NUM_CARDS
TARGET_SET, TARGET_LOW, TARGET_HIGH = 0, 1, 2
NUM_SUITS = 4
NUM_SET_CANDIDATES = NUM_RANKS * (NUM_SUITS + 1)
NUM_RUN_LENGTHS = NUM_RANKS - 2
_RANK_MASK = (1 << NUM_RANKS) - 1

#: :func:`step` results.
STEP_DONE = 0
STEP_RESHUFFLE = 1

_ZERO = np.uint64(0)


# ---------------------------------------------------------------------------- the table
@kernel
def refresh_table(u64: np.ndarray, i8: np.ndarray, i64: np.ndarray, tab: np.ndarray) -> None:
    """Recompute where cards can be laid off from the meld table (RULES §4.3, §3.2, §3.5).

    Writes ``SLOTS`` (a bitset per target: set, low end, high end) and ``SLOT_OWNER`` (the meld
    each slot card goes onto) and bumps ``TABLE_VERSION``. A 3-card set takes its rank's missing
    card; a run below its low end and above its high end, through the ace only with
    ``corner_runs``; a 13-card run and a 4-card set take nothing. A card already on the table is
    no slot.
    """
    corner = tab[T_CORNER_RUNS] != 0
    on_table = _ZERO
    for i in range(i64[NUM_MELDS]):
        on_table |= u64[MELD_BITS + i]
    for t in range(NUM_TARGETS):
        u64[SLOTS + t] = _ZERO
    i8[SLOT_OWNER : SLOT_OWNER + NUM_TARGETS * NUM_CARDS] = -1
    for i in range(i64[NUM_MELDS]):
        row = MELDS + MELD_COLS * i
        low = int(i8[row + M_LOW])
        length = int(i8[row + M_LENGTH])
        if i8[row + M_KIND] == SET:
            if length == 3:
                for suit in range(4):
                    card = NUM_RANKS * suit + low
                    if not has(u64[MELD_BITS + i], card):
                        _set_slot(u64, i8, on_table, TARGET_SET, card, i)
            continue
        if length == NUM_RANKS:
            continue
        suit = int(i8[row + M_SUIT])
        if corner or low >= 1:
            _set_slot(u64, i8, on_table, TARGET_LOW, NUM_RANKS * suit + (low + NUM_RANKS - 1) % NUM_RANKS, i)
        if corner or low + length <= NUM_RANKS:
            _set_slot(u64, i8, on_table, TARGET_HIGH, NUM_RANKS * suit + (low + length) % NUM_RANKS, i)
    i64[TABLE_VERSION] += 1


@kernel
def _set_slot(u64: np.ndarray, i8: np.ndarray, on_table: np.uint64, target: int, card: int, meld: int) -> None:
    """Record that ``card`` can be laid off onto table meld ``meld`` at ``target``, unless the card
    is on the table already (RULES §4.3)."""
    if not has(on_table, card):
        u64[SLOTS + target] |= bit(card)
        i8[SLOT_OWNER + NUM_CARDS * target + card] = meld


@kernel
def slots_any(u64: np.ndarray) -> np.uint64:
    """Every card that can be laid off somewhere now (RULES §4.3)."""
    return u64[SLOTS + TARGET_SET] | u64[SLOTS + TARGET_LOW] | u64[SLOTS + TARGET_HIGH]


# ---------------------------------------------------------------------------- legality
@kernel
def can_play(u64: np.ndarray, tab: np.ndarray, meld_bits: np.ndarray, card: int, cards: np.uint64) -> bool:
    """Whether ``card`` can be laid off now or melded with ``cards`` (which hold it; RULES §4.2)."""
    if has(slots_any(u64), card):
        return True
    suit, rank = card // NUM_RANKS, card % NUM_RANKS
    held = 0
    for s in range(NUM_SUITS):
        held += has(cards, NUM_RANKS * s + rank)
    if held >= 3:  # a set of the card's rank (RULES §3.1)
        return True
    ranks = _suit_ranks(cards, suit)
    twice = ranks | ranks << NUM_RANKS
    for low in range(NUM_RANKS):  # a run of its suit through it (RULES §3.2)
        length = _stretch(ranks, twice, low)
        for n in range(3, length + 1):
            if (rank - low + NUM_RANKS) % NUM_RANKS < n and tab[T_ALLOWED + _run_candidate(suit, low, n)] != 0:
                return True
    return False


@kernel
def _suit_ranks(cards: np.uint64, suit: int) -> int:
    """The 13-bit mask of the ranks of ``suit`` in the bitset ``cards`` (bit r: rank r held)."""
    return int(np.int64((cards >> np.uint64(NUM_RANKS * suit)) & np.uint64(_RANK_MASK)))


@kernel
def _stretch(ranks: int, twice: int, low: int) -> int:
    """How many ranks from ``low`` upwards (turning past the king) the 13-bit rank mask ``ranks``
    holds without a gap, at most 13, or 0 when it is fewer than 3 (``twice`` is
    ``ranks | ranks << 13``, so a stretch through the corner reads as bits in a row)."""
    if (twice >> low) & 7 != 7:
        return 0
    n = 3
    while n < NUM_RANKS and (twice >> (low + n)) & 1:
        n += 1
    return n


@kernel
def _run_candidate(suit: int, low: int, length: int) -> int:
    """Candidate index of the run of ``suit`` from low-end rank ``low`` with ``length`` cards."""
    return NUM_SET_CANDIDATES + (suit * NUM_RANKS + low) * NUM_RUN_LENGTHS + length - 3


@kernel
def mark_melds(tab: np.ndarray, hand: np.uint64, must_use: int, marks: np.ndarray) -> None:
    """Set ``marks[m]`` (int8, indexed by candidate meld, at least (637,)) for every allowed candidate
    meld ``m`` within ``hand`` that holds ``must_use`` (any, when it is -1; RULES §3.1-3.2, §4.2):
    the sets of each rank held in 3 or 4 suits and the runs along each suit's unbroken stretches.
    The legal mask's meld block is such an array; :func:`list_melds` lists the marks."""
    a, b, c, d = (_suit_ranks(hand, 0), _suit_ranks(hand, 1), _suit_ranks(hand, 2), _suit_ranks(hand, 3))
    three = (a & b & (c | d)) | (c & d & (a | b))  # ranks held in three or four suits
    if must_use >= 0:
        three &= 1 << (must_use % NUM_RANKS)
    rank = 0
    while three != 0:
        if three & 1:
            _mark_sets(
                rank,
                (a >> rank & 1) | (b >> rank & 1) << 1 | (c >> rank & 1) << 2 | (d >> rank & 1) << 3,
                must_use,
                marks,
            )
        three >>= 1
        rank += 1
    for suit in range(NUM_SUITS):
        if must_use >= 0 and must_use // NUM_RANKS != suit:
            continue
        ranks = _suit_ranks(hand, suit)
        twice = ranks | ranks << NUM_RANKS
        for low in range(NUM_RANKS):
            for n in range(3, _stretch(ranks, twice, low) + 1):
                m = _run_candidate(suit, low, n)
                inside = must_use < 0 or (must_use % NUM_RANKS - low + NUM_RANKS) % NUM_RANKS < n
                if inside and tab[T_ALLOWED + m] != 0:
                    marks[m] = 1


@kernel
def _mark_sets(rank: int, suits: int, must_use: int, marks: np.ndarray) -> None:
    """Set the marks of the sets of ``rank`` within the 4-bit suit mask ``suits`` (3 or 4 suits)
    that hold ``must_use`` (any, when it is -1; RULES §3.1)."""
    base = (NUM_SUITS + 1) * rank
    if suits != 15:
        for s in range(NUM_SUITS):
            if not suits >> s & 1:
                marks[base + s] = 1  # the 3-card set omitting the suit not held
        return
    for omitted in range(NUM_SUITS + 1):  # four 3-card sets, then the 4-card set
        if must_use < 0 or omitted != must_use // NUM_RANKS:
            marks[base + omitted] = 1


#: Length of the scratch marks of :func:`list_melds`: the candidate melds, padded to whole uint64 words.
MELD_MARKS = 8 * ((NUM_MELD_CANDIDATES + 7) // 8)


@kernel
def list_melds(tab: np.ndarray, hand: np.uint64, marks: np.ndarray, out: np.ndarray) -> int:
    """The allowed candidate melds within ``hand`` (RULES §3.1-3.2) into ``out`` (int64), in candidate
    order (sets by rank and omitted suit, then runs by suit, low end and length); their number.

    :param marks: int8 (:data:`MELD_MARKS`,) scratch, all zeros (so again on return).
    """
    mark_melds(tab, hand, -1, marks)
    words = marks.view(np.uint64)
    n = 0
    for w in range(words.size):
        if words[w] != _ZERO:
            for m in range(8 * w, 8 * w + 8):
                if marks[m] != 0:
                    marks[m] = 0
                    out[n] = m
                    n += 1
    return n


@kernel
def legal_mask(
    u64: np.ndarray, i8: np.ndarray, i64: np.ndarray, tab: np.ndarray, meld_bits: np.ndarray, mask: np.ndarray
) -> None:
    """Write the exact legal mask of the player to move into ``mask`` (int8, (898,); RULES §4).

    All zeros once the deal is over.
    """
    mask[:] = 0
    if i64[PHASE] == DRAW:
        legal_draw(u64, i8, i64, tab, meld_bits, mask)
    elif i64[PHASE] == MELD:
        legal_meld(u64, i8, i64, tab, meld_bits, mask)


@kernel
def legal_draw(
    u64: np.ndarray, i8: np.ndarray, i64: np.ndarray, tab: np.ndarray, meld_bits: np.ndarray, mask: np.ndarray
) -> None:
    """RULES §4.1-4.2: the stock's top card, or the top d staircase cards; with
    ``must_use_taken`` only takes whose deepest card can be played at once."""
    if i64[STOCK_LEN] > 0:
        mask[A_DRAW] = 1
    depth = i64[STAIRS_LEN]
    if tab[T_MUST_USE_TAKEN] == 0:
        mask[A_TAKE_BASE + 1 : A_TAKE_BASE + depth + 1] = 1
        return
    hand = u64[HAND + i64[CURRENT]]
    taken = _ZERO
    for d in range(1, depth + 1):
        deepest = int(i8[STAIRS + depth - d])
        taken |= bit(deepest)
        if can_play(u64, tab, meld_bits, deepest, hand | taken):
            mask[A_TAKE_BASE + d] = 1


@kernel
def legal_meld(
    u64: np.ndarray, i8: np.ndarray, i64: np.ndarray, tab: np.ndarray, meld_bits: np.ndarray, mask: np.ndarray
) -> None:
    """RULES §4.3-4.5: melds from the hand, lay-offs onto the table's slots and discards, with
    the must-use card (§4.2: only actions that play it, no discard), the discard ban (§4.4) and
    no dead ends (§4.5)."""
    hand = u64[HAND + i64[CURRENT]]
    must_use = i64[MUST_USE]
    banned = i64[BANNED]
    mark_melds(tab, hand, must_use, mask[A_MELD_BASE:A_LAYOFF_BASE])
    layable = hand if must_use < 0 else bit(must_use)
    for t in range(NUM_TARGETS):
        fits = layable & u64[SLOTS + t]
        while fits != _ZERO:
            card = lowest(fits)
            fits &= ~bit(card)
            mask[A_LAYOFF_BASE + NUM_TARGETS * card + t] = 1
    if must_use < 0:
        for card in range(NUM_CARDS):
            if has(hand, card) and card != banned:
                mask[A_DISCARD_BASE + card] = 1
    if banned >= 0 and has(hand, banned):
        mask_dead_ends(u64, i8, i64, tab, meld_bits, mask)


@kernel
def mask_dead_ends(
    u64: np.ndarray, i8: np.ndarray, i64: np.ndarray, tab: np.ndarray, meld_bits: np.ndarray, mask: np.ndarray
) -> None:
    """RULES §4.5: clear the melds and lay-offs that would leave only the banned card in hand,
    unless the banned card could then be laid off. Each candidate is tried on a copy of the table."""
    banned = i64[BANNED]
    rest = u64[HAND + i64[CURRENT]] & ~bit(banned)
    if count(rest) == 1:
        card = lowest(rest)
        for t in range(NUM_TARGETS):
            a = A_LAYOFF_BASE + NUM_TARGETS * card + t
            if mask[a] != 0 and not _fits_after(u64, i8, i64, tab, meld_bits, a, banned):
                mask[a] = 0
        return
    for m in range(NUM_MELD_CANDIDATES):
        a = A_MELD_BASE + m
        if mask[a] != 0 and meld_bits[m] == rest and not _fits_after(u64, i8, i64, tab, meld_bits, a, banned):
            mask[a] = 0


@kernel
def _fits_after(
    u64: np.ndarray, i8: np.ndarray, i64: np.ndarray, tab: np.ndarray, meld_bits: np.ndarray, action: int, card: int
) -> bool:
    """Whether ``card`` could be laid off after the lay ``action`` (played on copies; §4.5)."""
    tu64, ti8, ti64 = u64.copy(), i8.copy(), i64.copy()
    lay(tu64, ti8, ti64, tab, meld_bits, action)
    return has(slots_any(tu64), card)


# ---------------------------------------------------------------------------- actions
@kernel
def step(
    u64: np.ndarray,
    i8: np.ndarray,
    i64: np.ndarray,
    tab: np.ndarray,
    meld_bits: np.ndarray,
    mask: np.ndarray,
    action: int,
) -> int:
    """Play the legal ``action`` for the player to move and write the next legal mask (RULES §4-6).

    :return: ``STEP_DONE``, or ``STEP_RESHUFFLE`` when a discard emptied the stock under
        ``stock_exhausted="reshuffle"`` (RULES §6.4): the caller shuffles the staircase below its
        top and hands the new stock to :func:`reshuffle`, which finishes the turn.
    """
    if action < A_MELD_BASE:
        apply_draw(u64, i8, i64, tab, action)
    elif action >= A_DISCARD_BASE:
        if apply_discard(u64, i8, i64, tab, action - A_DISCARD_BASE):
            return STEP_RESHUFFLE
    else:
        lay(u64, i8, i64, tab, meld_bits, action)
        if u64[HAND + i64[CURRENT]] == _ZERO:
            end_deal(u64, i64, tab, WENT_OUT_OUTCOME)
    legal_mask(u64, i8, i64, tab, meld_bits, mask)
    return STEP_DONE


@kernel
def apply_draw(u64: np.ndarray, i8: np.ndarray, i64: np.ndarray, tab: np.ndarray, action: int) -> None:
    """RULES §4.1-4.2, §4.4: draw the stock's top card, or take the top d staircase cards (public
    from now on); a single card taken is banned from the discard, and with ``must_use_taken`` the
    deepest card taken must be played at once."""
    seat = i64[CURRENT]
    if action == A_DRAW:
        i64[STOCK_LEN] -= 1
        u64[HAND + seat] |= bit(i8[STOCK + i64[STOCK_LEN]])
    else:
        depth = action - A_TAKE_BASE
        i64[STAIRS_LEN] -= depth
        bottom = i64[STAIRS_LEN]
        taken = _ZERO
        for k in range(depth):
            taken |= bit(i8[STAIRS + bottom + k])
        u64[HAND + seat] |= taken
        u64[KNOWN + seat] |= taken
        deepest = int(i8[STAIRS + bottom])
        if depth == 1:
            i64[BANNED] = deepest
        if tab[T_MUST_USE_TAKEN] != 0:
            i64[MUST_USE] = deepest
    i64[PHASE] = MELD


@kernel
def lay(u64: np.ndarray, i8: np.ndarray, i64: np.ndarray, tab: np.ndarray, meld_bits: np.ndarray, action: int) -> None:
    """RULES §4.3, §5.1-5.2: lay a candidate meld, or lay off one card onto the meld that owns
    the slot, booking its value to the mover at once; the must-use card and the ban are lifted
    when their card leaves the hand."""
    seat = i64[CURRENT]
    if action < A_LAYOFF_BASE:
        m = action - A_MELD_BASE
        i = i64[NUM_MELDS]
        row = MELDS + MELD_COLS * i
        shape = T_SHAPE + SHAPE_COLS * m
        i8[row + M_OWNER] = seat
        for j in range(SHAPE_COLS):
            i8[row + M_KIND + j] = tab[shape + j]
        cards = meld_bits[m]
        u64[MELD_BITS + i] = cards
        i64[NUM_MELDS] = i + 1
        i64[POINTS + seat] += tab[T_MELD_VALUE + m]
    else:
        card = (action - A_LAYOFF_BASE) // NUM_TARGETS
        target = (action - A_LAYOFF_BASE) % NUM_TARGETS
        i = int(i8[SLOT_OWNER + NUM_CARDS * target + card])
        row = MELDS + MELD_COLS * i
        cards = bit(card)
        u64[MELD_BITS + i] |= cards
        i8[row + M_LENGTH] += 1
        if target == TARGET_LOW:
            i8[row + M_LOW] = (i8[row + M_LOW] + NUM_RANKS - 1) % NUM_RANKS
        i64[POINTS + seat] += tab[T_LAYOFF_VALUE + NUM_TARGETS * card + target]
    u64[HAND + seat] &= ~cards
    u64[KNOWN + seat] &= ~cards
    if i64[MUST_USE] >= 0 and has(cards, i64[MUST_USE]):
        i64[MUST_USE] = -1
    if i64[BANNED] >= 0 and has(cards, i64[BANNED]):
        i64[BANNED] = -1
    i64[LAID_THIS_TURN] = 1
    refresh_table(u64, i8, i64, tab)


@kernel
def apply_discard(u64: np.ndarray, i8: np.ndarray, i64: np.ndarray, tab: np.ndarray, card: int) -> bool:
    """RULES §4.4, §6.1, §6.4-6.5: discard ``card`` onto the staircase and end the turn: the deal
    ends when the hand is empty, or when the stock is (unless it is remade from the staircase).

    :return: True when the stock must be remade from the staircase first (see :func:`step`).
    """
    seat = i64[CURRENT]
    u64[HAND + seat] &= ~bit(card)
    u64[KNOWN + seat] &= ~bit(card)
    i8[STAIRS + i64[STAIRS_LEN]] = card
    i64[STAIRS_LEN] += 1
    if u64[HAND + seat] == _ZERO:
        end_deal(u64, i64, tab, WENT_OUT_OUTCOME)
        return False
    if i64[LAID_THIS_TURN] != 0:
        i64[LAID_BEFORE + seat] = 1
    i64[TURN] += 1
    if i64[STOCK_LEN] == 0:
        if tab[T_RESHUFFLE] != 0 and i64[STAIRS_LEN] > 1:
            return True
        end_deal(u64, i64, tab, STOCK_EXHAUSTED)
        return False
    next_turn(u64, i64, tab)
    return False


@kernel
def deal(
    u64: np.ndarray,
    i8: np.ndarray,
    i64: np.ndarray,
    cards: np.ndarray,
    dealer: int,
    per_hand: int,
    dealer_first: bool,
) -> None:
    """RULES §2.1-2.4: a new deal from ``cards`` (int8 (52,), the deck top first), in place: each
    seat's hand, starting left of ``dealer``, one card at a time; the next card starts the
    staircase; the rest is the stock (top first). The game totals and the deals played carry
    over; the player to move is the dealer (``dealer_first``) or the seat on its left."""
    n = i64[NUM_PLAYERS]
    totals = i64[TOTALS : TOTALS + 4].copy()
    deals, version = i64[DEALS_PLAYED], i64[TABLE_VERSION]
    u64[:] = _ZERO
    i8[:] = 0
    i8[SLOT_OWNER : SLOT_OWNER + NUM_TARGETS * NUM_CARDS] = -1
    i64[:] = 0
    i64[NUM_PLAYERS] = n
    i64[MUST_USE] = -1
    i64[BANNED] = -1
    i64[WENT_OUT] = -1
    i64[TOTALS : TOTALS + 4] = totals
    i64[DEALS_PLAYED] = deals
    i64[TABLE_VERSION] = version
    dealt = n * per_hand
    for k in range(dealt):
        u64[HAND + (dealer + 1 + k) % n] |= bit(cards[k])
    i8[STAIRS] = cards[dealt]
    stock_len = NUM_CARDS - dealt - 1
    for k in range(stock_len):
        i8[STOCK + k] = cards[NUM_CARDS - 1 - k]
    i64[STAIRS_LEN] = 1
    i64[STOCK_LEN] = stock_len
    i64[DEALER] = dealer
    i64[CURRENT] = dealer if dealer_first else (dealer + 1) % n
    i64[PHASE] = DRAW
    i64[DEALT] = 1


@kernel
def reshuffle(
    u64: np.ndarray,
    i8: np.ndarray,
    i64: np.ndarray,
    tab: np.ndarray,
    meld_bits: np.ndarray,
    mask: np.ndarray,
    stock: np.ndarray,
) -> None:
    """RULES §6.4 (``stock_exhausted="reshuffle"``): the staircase below its top card becomes the
    stock ``stock`` (int8, bottom to top, a permutation of those cards), then the turn ends as
    usual and the next legal mask is written."""
    n = stock.size
    top = i8[STAIRS + i64[STAIRS_LEN] - 1]
    for k in range(n):
        i8[STOCK + k] = stock[k]
    i64[STOCK_LEN] = n
    i8[STAIRS] = top
    i64[STAIRS_LEN] = 1
    next_turn(u64, i64, tab)
    legal_mask(u64, i8, i64, tab, meld_bits, mask)


@kernel
def next_turn(u64: np.ndarray, i64: np.ndarray, tab: np.ndarray) -> None:
    """RULES §6.5, §1.2: cut the deal off after ``max_turns`` turns, else pass the turn left."""
    if i64[TURN] >= tab[T_MAX_TURNS]:
        end_deal(u64, i64, tab, MAX_TURNS_OUTCOME)
        return
    i64[CURRENT] = (i64[CURRENT] + 1) % i64[NUM_PLAYERS]
    i64[PHASE] = DRAW
    i64[BANNED] = -1
    i64[LAID_THIS_TURN] = 0


# ---------------------------------------------------------------------------- end of a deal
@kernel
def hand_value(u64: np.ndarray, tab: np.ndarray, seat: int) -> int:
    """Points of the cards left in ``seat``'s hand (ace ``ace_hand``; RULES §3.3, §6.2)."""
    hand = u64[HAND + seat]
    total = 0
    for card in range(NUM_CARDS):
        if has(hand, card):
            total += tab[T_HAND_VALUE + card]
    return total


@kernel
def end_deal(u64: np.ndarray, i64: np.ndarray, tab: np.ndarray, outcome: int) -> None:
    """Score the deal and add it to the game totals (RULES §6.2-6.5, §7.1).

    Going out (``WENT_OUT_OUTCOME``) without a meld or lay-off in an earlier turn is a Rommé: the
    going-out credit (the opponents' hand values) and the hand penalty double under
    ``romme_double``. Writes ``DEAL_POINTS``, ``TOTALS``, ``OUTCOME`` and ``WENT_OUT``.
    """
    n = i64[NUM_PLAYERS]
    factor = 1
    seat = i64[CURRENT]
    went_out = outcome == WENT_OUT_OUTCOME
    if went_out:
        i64[WENT_OUT] = seat
        if i64[LAID_BEFORE + seat] == 0:
            outcome = ROMME
            if tab[T_ROMME_DOUBLE] != 0:
                factor = 2
    for s in range(n):
        i64[DEAL_POINTS + s] = i64[POINTS + s]
    for s in range(n):
        held = hand_value(u64, tab, s)
        if went_out and tab[T_GOING_OUT_CREDIT] != 0:
            i64[DEAL_POINTS + seat] += factor * held
        if tab[T_HAND_PENALTY] != 0:
            i64[DEAL_POINTS + s] -= factor * held
    for s in range(n):
        i64[TOTALS + s] += i64[DEAL_POINTS + s]
    i64[OUTCOME] = outcome
    i64[DEALS_PLAYED] += 1
    i64[PHASE] = DEAL_OVER
    i64[BANNED] = -1
    i64[MUST_USE] = -1
