"""What the opponents were seen to do: their recent decision positions, rebuilt from the observer's
own consecutive observations (docs/ARCHITECTURE.md "Agents", beliefs).

An observation holds no move history, but two of the observer's observations hold the changes in
between. :class:`History` keeps the observation of the observer's last decision and its action;
at the next turn it rebuilds what happened in between from what became public:

- 2 players: the opponent's whole turn. Its draw (RULES §4.1): the stock (the stock shrank by one)
  or the top ``d`` staircase cards (the staircase lost them), so the staircase cards it declined;
  the cards it melded and laid off (new on the table, §4.3); its discard (the new top card, §4.4).
  Two decisions are kept: the draw and the discard.
- 3 or 4 players: the other turns interleave out of sight; only the last opponent's discard is
  kept (the top card of the staircase, the table as it is now).

Each decision is an :class:`OpponentDecision`: the position the opponent decided in as a
:class:`~treppen_env.engine.GameState` whose public part is exact and whose opponent hand is a
placeholder, the action it chose, and how its hand then follows from a hypothesis of its hand now:
one :class:`Undo` per turn part since, newest first, each adding the cards the opponent played in
it, removing those it took from the staircase, and for a stock draw one card it could have drawn.
:mod:`treppen_env.agent_core.belief_kernels` weighs deals of the unseen cards by how likely an opponent model
makes these decisions. Only public information enters: observations and
the observer's own actions, never a hidden card.

For the belief net (:mod:`treppen_env.agent_core.belief_net_kernels`), 2 players, :attr:`History.table`
keeps the whole deal's draws, lays and discards of the opponent in the kernels' own arrays: at
which turn it last discarded each card, last left each card on the staircase when it drew, and laid
each card (its first turn too, when it played first: read from the table and the staircase the
observer first sees). A turn that ends in a reshuffle is not followed.

A reshuffle of the staircase into the stock (``stock_exhausted="reshuffle"``, RULES §6.4) is seen
as a stock that grew: the cards that went into it were public, so the stock is dealt from them
only (:attr:`History.stock_pool`), not pooled with the opponents' hidden cards.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from treppen_env.actions import DISCARD_BASE, DRAW, TAKE_BASE
from treppen_env.agent_core.belief_kernels import MAX_STEPS
from treppen_env.agent_core.belief_net_kernels import TableHistory, new_history
from treppen_env.cards import FULL_DECK, bits_to_cards, cards_to_bits
from treppen_env.determinize import table_meld, unseen_cards
from treppen_env.engine import GameState, Phase
from treppen_env.observation import PublicView, decode, views
from treppen_env.rules import Rules

#: Opponent turns remembered (2 players; their decisions then count in the beliefs).
MEMORY = 2


@dataclass(frozen=True)
class Undo:
    """One step back in an opponent's hand: the hand before = (the hand after | ``add``) &
    ``~remove``, less one random card of ``unknown`` for each of ``draws`` stock draws.

    :param add: cards it played in between (they were in its hand before).
    :param remove: cards it took from the staircase in between (they were not).
    :param draws: stock cards it drew in between (0 or 1).
    :param unknown: cards not publicly in its hand before (a drawn card is one of these).
    """

    add: int
    remove: int
    draws: int
    unknown: int


@dataclass
class OpponentDecision:
    """One decision an opponent was seen to make.

    :param seat: the opponent's seat relative to the observer (the observer is seat 0).
    :param state: the position it decided in: every public card exact, its hand a placeholder of
        the right size, the observer's hand as it was.
    :param action: the action it chose (0..897).
    :param undo: its hand then from its hand now: these steps applied in order, newest first.
    :param turn: the turn of the decision (RULES §6.5).
    """

    seat: int
    state: GameState
    action: int
    undo: list[Undo]
    turn: int


@dataclass
class _Seen:
    """The observer's last decision: its observation, decoded, and the cards it had taken."""

    view: PublicView
    own_known: int
    turn: int
    action: int = -1


