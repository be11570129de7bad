"""Search agents: determinized rollouts and information-set MCTS (docs/ARCHITECTURE.md "Agents").

Both agents simulate only from what they may know: every simulation starts from a state sampled
from the observation (:func:`treppen_env.determinize.sample_state`), never from the engine, so the
same observation and seed give the same action whatever the hidden cards are. Simulations play
the deal to its end with a fast default policy in the compiled core (``playout="greedy"``: the
greedy heuristic at every seat, or ``"random"``; :mod:`treppen_env.core.playout`), and a deal's
result for a seat is its zero-sum margin in points, ``points_i - mean of the others' points``
(RULES §6.2), divided by 100.

Moves searched (``moves``):

- ``"plan"`` (default): only the turn-plan choices that decide a turn, the draw (stock or a
  staircase take, RULES §4.1) and the discard (§4.4); melds and lay-offs are played as the greedy
  heuristic plans them, in the search and at the table.
- ``"all"``: every legal action.

A staircase take is searched only if its deepest card can be played with the hand (RULES §4.2),
besides the top card and the stock.

Agents:

- :class:`RolloutAgent` (``rollout``): flat Monte Carlo. ``k`` determinizations are sampled once
  per decision and every candidate action is played out on each (common random numbers); the
  action with the best mean result wins.
- :class:`ISMCTSAgent` (``ismcts``): single-observer information-set MCTS (Cowling, Powley &
  Whitehouse 2012). Each iteration samples a new determinization, descends the tree of the
  players' searched moves by UCB1 with availability counts (an action's exploration term counts
  only the iterations in which it was legal), expands one new action, plays out and backs up each
  seat's result at the nodes where that seat moved. The most visited root action is played.

Budgets: ``iterations`` (simulations per decision; deterministic under a seed) and ``seconds``
(wall clock per decision, checked between simulations; ``None``: no time limit). A decision with
one candidate is played at once.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from agents.base import Agent, legal_actions
from agents.greedy import GreedyAgent
from treppen_env.actions import DISCARD_BASE, DRAW, MELD_BASE, TAKE_BASE
from treppen_env.cards import bits_to_cards, cards_to_bits
from treppen_env.core.playout import play_out
from treppen_env.determinize import sample_state
from treppen_env.engine import GameState, Phase
from treppen_env.observation import TOTALS_CLIP, TOTALS_SCALE, Encoder, PublicView, decode
from treppen_env.rules import Rules, make_rules

PLAYOUTS = ("greedy", "random")
_PHASE_NAMES = ("draw", "meld", "deal_over")
_NO_TABLE = np.zeros((52, 7), dtype=np.float32)
MOVES = ("plan", "all")


class SearchAgent(Agent):
    """What both search agents share: settings, determinizations, candidate moves and playouts.

    :param seed: seeds the agent's generator (determinizations, random playouts, tie breaks).
    :param rules: the rules of the game (preset name or :class:`Rules`); they are not in the
        observation.
    :param playout: default policy of the simulations, ``"greedy"`` or ``"random"``.
    :param moves: ``"plan"`` (search the draw and the discard, greedy lays) or ``"all"``.
    :param iterations: simulations per decision (at least 1).
    :param seconds: wall-clock budget per decision in seconds, or ``None``.
    :raises ValueError: for an unknown playout or moves value, or a budget below 1 simulation or
        0 seconds.
    """

    name = "search"

    def __init__(
        self,
        seed: int | None = None,
        rules: str | Rules = "treppenromme",
        playout: str = "greedy",
        moves: str = "plan",
        iterations: int = 40,
        seconds: float | None = None,
    ):
        super().__init__(seed)
        if playout not in PLAYOUTS:
            raise ValueError(f"playout={playout!r}; choose one of {list(PLAYOUTS)}")
        if moves not in MOVES:
            raise ValueError(f"moves={moves!r}; choose one of {list(MOVES)}")
        if iterations < 1:
            raise ValueError(f"iterations={iterations!r} must be at least 1")
        if seconds is not None and seconds <= 0:
            raise ValueError(f"seconds={seconds!r} must be positive (or none for no time limit)")
        self.rules = make_rules(rules)
        self.playout = playout
        self.moves = moves
        self.iterations = iterations
        self.seconds = None if seconds is None else float(seconds)
        self.greedy = GreedyAgent(rules=self.rules)
        #: Simulations run for the last decision (0 when it had one candidate).
        self.simulations = 0
        self._root: GameState | None = None
        self._taken = 0
        self._last_turn = -1.0

    def reset(self, seed: int | None = None) -> None:
        """Start a new deal: forget the cards taken from the staircase; reseed when ``seed`` is given."""
        super().reset(seed)
        self._taken = 0
        self._last_turn = -1.0

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(rules={self.rules.name!r}, playout={self.playout!r}, moves={self.moves!r}, "
            f"iterations={self.iterations}, seconds={self.seconds})"
        )

    # ------------------------------------------------------------------ decisions
    def act(self, observation: dict[str, Any]) -> int:
        """The searched action for ``observation`` (a legal action of its mask).

        :raises ValueError: when the mask has no legal action (this agent is not to move), or when
            the mask is not the one the agent's rules give (the game has other rules).
        """
        legal = legal_actions(observation)
        view = decode(observation)
        turn = float(observation["observation"][-1])
        if turn < self._last_turn:  # a new deal began without reset(): forget the old takes
            self._taken = 0
        self._last_turn = turn
        hand = cards_to_bits(view.hand)
        own_known = self._taken & hand
        self.simulations = 0
        if legal.size == 1:
            action = int(legal[0])
        else:
            root = self._root = sample_state(observation, self.rules, self.rng, bits_to_cards(own_known))
            if not np.array_equal(root.legal_mask(), np.asarray(observation["action_mask"]) != 0):
                raise ValueError(
                    f"the observation's action mask does not follow the rules {self.rules.name!r} this agent "
                    f"simulates; give it the game's rules in its spec, e.g. {self.name},rules=rum500"
                )
            choices = self._choices(root, observation)
            action = choices[0] if len(choices) == 1 else self._search(observation, choices, own_known)
        if DRAW < action < MELD_BASE:
            self._taken |= cards_to_bits(view.staircase[-(action - TAKE_BASE) :])
        return action

    def _search(self, observation: dict[str, Any], choices: list[int], own_known: int) -> int:
        raise NotImplementedError

    def _budget_left(self, start: float, done: int) -> bool:
        if done >= self.iterations:
            return False
        return self.seconds is None or done == 0 or time.perf_counter() - start < self.seconds

    def _sample(self) -> GameState:
        """A new determinization of this decision: the root sample with the unseen cards dealt
        afresh in the compiled core (:meth:`GameState.redeal`; the observer is seat 0)."""
        assert self._root is not None, "a determinization outside a decision"
        state = self._root.clone(self.rng)
        state.redeal(0, int(self.rng.integers(2**63)))
        return state

    # ------------------------------------------------------------------ moves
    def _greedy_action(self, state: GameState, observation: dict[str, Any] | None = None) -> int:
        """The greedy heuristic's move for the player to move, from what that player may see."""
        if observation is not None:
            return self.greedy.act(observation)
        return self.greedy.decide_state(state)

    def _choices(self, state: GameState, observation: dict[str, Any] | None = None) -> list[int]:
        """The searched moves of the player to move, greedy's choice first (see the module docstring)."""
        legal = state.legal_actions()
        if self.moves == "all":
            first = self._greedy_action(state, observation) if len(legal) > 1 else legal[0]
            return [first, *(a for a in legal if a != first)]
        if state.phase == Phase.MELD:
            first = self._greedy_action(state, observation)
            if first < DISCARD_BASE:  # greedy lays: a lay is never a searched choice
                return [first]
            return [first, *(a for a in legal if a >= DISCARD_BASE and a != first)]
        first = self._greedy_action(state, observation)
        mask = state.legal_mask()
        hand = state.hands[state.current]
        out = [first]
        taken = 0
        for depth in range(1, len(state.staircase) + 1):
            card = state.staircase[-depth]
            taken |= 1 << card
            action = TAKE_BASE + depth
            if action != first and mask[action] and (depth == 1 or state._can_play(card, hand | taken)):
                out.append(action)
        if first != DRAW and mask[DRAW]:
            out.append(DRAW)
        return out

    def _auto(self, state: GameState) -> None:
        """With ``moves="plan"``: play greedy's lays for the player to move until a searched choice."""
        if self.moves == "all":
            return
        while state.phase == Phase.MELD:
            action = self._greedy_action(state)
            if action >= DISCARD_BASE:
                return
            state.apply(action)

    # ------------------------------------------------------------------ simulation
    def _play_out(self, state: GameState) -> list[float]:
        """Play ``state`` out to the end of the deal with the default policy in the compiled core
        (:func:`treppen_env.core.playout.play_out`, seeded from the agent's generator; ``state``
        is left as it is); each seat's result."""
        finished = state.deal_points
        if finished is not None:
            return results(finished)
        seed = int(self.rng.integers(2**63))
        (points,) = play_out(state, self.playout, seed=seed, settings=self.greedy._current_settings())
        return results(points.tolist())


