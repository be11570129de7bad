"""Bots both ways: treppen agents as ``pyspiel.Bot``, OpenSpiel's bots as treppen agents.

- :func:`bot` (:class:`AgentBot`): any treppen agent spec (``"greedy"``, ``"search-2p"``, a model)
  plays in OpenSpiel, e.g. in ``open_spiel.python.algorithms.evaluate_bots``. It acts from the
  observation the AEC env would give its seat, as every treppen agent does.
- :class:`OpenSpielAgent`: the agent spec ``openspiel,bot=ismcts,...`` plays OpenSpiel's bots in
  our tournaments. It samples a position consistent with its observation
  (:func:`treppen_env.determinize.sample_state`) and asks the bot for a move there; OpenSpiel's
  ``ISMCTSBot`` then deals the unseen cards afresh for every simulation
  (``TreppenState.resample_from_infostate``).
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pyspiel
from open_spiel.python.algorithms import ismcts, mcts

from treppen import agents
from treppen.agents import search
from treppen.agents.base import Agent
from treppen.agents.search_settings import MAX_SECONDS
from treppen.openspiel.game import GAME_NAME, TreppenGame, TreppenState
from treppen_env.aec import deal_rewards
from treppen_env.agent_hooks import random_playout
from treppen_env.determinize import sample_state
from treppen_env.messages import whole_number
from treppen_env.observation import encode, views
from treppen_env.rules import Rules, make_rules

#: OpenSpiel bots the ``openspiel`` spec plays: its Python IS-MCTS and its uniformly random bot.
BOTS = ("ismcts", "random")
#: Leaf evaluators of ``bot=ismcts``: OpenSpiel's random rollouts in Python, or the same random
#: rollouts played by our kernel (:func:`treppen_env.agent_hooks.random_playout`).
EVALUATORS = ("random", "kernel")
#: The largest ``simulations`` per decision.
MAX_SIMULATIONS = 10**6
#: The fewest simulations per decision: OpenSpiel's IS-MCTS expands the root in the first one.
MIN_SIMULATIONS = 2
#: Simulations per decision when neither ``simulations`` nor ``seconds`` is given.
DEFAULT_SIMULATIONS = 100


class AgentBot(pyspiel.Bot):
    """A treppen agent as a ``pyspiel.Bot`` of the game ``"treppenromme"`` (see :func:`bot`).

    The agent is built at the first move, with the rules of the state's game, and reset at each
    ``restart_at``.
    """

    def __init__(self, spec: str, seed: int | None = None):
        pyspiel.Bot.__init__(self)
        self.spec = spec
        self.seed = seed
        self.agent: Agent | None = None
        self._rules: Rules | None = None

    def restart_at(self, state: TreppenState) -> None:
        if self.agent is not None:
            self.agent.reset(self.seed)

    def inform_action(self, state: TreppenState, player: int, action: int) -> None:
        pass

    def step(self, state: TreppenState) -> int:
        """The agent's move from the observation of the player to move (a legal action id).

        :raises ValueError: at a chance node or the end of the deal.
        """
        if state.engine is None or state.is_terminal():
            raise ValueError(f"{self.spec}: a bot moves at a player's node, not at {state.current_player()}")
        if self.agent is None or self._rules != state.rules:
            self.agent = agents.load(self.spec, self.seed, rules=state.rules)
            self._rules = state.rules
        engine = state.engine
        observation = {"observation": encode(engine, engine.current), "action_mask": engine.legal_mask().copy()}
        return int(self.agent.act(observation))


def bot(spec: str, seed: int | None = None) -> AgentBot:
    """The treppen agent ``spec`` (:func:`treppen.agents.load`) as a ``pyspiel.Bot``.

    :param spec: an agent spec, e.g. ``"greedy"``, ``"search-2p"``, ``"rollout,playouts=500"``.
    :param seed: seeds the agent (and reseeds it at every ``restart_at``).
    :raises ValueError: for a bad spec (checked at once, with the default rules).
    """
    agents.load(spec, seed)  # a bad spec fails here, not at the first move
    return AgentBot(spec, seed)


class KernelRolloutEvaluator(mcts.RandomRolloutEvaluator):
    """OpenSpiel's random-rollout evaluator with the rollouts played by our kernel: the same
    uniformly random legal moves to the end of the deal, at kernel speed."""

    def evaluate(self, state: TreppenState) -> np.ndarray:
        total = np.zeros(state.num_players())
        for _ in range(self.n_rollouts):
            engine = state.engine.clone()
            random_playout(engine, int(self._random_state.randint(2**31)))
            total += deal_rewards(engine.deal_points)
        return total / self.n_rollouts


class OpenSpielAgent(Agent):
    """An OpenSpiel bot as a treppen agent: the spec ``openspiel,bot=ismcts,...``.

    :param bot: one of :data:`BOTS`: ``ismcts`` (OpenSpiel's Python ``ISMCTSBot``) or ``random``.
    :param simulations: IS-MCTS simulations per decision, at least :data:`MIN_SIMULATIONS` (default
        :data:`DEFAULT_SIMULATIONS`).
    :param seconds: instead, CPU seconds of this thread per decision, as ``search``'s ``seconds``
        (at least :data:`MIN_SIMULATIONS` simulations).
    :param uct_c: the UCT exploration constant.
    :param rollouts: random rollouts per leaf evaluation.
    :param evaluator: one of :data:`EVALUATORS`: ``random`` (OpenSpiel's rollouts, in Python) or
        ``kernel`` (the same rollouts in our kernel).
    :param rules: a preset as it is (the OpenSpiel game plays the presets only).
    :param seed: seeds the sampled positions and the bot.
    :raises ValueError: for an unknown bot or evaluator, a budget that is not a positive number in
        range, both ``simulations`` and ``seconds``, settings that ``bot=random`` does not read, or
        rules other than a preset.
    """

    name = "openspiel"

    def __init__(
        self,
        bot: str = "ismcts",
        simulations: int | None = None,
        seconds: float | None = None,
        uct_c: float = 2.0,
        rollouts: int = 1,
        evaluator: str = "random",
        rules: Rules | str = "treppenromme",
        seed: int | None = None,
    ):
        super().__init__(seed)
        if bot not in BOTS:
            raise ValueError(f"openspiel: bot={bot!r}; choose one of {list(BOTS)}")
        if evaluator not in EVALUATORS:
            raise ValueError(f"openspiel: evaluator={evaluator!r}; choose one of {list(EVALUATORS)}")
        if simulations is not None and seconds is not None:
            raise ValueError("openspiel: give simulations or seconds per decision, not both")
        for name, value, least in (("simulations", simulations, MIN_SIMULATIONS), ("rollouts", rollouts, 1)):
            if value is not None and whole_number(value, f"openspiel: {name}", least) > MAX_SIMULATIONS:
                raise ValueError(f"openspiel: {name}={value} is more than {MAX_SIMULATIONS} per decision")
        if seconds is not None and (
            isinstance(seconds, bool) or not (isinstance(seconds, (int, float)) and 0 < seconds <= MAX_SECONDS)
        ):
            raise ValueError(f"openspiel: seconds={seconds!r} must be in (0, {MAX_SECONDS:g}] CPU seconds per decision")
        if isinstance(uct_c, bool) or not (isinstance(uct_c, (int, float)) and math.isfinite(uct_c) and uct_c >= 0):
            raise ValueError(f"openspiel: uct_c={uct_c!r} must be a finite number of at least 0")
        searching = simulations is not None or seconds is not None or uct_c != 2.0 or rollouts != 1
        if bot == "random" and (searching or evaluator != "random"):
            raise ValueError(
                "openspiel: bot=random takes no search settings (simulations, seconds, uct_c, rollouts and "
                "evaluator are bot=ismcts's)"
            )
        self.rules = make_rules(rules) if isinstance(rules, str) else rules
        if self.rules.overrides():
            raise ValueError(
                f"openspiel: the OpenSpiel game plays the presets as they are; rules options "
                f"{self.rules.overrides()} are not supported"
            )
        self.bot, self.seconds, self.uct_c, self.rollouts, self.evaluator = bot, seconds, uct_c, rollouts, evaluator
        #: Simulations per decision (unused under a ``seconds`` budget).
        self.simulations: int = DEFAULT_SIMULATIONS if simulations is None else simulations
        self._games: dict[int, TreppenGame] = {}
        self._counts = {"decisions": 0, "simulations": 0}

    def reset(self, seed: int | None = None) -> None:
        super().reset(seed)
        self._counts = {"decisions": 0, "simulations": 0}

    def deal_stats(self) -> dict[str, Any] | None:
        """Decisions and IS-MCTS simulations since the last :meth:`reset` (``bot=ismcts``)."""
        return dict(self._counts) if self.bot == "ismcts" else None

    def act(self, observation: dict[str, Any]) -> int:
        players = round(float(views(np.asarray(observation["observation"]))["seats"].sum()))
        game = self._game(players)
        state = game.state_at(sample_state(observation, self.rules, self.rng))
        random_state = np.random.RandomState(int(self.rng.integers(2**31)))
        if self.bot == "random":
            legal = state.legal_actions()
            return int(legal[random_state.randint(len(legal))])
        return self._search(game, state, random_state)

    def _game(self, players: int) -> TreppenGame:
        if players not in self._games:
            self._games[players] = pyspiel.load_game(GAME_NAME, {"players": players, "rules": self.rules.name})
        return self._games[players]

    def _search(self, game: TreppenGame, state: TreppenState, random_state: np.random.RandomState) -> int:
        """OpenSpiel's ``ISMCTSBot`` from ``state``: its own loop for a simulation budget, or its
        simulations run until the CPU time is spent."""
        factory = KernelRolloutEvaluator if self.evaluator == "kernel" else mcts.RandomRolloutEvaluator
        evaluator = factory(n_rollouts=self.rollouts, random_state=random_state)
        searcher = ismcts.ISMCTSBot(game, evaluator, self.uct_c, self.simulations, random_state=random_state)
        # the deals of the unseen cards from the agent's seed (the bot's default sampler is unseeded)
        searcher.set_resampler(lambda state, player: state.resample_from_infostate(player, random_state.uniform))
        self._counts["decisions"] += 1
        legal = state.legal_actions()
        if len(legal) == 1:
            return int(legal[0])
        if self.seconds is None:
            self._counts["simulations"] += self.simulations
            return int(searcher.step(state))
        ends = search.cpu_clock() + self.seconds
        searcher.reset()
        root = searcher.create_new_node(state)
        for done in itertools.count(1):  # the first simulation expands the root, the second visits it
            searcher.run_simulation(searcher.sample_root_state(state))
            if done >= MIN_SIMULATIONS and search.cpu_clock() >= ends:
                break
        self._counts["simulations"] += done
        actions, probabilities = zip(*searcher.get_final_policy(state, root), strict=True)
        return int(random_state.choice(actions, p=probabilities))

    def __repr__(self) -> str:
        budget = f"seconds={self.seconds}" if self.seconds is not None else f"simulations={self.simulations}"
        return f"OpenSpielAgent(bot={self.bot!r}, {budget}, evaluator={self.evaluator!r})"