@dataclass
class History:
    """The opponents' recent decisions as one observer saw them (see the module docstring).

    :param rules: the game's rules (the rebuilt positions are played by them).
    :param memory: opponent turns remembered, 2 players (:data:`MEMORY`).
    """

    rules: Rules
    memory: int = MEMORY
    decisions: list[OpponentDecision] = field(default_factory=list)
    #: Cards dealt into the stock at a reshuffle that are still unseen: the stock holds only these.
    stock_pool: int = 0
    #: The opponent's draws and discards this deal, relative seats (2 players; see the module docstring).
    table: TableHistory = field(default_factory=new_history)
    _seen: _Seen | None = None
    _public: int = 0
    _laid_before_now: bool = False

    def reset(self) -> None:
        """Forget the deal (a new one begins)."""
        self.decisions.clear()
        self.stock_pool = 0
        self.table = new_history()
        self._seen = None
        self._public = 0

    def observe(self, observation: dict, own_known: int = 0) -> None:
        """Note the observer's observation at a decision of its own (before it acts); at a new turn
        rebuild what the opponents did since its last action (:meth:`acted`).

        :param observation: the observer's observation (the env's dict or its vector).
        :param own_known: cards of its hand the others know it holds (it took them).
        """
        obs = observation["observation"] if isinstance(observation, dict) else observation
        view = decode(obs)
        turn = _turn(obs, self.rules)
        seen = self._seen
        if seen is not None and turn < seen.turn:  # a new deal without reset()
            self.reset()
            seen = None
        self._public |= cards_to_bits(view.staircase) | _known_bits(view)
        if seen is None and view.num_players == 2 and turn == 1 and view.phase == "draw":
            self._first_turn(view)
        if seen is not None and view.phase == "draw" and turn > seen.turn and seen.action >= DISCARD_BASE:
            self._rebuild(seen, view, turn)
        self._seen = _Seen(view, own_known, turn)

    def acted(self, action: int) -> None:
        """Note the observer's action at the decision :meth:`observe` saw last."""
        if self._seen is not None:
            self._seen.action = int(action)

    # ------------------------------------------------------------------ rebuilding
    def _rebuild(self, seen: _Seen, view: PublicView, turn: int) -> None:
        discard = seen.action - DISCARD_BASE
        before = [*seen.view.staircase, discard]
        if view.stock_size > seen.view.stock_size:  # a reshuffle: the staircase became the stock
            self._reshuffled(view)
            self.decisions.clear()  # the turn's moves are not all visible
            return
        self.stock_pool &= unseen_cards(view)
        self._laid_before_now = view.laid_before[0]
        if view.num_players == 2:
            self._opponent_turn(seen, view, before, turn)
        else:
            self.decisions = [self._last_discard(seen, view, turn)] if view.staircase else []
        self.decisions = [d for d in self.decisions if turn - d.turn <= 2 * self.memory and len(d.undo) <= MAX_STEPS]

    def _first_turn(self, view: PublicView) -> None:
        """The 2-player opponent's first turn, played before the observer's first decision: from
        the one card the deal turned up (RULES §2.3), it drew the stock (two cards now: it left the
        first) or took that card (one card now), then discarded the top card (RULES §4.1, §4.4)."""
        stairs = list(view.staircase)
        if len(stairs) == 2:
            self.table.declined[1, stairs[0]] = 1
        if len(stairs) in (1, 2):
            self.table.discarded[1, stairs[-1]] = 1
        for card in bits_to_cards(_table_bits(view)):
            self.table.laid[1, card] = 1

    def _reshuffled(self, view: PublicView) -> None:
        self.stock_pool = self._public & unseen_cards(view)

    def _opponent_turn(self, seen: _Seen, view: PublicView, before: list[int], turn: int) -> None:
        """The 2-player opponent's turn between the observer's discard and ``view``."""
        stairs = list(view.staircase)
        if not stairs:
            return
        discard = stairs[-1]
        drew_stock = view.stock_size == seen.view.stock_size - 1
        depth = 0 if drew_stock else len(before) - len(stairs) + 1
        if depth < 0 or stairs[:-1] != before[: len(before) - depth]:
            self.decisions.clear()  # not a turn this reader can follow
            return
        taken = cards_to_bits(before[len(before) - depth :]) if depth else 0
        played = _table_bits(view) & ~_table_bits(seen.view)
        for card in before[: len(before) - depth]:
            self.table.declined[1, card] = turn
        for card in bits_to_cards(played):
            self.table.laid[1, card] = turn
        self.table.discarded[1, discard] = turn
        known_before = cards_to_bits(seen.view.known[0])
        whole_turn = Undo(played | (1 << discard), taken, int(drew_stock), FULL_DECK & ~known_before)
        for old in self.decisions:  # its hand then, seen from its hand now: this turn undone first
            old.undo.insert(0, whole_turn)
        action = DRAW if drew_stock else TAKE_BASE + depth
        self.decisions.append(
            OpponentDecision(1, self._draw_position(seen, before, turn), action, [whole_turn], turn - 1)
        )
        known_then = cards_to_bits(view.known[0]) | ((known_before | taken) & (1 << discard))
        banned = before[-1] if depth == 1 and not played >> before[-1] & 1 else -1  # a card laid is no longer banned
        state = self._discard_position(view, seen, discard, known_then, banned, played != 0, turn)
        undo = [Undo(1 << discard, 0, 0, FULL_DECK & ~known_then)]
        self.decisions.append(OpponentDecision(1, state, DISCARD_BASE + discard, undo, turn - 1))

    def _last_discard(self, seen: _Seen, view: PublicView, turn: int) -> OpponentDecision:
        """The discard of the seat before the observer (3 or 4 players)."""
        seat = view.num_players - 1
        discard = view.staircase[-1]
        known_now = cards_to_bits(view.known[seat - 1])
        known_then = known_now | (cards_to_bits(seen.view.known[seat - 1]) & (1 << discard))
        played = _table_bits(view) & ~_table_bits(seen.view)
        # a single card newly known and still held was most likely taken alone, so banned (RULES §4.4)
        new = known_now & ~cards_to_bits(seen.view.known[seat - 1])
        banned = new.bit_length() - 1 if new.bit_count() == 1 else -1
        state = self._discard_position(view, seen, discard, known_then, banned, played != 0, turn, seat)
        undo = [Undo(1 << discard, 0, 0, FULL_DECK & ~known_then)]
        return OpponentDecision(seat, state, DISCARD_BASE + discard, undo, turn - 1)

    def _draw_position(self, seen: _Seen, staircase: list[int], turn: int) -> GameState:
        """The 2-player opponent's draw position: the observer's last position after its discard."""
        v = seen.view
        own = cards_to_bits(v.hand) & ~(1 << staircase[-1])
        own_known = seen.own_known & own
        known = [own_known, cards_to_bits(v.known[0])]
        sizes = [len(v.hand) - 1, v.hand_sizes[1]]
        laid_before = [self._laid_before_now, v.laid_before[1]]  # the observer's turn has ended
        return _position(
            self.rules, v, own, known, sizes, staircase, list(v.melds), v.stock_size, Phase.DRAW, 1, -1, False,
            laid_before, turn - 1,
        )  # fmt: skip

    def _discard_position(
        self,
        view: PublicView,
        seen: _Seen,
        discard: int,
        known_then: int,
        banned: int,
        laid: bool,
        turn: int,
        seat: int = 1,
    ) -> GameState:
        """An opponent's discard position: the table as it is now, the staircase below the discard."""
        own = cards_to_bits(view.hand)
        known = [seen.own_known & own, *(cards_to_bits(k) for k in view.known)]
        known[seat] = known_then
        sizes = list(view.hand_sizes)
        sizes[seat] += 1
        stairs = list(view.staircase[:-1])
        laid_before = list(view.laid_before)
        laid_before[seat] = seen.view.laid_before[seat]  # its own turn had not ended
        return _position(
            self.rules, view, own, known, sizes, stairs, list(view.melds), view.stock_size, Phase.MELD, seat, banned,
            laid, laid_before, turn - 1, discard_of=(seat, discard),
        )  # fmt: skip


