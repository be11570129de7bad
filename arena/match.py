"""One match loop: play one episode (a deal, or a game with ``episode="game"``) with given seats.

Every place that plays a deal with one agent per seat calls :func:`play_match`: tournaments (the
Elo ratings during training too), ``treppen play``, tests and notebooks, as OpenSpiel's
``evaluate_bots`` serves every bot match. (Not the learner's evaluation, which batches the policy
over many :class:`~treppen_env.SingleAgentEnv` deals, nor ``treppen bench``, which times the
PettingZoo ``agent_iter()`` loop itself.) The result lists every action in order, so a deal can
be replayed, recorded or searched from.

A tournament's deal (:class:`treppen.arena.schedule.DealSpec`: deck, dealer, seats, seeds) is played by
:func:`play_deal`, in this process, in a worker process or in a Ray task alike, with agents that
:func:`build_agents` makes from specs.

Usage::

    from treppen.agents import GreedyAgent, RandomAgent
    from treppen.arena.match import play_match
    from treppen_env import raw_env

    result = play_match(raw_env(num_players=2), [GreedyAgent(), RandomAgent()], seed=0)
    print(result.outcome, result.deal_points, len(result.actions))
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from treppen import agents as agent_lib
from treppen.agents.base import Agent
from treppen.arena.schedule import DealSpec
from treppen_env import records as game_records
from treppen_env.rules import Rules


class Player(Protocol):
    """What sits at a seat: ``act(observation) -> int`` (a legal action); ``reset(seed=None)`` is
    optional and called before the episode when present."""

    def act(self, observation: dict[str, Any]) -> int: ...


OnStep = Callable[[Any, int, dict[str, Any], int], None]
"""``on_step(env, seat, observation, action)``, called after each ``env.step(action)``."""


class MatchError(ValueError):
    """An agent's move failed: ``seat`` names the seat; the message names the seat, the agent and
    the env's reason (e.g. an illegal action, RULES §4)."""

    def __init__(self, seat: int, message: str):
        super().__init__(message)
        self.seat = seat


@dataclass
class MatchResult:
    """What one episode gave, per seat (seat ``i`` is ``env.possible_agents[i]``).

    :param actions: every action played, in order (ints in 0..897)
    :param outcome: how the last deal ended (``went_out``, ``romme``, ``stock_exhausted``,
        ``max_turns``; RULES §6), or None when it did not end normally (``env()`` after an
        illegal move)
    :param deal_points: points booked in the last deal, per seat (RULES §6)
    :param went_out: the seat that went out of the last deal, or None
    :param rewards: each seat's return over the episode: the sum of its rewards
    :param infos: each seat's final ``infos`` entry
    """

    actions: list[int]
    outcome: str | None
    deal_points: list[int]
    went_out: int | None
    rewards: list[float]
    infos: list[dict[str, Any]]


def play_match(
    env: Any,
    seats: Sequence[Player],
    *,
    seed: int | None = None,
    options: dict[str, Any] | None = None,
    agent_seeds: Sequence[int | None] | None = None,
    on_step: OnStep | None = None,
) -> MatchResult:
    """Reset ``env`` and the agents, then play until the episode is over.

    :param env: a ``treppen_env.raw_env`` or ``treppen_env.env()`` (any PettingZoo AEC env with
        ``possible_agents``, ``observe``, ``rewards``, ``terminations``, ``truncations``, ``infos``)
    :param seats: the agent of each seat, ``len(env.possible_agents)`` of them: anything with
        ``act(observation) -> int`` and optionally ``reset(seed=None)``; one object may sit at
        several seats
    :param seed: ``env.reset`` seed (deals and reshuffles)
    :param options: ``env.reset`` options, e.g. ``{"deck": [...], "dealer": 1}``
    :param agent_seeds: seed of each seat's agent (``agent.reset(seed=...)``); None keeps the
        agents' generators as they are
    :param on_step: called after every step as ``on_step(env, seat, observation, action)``
    :return: the :class:`MatchResult`
    :raises ValueError: for a wrong number of seats
    :raises MatchError: (a ``ValueError``) when an agent's action fails on ``raw_env``, e.g. an
        illegal action; ``env()`` ends the episode instead (offender −1)
    """
    names = env.possible_agents
    if len(seats) != len(names):
        raise ValueError(f"{len(seats)} agents given for {len(names)} seats; give one agent per seat")
    env.reset(seed=seed, options=options)
    for agent, agent_seed in zip(seats, agent_seeds or [None] * len(seats), strict=True):
        reset = getattr(agent, "reset", None)  # optional for an agent (docs/guide/agents.md "Your own agent")
        if reset is not None:
            reset(seed=agent_seed)
    seat_of = {name: i for i, name in enumerate(names)}
    returns = dict.fromkeys(names, 0.0)
    actions: list[int] = []
    while True:
        name = env.agent_selection
        if env.terminations[name] or env.truncations[name]:
            break
        returns[name] += env._cumulative_rewards[name]  # what last() would hand this agent
        seat = seat_of[name]
        observation = env.observe(name)
        action = seats[seat].act(observation)
        try:
            env.step(action)
        except ValueError as err:
            raise MatchError(seat, f"seat {seat} ({seats[seat]!r}): {err}") from None
        actions.append(int(action))
        if on_step is not None:
            on_step(env, seat, observation, action)
    info = env.infos[names[0]]
    went_out = info.get("went_out")
    points = info.get("deal_points", {})
    return MatchResult(
        actions=actions,
        outcome=info.get("outcome"),
        deal_points=[int(points.get(n, 0)) for n in names],
        went_out=None if went_out is None else seat_of[went_out],
        rewards=[returns[n] + env._cumulative_rewards[n] for n in names],
        infos=[dict(env.infos[n]) for n in names],
    )