class RolloutAgent(SearchAgent):
    """Flat Monte Carlo over the searched moves (see the module docstring).

    :param k: determinizations per decision; each candidate is played out on every one of them
        (common random numbers: the candidates are compared on the same hidden cards).
        The budget ``iterations`` (default: ``k`` times the candidates) and ``seconds`` cap the
        simulations; candidates then share the determinizations played so far.
    :param margin: how much better (in hundreds of points per deal) a candidate's mean result
        must be than that of greedy's choice on the same determinizations to be played instead.
    """

    name = "rollout"

    def __init__(
        self,
        seed: int | None = None,
        rules: str | Rules = "treppenromme",
        playout: str = "greedy",
        moves: str = "plan",
        k: int = 4,
        iterations: int = 1_000_000,
        seconds: float | None = None,
        margin: float = 0.03,
    ):
        super().__init__(seed, rules, playout, moves, iterations, seconds)
        if k < 1:
            raise ValueError(f"k={k!r} must be at least 1")
        self.k = k
        self.margin = margin

    def __repr__(self) -> str:
        return super().__repr__()[:-1] + f", k={self.k}, margin={self.margin})"

    def _search(self, observation: dict[str, Any], choices: list[int], own_known: int) -> int:
        start = time.perf_counter()
        totals = np.zeros(len(choices))
        counts = np.zeros(len(choices))
        for _ in range(self.k):
            base = self._sample()
            seed = int(self.rng.integers(2**63))
            for i, action in enumerate(choices):
                if not self._budget_left(start, self.simulations):
                    break
                state = base.clone(np.random.default_rng(seed))
                state.apply(action)
                self._auto(state)
                totals[i] += self._play_out(state)[0]  # the observer is seat 0 of a sample
                counts[i] += 1
                self.simulations += 1
        means = np.where(counts > 0, totals / np.maximum(counts, 1), -np.inf)
        best = int(np.argmax(means))
        return choices[best] if means[best] > means[0] + self.margin else choices[0]