def _position(
    rules: Rules,
    view: PublicView,
    own: int,
    known: list[int],
    sizes: list[int],
    staircase: list[int],
    melds: list[dict],
    stock_size: int,
    phase: Phase,
    mover: int,
    banned: int,
    laid: bool,
    laid_before: list[bool],
    turn: int,
    discard_of: tuple[int, int] | None = None,
) -> GameState:
    """A position with every public card as given and the opponents' other cards placeholders."""
    n = view.num_players
    table = [table_meld(m) for m in melds]
    on_table = 0
    for meld in table:
        on_table |= meld.bits
    hands = [own, *known[1:]]
    if discard_of is not None:
        hands[discard_of[0]] |= 1 << discard_of[1]
    placed = on_table | cards_to_bits(staircase)
    for hand in hands:
        placed |= hand
    filler = iter(bits_to_cards(FULL_DECK & ~placed))
    for s in range(1, n):
        while hands[s].bit_count() < sizes[s]:
            hands[s] |= 1 << next(filler)
    stock = list(filler)
    if len(stock) != stock_size:
        raise ValueError(f"rebuilt position: {len(stock)} cards left for a stock of {stock_size}")
    return GameState.from_position(
        rules,
        np.random.default_rng(0),
        dealer=view.dealer,
        current=mover,
        phase=phase,
        hands=hands,
        staircase=staircase,
        stock=stock,
        melds=table,
        known=[k & h for k, h in zip(known, hands, strict=True)],
        points=view.points,
        totals=view.totals,
        laid_before=laid_before,
        laid_this_turn=laid,
        banned=banned,
        turn=max(turn, 0),
    )


def _table_bits(view: PublicView) -> int:
    bits = 0
    for meld in view.melds:
        bits |= cards_to_bits(meld["cards"])
    return bits


def _known_bits(view: PublicView) -> int:
    bits = 0
    for known in view.known:
        bits |= cards_to_bits(known)
    return bits


def _turn(obs: np.ndarray, rules: Rules) -> int:
    return round(float(views(np.asarray(obs))["turn"][0]) * rules.max_turns)
