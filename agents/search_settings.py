"""The search agents' settings: one frozen dataclass per agent, the single source of their names,
defaults, allowed values and bounds (docs/ARCHITECTURE.md "Agents").

:class:`SearchSettings` holds what both search agents share, :class:`RolloutSettings` and
:class:`ISMCTSSettings` add each agent's own. The agents take them whole (``settings=``) or as
keywords, and the spec parser (:mod:`treppen.agents.spec`) lists and checks a spec's
``key=value`` settings against their fields, so a setting is declared, defaulted and bounded in
one place.

Budgets, one or more per decision (the first one reached ends the search):

- ``playouts``: simulations per decision, 1..:data:`MAX_PLAYOUTS`; ``None``:
  :data:`DEFAULT_PLAYOUTS` when neither ``seconds`` nor ``deadline`` is given, no cap otherwise.
- ``seconds``: CPU seconds of the searching thread per decision, in (0, :data:`MAX_SECONDS`].
- ``deadline``: wall-clock seconds a caller waits for a decision, from the call, in
  [0, :data:`MAX_DEADLINE`]. It is anytime: the search stops at its first look at the clock
  after the deadline and plays its best move so far, but never before it has run as many
  playouts as there are searched moves: one determinization per move (flat Monte Carlo's
  first round; IS-MCTS tries every root move once first, unless ``widening`` holds some back);
  ``deadline=0`` asks for exactly that floor. A server bounds what people wait by it.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

from treppen_env.agent_core import belief_kernels, playout_kernels, search_kernels

PLAYOUTS = tuple(playout_kernels.POLICIES)
#: How a net seat of the playouts picks its move (:class:`SearchSettings`'s ``net_pick``).
NET_PICKS = ("sample", "argmax")
#: How the unseen cards are dealt (:class:`SearchSettings`'s ``beliefs``).
BELIEFS = ("uniform", "greedy", "net")
#: The opponent model's default temperature, in points of the heuristic's scores: fitted by maximum
#: likelihood to the draws and discards of greedy, the shipped policy ppo-2p and rollout at 200
#: playouts against greedy (630 decisions of 36 deals; greedy alone fits 0.05, ppo-2p 8.3, the
#: search 17; ``python benchmarks/fit_temperature.py``).
TEMPERATURE = 5.0
MOVES = tuple(search_kernels.MOVES)
OBJECTIVES = tuple(search_kernels.OBJECTIVES)
#: How flat Monte Carlo shares its playouts among the moves.
ALLOCATIONS = ("uniform", "halving")
#: How IS-MCTS treats the other seats' moves.
OTHERS = ("search", "playout")
#: Playouts per decision when no budget is given.
DEFAULT_PLAYOUTS = 2000
#: The largest ``playouts`` (about 80 CPU seconds a decision at 2000 playouts per 0.16 s).
MAX_PLAYOUTS = 10**6
#: The largest ``seconds`` (CPU seconds per decision: ten minutes).
MAX_SECONDS = 600.0
#: The largest ``deadline`` (wall-clock seconds per decision: ten minutes).
MAX_DEADLINE = 600.0


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@dataclass(frozen=True)
class SearchSettings:
    """What both search agents share (:class:`treppen.agents.search.SearchAgent`).

    :param playout: default policy of the simulations, ``"greedy"``, ``"random"`` or ``"net"``.
    :param moves: ``"plan"`` (the draw and the discard searched, melds and lay-offs as the greedy
        heuristic plans them, RULES §4.1-4.4) or ``"all"`` (every legal action).
    :param objective: ``"win"`` (the score against the other seats as the ratings count it),
        ``"margin"`` (the point margin, RULES §6.2) or ``"mix"`` (their mean, the margin in
        hundreds of points).
    :param playouts: simulations per decision (see the module docstring), or ``None``.
    :param seconds: CPU seconds per decision (this thread's time, checked every
        :data:`treppen.agents.search.CHUNK` playouts), or ``None``.
    :param deadline: wall-clock seconds per decision, anytime (see the module docstring), or ``None``.
    :param beliefs: how the unseen cards are dealt in the simulations: ``"uniform"`` (every deal
        consistent with the observation alike) or ``"greedy"`` (deals weighted by how likely a
        softmax over the greedy heuristic's scores makes the opponents' recent moves,
        :mod:`treppen_env.agent_core.belief_kernels`) or ``"net"`` (deals drawn exactly from a
        belief net's probabilities of where each unseen card lies, read from the deal's public
        history; 2 players; :mod:`treppen.agents.belief_net`).
    :param temperature: the opponent model's temperature, in points (``None``: :data:`TEMPERATURE`).
    :param candidates: candidate deals weighed per deal kept (``beliefs="greedy"``), 2..64.
    :param epsilon: the opponent model's share of a uniformly random legal move, in (0, 1].
    :param belief_net: the belief net of ``beliefs="net"``, a file of
        :func:`treppen.agents.belief_net.save_belief_net` (``None``: the shipped net,
        :data:`treppen.agents.belief_net.DEFAULT_FILE`).
    :param net: the network of ``"net"`` playouts and values, or ``None``: a file of
        :meth:`treppen.train.expert.policy_value_torch.KernelNet.save` (the small policy/value net) or the
        batched learner's action net (a ``final_model.npz`` of ``backend: kernel``,
        :func:`treppen.agents.action_net.is_action_net`), played inside the kernels
        (:mod:`treppen.agents.search_net`).
    :param net_pick: how a ``"net"`` seat picks its move: ``"sample"`` (drawn from the net's
        softmax) or ``"argmax"`` (its most probable legal move).
    :param own_playout: the playout policy of the agent's own seat (``None``: ``playout``).
    :param value_turns: with the small net, value a simulation by the network's value head after
        that many turns (0: play every simulation to its end).
    :param value_weight: the value head's share of a simulation's result, in [0, 1].
    :raises ValueError: naming the setting, its value and what is allowed, for a value out of its
        choices or bounds (e.g. ``playouts=1000000000``: at most :data:`MAX_PLAYOUTS`).
    """

    playout: str = "greedy"
    moves: str = "plan"
    objective: str = "win"
    playouts: int | None = None
    seconds: float | None = None
    deadline: float | None = None
    beliefs: str = "uniform"
    temperature: float | None = None
    candidates: int = 8
    epsilon: float = 0.05
    belief_net: str | None = None
    net: str | None = None
    net_pick: str = "sample"
    own_playout: str | None = None
    value_turns: int = 0
    value_weight: float = 1.0

    def __post_init__(self) -> None:
        self._choose("playout", PLAYOUTS)
        self._choose("moves", MOVES)
        self._choose("objective", OBJECTIVES)
        self._choose("beliefs", BELIEFS)
        self._choose("net_pick", NET_PICKS)
        if self.own_playout is not None:
            self._choose("own_playout", PLAYOUTS)
        if self.playouts is not None and not (_whole(self.playouts) and 1 <= self.playouts <= MAX_PLAYOUTS):
            raise ValueError(
                f"playouts={self.playouts!r} must be a whole number of at least 1 and at most {MAX_PLAYOUTS} (or none)"
            )
        if self.seconds is not None and not (_number(self.seconds) and 0 < self.seconds <= MAX_SECONDS):
            raise ValueError(
                f"seconds={self.seconds!r} must be positive and finite, at most {MAX_SECONDS:g} CPU seconds per "
                "decision (or none for no time limit)"
            )
        if self.deadline is not None and not (_number(self.deadline) and 0 <= self.deadline <= MAX_DEADLINE):
            raise ValueError(
                f"deadline={self.deadline!r} must be 0..{MAX_DEADLINE:g} wall-clock seconds per decision "
                "(0: the floor, one determinization per searched move; or none for no deadline)"
            )
        if self.temperature is not None and not (_number(self.temperature) and 0 < self.temperature < math.inf):
            raise ValueError(f"temperature={self.temperature!r} must be positive and finite (points)")
        if not (_whole(self.candidates) and 2 <= self.candidates <= belief_kernels.MAX_CANDIDATES):
            raise ValueError(
                f"candidates={self.candidates!r} must be a whole number 2..{belief_kernels.MAX_CANDIDATES}"
            )
        if not (_number(self.epsilon) and 0 < self.epsilon <= 1):
            raise ValueError(f"epsilon={self.epsilon!r} must be in (0, 1]")
        if not (_whole(self.value_turns) and self.value_turns >= 0):
            raise ValueError(f"value_turns={self.value_turns!r} must be a whole number of 0 or more")
        if not (_number(self.value_weight) and 0 <= self.value_weight <= 1):
            raise ValueError(f"value_weight={self.value_weight!r} must be in [0, 1]")
        if self.net is None and ("net" in (self.playout, self.own_playout) or self.value_turns):
            raise ValueError(
                "net playouts and values need a network: give net=<an action net's final_model.npz "
                "or a KernelNet.save file>"
            )
        if self.belief_net is not None and self.beliefs != "net":
            raise ValueError(f"belief_net={self.belief_net!r} is read only with beliefs='net', not {self.beliefs!r}")
        # the numbers as floats and the network as a path string, written into the instance's
        # fields past the frozen dataclass's check (as a constructor would)
        numbers = ("seconds", "deadline", "temperature", "epsilon", "value_weight")
        vars(self).update({name: float(getattr(self, name)) for name in numbers if getattr(self, name) is not None})
        for name in ("net", "belief_net"):
            if getattr(self, name) is not None:
                vars(self)[name] = str(getattr(self, name))

    def _choose(self, name: str, allowed: tuple[str, ...]) -> None:
        value = getattr(self, name)
        if value not in allowed:
            raise ValueError(f"{name}={value!r}; choose one of {list(allowed)}")

    @property
    def playout_cap(self) -> int | None:
        """The playouts a decision may run: ``playouts``, else :data:`DEFAULT_PLAYOUTS` when no
        other budget is given, else ``None`` (no cap)."""
        if self.playouts is not None or self.seconds is not None or self.deadline is not None:
            return self.playouts
        return DEFAULT_PLAYOUTS

    @property
    def own(self) -> str:
        """The playout policy of the agent's own seat."""
        return self.playout if self.own_playout is None else self.own_playout

    @property
    def opponent_temperature(self) -> float:
        """The opponent model's temperature in points (:data:`TEMPERATURE` unless given)."""
        return TEMPERATURE if self.temperature is None else self.temperature

    @classmethod
    def keys(cls) -> dict[str, Any]:
        """The settings' names and defaults, in declaration order (what a spec may set)."""
        return {f.name: f.default for f in dataclasses.fields(cls)}

    def with_(self, **changes: Any) -> SearchSettings:
        """These settings with ``changes`` (checked as at construction).

        :raises ValueError: for a name that is not a setting (listing them) or a bad value.
        """
        unknown = sorted(set(changes) - set(self.keys()))
        if unknown:
            raise ValueError(f"{type(self).__name__} has no setting {', '.join(map(repr, unknown))}; "
                             f"allowed: {', '.join(self.keys())}")  # fmt: skip
        return dataclasses.replace(self, **changes) if changes else self


