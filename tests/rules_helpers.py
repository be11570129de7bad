"""Helpers for the scripted rules tests: stacked decks and playing actions by their text.

A scripted deal names the hands, the first staircase card and the top stock cards it needs; the
other cards fill the remaining places in card-index order, so every stacked deck is deterministic.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import pytest

from treppen_env.actions import action_to_str, parse_action
from treppen_env.cards import NUM_CARDS, bits_to_cards, card_to_str, cards_to_bits, parse_card
from treppen_env.engine import GameState, IllegalActionError
from treppen_env.rules import Rules, make_rules


def stack_deck(
    num_players: int,
    rules: Rules,
    dealer: int = 0,
    hands: dict[int, Sequence[str]] | None = None,
    staircase: str | None = None,
    stock: Sequence[str] = (),
) -> list[str]:
    """A 52-card deck (top first) that deals ``hands`` to their seats (docs/ARCHITECTURE.md "Environment").

    :param num_players: players at the table.
    :param rules: rules giving the number of cards dealt (RULES §2.2).
    :param dealer: the dealing seat; cards go one at a time clockwise starting left of the dealer.
    :param hands: seat -> cards wanted in that hand (fewer than dealt: the rest is filled).
    :param staircase: the first staircase card, or ``None`` for a filler.
    :param stock: the top stock cards, top first; the rest of the stock is filled.
    :return: the deck as card texts.
    """
    hands = hands or {}
    per_hand = rules.cards_dealt(num_players)
    wanted = [parse_card(c) for cards in hands.values() for c in cards]
    wanted += [parse_card(c) for c in stock]
    if staircase is not None:
        wanted.append(parse_card(staircase))
    if len(set(wanted)) != len(wanted):
        raise AssertionError(f"a stacked deck names a card twice: {wanted}")
    filler = iter(c for c in range(NUM_CARDS) if c not in set(wanted))
    deck: list[int] = []
    for i in range(num_players * per_hand):
        seat = (dealer + 1 + i) % num_players
        mine = hands.get(seat, ())
        k = i // num_players
        if len(mine) > per_hand:
            raise AssertionError(f"seat {seat} is dealt {per_hand} cards, asked for {len(mine)}")
        deck.append(parse_card(mine[k]) if k < len(mine) else next(filler))
    deck.append(parse_card(staircase) if staircase is not None else next(filler))
    deck += [parse_card(c) for c in stock]
    deck += list(filler)
    assert sorted(deck) == list(range(NUM_CARDS))
    return [card_to_str(c) for c in deck]


def new_deal(
    preset: str = "treppenromme",
    num_players: int = 2,
    dealer: int = 0,
    hands: dict[int, Sequence[str]] | None = None,
    staircase: str | None = None,
    stock: Sequence[str] = (),
    seed: int = 0,
    **options: object,
) -> GameState:
    """A :class:`GameState` dealt from a stacked deck (see :func:`stack_deck`)."""
    rules = make_rules(preset, **options)
    state = GameState(rules, num_players, np.random.default_rng(seed))
    state.deal(dealer, stack_deck(num_players, rules, dealer, hands, staircase, stock))
    return state


def play(state: GameState, *texts: str) -> None:
    """Apply the actions written as text, in order (e.g. ``"draw"``, ``"meld 6S 6H 6D"``)."""
    for text in texts:
        state.apply(parse_action(text))


def bits(*texts: str) -> int:
    """Card bitset of the card texts."""
    return cards_to_bits(parse_card(t) for t in texts)


def names(cards: int | Iterable[int]) -> list[str]:
    """Card texts of a bitset (index order) or of a sequence of cards (its order)."""
    seq = bits_to_cards(cards) if isinstance(cards, int) else cards
    return [card_to_str(c) for c in seq]


def legal_texts(state: GameState) -> set[str]:
    """Text of every legal action of the player to move."""
    return {action_to_str(a) for a in state.legal_actions()}


def snapshot(state: GameState) -> tuple:
    """Everything observable about a state, to check that a failed action changed nothing."""
    return (
        list(state.hands),
        list(state.staircase),
        list(state.stock),
        [(m.owner, m.kind, m.suit, m.low, m.length, m.bits) for m in state.melds],
        list(state.points),
        list(state.known),
        list(state.totals),
        state.phase,
        state.current,
        state.turn,
        state.banned,
        state.must_use,
        state.outcome,
        state.legal_mask().tobytes(),
    )


def assert_illegal(state: GameState, text: str, *reason: str) -> None:
    """The action is masked out, and applying it raises IllegalActionError whose message names the
    action (and contains each part of ``reason``) without changing the state."""
    action = parse_action(text)
    assert state.legal_mask()[action] == 0
    before = snapshot(state)
    with pytest.raises(IllegalActionError) as info:
        state.apply(action)
    for part in (text, *reason):
        assert part in str(info.value)
    assert snapshot(state) == before
