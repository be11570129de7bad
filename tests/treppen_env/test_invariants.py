"""Invariants over many random deals, checked against an independent shadow of the rules.

A :class:`Shadow` replays every action from the text of RULES.md (its own meld tests, values and
deal scoring; it shares nothing with the engine but the action numbering) and after every action
the engine must agree with it: hands, staircase, stock, table, booked points, known cards, whose
turn and phase, the §4.4 ban, the §4.2 must-use card, the deal result and the totals. On top:

- all 52 cards are in exactly one of stock, staircase, hands and melds (RULES §1.1);
- the staircase is non-empty at every turn start (§4.6);
- every deal ends within ``max_turns`` turns (§6.5);
- the legal mask is non-empty while the deal is on and equals the shadow's legal set (mask
  exactness, docs/ARCHITECTURE.md "Actions");
- in sampled positions every masked-in action succeeds on a clone and sampled masked-out actions
  raise on a clone, leaving it unchanged.

The default run plays a few deals per preset and player count, and a sweep over every option and
both random policies (144 deals in all, about 14 CPU seconds).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np
import pytest

from treppen_env.actions import (
    DISCARD_BASE,
    DRAW,
    LAYOFF_BASE,
    MELD_BASE,
    TAKE_BASE,
    decode,
    parse_action,
)
from treppen_env.cards import card_to_str
from treppen_env.engine import GameState, IllegalActionError, Phase
from treppen_env.rules import Rules, make_rules

SET, LOW, HIGH = 0, 1, 2
ALL_CARDS = (1 << 52) - 1
#: Ace values straight from the table of RULES §8 (set, high, middle, low, hand).
ACE = {
    "treppenromme": {"set": 15, "high": 10, "middle": 5, "low": 1, "hand": 15},
    "rum500": {"set": 15, "high": 15, "middle": None, "low": 1, "hand": 15},
}


def face(rank: int) -> int:
    """RULES §1.3: 2-10 face value, J Q K 10 (rank 1 = 2 .. rank 12 = K)."""
    return min(rank + 1, 10)


def bit_of(cards) -> int:
    return sum(1 << c for c in cards)


def cards_of(bits: int) -> list[int]:
    return [c for c in range(52) if bits >> c & 1]


def run_ok(corner: bool, cards: list[int]) -> bool:
    """RULES §3.2: 3-13 cards of one suit in unbroken order; without corners the ace is only the low
    card (before the 2) or the high card (after the K)."""
    n = len(cards)
    if not 3 <= n <= 13 or len({c // 13 for c in cards}) != 1:
        return False
    start = cards[0] % 13
    if any(c % 13 != (start + i) % 13 for i, c in enumerate(cards)):
        return False
    return corner or all(c % 13 != 0 or i in (0, n - 1) for i, c in enumerate(cards))


def set_ok(cards: list[int]) -> bool:
    """RULES §3.1: 3 or 4 cards of one rank."""
    return len(cards) in (3, 4) and len({c % 13 for c in cards}) == 1 and len(set(cards)) == len(cards)


def meld_points(preset: str, kind: str, cards: list[int]) -> int:
    """RULES §3.3-3.4: points booked for a meld."""
    aces = ACE[preset]
    if kind == "set":
        rank = cards[0] % 13
        return len(cards) * (aces["set"] if rank == 0 else face(rank))
    total = 0
    for i, card in enumerate(cards):
        if card % 13:
            total += face(card % 13)
        elif i == 0:
            total += aces["low"]
        elif i == len(cards) - 1:
            total += aces["high"]
        else:
            total += aces["middle"]
    return total


def layoff_points(preset: str, card: int, target: int) -> int:
    """RULES §5.2: a laid-off ace books by its place; other cards their face value."""
    if card % 13:
        return face(card % 13)
    return ACE[preset][("set", "low", "high")[target]]


def hand_value(preset: str, bits: int) -> int:
    return sum(ACE[preset]["hand"] if c % 13 == 0 else face(c % 13) for c in cards_of(bits))


# Every run of every suit, start rank and length, low end to high end.
RUN_SHAPES = [
    [13 * s + (start + i) % 13 for i in range(n)] for s in range(4) for start in range(13) for n in range(3, 14)
]


@dataclass
class TMeld:
    owner: int
    kind: str
    cards: list[int]


@dataclass
class Shadow:
    """The rules of RULES.md replayed independently of the engine."""

    preset: str
    rules: Rules
    n: int
    dealer: int
    hands: list[int]
    staircase: list[int]
    stock: list[int]
    totals: list[int]
    table: list[TMeld] = field(default_factory=list)
    current: int = 0
    phase: str = "draw"
    turn: int = 0
    banned: int | None = None
    must_use: int | None = None
    laid_this_turn: bool = False
    outcome: str | None = None
    deal_points: list[int] | None = None
    dead_ends: int = 0  # actions the §4.5 rule removed, to show the random play reached the rule

    def __post_init__(self) -> None:
        self.points = [0] * self.n
        self.known = [0] * self.n
        self.laid_before = [False] * self.n
        # RULES §2.4: treppenromme the dealer, rum500 left of the dealer.
        self.current = self.dealer if self.preset == "treppenromme" else (self.dealer + 1) % self.n
        self.corner = self.preset == "treppenromme"
        self.must_use_rule = self.preset == "rum500"

    # ------------------------------------------------------------------ lay-off targets
    def fits(self, meld: TMeld, card: int, target: int) -> bool:
        """RULES §4.3: a card joins a 3-card set, or either end of a run that stays legal."""
        if target == SET:
            return meld.kind == "set" and len(meld.cards) == 3 and card % 13 == meld.cards[0] % 13
        if meld.kind != "run" or len(meld.cards) == 13:
            return False
        grown = [card, *meld.cards] if target == LOW else [*meld.cards, card]
        return run_ok(self.corner, grown)

    def target_meld(self, card: int, target: int, table: list[TMeld] | None = None) -> TMeld | None:
        found = [m for m in (self.table if table is None else table) if self.fits(m, card, target)]
        assert len(found) <= 1, "a card fits two melds at one target"
        return found[0] if found else None

    def layable(self, card: int, table: list[TMeld]) -> bool:
        return any(self.target_meld(card, t, table) for t in (SET, LOW, HIGH))

    # ------------------------------------------------------------------ candidate melds
    def melds_in(self, bits: int) -> list[tuple[str, list[int]]]:
        """Every legal meld (RULES §3.1-3.2) made only of cards in ``bits``."""
        found: list[tuple[str, list[int]]] = []
        for rank in range(13):
            same = [13 * s + rank for s in range(4) if bits >> (13 * s + rank) & 1]
            for k in (3, 4):
                found += [("set", list(c)) for c in itertools.combinations(same, k)]
        for cards in RUN_SHAPES:
            if all(bits >> c & 1 for c in cards) and run_ok(self.corner, cards):
                found.append(("run", cards))
        return found

    def can_play(self, card: int, bits: int) -> bool:
        """RULES §4.2: the card can be laid off, or melded with cards of ``bits``, at once."""
        if self.layable(card, self.table):
            return True
        return any(card in cards for _, cards in self.melds_in(bits))

    # ------------------------------------------------------------------ the legal set
    def legal(self) -> set[int]:
        if self.phase == "over":
            return set()
        hand = self.hands[self.current]
        if self.phase == "draw":
            legal = {DRAW} if self.stock else set()
            for d in range(1, len(self.staircase) + 1):
                taken = bit_of(self.staircase[-d:])
                if not self.must_use_rule or self.can_play(self.staircase[-d], hand | taken):
                    legal.add(TAKE_BASE + d)
            return legal
        lays: dict[int, tuple[str, list[int], int]] = {}
        for kind, cards in self.melds_in(hand):
            if self.must_use is None or self.must_use in cards:
                text = "meld " + " ".join(card_to_str(c) for c in cards)
                lays[parse_action(text)] = (kind, cards, -1)
        for card in cards_of(hand) if self.must_use is None else [self.must_use]:
            for target in (SET, LOW, HIGH):
                if self.target_meld(card, target):
                    lays[LAYOFF_BASE + 3 * card + target] = ("layoff", [card], target)
        legal = set(lays)
        if self.must_use is None:
            legal |= {DISCARD_BASE + c for c in cards_of(hand) if c != self.banned}
        if self.banned is not None and hand >> self.banned & 1:
            rest = hand & ~(1 << self.banned)
            for action, (kind, cards, target) in lays.items():
                if bit_of(cards) == rest and not self.layable(self.banned, self._table_after(kind, cards, target)):
                    legal.discard(action)  # RULES §4.5: no dead end
                    self.dead_ends += 1
        return legal

    def _table_after(self, kind: str, cards: list[int], target: int) -> list[TMeld]:
        table = [TMeld(m.owner, m.kind, list(m.cards)) for m in self.table]
        if kind == "layoff":
            meld = self.target_meld(cards[0], target, table)
            meld.cards = [cards[0], *meld.cards] if target == LOW else [*meld.cards, cards[0]]
        else:
            table.append(TMeld(self.current, kind, list(cards)))
        return table

    # ------------------------------------------------------------------ playing
    def apply(self, action: int, engine_stock_after: list[int]) -> None:
        act = decode(action)
        seat = self.current
        if act.kind == "draw":
            self.hands[seat] |= 1 << self.stock.pop()
            self.phase = "meld"
        elif act.kind == "take":
            taken = self.staircase[-act.depth :]
            del self.staircase[-act.depth :]
            self.hands[seat] |= bit_of(taken)
            self.known[seat] |= bit_of(taken)
            self.banned = taken[0] if act.depth == 1 else None
            self.must_use = taken[0] if self.must_use_rule else None
            self.phase = "meld"
        elif act.kind == "discard":
            self._discard(act.card, engine_stock_after)
        else:
            if act.kind == "meld":
                cards = list(act.cards)
                kind = "set" if len({c % 13 for c in cards}) == 1 else "run"
                self.table.append(TMeld(seat, kind, cards))
                self.points[seat] += meld_points(self.preset, kind, cards)
            else:
                cards = [act.card]
                meld = self.target_meld(act.card, act.target)
                if act.target == SET:
                    meld.cards = sorted([*meld.cards, act.card])  # a set lists its cards in suit order
                else:
                    meld.cards = [act.card, *meld.cards] if act.target == LOW else [*meld.cards, act.card]
                self.points[seat] += layoff_points(self.preset, act.card, act.target)
            self.hands[seat] &= ~bit_of(cards)
            self.known[seat] &= ~bit_of(cards)
            if self.must_use in cards:
                self.must_use = None
            if self.banned in cards:  # RULES §4.4: the ban is about discarding that card; once laid it is gone
                self.banned = None
            self.laid_this_turn = True
            if not self.hands[seat]:
                self._end("went_out")

    def _discard(self, card: int, engine_stock_after: list[int]) -> None:
        seat = self.current
        self.hands[seat] &= ~(1 << card)
        self.known[seat] &= ~(1 << card)
        self.staircase.append(card)
        if not self.hands[seat]:
            self._end("went_out")
            return
        self.laid_before[seat] = self.laid_before[seat] or self.laid_this_turn
        self.turn += 1
        if not self.stock:  # RULES §6.4
            if self.rules.stock_exhausted == "reshuffle" and len(self.staircase) > 1:
                assert sorted(engine_stock_after) == sorted(self.staircase[:-1])
                self.stock = list(engine_stock_after)
                self.staircase = self.staircase[-1:]
            else:
                self._end("stock_exhausted")
                return
        if self.turn >= self.rules.max_turns:  # RULES §6.5
            self._end("max_turns")
            return
        self.current = (seat + 1) % self.n
        self.phase = "draw"
        self.banned = None
        self.laid_this_turn = False

    def _end(self, outcome: str) -> None:
        """RULES §6.2-6.5: score the deal."""
        in_hand = [hand_value(self.preset, h) for h in self.hands]
        result = list(self.points)
        factor = 1
        if outcome == "went_out":
            if not self.laid_before[self.current]:
                outcome = "romme"
                factor = 2 if self.preset == "treppenromme" else 1
            if self.preset == "treppenromme":
                result[self.current] += factor * sum(in_hand)
        if self.preset == "rum500" or self.rules.hand_penalty:
            result = [r - factor * h for r, h in zip(result, in_hand, strict=True)]
        self.outcome = outcome
        self.deal_points = result
        self.totals = [t + r for t, r in zip(self.totals, result, strict=True)]
        self.phase = "over"
        self.banned = self.must_use = None


def start_shadow(state: GameState, preset: str, totals: list[int]) -> Shadow:
    return Shadow(
        preset=preset,
        rules=state.rules,
        n=state.num_players,
        dealer=state.dealer,
        hands=list(state.hands),
        staircase=list(state.staircase),
        stock=list(state.stock),
        totals=list(totals),
    )


def check_cards(state: GameState) -> None:
    """RULES §1.1: every card is in exactly one place."""
    places = [*state.hands, *(1 << c for c in state.staircase), *(1 << c for c in state.stock)]
    places += [m.bits for m in state.melds]
    union = 0
    for bits in places:
        assert union & bits == 0, "a card is in two places"
        union |= bits
    assert union == ALL_CARDS
    assert (
        sum(h.bit_count() for h in state.hands)
        + len(state.staircase)
        + len(state.stock)
        + sum(len(m.cards) for m in state.melds)
        == 52
    )


def check_agrees(state: GameState, shadow: Shadow) -> None:
    assert state.hands == shadow.hands
    assert state.staircase == shadow.staircase
    assert state.stock == shadow.stock
    assert [(m.owner, m.kind, list(m.cards)) for m in state.melds] == [(m.owner, m.kind, m.cards) for m in shadow.table]
    assert all(m.bits == bit_of(m.cards) for m in state.melds)
    assert state.points == shadow.points, "booked points differ from the values laid (RULES §5.1)"
    assert state.known == shadow.known
    assert state.outcome == shadow.outcome
    assert state.deal_points == shadow.deal_points
    assert state.totals == shadow.totals
    if shadow.phase != "over":
        assert state.current == shadow.current
        assert state.phase == {"draw": Phase.DRAW, "meld": Phase.MELD}[shadow.phase]
        assert state.turn == shadow.turn
        assert state.banned == (-1 if shadow.banned is None else shadow.banned)
        assert state.must_use == (-1 if shadow.must_use is None else shadow.must_use)
    else:
        assert state.phase == Phase.DEAL_OVER


def check_clones(state: GameState, legal: list[int], rng: np.random.Generator, samples: int) -> None:
    """Every masked-in action succeeds on a clone; sampled masked-out actions raise and change nothing."""
    for action in legal:
        trial = state.clone()
        trial.apply(action)
        check_cards(trial)
    illegal = np.flatnonzero(state.legal_mask() == 0)
    for action in rng.choice(illegal, size=min(samples, len(illegal)), replace=False):
        trial = state.clone()
        before = (list(trial.hands), list(trial.staircase), list(trial.points), trial.phase, trial.current)
        with pytest.raises(IllegalActionError, match=str(decode(int(action)))):
            trial.apply(int(action))
        assert (list(trial.hands), list(trial.staircase), list(trial.points), trial.phase, trial.current) == before


def choose(legal: list[int], rng: np.random.Generator) -> int:
    """A random legal action, leaning towards melds and lay-offs and towards the stock, so that
    random deals reach tables with many melds, lay-offs and deep takes."""
    lays = [a for a in legal if MELD_BASE <= a < DISCARD_BASE]
    if lays and rng.random() < 0.7:
        return int(rng.choice(lays))
    if DRAW in legal and rng.random() < 0.6:
        return DRAW
    return int(rng.choice(legal))


def choose_take_one(legal: list[int], rng: np.random.Generator) -> int:
    """A random legal action that often takes the single top staircase card, so that the §4.4 ban
    and the §4.5 dead-end rule come up."""
    lays = [a for a in legal if MELD_BASE <= a < DISCARD_BASE]
    if TAKE_BASE + 1 in legal and rng.random() < 0.5:
        return TAKE_BASE + 1
    if lays and rng.random() < 0.5:
        return int(rng.choice(lays))
    return int(rng.choice(legal))


def play_deals(
    preset: str,
    num_players: int,
    deals: int,
    seed: int,
    clone_every: int = 7,
    policy=choose,
    **options: object,
) -> dict[str, int]:
    """Play ``deals`` random deals of one game, checking every invariant after every action.

    :return: how many deals ended with each outcome, and under ``"dead_ends"`` how many actions
        the §4.5 rule removed on the way.
    """
    rules = make_rules(preset, **options)
    rng = np.random.default_rng(seed)
    state = GameState(rules, num_players, np.random.default_rng(seed + 1))
    outcomes: dict[str, int] = {"dead_ends": 0}
    totals = [0] * num_players
    for deal in range(deals):
        if deal == 0:
            state.deal(int(rng.integers(num_players)))
        else:
            dealer = state.dealer
            state.next_deal()
            assert state.dealer == (dealer + 1) % num_players  # RULES §2.1
        shadow = start_shadow(state, preset, totals)
        check_cards(state)
        check_agrees(state, shadow)
        steps = 0
        while not state.deal_over:
            legal = state.legal_actions()
            assert legal, "no legal action while the deal is on"
            assert set(legal) == shadow.legal(), "the mask differs from the rules"
            if state.phase == Phase.DRAW:
                assert state.staircase, "empty staircase at a turn start (RULES §4.6)"
            if steps % clone_every == 0:
                check_clones(state, legal, rng, samples=12)
            action = policy(legal, rng)
            state.apply(action)
            shadow.apply(action, list(state.stock))
            check_cards(state)
            check_agrees(state, shadow)
            steps += 1
            assert state.turn <= rules.max_turns
        assert state.turn <= rules.max_turns, "the deal outlived max_turns (RULES §6.5)"
        assert not state.legal_mask().any()
        totals = shadow.totals
        outcomes[state.outcome] = outcomes.get(state.outcome, 0) + 1
        outcomes["dead_ends"] += shadow.dead_ends
    assert state.deals_played == deals
    return outcomes


CONFIGS = [(preset, n) for preset in ("treppenromme", "rum500") for n in (2, 3, 4)]


def deals_counted(outcomes: dict[str, int]) -> int:
    return sum(v for k, v in outcomes.items() if k != "dead_ends")


@pytest.mark.parametrize(("preset", "num_players"), CONFIGS)
def test_random_deals_keep_invariants(preset: str, num_players: int) -> None:
    """RULES §1.1, §4.1-4.6, §5.1, §6: invariants over a few random deals (default run)."""
    outcomes = play_deals(preset, num_players, deals=2, seed=100 * num_players)
    assert deals_counted(outcomes) == 2


@pytest.mark.parametrize(
    ("preset", "options"),
    [
        ("treppenromme", {"stock_exhausted": "reshuffle", "max_turns": 60}),
        ("treppenromme", {"hand_penalty": True}),
        ("rum500", {"stock_exhausted": "reshuffle", "max_turns": 60}),
    ],
)
def test_random_deals_with_options(preset: str, options: dict) -> None:
    """RULES §6.2, §6.4-6.5, §8: the invariants hold under the options too."""
    outcomes = play_deals(preset, 3, deals=2, seed=7, **options)
    assert deals_counted(outcomes) == 2


def test_random_deals_reach_dead_ends_rules_4_4_4_5() -> None:
    """RULES §4.4-4.5: random deals that often take one staircase card meet the dead-end rule, and
    the engine's mask agrees with the rules there too."""
    outcomes = play_deals("treppenromme", 3, deals=2, seed=7, policy=choose_take_one)
    assert outcomes["dead_ends"] >= 1


