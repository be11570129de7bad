"""A rummy heuristic that acts from the observation only (docs/ARCHITECTURE.md "Agents").

:class:`GreedyAgent` reads the public view (:func:`treppen_env.observation.decode`) and the action
mask, never the engine state. Each decision scores hands with one function, ``_plan``: the best way
to lay a hand out this turn as card-disjoint melds and lay-off chains (a card laid off onto a
table run's end, then the next card of that suit onto the new end, ...), scored as

    booked points + going-out bonus - weight of the cards left in hand (after the best discard)

where a card left in hand weighs its hand value plus a per-card cost, less a credit for every
live card (not seen on the table, in its own hand or in an opponent's known cards) that would
turn it and its partners into a meld.

- Draw phase (RULES §4.1-4.2): every legal staircase take whose deepest card the plan uses
  (a deep card taken for nothing is never considered) is scored against drawing from the stock
  (the current hand's plan plus a small expected gain of an unknown card); the stock wins ties.
- Meld phase (RULES §4.3-4.5): play the first step of the best plan for the hand (going out when
  a plan empties the hand, or leaves one card to discard); with nothing left to lay, discard the
  card with the highest weight that an opponent is least likely to use (not fitting a table
  meld's open end, not completing or extending a meld with an opponent's known cards).

Only actions whose mask bit is set are ever returned, so both presets and 2-4 players work; in
``rum500`` the plan must contain the card to be used (``must_use``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from agents.base import Agent, legal_actions
from treppen_env.actions import (
    DISCARD_BASE,
    DRAW,
    LAYOFF_BASE,
    MELD_BASE,
    TARGET_HIGH,
    TARGET_LOW,
    TARGET_SET,
    encode_layoff,
    encode_meld,
    encode_take,
)
from treppen_env.cards import (
    FULL_DECK,
    HAND_POINTS,
    NUM_CARDS,
    NUM_RANKS,
    bits_to_cards,
    cards_to_bits,
    make_card,
    rank_of,
    suit_of,
)
from treppen_env.melds import MAX_RUN, MELD_BITS, allowed_melds, layoff_value, meld_values
from treppen_env.observation import PublicView, decode, views
from treppen_env.rules import PRESETS, Rules, make_rules

#: Other cards of each card's rank.
_MATES = tuple(sum(1 << make_card(s, rank_of(c)) for s in range(4)) & ~(1 << c) for c in range(NUM_CARDS))
#: Next card up / down in the same suit (the ace follows the king and precedes the 2).
_UP = tuple(make_card(suit_of(c), (rank_of(c) + 1) % NUM_RANKS) for c in range(NUM_CARDS))
_DOWN = tuple(make_card(suit_of(c), (rank_of(c) - 1) % NUM_RANKS) for c in range(NUM_CARDS))
_MEAN_HAND_POINTS = sum(HAND_POINTS) / NUM_CARDS
#: For each card, which candidate melds hold it (shape (52, 637), bool).
_CONTAINS = ((MELD_BITS[None, :] >> np.arange(NUM_CARDS, dtype=np.uint64)[:, None]) & np.uint64(1)).astype(bool)


def _row_bits(row: np.ndarray) -> int:
    """Bitset of the nonzero entries of a (52,) array."""
    return int.from_bytes(np.packbits(row != 0, bitorder="little").tobytes(), "little")


@dataclass(frozen=True, slots=True)
class _Context:
    """What one decision knows besides the hand: the table's open ends, dead and live cards.

    Card sets are bitsets over the 52 card indices (bit ``c`` set when card ``c`` is in the set).
    """

    rules: Rules
    #: Whether runs turn the corner (K-A-2, RULES §3.2).
    corner: bool
    #: Points booked for each candidate meld (:func:`treppen_env.melds.meld_values`).
    values: tuple[int, ...]
    #: Cards known to be in the next player's hand, and in the other opponents' hands.
    next_known: int
    other_known: int
    #: Cards on the staircase.
    stairs: int
    #: Cards no meld of ours can use: on the table or known in an opponent's hand.
    dead: int
    #: Cards that fit an open end of a table meld (a set's missing suit or a run's next card).
    fits: int
    #: Open ends of the table: (card that fits, target, how many cards the end may still take).
    slots: list[tuple[int, int, int]]
    #: Points that going out is worth beyond the cards laid (RULES §6.2-6.3).
    out_bonus: float


class GreedyAgent(Agent):
    """Heuristic rummy player acting from the observation only (see the module docstring).

    :param seed: seeds the agent's generator (used only for ``epsilon`` exploration); with
        ``epsilon=0`` the agent is deterministic.
    :param rules: the preset name or :class:`treppen_env.rules.Rules` of the game; it sets the
        meld values and whether runs turn the corner. ``None`` infers the preset from the
        observations: ``rum500`` once a must-use card or a filtered take mask is seen (until
        :meth:`reset`), ``treppenromme`` otherwise.
    :param epsilon: probability of playing a uniformly random legal action instead.
    :param stock_gain: expected points gained by an unknown stock card (draw-phase baseline).
    :param take_margin: points a staircase take must beat the stock by.
    :param card_cost: weight of every card kept in hand, on top of its hand value.
    :param out_credit: weight of each live card that would complete a partial meld.
    :param min_weight: the least a card kept in hand weighs (so a meld is never worth keeping).
    """

    name = "greedy"

    def __init__(
        self,
        seed: int | None = None,
        rules: str | Rules | None = None,
        epsilon: float = 0.0,
        stock_gain: float = 3.0,
        take_margin: float = 2.0,
        card_cost: float = 1.0,
        out_credit: float = 5.0,
        min_weight: float = 1.0,
    ):
        super().__init__(seed)
        if not 0.0 <= epsilon <= 1.0:
            raise ValueError(f"epsilon={epsilon!r} must be in [0, 1]")
        self.rules = None if rules is None else make_rules(rules)
        self.epsilon = epsilon
        self.stock_gain = stock_gain
        self.take_margin = take_margin
        self.card_cost = card_cost
        self.out_credit = out_credit
        self.min_weight = min_weight
        self._seen_must_use = False

    def reset(self, seed: int | None = None) -> None:
        """Forget the preset inferred from earlier observations (when ``rules`` is ``None``).

        :param seed: when given, reseed the generator (used only for ``epsilon``).
        """
        super().reset(seed)
        self._seen_must_use = False

    def __repr__(self) -> str:
        rules = None if self.rules is None else self.rules.name
        return f"GreedyAgent(rules={rules!r}, epsilon={self.epsilon})"

    # ------------------------------------------------------------------ decisions
    def act(self, observation: dict[str, Any]) -> int:
        """The heuristic's legal action for ``observation`` (see the module docstring).

        :raises ValueError: when the mask has no legal action (this agent is not to move).
        """
        mask = observation["action_mask"]
        legal = legal_actions(observation)
        if self.epsilon and self.rng.random() < self.epsilon:
            return int(legal[self.rng.integers(legal.size)])
        view = decode(observation)
        table = views(np.asarray(observation["observation"]))["table"]
        return self.decide(view, table, mask, legal)

    def decide(self, view: PublicView, table: np.ndarray, mask: np.ndarray, legal: np.ndarray) -> int:
        """The heuristic's action from an observation already decoded (no epsilon exploration).

        Search playouts call this with a view built straight from a sampled state.

        :param view: the decoded observation (:func:`treppen_env.observation.decode`).
        :param table: the observation's ``table`` piece, float32 (52, 7).
        :param mask: the action mask, int8 (898,); ``legal``: its legal actions, ascending.
        """
        if legal[-1] < MELD_BASE:  # draw phase: only draw / take bits
            return self._draw(view, table, mask, legal)
        return self._meld(view, table, mask, legal)

    def _draw(self, view: PublicView, table: np.ndarray, mask: np.ndarray, legal: np.ndarray) -> int:
        """RULES §4.1-4.2: the stock, or the staircase take that gains the most."""
        depth = len(view.staircase)
        if not all(mask[encode_take(d)] for d in range(1, depth + 1)):
            self._seen_must_use = True  # only the must-use rule filters takes (RULES §4.2)
        ctx = self._context(view, table)
        hand = cards_to_bits(view.hand)
        best_action, best = DRAW, -np.inf
        if mask[DRAW]:
            score, _ = self._plan(hand, ctx, banned=-1, include=-1, before_draw=True)
            best = score + self.stock_gain + self.take_margin
        taken = 0
        for d in range(1, depth + 1):
            card = view.staircase[-d]
            taken |= 1 << card
            action = encode_take(d)
            if not mask[action]:
                continue
            include = card if d > 1 or ctx.rules.must_use_taken else -1
            if include >= 0 and not self._usable(card, hand | taken, ctx):
                continue
            score, _ = self._plan(hand | taken, ctx, banned=card if d == 1 else -1, include=include)
            if score > best:
                best_action, best = action, score
        if best_action == DRAW and not mask[DRAW]:  # stock empty and no take scored: take the best legal
            return int(legal[0])
        return best_action

    def _meld(self, view: PublicView, table: np.ndarray, mask: np.ndarray, legal: np.ndarray) -> int:
        """RULES §4.3-4.5: the next step of the best plan, else the safest discard."""
        if view.must_use is not None:
            self._seen_must_use = True
        ctx = self._context(view, table)
        hand = cards_to_bits(view.hand)
        banned = -1 if view.banned is None else view.banned
        include = -1 if view.must_use is None else view.must_use
        _, steps = self._plan(hand, ctx, banned=banned, include=include)
        if steps:
            ordered = sorted(steps, key=lambda s: (include < 0 or not s[0] >> include & 1, -s[1]))
            for _, _, first in ordered:
                if mask[first]:
                    return first
        discards = [int(a) - DISCARD_BASE for a in legal if a >= DISCARD_BASE]
        if discards:
            weights = self._weights(hand, ctx)
            return DISCARD_BASE + max(discards, key=lambda c: (weights[c] - self._danger(c, ctx), c))
        # Nothing to discard (must-use card pending): the most valuable legal lay.
        plays = [int(a) for a in legal if MELD_BASE <= a < DISCARD_BASE]
        return max(plays, key=lambda a: (self._lay_value(a, ctx), a)) if plays else int(legal[0])

    # ------------------------------------------------------------------ context
    def _context(self, view: PublicView, table: np.ndarray) -> _Context:
        if self.rules is not None:
            rules = self.rules
        else:
            rules = PRESETS["rum500" if self._seen_must_use else "treppenromme"]
        on_table = _row_bits(table[:, 0]) | _row_bits(table[:, 1])
        known = [cards_to_bits(k) for k in view.known]
        next_known = known[0] if known else 0
        other_known = 0
        for k in known[1:]:
            other_known |= k
        # Going out ends the deal: the opponents' hands are credited (doubled on a Rommé, §6.2)
        # or deducted from them (rum500, §6.3); either way it also stops their scoring.
        opp = 0.0
        for k in range(1, view.num_players):
            seen = known[k - 1]
            opp += sum(HAND_POINTS[c] for c in bits_to_cards(seen))
            opp += (view.hand_sizes[k] - seen.bit_count()) * _MEAN_HAND_POINTS
        if not rules.going_out_credit:
            opp /= max(1, view.num_players - 1)
        elif rules.romme_double and not view.laid_before[0]:
            opp *= 2
        return _Context(
            rules=rules,
            corner=rules.corner_runs,
            values=meld_values(rules),
            next_known=next_known,
            other_known=other_known,
            stairs=cards_to_bits(view.staircase),
            dead=on_table | next_known | other_known,
            fits=_row_bits(table[:, 4]) | _row_bits(table[:, 5]) | _row_bits(table[:, 6]),
            slots=self._slots(view, table),
            out_bonus=opp + 10.0,
        )

    def _slots(self, view: PublicView, table: np.ndarray) -> list[tuple[int, int, int]]:
        """Open ends of the table: (card that fits, target, how many cards the end may still take)."""
        slots = []
        for meld in view.melds:
            cards = meld["cards"]
            if meld["kind"] == "set":
                if len(cards) == 3:
                    missing = next(bits_to_cards(_MATES[cards[0]] & ~cards_to_bits(cards)))
                    slots.append((missing, TARGET_SET, 1))
                continue
            room = MAX_RUN - len(cards)
            low, high = _DOWN[cards[0]], _UP[cards[-1]]
            if room and table[low, 5]:
                slots.append((low, TARGET_LOW, room))
            if room and table[high, 6]:
                slots.append((high, TARGET_HIGH, room))
        return slots

    # ------------------------------------------------------------------ plans
    def _candidates(self, hand: int, ctx: _Context) -> list[tuple[int, float, int]]:
        """Melds and lay-off chains within ``hand``: (card bits, booked value, first action)."""
        fit = ((MELD_BITS & np.uint64(FULL_DECK ^ hand)) == 0) & allowed_melds(ctx.rules)
        out = [(int(MELD_BITS[i]), float(ctx.values[i]), encode_meld(int(i))) for i in np.flatnonzero(fit)]
        for card, target, room in ctx.slots:
            if not hand >> card & 1:
                continue
            first = encode_layoff(card, target)
            bits, value, cur = 0, 0.0, card
            for _ in range(room):
                bits |= 1 << cur
                value += layoff_value(ctx.rules, cur, target)
                out.append((bits, value, first))
                if target == TARGET_SET or (not ctx.corner and rank_of(cur) == 0):
                    break  # a set takes one card; without corner runs the ace ends a run (§3.2)
                cur = _UP[cur] if target == TARGET_HIGH else _DOWN[cur]
                if not hand >> cur & 1:
                    break
        return out

    def _usable(self, card: int, cards: int, ctx: _Context) -> bool:
        """Whether ``card`` can be melded with ``cards`` or laid off (possibly via a chain)."""
        if ctx.fits >> card & 1:
            return True
        fit = ((MELD_BITS & np.uint64(FULL_DECK ^ cards)) == 0) & allowed_melds(ctx.rules)
        if (fit & _CONTAINS[card]).any():
            return True
        return any(bits >> card & 1 for bits, _, _ in self._candidates(cards, ctx))

    def _plan(
        self, hand: int, ctx: _Context, banned: int, include: int, before_draw: bool = False
    ) -> tuple[float, list[tuple[int, float, int]]]:
        """Best score of ``hand`` this turn and the steps of that plan.

        :param banned: the card that may not be discarded (§4.4), or -1.
        :param include: a card every plan must lay (must-use, or a deep take's card), or -1.
        :param before_draw: score ``hand`` before a stock draw: the unknown card joins it, and an
            empty plan remainder goes out by discarding that card.
        """
        cands = self._candidates(hand, ctx)
        cands.sort(key=lambda c: -c[1])
        best: list[Any] = [-np.inf, []]
        weights_cache: dict[int, float] = {}
        need = 0 if include < 0 else 1 << include
        ban = 0 if banned < 0 else 1 << banned
        budget = [4000]

        def leaf(used: int, booked: float, chosen: list[int]) -> None:
            if need and not used & need:
                return
            rest = hand & ~used
            if rest and rest == ban:
                return  # a dead end (§4.5)
            if rest == 0 or (not before_draw and rest.bit_count() == 1):
                score = booked + ctx.out_bonus
            else:
                if rest not in weights_cache:
                    weights_cache[rest] = self._left_weight(rest, ctx, ban, unknown=before_draw)
                score = booked - weights_cache[rest]
            if score > best[0]:
                best[0], best[1] = score, [cands[j] for j in chosen]

        def search(start: int, used: int, booked: float, chosen: list[int]) -> None:
            budget[0] -= 1
            leaf(used, booked, chosen)
            for j in range(start, len(cands)):
                if budget[0] <= 0:
                    return
                bits, value, _ = cands[j]
                if not bits & used:
                    chosen.append(j)
                    search(j + 1, used | bits, booked + value, chosen)
                    chosen.pop()

        search(0, 0, 0.0, [])
        return best[0], best[1]

    # ------------------------------------------------------------------ weights
    def _weights(self, cards: int, ctx: _Context) -> dict[int, float]:
        """Cost of keeping each card of ``cards``: hand value + card cost - partial-meld credit."""
        unseen = ~(ctx.dead | cards) & FULL_DECK
        credit = self.out_credit
        weights = {}
        for c in bits_to_cards(cards):
            live = 0.0
            if _MATES[c] & cards:  # a pair: the other suits of the rank complete a set
                live += _live(_MATES[c] & ~cards, unseen, ctx.stairs)
            up, down = _UP[c], _DOWN[c]
            if cards >> up & 1 or cards >> down & 1:  # two in a row: the cards at both ends
                lo = _DOWN[down] if cards >> down & 1 else down
                hi = _UP[up] if cards >> up & 1 else up
                live += _live((1 << lo) | (1 << hi), unseen, ctx.stairs)
            else:
                for gap, far in ((up, _UP[up]), (down, _DOWN[down])):
                    if cards >> far & 1:  # a gap: the middle card completes it
                        live += _live(1 << gap, unseen, ctx.stairs)
            weights[c] = max(HAND_POINTS[c] + self.card_cost - credit * min(live, 3.0), self.min_weight)
        return weights

    def _left_weight(self, rest: int, ctx: _Context, ban: int, unknown: bool) -> float:
        """Weight of the cards ``rest`` left after the plan, after the turn's best discard.

        Discarding a card saves its weight but costs its danger. ``ban`` is the bitset of the card
        that may not be discarded; ``unknown`` adds the stock card still to be drawn, weighing an
        average card (then the plan was made before the draw).
        """
        weights = self._weights(rest, ctx)
        total = sum(weights.values())
        saved = [weights[c] - self._danger(c, ctx) for c in weights if not ban >> c & 1]
        if unknown:
            average = _MEAN_HAND_POINTS + self.card_cost
            total += average
            saved.append(average)
        return total - max(saved)

    def _danger(self, card: int, ctx: _Context) -> float:
        """How much discarding ``card`` helps the opponents (§4.1: the next one can take it)."""
        value = HAND_POINTS[card]
        if ctx.fits >> card & 1:
            return value + 10.0
        danger = 0.0
        for known, weight in ((ctx.next_known, 1.0), (ctx.other_known, 0.5)):
            if not known:
                continue
            up, down = _UP[card], _DOWN[card]
            mates = (_MATES[card] & known).bit_count()
            run = (known >> up & 1 and (known >> _UP[up] & 1 or known >> down & 1)) or (
                known >> down & 1 and known >> _DOWN[down] & 1
            )
            if mates >= 2 or run:
                danger += weight * (value + 15.0)
            elif mates or known >> up & 1 or known >> down & 1:
                danger += weight * 4.0
        return danger

    def _lay_value(self, action: int, ctx: _Context) -> float:
        if action < LAYOFF_BASE:
            return ctx.values[action - MELD_BASE]
        card, target = divmod(action - LAYOFF_BASE, 3)
        return layoff_value(ctx.rules, card, target)


def _live(bits: int, unseen: int, stairs: int) -> float:
    """Live cards among ``bits``: unseen ones count 1, staircase ones (takable) count 1/2."""
    return (bits & unseen & ~stairs).bit_count() + 0.5 * (bits & stairs).bit_count()