def play_deal(spec: DealSpec, agents: Mapping[str, Agent], game_record: bool = False) -> dict[str, Any]:
    """Play one deal of a schedule and return its record.

    Each seat's agent is reset with its seed first (``agent.reset(seed=...)``), so the record
    depends only on ``spec``.

    :param spec: the deal
    :param agents: agent by name (must hold every name in ``spec.seats``)
    :param game_record: also return the deal's game record (docs/ARCHITECTURE.md "Game records", seats named by
        agent name) under the key ``"game_record"``
    :return: the record (see the module docstring)
    :raises ValueError: when an agent is missing or plays an illegal action
    """
    from treppen_env import raw_env

    missing = [name for name in spec.seats if name not in agents]
    if missing:
        raise ValueError(f"deal {spec.deal_id}: no agent named {missing}; have {sorted(agents)}")
    env = raw_env(num_players=spec.players, rules=spec.rules)
    options = {"deck": list(spec.deck), "dealer": spec.dealer}
    seats = [agents[name] for name in spec.seats]
    try:
        result = play_match(env, seats, seed=spec.seed, options=options, agent_seeds=spec.agent_seeds)
    except MatchError as err:
        raise ValueError(f"agent {spec.seats[err.seat]!r} in deal {spec.deal_id}: {err}") from None
    result_record: dict[str, Any] = {
        "deal": spec.deal_id,
        "deck_id": spec.deck_id,
        "table": list(spec.table),
        "rotation": spec.rotation,
        "dealer": spec.dealer,
        "agents": list(spec.seats),
        "points": result.deal_points,
        "outcome": result.outcome,
        "went_out": result.went_out,
        "steps": len(result.actions),
        "seed": spec.seed,
    }
    stats = {name: counts for name in spec.seats if (counts := agents[name].deal_stats()) is not None}
    if stats:  # agents that count their own work this deal (the llm agent's requests)
        result_record["agent_stats"] = stats
    if game_record:
        extra = {"deal_id": spec.deal_id, "deck_id": spec.deck_id, "seed": spec.seed}
        (result_record["game_record"],) = game_records.record_match(
            result.actions, spec.seats, seed=spec.seed, options=options, extra=extra,
            num_players=spec.players, rules=spec.rules,
        )  # fmt: skip
    return result_record


def build_agents(sources: Mapping[str, str | Agent], rules: Rules | None = None) -> dict[str, Agent]:
    """Agents by name from specs (via ``agents.load``, told the game's ``rules``) or ready agents.

    :raises ValueError: for an unknown spec or ``human`` (a tournament has no terminal)
    """
    built = {}
    for name, source in sources.items():
        if isinstance(source, str):
            if source == "human":
                raise ValueError(f"agent {name!r}: 'human' cannot play a tournament; use `treppen play`")
            try:
                built[name] = agent_lib.load(source, rules=rules)
            except agent_lib.UnknownSpecError as err:  # its list of valid specs without human
                raise agent_lib.UnknownSpecError(err.spec, without=("human",)) from None
        else:
            built[name] = source
    return built