class _Node:
    """A node of the information-set tree: the move that led here and its statistics.

    ``player`` is the seat that chose the move; ``value`` sums that seat's results.
    """

    __slots__ = ("avail", "children", "player", "value", "visits")

    def __init__(self, player: int):
        self.player = player
        self.visits = 0
        self.value = 0.0
        self.avail = 1
        self.children: dict[int, _Node] = {}


class ISMCTSAgent(SearchAgent):
    """Single-observer information-set MCTS (see the module docstring).

    :param c: UCB1 exploration constant (results are in hundreds of points).
    """

    name = "ismcts"

    def __init__(
        self,
        seed: int | None = None,
        rules: str | Rules = "treppenromme",
        playout: str = "greedy",
        moves: str = "plan",
        iterations: int = 40,
        seconds: float | None = None,
        c: float = 0.7,
    ):
        super().__init__(seed, rules, playout, moves, iterations, seconds)
        if c < 0:
            raise ValueError(f"c={c!r} must be non-negative")
        self.c = c

    def __repr__(self) -> str:
        return super().__repr__()[:-1] + f", c={self.c})"

    def _search(self, observation: dict[str, Any], choices: list[int], own_known: int) -> int:
        start = time.perf_counter()
        root = _Node(-1)
        while self._budget_left(start, self.simulations):
            state = self._sample()
            node, path = root, []
            first = True
            while not state.deal_over:
                if not first:
                    self._auto(state)
                    if state.deal_over:
                        break
                actions = choices if first else self._choices(state)
                first = False
                for a in actions:
                    child = node.children.get(a)
                    if child is not None:
                        child.avail += 1
                untried = [a for a in actions if a not in node.children]
                if untried:
                    action = untried[0]  # greedy's choice first, then in order
                    node.children[action] = child = _Node(state.current)
                    state.apply(action)
                    path.append(child)
                    self._auto(state)
                    break
                children = node.children
                action = max(actions, key=lambda a: self._ucb(children[a]))
                node = node.children[action]
                state.apply(action)
                path.append(node)
            result = self._play_out(state)
            root.visits += 1
            for n in path:
                n.visits += 1
                n.value += result[n.player]
            self.simulations += 1
        best = max(root.children.items(), key=lambda kv: (kv[1].visits, kv[1].value / max(kv[1].visits, 1)))
        return best[0]

    def _ucb(self, child: _Node) -> float:
        return child.value / child.visits + self.c * math.sqrt(math.log(child.avail) / child.visits)