@dataclass(frozen=True)
class RolloutSettings(SearchSettings):
    """:class:`SearchSettings` and flat Monte Carlo's own (:class:`treppen.agents.search.RolloutAgent`).

    :param allocation: ``"uniform"`` (every move on every determinization) or ``"halving"``
        (sequential halving of the moves).
    :param bias: how much better, in the objective's units, a move's mean must be than that of
        greedy's choice on the same determinizations to be played instead (finite).
    :param prior_k: with an action net as ``net``, play out only the ``prior_k`` searched moves the
        net finds most probable (and greedy's choice, always); 0: every searched move.
    :param prior_mass: with an action net, play out only the most probable searched moves that
        together hold this share of the net's probability of the searched moves (and greedy's
        choice), in (0, 1]; 1: every searched move. With ``prior_k`` too, both limits hold.
    """

    allocation: str = "uniform"
    bias: float = 0.0
    prior_k: int = 0
    prior_mass: float = 1.0

    def __post_init__(self) -> None:
        super().__post_init__()
        self._choose("allocation", ALLOCATIONS)
        if not (_number(self.bias) and math.isfinite(self.bias)):
            raise ValueError(f"bias={self.bias!r} must be a finite number")
        if not (_whole(self.prior_k) and self.prior_k >= 0):
            raise ValueError(f"prior_k={self.prior_k!r} must be a whole number of 0 (every move) or more")
        if not (_number(self.prior_mass) and 0 < self.prior_mass <= 1):
            raise ValueError(f"prior_mass={self.prior_mass!r} must be in (0, 1] (1: every move)")
        if self.net is None and (self.prior_k or self.prior_mass < 1):
            raise ValueError("prior_k and prior_mass take the net's probabilities: give net=<an action net's .npz>")
        vars(self)["prior_mass"] = float(self.prior_mass)