def test_mask_exactness_in_sampled_positions() -> None:
    """docs/ARCHITECTURE.md "Actions": at every step of a deal every masked-in action succeeds on a clone and
    sampled masked-out actions raise IllegalActionError naming the action."""
    assert deals_counted(play_deals("rum500", 2, deals=1, seed=3, clone_every=1)) == 1
    assert deals_counted(play_deals("treppenromme", 2, deals=1, seed=3, clone_every=1)) == 1


SWEEP_OPTIONS = [{}, {"hand_penalty": True}, {"stock_exhausted": "reshuffle"}, {"max_turns": 25}]
#: The sweep's outcomes over its 24 deals of each game (3 for each option and policy), and the actions
#: the dead-end rule removed (RULES §4.5).
SWEEP_OUTCOMES = {
    ("treppenromme", 2): {"dead_ends": 0, "max_turns": 6, "went_out": 18},
    ("treppenromme", 3): {"dead_ends": 3, "max_turns": 6, "stock_exhausted": 5, "went_out": 13},
    ("treppenromme", 4): {"dead_ends": 2, "max_turns": 6, "stock_exhausted": 7, "went_out": 11},
    ("rum500", 2): {"dead_ends": 0, "max_turns": 3, "stock_exhausted": 1, "went_out": 20},
    ("rum500", 3): {"dead_ends": 0, "max_turns": 4, "stock_exhausted": 1, "went_out": 19},
    ("rum500", 4): {"dead_ends": 0, "max_turns": 5, "stock_exhausted": 9, "went_out": 10},
}


@pytest.mark.parametrize(("preset", "num_players"), CONFIGS)
def test_many_random_deals_keep_invariants(preset: str, num_players: int) -> None:
    """The same invariants over every option and both random policies: 3 seeded deals each."""
    seen: dict[str, int] = {}
    for i, options in enumerate(SWEEP_OPTIONS):
        for policy in (choose, choose_take_one):
            found = play_deals(preset, num_players, 3, seed=1000 + 37 * i + num_players, policy=policy, **options)
            for key, count in found.items():
                seen[key] = seen.get(key, 0) + count
    assert dict(sorted(seen.items())) == SWEEP_OUTCOMES[preset, num_players]
