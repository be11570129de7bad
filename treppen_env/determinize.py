"""Determinization: full game states sampled from what one player may know (docs/ARCHITECTURE.md "Agents").

Search agents never read the engine: they sample states consistent with their observation and
simulate on those. :func:`sample_state` rebuilds everything public exactly (staircase, table
melds, booked points, game totals, must-use card, ban, laid-before flags, phase, turn, dealer,
who is to move) and deals the unseen cards at random: into each opponent's hand around the cards
it is publicly known to hold (taken from the staircase, RULES §4.1) up to its hand size, and the
rest into the stock in random order.

The observer's own publicly known cards are not in its observation (the layout has opponents'
rows only), so a caller that remembers them passes them as ``own_known``; they only change what
the opponents see in the sampled state.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from treppen_env.cards import FULL_DECK, bits_to_cards, cards_to_bits, rank_of, suit_of
from treppen_env.engine import GameState, Phase, TableMeld, can_play_on
from treppen_env.observation import PublicView, decode, views
from treppen_env.rules import Rules, make_rules

#: Deals of the hidden cards tried before a must-use card no hidden hand can use is an error.
MAX_TRIES = 10_000
_PHASES = {"draw": Phase.DRAW, "meld": Phase.MELD, "deal_over": Phase.DEAL_OVER}


def unseen_cards(view: PublicView) -> int:
    """Bitset of the cards the observer cannot place: neither in its hand, on the staircase, on
    the table nor publicly known to be in an opponent's hand (these lie in the opponents' other
    hand cards and the stock)."""
    seen = cards_to_bits(view.hand) | cards_to_bits(view.staircase)
    for meld in view.melds:
        seen |= cards_to_bits(meld["cards"])
    for known in view.known:
        seen |= cards_to_bits(known)
    return FULL_DECK & ~seen


def sample_state(
    observation: np.ndarray | dict,
    rules: str | Rules,
    rng: np.random.Generator,
    own_known: Iterable[int] = (),
) -> GameState:
    """A full game state consistent with ``observation``, the unseen cards dealt at random.

    The observer sits at seat 0 of the sample (observations are relative to the observer, so
    relative seat k is seat k). ``observation.encode(sample, 0)`` equals the given vector element
    for element and, for the player to move, ``sample.legal_mask()`` equals its action mask.

    :param observation: an observation vector of shape (OBS_SIZE,) float32, or the env's dict.
    :param rules: the rules of the game (preset name or :class:`Rules`); they are not in the
        observation.
    :param rng: the only randomness: the deal of the unseen cards, and the sample's generator
        (reshuffles of the staircase, RULES §6.4).
    :param own_known: cards the observer is publicly known to hold (it took them from the
        staircase and still holds them); not part of its own observation.
    :return: a new :class:`GameState` inside the deal (not over). When another player must still
        use a taken card (RULES §4.2), only deals of its hidden cards that let it do so are kept.
    :raises ValueError: when the observation is of a deal that is over, or its card counts do not
        add up (the hand sizes and stock size do not match the unseen cards), or when no deal of
        the unseen cards lets the player to move use its must-use card.
    """
    rules = make_rules(rules) if isinstance(rules, str) else rules
    view = decode(observation)
    if view.phase == "deal_over":
        raise ValueError("the observation is of a deal that is over: there is nothing to sample")
    obs = observation["observation"] if isinstance(observation, dict) else observation
    n = view.num_players
    hidden = unseen_cards(view)
    known = [0, *(cards_to_bits(k) for k in view.known)]
    need = [view.hand_sizes[s] - known[s].bit_count() for s in range(1, n)]
    if hidden.bit_count() != sum(need) + view.stock_size or min(need, default=0) < 0:
        raise ValueError(
            f"the observation does not add up: {hidden.bit_count()} unseen cards for opponents' hidden "
            f"cards {need} and a stock of {view.stock_size}"
        )
    hand = cards_to_bits(view.hand)
    for _ in range(MAX_TRIES):
        pool = rng.permutation(list(bits_to_cards(hidden))).tolist()
        hands = [hand]
        start = 0
        for s in range(1, n):
            hands.append(known[s] | cards_to_bits(pool[start : start + need[s - 1]]))
            start += need[s - 1]
        if view.must_use is None or view.to_move == 0 or _can_use(rules, view, hands[view.to_move], view.must_use):
            break
    else:
        raise ValueError(f"no deal of the unseen cards in {MAX_TRIES} tries lets the player to move use its taken card")
    known[0] = cards_to_bits(own_known) & hand
    # Booked points come only from laying (RULES §5): points without a lay in an earlier turn mean a
    # lay this turn. After an earlier lay the flag is unknowable and changes nothing (it only feeds
    # laid_before, §6.2).
    mover = view.to_move
    phase = _PHASES[view.phase]
    return GameState.from_position(
        rules,
        rng,
        dealer=view.dealer,
        current=mover,
        phase=phase,
        hands=hands,
        staircase=view.staircase,
        stock=pool[start:],
        melds=[table_meld(m) for m in view.melds],
        known=known,
        points=view.points,
        totals=view.totals,
        laid_before=view.laid_before,
        laid_this_turn=phase == Phase.MELD and not view.laid_before[mover] and view.points[mover] != 0,
        banned=-1 if view.banned is None else view.banned,
        must_use=-1 if view.must_use is None else view.must_use,
        turn=round(float(views(np.asarray(obs))["turn"][0]) * rules.max_turns),
    )


def table_meld(meld: dict) -> TableMeld:
    """The engine's meld for one decoded table meld (cards from the low end to the high end)."""
    cards = meld["cards"]
    bits = cards_to_bits(cards)
    if meld["kind"] == "set":
        return TableMeld(meld["owner"], "set", -1, rank_of(cards[0]), len(cards), bits)
    return TableMeld(meld["owner"], "run", suit_of(cards[0]), rank_of(cards[0]), len(cards), bits)


def _can_use(rules: Rules, view: PublicView, hand: int, card: int) -> bool:
    """Whether the player to move can meld or lay off its must-use ``card`` with ``hand`` (RULES §4.2)."""
    return can_play_on(rules, [table_meld(m) for m in view.melds], card, hand)
