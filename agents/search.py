"""Search agents: flat Monte Carlo and information-set MCTS over the compiled core (docs/ARCHITECTURE.md "Agents").

Both agents simulate only from what they may know: a decision samples one full state from the
observation (:func:`treppen_env.determinize.sample_state`, the observer at seat 0), and every
simulation deals the cards the observer cannot see afresh from it, so the same observation and
seed give the same action whatever the hidden cards are. The search loops are the kernels of
:mod:`treppen_env.agent_core.search_kernels`; simulations play the deal to its end with a fast default policy
at every seat (``playout="greedy"``: the greedy heuristic, or ``"random"``), or with a net
(``net=FILE``, ``playout="net"`` or ``own_playout="net"``; :mod:`treppen.agents.search_net`).

Settings both agents share:

- ``objective``: ``"win"`` (default) maximises the score against the other seats as the ratings
  count it (more points 1, equal points 0.5, averaged over the other seats: for 2 players the
  deal's win), ``"margin"`` the point margin (own points minus the mean of the others', RULES
  §6.2), ``"mix"`` their mean (the margin in hundreds of points).
- ``moves``: ``"plan"`` (default) searches the choices that decide a turn, the draw (the stock,
  the staircase's top card, or a deeper take whose deepest card the hand can play at once,
  RULES §4.1-4.2) and the discard (§4.4), and lays melds and lay-offs as the greedy heuristic
  plans them; ``"all"`` searches every legal action.
- The budget: ``playouts`` per decision, ``seconds`` of CPU time per decision (this thread's) and
  a ``deadline`` in wall-clock seconds (anytime: at least one determinization per searched move),
  each looked at every :data:`CHUNK` playouts (:mod:`treppen.agents.search_settings`). A seeded
  search with a playout budget is deterministic. A decision with one searched move is played at
  once, without playouts.

The settings are one frozen dataclass per agent (:class:`~treppen.agents.search_settings.RolloutSettings`,
:class:`~treppen.agents.search_settings.ISMCTSSettings`), given whole (``settings=``) or as keywords.

Agents:

- :class:`RolloutAgent` (``rollout``): flat Monte Carlo with common random numbers: every
  searched move is played out on the same determinizations and the same random numbers, and the
  move with the best mean wins (greedy's choice unless another beats it by ``bias``).
- :class:`ISMCTSAgent` (``ismcts``): single-observer information-set MCTS (Cowling, Powley &
  Whitehouse 2012) over every seat's searched moves, a new determinization each iteration, UCB1
  with availability counts and optional progressive widening; the most visited move is played.

:meth:`SearchAgent.analyse` returns every searched move's estimates (win rate, point margin,
their standard errors, playouts); :meth:`SearchAgent.label` searches many observations at once.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple

import numpy as np

from treppen.agents.base import Agent, legal_actions
from treppen.agents.belief_net import DEFAULT_FILE as DEFAULT_BELIEF_NET
from treppen.agents.belief_net import load_belief_net
from treppen.agents.search_net import SearchNet, likely_moves
from treppen.agents.search_settings import DEFAULT_PLAYOUTS, ISMCTSSettings, RolloutSettings, SearchSettings
from treppen_env.actions import DRAW, MELD_BASE, TAKE_BASE, action_to_str
from treppen_env.agent_core import (
    belief_kernels,
    belief_net_kernels,
    greedy_kernels,
    plan_value,
    playout_kernels,
    search_kernels,
)
from treppen_env.agent_core.belief_net_kernels import BeliefNet
from treppen_env.cards import NUM_CARDS, bits_to_cards, cards_to_bits
from treppen_env.core.layout import NUM_PLAYERS, Position
from treppen_env.determinize import sample_state
from treppen_env.engine import GameState
from treppen_env.history import History
from treppen_env.observation import decode
from treppen_env.rules import Rules, make_rules

__all__ = ["DEFAULT_PLAYOUTS", "Analysis", "ISMCTSAgent", "MoveEstimate", "RolloutAgent", "SearchAgent"]

#: Playouts between two looks at the clocks (``seconds`` and ``deadline`` budgets).
CHUNK = 16
#: The clock of a ``seconds`` budget, in seconds: this thread's CPU time (looked up at each search,
#: so that a test can put a fake clock here).
cpu_clock = time.thread_time


@dataclass(frozen=True)
class MoveEstimate:
    """What a search found about one move (:meth:`SearchAgent.analyse`).

    :param action: the action index (0..897).
    :param move: its text (:func:`treppen_env.actions.action_to_str`).
    :param playouts: the simulations that began with it.
    :param win_rate: the mean score against the other seats (more points 1, equal 0.5; for 2
        players the share of deals won), in [0, 1].
    :param win_se: its standard error (NaN with fewer than 2 playouts).
    :param margin: the mean point margin, own deal points minus the mean of the others' (points,
        RULES §6.2).
    :param margin_se: its standard error in points (NaN with fewer than 2 playouts).
    :param greedy: whether it is the greedy heuristic's choice.
    """

    action: int
    move: str
    playouts: int
    win_rate: float
    win_se: float
    margin: float
    margin_se: float
    greedy: bool

    def to_dict(self) -> dict[str, Any]:
        """The fields as JSON-ready values (NaN as None)."""
        out = dict(self.__dict__)
        return {k: None if isinstance(v, float) and math.isnan(v) else v for k, v in out.items()}


def _standard_error(total_sq: float, mean: float, n: float) -> float:
    """The standard error of a mean of ``n`` values from the sum of their squares (NaN for n < 2)."""
    if n < 2:
        return math.nan
    return math.sqrt(max(total_sq / n - mean * mean, 0.0) / (n - 1))


class Analysis(list):  # type: ignore[type-arg]
    """A search's move estimates (:class:`MoveEstimate`, best first) and, as ``beliefs``, the
    probability that each opponent holds each card (:meth:`SearchAgent.card_beliefs`); ``playouts``
    is the simulations the search ran, ``cut_short`` whether its ``deadline`` stopped it before
    its playout budget."""

    beliefs: np.ndarray
    playouts: int = 0
    cut_short: bool = False


#: Deals the beliefs about the opponents' cards are counted over (:meth:`SearchAgent.card_beliefs`).
BELIEF_SAMPLES = 400
#: Deals counted between two looks at the clock under a deadline (:meth:`SearchAgent.card_beliefs`).
BELIEF_CHUNK = 50


def _estimates(actions: Iterable[int], stats: np.ndarray, greedy: int) -> list[MoveEstimate]:
    out = []
    for action, row in zip(actions, stats, strict=True):
        n = row[search_kernels.S_COUNT]
        mean_win, mean_margin = (
            (row[search_kernels.S_WIN] / n, row[search_kernels.S_MARGIN] / n) if n else (math.nan, math.nan)
        )

        out.append(
            MoveEstimate(
                action=int(action),
                move=action_to_str(int(action)),
                playouts=int(n),
                win_rate=float(mean_win),
                win_se=_standard_error(row[search_kernels.S_WIN_SQ], mean_win, n),
                margin=float(100 * mean_margin),
                margin_se=100 * _standard_error(row[search_kernels.S_MARGIN_SQ], mean_margin, n),
                greedy=int(action) == greedy,
            )
        )
    return out


class _Root:
    """One decision's root sample as the kernels read it, with their scratch arrays."""

    def __init__(self, state: GameState, agent: SearchAgent):
        self.arrays = state.arrays().copy()
        self.det = state.arrays().copy()
        self.tables = state.tables
        self.settings = greedy_kernels.settings_row()
        policies = playout_kernels.seat_policies(
            [agent.settings.own, *[agent.settings.playout] * (state.num_players - 1)], state.num_players
        )
        self.playout = playout_kernels.Playout(
            policies=policies, settings=self.settings, values=plan_value.values_row()
        )
        self.work = agent._scratch()
        #: How determinizations are dealt (:mod:`treppen_env.agent_core.belief_kernels`) and their scratch arrays.
        self.beliefs = agent._beliefs_for(self.settings, self.arrays)
        self.belief_work = belief_kernels.scratch()
        self.rng = np.full(1, int(agent.rng.integers(2**63)), dtype=np.uint64)
        cand = np.empty(search_kernels.NUM_ACTIONS, dtype=np.int64)
        position, tables = self.arrays, self.tables
        playout_kernels.start(position.u64, position.i8, position.i64, tables.tab, tables.meld_bits, self.work)
        n = search_kernels.candidates(
            self.arrays,
            tables.tab,
            tables.meld_bits,
            search_kernels.MOVES[agent.settings.moves],
            self.playout,
            self.work,
            cand,
        )
        self.choices = cand[:n].copy()
        #: A policy's probabilities of the searched moves (float64 (898,), :class:`ISMCTSAgent`'s
        #: ``prior``; zeros without one).
        self.prior = np.zeros(search_kernels.NUM_ACTIONS)