def results(points: list[int]) -> list[float]:
    """Each seat's zero-sum result of a finished deal's points: own points minus the mean of the
    others', / 100 (the env's reward)."""
    n = len(points)
    total = sum(points)
    return [(p - (total - p) / (n - 1)) / 100.0 for p in points]


def public_view(state: GameState, seat: int, encoder: Encoder) -> tuple[PublicView, np.ndarray]:
    """What ``decode(encode(state, seat))`` and its ``table`` piece give, built without the vector.

    The playouts' fast path: equal field for field (melds in decode's order: sets by rank, then
    runs by their low-end card), so the greedy heuristic decides exactly as from the observation.

    :return: the view and the ``table`` piece, float32 (52, 7).
    """
    n = state.num_players
    rel = [(seat + k) % n for k in range(n)]
    table_melds = state.melds  # each field read once: the engine's fields are views of its arrays
    hands, known, points, totals, laid = state.hands[:], state.known[:], state.points, state.totals, state.laid_before
    sets = sorted((m for m in table_melds if m.kind == "set"), key=lambda m: m.low)
    runs = sorted((m for m in table_melds if m.kind == "run"), key=lambda m: m.cards[0])
    melds = tuple({"owner": (m.owner - seat) % n, "kind": m.kind, "cards": m.cards} for m in (*sets, *runs))
    clip = TOTALS_CLIP * TOTALS_SCALE
    must_use, banned = state.must_use, state.banned
    view = PublicView(
        hand=tuple(bits_to_cards(hands[seat])),
        staircase=tuple(state.staircase),
        melds=melds,
        known=tuple(tuple(bits_to_cards(known[s])) for s in rel[1:]),
        hand_sizes=tuple(hands[s].bit_count() for s in rel),
        stock_size=len(state.stock),
        phase=_PHASE_NAMES[state.phase],
        points=tuple(points[s] for s in rel),
        totals=tuple(int(min(clip, max(-clip, totals[s]))) for s in rel),
        dealer=(state.dealer - seat) % n,
        to_move=(state.current - seat) % n,
        num_players=n,
        must_use=None if must_use < 0 else must_use,
        banned=None if banned < 0 else banned,
        laid_before=tuple(laid[s] for s in rel),
    )
    table = encoder.table(state).features if table_melds else _NO_TABLE
    return view, table