@dataclass(frozen=True)
class ISMCTSSettings(SearchSettings):
    """:class:`SearchSettings` and IS-MCTS's own (:class:`treppen.agents.search.ISMCTSAgent`).

    :param c: UCB1 exploration constant, in the objective's units (0 or more, finite).
    :param widening: progressive widening: a node visited ``n`` times has at most
        ``1 + floor(n ** widening)`` children, greedy's choice first; in [0, 1), 0: every move.
    :param others: ``"search"`` (the tree holds every seat's searched moves) or ``"playout"``
        (only this agent's, the other seats playing the playout policy).
    :param prior: a learned policy, an object with ``action_probabilities(observation)``, whose
        probabilities of the searched moves guide the root's choice by PUCT; ``None``: UCB1 only.
    :param c_prior: the PUCT constant, in the objective's units (positive, finite).
    :raises ValueError: also for ``value_turns`` other than 0 (its simulations always end the deal).
    """

    c: float = 0.7
    widening: float = 0.0
    others: str = "search"
    prior: Any = None
    c_prior: float = 1.0

    def __post_init__(self) -> None:
        super().__post_init__()
        self._choose("others", OTHERS)
        if not (_number(self.c) and 0 <= self.c < math.inf):
            raise ValueError(f"c={self.c!r} must be non-negative and finite")
        if not (_number(self.widening) and 0.0 <= self.widening < 1.0):
            raise ValueError(f"widening={self.widening!r} must be in [0, 1)")
        if not (_number(self.c_prior) and 0 < self.c_prior < math.inf):
            raise ValueError(f"c_prior={self.c_prior!r} must be positive and finite")
        if self.prior is not None and not callable(getattr(self.prior, "action_probabilities", None)):
            raise ValueError(f"prior={self.prior!r} gives no action probabilities; give a model (.zip or run folder)")
        if self.value_turns:
            raise ValueError(
                f"value_turns={self.value_turns!r}: IS-MCTS plays every simulation to its end; "
                "a value head's estimate is for rollout (flat Monte Carlo)"
            )