def _work(root: _Root) -> search_kernels.SearchWork:
    """The search kernels' scratch: the playout scratch and the beliefs with theirs."""
    return search_kernels.SearchWork(playout=root.work, beliefs=root.beliefs, belief_work=root.belief_work)


class SearchAgent(Agent):
    """What both search agents share: settings, the root sample, the budget and move analysis.

    :param seed: seeds the agent's generator (determinizations, random playouts).
    :param rules: the rules of the game (preset name or :class:`Rules`); they are not in the
        observation. Tournaments, ``treppen play`` and ``treppen serve`` pass the table's.
    :param settings: the search's settings (:attr:`Settings`, its defaults when ``None``).
    :param changes: settings by name, on top of ``settings`` (``playouts=500, deadline=1.0``).
    :raises ValueError: for a name that is not a setting, or a value out of its choices or bounds
        (:mod:`treppen.agents.search_settings`).

    The settings are :attr:`settings` (``agent.settings.moves``); to change them, give the agent
    new ones (``agent.settings = agent.settings.with_(beliefs="uniform")``, checked as at
    construction). :attr:`playouts` is the playout cap of a decision.
    """

    name = "search"
    #: The settings' class: its fields are the spec's ``key=value`` settings (:mod:`treppen.agents.spec`).
    Settings: ClassVar[type[SearchSettings]] = SearchSettings
    #: The wall clock of ``deadline`` budgets, in seconds (a test may give a fake one).
    clock: Callable[[], float] = staticmethod(time.monotonic)

    def __init__(
        self,
        seed: int | None = None,
        rules: str | Rules = "treppenromme",
        settings: SearchSettings | None = None,
        **changes: Any,
    ):
        super().__init__(seed)
        if settings is not None and not isinstance(settings, self.Settings):
            raise ValueError(f"{type(self).__name__} takes {self.Settings.__name__}, not {type(settings).__name__}")
        self.settings = (settings or self.Settings()).with_(**changes)
        self.rules = make_rules(rules)
        self._net = None if self.settings.net is None else SearchNet(self.settings.net, self.rules)
        if self._net is not None:
            self._check_net(self._net)
        self._belief_net = self._load_belief_net()
        self.history = History(self.rules)
        #: Simulations run for the last decision (0 when it had one searched move).
        self.simulations = 0
        #: Whether the last decision's ``deadline`` stopped it before its playout cap.
        self.cut_short = False
        #: The last search's moves and statistics (:meth:`search_stats`), None after a decision
        #: that searched nothing (one legal action).
        self.last_search: tuple[np.ndarray, np.ndarray] | None = None
        self._taken = 0
        self._last_turn = -1.0

    @property
    def playouts(self) -> int | None:
        """The playout cap of a decision (:attr:`SearchSettings.playout_cap`; ``None``: none)."""
        return self.settings.playout_cap

    def finish_by(self, ends: float) -> None:
        """Give the next decisions until ``ends`` (a time of :attr:`clock`, seconds): their
        ``deadline`` becomes the time left, 0 once it has passed (the floor budget,
        :mod:`treppen.agents.search_settings`). A server calls it before each move it waits for."""
        self.settings = self.settings.with_(deadline=max(0.0, ends - self.clock()))

    def reset(self, seed: int | None = None) -> None:
        """Start a new deal: forget the cards taken from the staircase and the opponents' moves;
        reseed when ``seed`` is given."""
        super().reset(seed)
        self._taken = 0
        self._last_turn = -1.0
        self.history.reset()

    def __repr__(self) -> str:
        s = self.settings
        beliefs = {
            "uniform": "",
            "greedy": f", beliefs='greedy', temperature={s.opponent_temperature}, candidates={s.candidates}",
            "net": f", beliefs='net', belief_net={s.belief_net!r}",
        }[s.beliefs]
        deadline = "" if s.deadline is None else f", deadline={s.deadline}"
        return (
            f"{type(self).__name__}(rules={self.rules.name!r}, playout={s.playout!r}, moves={s.moves!r}, "
            f"objective={s.objective!r}, playouts={self.playouts}, seconds={s.seconds}{deadline}{beliefs}"
            f"{self._extra_repr()})"
        )

    def _extra_repr(self) -> str:
        return ""

    # ------------------------------------------------------------------ decisions
    def act(self, observation: dict[str, Any]) -> int:
        """The searched action for ``observation`` (a legal action of its mask).

        :raises ValueError: when the mask has no legal action (this agent is not to move), or when
            the mask is not the one the agent's rules give (the game has other rules).
        """
        started = self.clock()
        legal = legal_actions(observation)
        view = decode(observation)
        turn = float(observation["observation"][-1])
        if turn < self._last_turn:  # a new deal began without reset(): forget the old takes
            self._taken = 0
        self._last_turn = turn
        own_known = self._taken & cards_to_bits(view.hand)
        self.simulations = 0
        self.last_search = None
        self.history.observe(observation, own_known)
        action = int(legal[0]) if legal.size == 1 else self._pick(*self._search(observation, own_known, started))
        self.history.acted(action)
        if DRAW < action < MELD_BASE:
            self._taken |= cards_to_bits(view.staircase[-(action - TAKE_BASE) :])
        return action

    def analyse(self, observation: dict[str, Any], known: Iterable[int] | None = None) -> Analysis:
        """Search ``observation`` and return every searched move's estimates, the move this agent
        would play first, then by the objective's mean, best first (a single move comes back
        with 0 playouts), with the beliefs about the opponents' cards (:meth:`card_beliefs`) as
        the list's ``beliefs``, the search's playouts as its ``playouts`` and whether its
        ``deadline`` cut it short as ``cut_short`` (:class:`Analysis`).

        :param known: the cards of the observer's hand that the other players know it holds (it
            took them from the staircase, RULES §4.1; they are not in its own observation), e.g.
            from a recorded position; ``None``: the cards this agent saw itself take earlier in
            the deal (:meth:`act`).
        :raises ValueError: as :meth:`act`.
        """
        started = self.clock()
        legal_actions(observation)
        own_known = (self._taken if known is None else cards_to_bits(known)) & cards_to_bits(decode(observation).hand)
        choices, stats = self._search(observation, own_known, started)
        best = self._pick(choices, stats)
        order = sorted(
            range(len(choices)),
            key=lambda i: (choices[i] != best, -self._value(stats[i]), i),
        )
        found = Analysis(_estimates(choices[order], stats[order], int(choices[0])))
        found.playouts, found.cut_short = self.simulations, self.cut_short
        deadline = self.settings.deadline
        found.beliefs = self.card_beliefs(observation, known, ends=math.inf if deadline is None else started + deadline)
        return found

    def card_beliefs(
        self,
        observation: dict[str, Any],
        known: Iterable[int] | None = None,
        samples: int = BELIEF_SAMPLES,
        ends: float = math.inf,
    ) -> np.ndarray:
        """Per opponent, the probability that it holds each card it is not publicly known to hold,
        as the search's determinizations deal them (uniform, or weighted by the opponents' moves
        with ``beliefs="greedy"``; :mod:`treppen_env.agent_core.belief_kernels`), from ``samples`` deals.

        :param known: as in :meth:`analyse`.
        :param ends: a time of :attr:`clock` after which no more deals are counted, looked at
            every :data:`BELIEF_CHUNK` (at least that many are; :meth:`analyse` under a deadline).
        :return: float64 (num_players, 52): row ``k`` the relative seat ``k`` (row 0, the
            observer, all zeros); cards seen elsewhere are 0, cards publicly held too.
        :raises ValueError: as :meth:`act`.
        """
        legal_actions(observation)
        own_known = (self._taken if known is None else cards_to_bits(known)) & cards_to_bits(decode(observation).hand)
        self._use_history = True
        root = self._root(observation, own_known)
        counts = np.zeros((belief_kernels.MAX_SEATS, NUM_CARDS))
        done = 0
        while done < samples and not (done and self.clock() >= ends):
            count = min(BELIEF_CHUNK, samples - done)
            belief_kernels.card_counts(
                root.arrays,
                root.det,
                root.tables,
                0,
                root.rng,
                belief_kernels.Dealer(beliefs=root.beliefs, work=root.belief_work),
                count,
                counts,
            )
            done += count
        return counts[: decode(observation).num_players] / done

    def label(self, observations: Iterable[dict[str, Any]]) -> np.ndarray:
        """The searched action of every observation, each searched on its own (no cards count
        as known from earlier takes): the batch call for labelling states for imitation.

        :return: int64 (len(observations),) legal actions.
        :raises ValueError: as :meth:`act`.
        """
        return self.label_values(observations)[0]

    def label_values(self, observations: Iterable[dict[str, Any]]) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`label`, with the search's estimate of each chosen move: its mean point margin
        over the playouts, in hundreds of points (the zero-sum reward's units, RULES §6.2).

        :return: the actions, int64 (n,), and the estimates, float64 (n,), NaN where nothing
            was searched (one legal or searched move).
        :raises ValueError: as :meth:`act`.
        """
        actions, values = [], []
        for observation in observations:
            action, choices, stats = self.search_stats(observation)
            row = stats[int(np.flatnonzero(choices == action)[0])]
            actions.append(action)
            values.append(
                row[search_kernels.S_MARGIN] / row[search_kernels.S_COUNT] if row[search_kernels.S_COUNT] else math.nan
            )
        return np.array(actions, dtype=np.int64), np.array(values, dtype=np.float64)

    def search_stats(self, observation: dict[str, Any]) -> tuple[int, np.ndarray, np.ndarray]:
        """The searched action of ``observation``, searched on its own as :meth:`label` does, with
        the searched moves and their statistics (:attr:`last_search` after :meth:`act`).

        :return: the action; the searched moves, int64 (m,), greedy's choice first (the one legal
            action, unsearched, when there is only one); their statistics, float64
            (m, :data:`treppen_env.agent_core.search_kernels.NUM_STATS`): playouts, the sums of the win score
            and its square, of the margin (hundreds of points) and its square.
        :raises ValueError: as :meth:`act`.
        """
        legal = legal_actions(observation)
        if legal.size == 1:
            return int(legal[0]), legal.astype(np.int64), np.zeros((1, search_kernels.NUM_STATS))
        choices, stats = self._search(observation, 0, self.clock(), history=False)
        return self._pick(choices, stats), choices, stats

    def _value(self, stats: np.ndarray) -> float:
        """The objective's mean in one statistics row (-inf without playouts)."""
        n = stats[search_kernels.S_COUNT]
        if not n:
            return -math.inf
        objective = search_kernels.OBJECTIVES[self.settings.objective]
        return float(
            search_kernels.objective_value(
                stats[search_kernels.S_WIN] / n, stats[search_kernels.S_MARGIN] / n, objective
            )
        )

    def _settings(self, root: _Root) -> search_kernels.Search:
        """The search kernels' settings bundle (:class:`treppen_env.agent_core.search_kernels.Search`): flat
        Monte Carlo reads the observer, the searched moves and how the seats play out."""
        s = self.settings
        return search_kernels.Search(
            observer=0,
            moves=search_kernels.MOVES[s.moves],
            search_others=False,
            objective=search_kernels.OBJECTIVES[s.objective],
            c=0.0,
            widening=0.0,
            c_prior=0.0,
            playout=root.playout,
        )

    def _check_net(self, net: SearchNet) -> None:
        """Refuse settings the agent's net cannot serve (:meth:`treppen.agents.search_net.SearchNet.check`).

        :raises ValueError: naming the setting.
        """
        net.check(self.settings)

    def _scratch(self) -> playout_kernels.Scratch:
        """The playout scratch of a decision, with this agent's network when it has one."""
        return playout_kernels.scratch() if self._net is None else self._net.scratch(self.settings)

    def _load_belief_net(self) -> BeliefNet | None:
        """The belief net of ``beliefs="net"`` (None for other beliefs).

        :raises ValueError: naming ``belief_net`` when its file is missing or no belief net, or
            when it was trained for other rules than ``treppenromme``.
        """
        s = self.settings
        if s.beliefs != "net":
            return None
        if self.rules.name != "treppenromme":
            raise ValueError(
                f"beliefs='net' plays treppenromme only (the belief net learned it), not {self.rules.name!r}"
            )
        try:
            return load_belief_net(DEFAULT_BELIEF_NET if s.belief_net is None else s.belief_net)[0]
        except (FileNotFoundError, ValueError) as error:
            raise ValueError(f"belief_net={s.belief_net!r}: {error}") from error

    def _beliefs_for(self, settings: np.ndarray, root: Position) -> belief_kernels.Beliefs:
        """The beliefs of a decision's search of ``root`` (the observer at seat 0): uniform, or
        weighted by the opponents' moves this agent saw (:attr:`history`) when
        ``beliefs="greedy"``, or the belief net's (``beliefs="net"``, from the deal's public
        history) when the search may use them.

        :raises ValueError: for ``beliefs="net"`` at a table of more than 2 players.
        """
        s = self.settings
        weighted = s.beliefs == "greedy" and self._use_history
        probs = np.zeros((0, belief_kernels.LOCATIONS))
        if self._belief_net is not None and self._use_history:
            if root.i64[NUM_PLAYERS] != 2:
                raise ValueError("beliefs='net' reads the public history of 2-player tables only")
            probs = belief_net_kernels.card_probabilities(self._belief_net, root, 0, self.history.table)
        beliefs = belief_kernels.new_beliefs(
            s.candidates if weighted else 1, s.opponent_temperature, s.epsilon, settings, probs
        )
        seen, undo = beliefs.decisions, beliefs.undo
        decisions = self.history.decisions[-belief_kernels.MAX_DECISIONS :] if weighted else []
        for j, d in enumerate(decisions):
            position = d.state.arrays()
            seen.u64[j], seen.i8[j], seen.i64[j] = position.u64, position.i8, position.i64
            seen.seat[j], seen.action[j], undo.steps[j] = d.seat, d.action, len(d.undo)
            for k, step in enumerate(d.undo):
                undo.add[j, k], undo.remove[j, k] = step.add, step.remove
                undo.draws[j, k], undo.unknown[j, k] = step.draws, step.unknown
        seen.size[0] = len(decisions)
        beliefs.stock_pool[0] = self.history.stock_pool
        return beliefs

    #: Whether the current search may use :attr:`history` (not for :meth:`label`'s unrelated positions).
    _use_history = True

    def _root(self, observation: dict[str, Any], own_known: int) -> _Root:
        state = sample_state(observation, self.rules, self.rng, bits_to_cards(own_known))
        if not np.array_equal(state.legal_mask(), np.asarray(observation["action_mask"]) != 0):
            raise ValueError(
                f"the observation's action mask does not follow the rules {self.rules.name!r} this agent "
                f"simulates; give it the game's rules in its spec, e.g. {self.name},rules=rum500"
            )
        return _Root(state, self)

    def _search(
        self, observation: dict[str, Any], own_known: int, started: float, history: bool = True
    ) -> tuple[np.ndarray, np.ndarray]:
        """Search the observation: the searched moves (int64 (m,), greedy's first) and their
        statistics (float64 (m, NUM_STATS), :mod:`treppen_env.agent_core.search_kernels`); with ``history``
        the determinizations follow the beliefs (:meth:`_beliefs_for`). The time budgets are looked
        at every :data:`CHUNK` playouts (a playout budget alone runs in one call of the kernels);
        the ``deadline`` counts from ``started`` (:attr:`clock`) and only once every searched move
        has had a playout (:attr:`cut_short` says it ended the search)."""
        s = self.settings
        self._use_history = history
        root = self._root(observation, own_known)
        self.belief_stats = root.beliefs.stats
        self.simulations = 0
        self.cut_short = False
        if root.choices.size == 1:
            self.last_search = root.choices, np.zeros((1, search_kernels.NUM_STATS))
            return self.last_search
        state = self._begin(root)
        cap, floor = self.playouts, root.choices.size
        ends = math.inf if s.deadline is None else started + s.deadline
        start = cpu_clock()
        while cap is None or self.simulations < cap:
            if s.seconds is not None and self.simulations and cpu_clock() - start >= s.seconds:
                break
            if self.simulations >= floor and ends < math.inf and self.clock() >= ends:
                self.cut_short = True
                break
            timed = s.seconds is not None or ends < math.inf
            count = CHUNK if cap is None else (min(CHUNK, cap - self.simulations) if timed else cap)
            state = self._run(root, state, count)
            self.simulations += count
        self.last_search = self._finish(root, state)
        return self.last_search

    def _pick(self, choices: np.ndarray, stats: np.ndarray) -> int:
        raise NotImplementedError

    def _begin(self, root: _Root) -> Any:
        """The state of a search of ``root`` (the subclass's bundle of its arrays)."""
        raise NotImplementedError

    def _run(self, root: _Root, state: Any, count: int) -> Any:
        """Run ``count`` more playouts from ``state``; the state to go on from (``state`` itself, or
        one with larger arrays)."""
        raise NotImplementedError

    def _finish(self, root: _Root, state: Any) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError


class _FlatState(NamedTuple):
    """A flat Monte Carlo search's state (:meth:`RolloutAgent._begin`)."""

    #: The position a playout runs in (a copy of the root's :class:`~treppen_env.core.layout.Position`).
    sim: Position
    #: uint64 (1,): the random state of the determinizations, carried from call to call.
    det_rng: np.ndarray
    #: float64 (m, NUM_STATS): each searched move's statistics (:mod:`treppen_env.agent_core.search_kernels`).
    stats: np.ndarray
    #: How the playouts are shared among the moves.
    rounds: _Rounds


class _Rounds:
    """How flat Monte Carlo shares its playouts among the root's moves.

    With ``halving``, sequential halving (Karnin, Koren & Somekh 2013): rounds of playouts of the
    moves still in, every move of a round on the same determinizations, after which the better
    half (by the objective's mean over all their playouts) stays in, until two are left; the last
    round plays those two to the end of the budget. With a playout budget each round before the
    last gets an equal share of it; with a time budget round ``r`` plays every move on
    ``8 * 2**r`` determinizations. Without ``halving``: one round of every move to the end.
    """

    def __init__(self, moves: int, budget: int | None, halving: bool):
        self.active = np.arange(moves, dtype=np.int64)
        self.rounds_left = math.ceil(math.log2(moves / 2)) if halving and moves > 2 else 0
        self.share = None if budget is None else budget // (self.rounds_left + 1)
        self.round = 0
        self.done = 0
        self.size = self._size()

    def _size(self) -> int:
        """Playouts of the current round (unbounded in the last)."""
        if not self.rounds_left:
            return 2**62
        n = self.active.size
        per_move = 8 * 2**self.round if self.share is None else max(1, self.share // n)
        return per_move * n

    def halve(self, values: list[float]) -> None:
        """End the round: keep the better half of the moves in, by ``values`` (one per move)."""
        keep = math.ceil(self.active.size / 2)
        ranked = sorted(self.active.tolist(), key=lambda j: (-values[j], j))
        self.active = np.array(sorted(ranked[:keep]), dtype=np.int64)
        self.rounds_left -= 1
        self.round += 1
        self.done = 0
        self.size = self._size()


class RolloutAgent(SearchAgent):
    """Flat Monte Carlo with common random numbers (see the module docstring;
    :func:`treppen_env.agent_core.search_kernels.flat_monte_carlo`).

    Its settings are :class:`~treppen.agents.search_settings.RolloutSettings`. With
    ``allocation="uniform"`` (default) playout ``t`` plays move ``t % m`` of ``m`` on
    determinization ``t // m``; ``"halving"`` shares them by sequential halving (:class:`_Rounds`).
    Measured at 2000 playouts, 2 players, on the same 30 duplicate decks: uniform +206, halving
    +161 Elo against greedy (intervals about ±100), so uniform stays the default.

    The move played is the best by the objective's mean among those played out the most (up to
    one playout): every move with ``"uniform"``, the last two with ``"halving"``.
    """

    name = "rollout"
    Settings = RolloutSettings
    settings: RolloutSettings

    def _check_net(self, net: SearchNet) -> None:
        super()._check_net(net)
        if self._prior_limits():
            net.require_action_net("prior_k and prior_mass")

    def _prior_limits(self) -> bool:
        """Whether the net's prior limits the searched moves (``prior_k``, ``prior_mass``)."""
        return bool(self.settings.prior_k) or self.settings.prior_mass < 1.0

    def _extra_repr(self) -> str:
        s = self.settings
        prior = f", net={s.net!r}, prior_k={s.prior_k}, prior_mass={s.prior_mass}" if self._prior_limits() else ""
        return f", allocation={s.allocation!r}, bias={s.bias}{prior}"

    def _root(self, observation: dict[str, Any], own_known: int) -> _Root:
        """The root, its searched moves limited by the net's prior (:func:`treppen.agents.search_net.likely_moves`)."""
        root = super()._root(observation, own_known)
        if self._net is not None and self._prior_limits():
            probs = self._net.probabilities(observation)
            root.choices = likely_moves(root.choices, probs, self.settings.prior_k, self.settings.prior_mass)
        return root

    def _begin(self, root: _Root) -> _FlatState:
        m = root.choices.size
        return _FlatState(
            sim=root.arrays.copy(),
            det_rng=np.zeros(1, dtype=np.uint64),
            stats=np.zeros((m, search_kernels.NUM_STATS)),
            rounds=_Rounds(m, self.playouts, self.settings.allocation == "halving"),
        )

    def _run(self, root: _Root, state: _FlatState, count: int) -> _FlatState:
        rounds, stats = state.rounds, state.stats
        while count:
            n = min(count, rounds.size - rounds.done)
            calls = search_kernels.Rounds(
                choices=root.choices,
                active=rounds.active,
                num_active=rounds.active.size,
                det_rng=state.det_rng,
                done=rounds.done,
                todo=n,
                stats=stats,
            )
            search_kernels.flat_monte_carlo(
                root.arrays, root.det, state.sim, root.tables, self._settings(root), calls, root.rng, _work(root)
            )
            rounds.done += n
            count -= n
            if rounds.done == rounds.size:
                rounds.halve([self._value(row) for row in stats])
        return state

    def _finish(self, root: _Root, state: _FlatState) -> tuple[np.ndarray, np.ndarray]:
        return root.choices, state.stats

    def _pick(self, choices: np.ndarray, stats: np.ndarray) -> int:
        most = stats[:, search_kernels.S_COUNT].max()
        values = [self._value(row) if row[search_kernels.S_COUNT] >= most - 1 else -math.inf for row in stats]
        best = int(np.argmax(values))
        return int(choices[best] if values[best] > values[0] + self.settings.bias else choices[0])


class ISMCTSAgent(SearchAgent):
    """Single-observer information-set MCTS (see the module docstring;
    :func:`treppen_env.agent_core.search_kernels.ismcts`).

    Its settings are :class:`~treppen.agents.search_settings.ISMCTSSettings`; in a spec,
    ``prior`` is any :func:`treppen.agents.load` spec of a model (a ``.zip``, a run folder), whose
    probabilities of the searched moves, renormalised over them, guide the root's choice by PUCT
    (:func:`treppen_env.agent_core.search_kernels.ismcts`).
    """

    name = "ismcts"
    Settings = ISMCTSSettings
    settings: ISMCTSSettings

    def _extra_repr(self) -> str:
        s = self.settings
        prior = "" if s.prior is None else f", prior={s.prior!r}, c_prior={s.c_prior}"
        return f", c={s.c}, widening={s.widening}, others={s.others!r}{prior}"

    def _settings(self, root: _Root) -> search_kernels.Search:
        s = self.settings
        return search_kernels.Search(
            observer=0,
            moves=search_kernels.MOVES[s.moves],
            search_others=s.others == "search",
            objective=search_kernels.OBJECTIVES[s.objective],
            c=float(s.c),
            widening=float(s.widening),
            c_prior=0.0 if s.prior is None else float(s.c_prior),
            playout=root.playout,
        )

    def _root(self, observation: dict[str, Any], own_known: int) -> _Root:
        root = super()._root(observation, own_known)
        if self.settings.prior is not None:
            probs = np.asarray(self.settings.prior.action_probabilities(observation), dtype=np.float64)
            total = probs[root.choices].sum()
            root.prior[root.choices] = probs[root.choices] / total if total > 0 else 1.0 / root.choices.size
        return root

    #: Tree nodes allocated at first (one expansion per playout); the tree doubles when full.
    TREE_BLOCK = 4096

    def _begin(self, root: _Root) -> search_kernels.Tree:
        capacity = 1 + min(self.playouts or self.TREE_BLOCK, self.TREE_BLOCK)  # grown as needed
        return search_kernels.new_tree(capacity, root.prior)

    def _run(self, root: _Root, state: search_kernels.Tree, count: int) -> search_kernels.Tree:
        tree = state
        used, capacity = int(tree.size[0]), tree.nodes.shape[0]
        if used + count > capacity:  # the tree is full: double it until the playouts fit
            tree = search_kernels.new_tree(capacity * 2 ** math.ceil(math.log2((used + count) / capacity)), root.prior)
            tree.nodes[:capacity], tree.values[:capacity] = state.nodes, state.values
            tree.size[0] = used
        search_kernels.ismcts(
            root.arrays, root.det, root.tables, self._settings(root), tree, root.rng, count, _work(root)
        )
        return tree

    def _finish(self, root: _Root, state: search_kernels.Tree) -> tuple[np.ndarray, np.ndarray]:
        actions = np.empty(root.choices.size, dtype=np.int64)
        stats = np.empty((root.choices.size, search_kernels.NUM_STATS))
        n = search_kernels.root_children(state.nodes, state.values, actions, stats)
        found = {int(a): stats[i] for i, a in enumerate(actions[:n])}
        zero = np.zeros(search_kernels.NUM_STATS)
        return root.choices, np.array([found.get(int(a), zero) for a in root.choices])

    def _pick(self, choices: np.ndarray, stats: np.ndarray) -> int:
        best = max(range(len(choices)), key=lambda i: (stats[i][search_kernels.S_COUNT], self._value(stats[i]), -i))
        return int(choices[best])
