"""Observations of the OpenSpiel game: our encoder's tensor, cut by ``pyspiel.IIGObservationType``.

The pieces of the tensor, in this order (an ``IIGObservationType`` picks which are present):

- private info ``SINGLE_PLAYER``: ``hand`` (52,), the observer's cards (the encoder's piece);
  ``ALL_PLAYERS``: ``hands`` (4, 52), every seat's cards, relative seats as the encoder's;
  ``NONE``: no hand.
- public info: the other pieces of :data:`treppen_env.observation.LAYOUT`, as the encoder writes
  them (staircase, table, known cards, sizes, phase, points, ...).
- perfect recall (with public info): ``moves`` (:func:`max_game_length`,), the actions played
  since the deal, ``(action + 1) / 898`` each, 0 after the last.

So the default observation (public info, the observer's hand, no perfect recall) is exactly the
AEC env's ``observation`` vector (``treppen_env.observation.encode``), and the information state
is that vector followed by ``moves``. The information state remembers every move and the cards
the player holds; it does not keep which of its cards came from which draw of the stock, which
tells nothing about the cards it cannot see. Before the deal is dealt (the chance nodes) every
tensor is zeros. The strings say the same in text: the observer's cards, the public table, and
for perfect recall the moves.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pyspiel

from treppen_env import observation
from treppen_env.actions import NUM_ACTIONS
from treppen_env.cards import NUM_CARDS, card_flags, cards_to_str
from treppen_env.engine import GameState
from treppen_env.render import sort_for_display
from treppen_env.rules import Rules

if TYPE_CHECKING:
    from treppen.openspiel.game import TreppenState


def max_game_length(rules: Rules) -> int:
    """The most moves a deal can take: a draw and a discard in each of ``max_turns`` turns (RULES
    §6.5) and at most one meld or lay-off per card, since a laid card stays on the table (§3)."""
    return 2 * rules.max_turns + NUM_CARDS


class TreppenObserver:
    """OpenSpiel's Python observer (``tensor``, ``dict``, ``set_from``, ``string_from``) for one
    ``iig_obs_type``.

    :param rules: the game's rules; ``num_players``: its seats.
    :param params: must be empty (the observer takes no parameters).
    :raises ValueError: for observer parameters.
    """

    def __init__(self, rules: Rules, num_players: int, iig_obs_type: pyspiel.IIGObservationType, params: dict | None):
        if params:
            raise ValueError(f"the treppenromme observer takes no parameters; got {params}")
        self.num_players = num_players
        private = iig_obs_type.private_info
        pieces: list[tuple[str, tuple[int, ...]]] = []
        if private == pyspiel.PrivateInfoType.SINGLE_PLAYER:
            pieces.append(("hand", (NUM_CARDS,)))
        elif private == pyspiel.PrivateInfoType.ALL_PLAYERS:
            pieces.append(("hands", (observation.MAX_SEATS, NUM_CARDS)))
        self.public = iig_obs_type.public_info
        if self.public:
            pieces += [(name, shape) for name, shape in observation.LAYOUT if name != "hand"]
        self.recall = self.public and iig_obs_type.perfect_recall
        if self.recall:
            pieces.append(("moves", (max_game_length(rules),)))
        self.tensor = np.zeros(sum(int(np.prod(shape)) for _, shape in pieces), np.float32)
        self.dict: dict[str, np.ndarray] = {}
        start = 0
        for name, shape in pieces:
            size = int(np.prod(shape))
            self.dict[name] = self.tensor[start : start + size].reshape(shape)
            start += size
        #: The encoder's pieces this observer copies (the encoder's hand is the SINGLE_PLAYER piece).
        self._encoded = [name for name in self.dict if name in observation.SLICES]

    def set_from(self, state: TreppenState, player: int) -> None:
        """Write ``player``'s view of ``state`` into :attr:`tensor` (zeros before the deal)."""
        self.tensor.fill(0.0)
        engine = state.engine
        if engine is None:
            return
        if self._encoded:
            encoded = observation.encode(engine, player)
            for name in self._encoded:
                self.dict[name].reshape(-1)[:] = encoded[observation.SLICES[name]]
        if "hands" in self.dict:
            for k in range(self.num_players):
                seat = (player + k) % self.num_players
                self.dict["hands"][k] = np.frombuffer(card_flags(engine.hands[seat]), np.uint8)
        if self.recall:
            moves = state.moves
            self.dict["moves"][: len(moves)] = (np.asarray(moves, dtype=np.float32) + 1) / NUM_ACTIONS

    def string_from(self, state: TreppenState, player: int) -> str:
        """``player``'s view of ``state`` as text: the same information as the tensor."""
        engine = state.engine
        if engine is None:
            return f"p{player} dealt {len(state.deck)} of {NUM_CARDS} cards"
        parts = [f"p{player}"]
        if "hand" in self.dict:
            parts.append(f"hand {cards_to_str(sort_for_display(engine.hands[player]))}")
        if "hands" in self.dict:
            parts += [f"P{s} {cards_to_str(sort_for_display(engine.hands[s]))}" for s in range(self.num_players)]
        if self.public:
            parts.append(public_text(engine))
        if self.recall:
            parts.append(f"moves {' '.join(map(str, state.moves))}")
        return " | ".join(parts)


def public_text(engine: GameState) -> str:
    """What every player sees of ``engine``, as one line (seats absolute)."""
    seats = range(engine.num_players)
    melds = "; ".join(f"P{m.owner} {m.kind} {cards_to_str(m.cards)}" for m in engine.melds)
    known = ", ".join(f"P{s} {cards_to_str(sort_for_display(engine.known[s]))}" for s in seats if engine.known[s])
    return (
        f"turn {engine.turn}, P{engine.current} {engine.phase.name.lower()}, stock {len(engine.stock)}, "
        f"staircase {cards_to_str(engine.staircase)}, melds [{melds}], known [{known}], "
        f"hand sizes {[engine.hands[s].bit_count() for s in seats]}, points {engine.points}, "
        f"laid before {engine.laid_before}, laid this turn {engine.laid_this_turn}, "
        f"must use {engine.must_use}, banned {engine.banned}, outcome {engine.outcome}, totals {engine.totals}"
    )
