"""The OpenSpiel game ``"treppenromme"``: one deal of Treppenrommé or 500 Rum on our engine.

``pyspiel.load_game("treppenromme", {"players": 2..4, "rules": "treppenromme" | "rum500"})``, once
this module is imported (:mod:`treppen.openspiel` imports it).

- The deal is 52 chance nodes, one per card of the shuffled pack, top first: chance node ``i``
  picks ``deck[i]`` uniformly from the cards not yet picked. The deck is then dealt as
  ``treppen_env.env().reset(options={"deck": deck})`` deals it (dealer 0, RULES §2), so a deal
  replays in both.
- Actions are our 898 ids (docs/ARCHITECTURE.md "Actions"); the legal actions are the engine's
  exact mask (RULES §4). Every move steps :class:`treppen_env.engine.GameState`: the rules exist
  once, in the engine.
- Returns are the AEC env's deal rewards, ``(points_i - mean of the others' points) / 100``
  (:func:`treppen_env.aec.deal_rewards`, RULES §6), at the end of the deal and zero before.
  They sum to zero at every player count, so the game type says ``ZERO_SUM`` at 2, 3 and 4
  players; only at 2 players is it a two-player zero-sum game.
- Tensors and strings come from :mod:`treppen.openspiel.observer`.
- Neither preset reshuffles (RULES §6.4), so no randomness is left once the pack is dealt.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyspiel

from treppen.openspiel.observer import TreppenObserver, max_game_length
from treppen_env.actions import NUM_ACTIONS, action_to_str
from treppen_env.aec import deal_rewards
from treppen_env.agent_hooks import redeal
from treppen_env.cards import HAND_POINTS, NUM_CARDS, card_to_str
from treppen_env.engine import GameState
from treppen_env.render import render_text
from treppen_env.rules import MAX_PLAYERS, MIN_PLAYERS, PRESETS, make_rules

GAME_NAME = "treppenromme"
#: A seat's deal points lie within twice the pack's hand value (booked plus a doubled credit, or
#: a doubled penalty; RULES §5-6), so a reward within four times it, over 100.
UTILITY_BOUND = 4 * sum(HAND_POINTS) / 100.0

GAME_TYPE = pyspiel.GameType(
    short_name=GAME_NAME,
    long_name="Treppenrommé (staircase rummy) and 500 Rum, one deal",
    dynamics=pyspiel.GameType.Dynamics.SEQUENTIAL,
    chance_mode=pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC,
    information=pyspiel.GameType.Information.IMPERFECT_INFORMATION,
    utility=pyspiel.GameType.Utility.ZERO_SUM,
    reward_model=pyspiel.GameType.RewardModel.TERMINAL,
    max_num_players=MAX_PLAYERS,
    min_num_players=MIN_PLAYERS,
    provides_information_state_string=True,
    provides_information_state_tensor=True,
    provides_observation_string=True,
    provides_observation_tensor=True,
    parameter_specification={"players": 2, "rules": "treppenromme"},
)


class TreppenGame(pyspiel.Game):
    """One deal for ``params["players"]`` players under the preset ``params["rules"]``.

    :raises ValueError: for a player count outside 2..4 or a preset that is not one of
        :data:`treppen_env.rules.PRESETS` (rules options are not game parameters: the game plays
        the presets as RULES §8 lists them).
    """

    def __init__(self, params: dict[str, Any] | None = None):
        params = {**GAME_TYPE.parameter_specification, **(params or {})}
        players, preset = params["players"], params["rules"]
        if preset not in PRESETS:
            raise ValueError(f"rules={preset!r}; the OpenSpiel game plays one of the presets {sorted(PRESETS)}")
        self.rules = make_rules(preset)
        self.rules.check_players(players)
        info = pyspiel.GameInfo(
            num_distinct_actions=NUM_ACTIONS,
            max_chance_outcomes=NUM_CARDS,
            num_players=players,
            min_utility=-UTILITY_BOUND,
            max_utility=UTILITY_BOUND,
            utility_sum=0.0,
            max_game_length=max_game_length(self.rules),
        )
        super().__init__(GAME_TYPE, info, params)

    def new_initial_state(self) -> TreppenState:
        """The state before the first card is dealt (a chance node)."""
        return TreppenState(self)

    def state_at(self, engine: GameState) -> TreppenState:
        """A state at the position of ``engine`` (a copy is not made: the state plays on it), with
        no moves before it; for OpenSpiel bots that search from a sampled position
        (:class:`treppen.openspiel.bots.OpenSpielAgent`).

        :raises ValueError: when ``engine`` has another number of seats or other rules than the game.
        """
        if engine.num_players != self.num_players() or engine.rules != self.rules:
            raise ValueError(
                f"a {engine.num_players}-player {engine.rules.name} position is no state of "
                f"{self.num_players()}-player {self.rules.name}"
            )
        state = TreppenState(self)
        state.engine = engine
        return state

    def make_py_observer(
        self, iig_obs_type: pyspiel.IIGObservationType | None = None, params: dict | None = None
    ) -> TreppenObserver:
        """The observer of ``iig_obs_type`` (default: the observation, no perfect recall)."""
        return TreppenObserver(
            self.rules, self.num_players(), iig_obs_type or pyspiel.IIGObservationType(perfect_recall=False), params
        )


class TreppenState(pyspiel.State):
    """A deal in progress: the cards dealt so far, then the engine state and the moves played.

    ``deck`` holds the cards the chance nodes picked (top first) until the 52nd, when the engine
    deals them; then ``engine`` is the position and ``moves`` the actions played since the deal
    (or since :meth:`TreppenGame.state_at`'s position).
    """

    def __init__(self, game: TreppenGame):
        super().__init__(game)
        self.rules = game.rules
        self.deck: list[int] = []
        self.engine: GameState | None = None
        self.moves: list[int] = []

    def current_player(self) -> int:
        engine = self.engine
        if engine is None:
            return pyspiel.PlayerId.CHANCE
        return pyspiel.PlayerId.TERMINAL if engine.deal_over else engine.current

    def _legal_actions(self, player: int) -> list[int]:
        assert self.engine is not None and player == self.engine.current
        return self.engine.legal_actions()

    def chance_outcomes(self) -> list[tuple[int, float]]:
        """The cards not yet dealt, each with the same probability."""
        dealt = set(self.deck)
        left = [card for card in range(NUM_CARDS) if card not in dealt]
        return [(card, 1.0 / len(left)) for card in left]

    def _apply_action(self, action: int) -> None:
        """Deal a card (a chance node) or play ``action`` on the engine.

        :raises ValueError: for a card dealt before; :class:`treppen_env.engine.IllegalActionError`
            (a ``ValueError``) for an illegal move, naming it and the rule (RULES §4).
        """
        if self.engine is not None:
            self.engine.apply(action)
            self.moves.append(int(action))
            return
        if not 0 <= action < NUM_CARDS or action in self.deck:
            raise ValueError(
                f"chance outcome {action}: the deal picks one of the {NUM_CARDS - len(self.deck)} cards left"
            )
        self.deck.append(int(action))
        if len(self.deck) == NUM_CARDS:
            # The generator only reshuffles, which neither preset does (RULES §6.4).
            engine = GameState(self.rules, self.num_players(), np.random.default_rng(0))
            engine.deal(0, self.deck)
            self.engine = engine

    def _action_to_string(self, player: int, action: int) -> str:
        if player == pyspiel.PlayerId.CHANCE:
            return f"deal {card_to_str(action)}"
        return action_to_str(action)

    def is_terminal(self) -> bool:
        return self.engine is not None and self.engine.deal_over

    def returns(self) -> list[float]:
        """The deal rewards (:func:`treppen_env.aec.deal_rewards`) once the deal is over, else zeros."""
        points = None if self.engine is None else self.engine.deal_points
        return [0.0] * self.num_players() if points is None else deal_rewards(points)

    def resample_from_infostate(self, player: int, probability_sampler: Any) -> TreppenState:
        """A copy in which the cards ``player`` cannot see are dealt afresh
        (:func:`treppen_env.agent_hooks.redeal`): its information state is this one's. For
        OpenSpiel's Python ``ISMCTSBot``; the seed of the deal is ``probability_sampler()``.

        :raises ValueError: before the deal is dealt.
        """
        if self.engine is None:
            raise ValueError("resample_from_infostate: the deal is not dealt yet (a chance node)")
        copy = self.clone()
        redeal(copy.engine, player, int(probability_sampler() * 2**63))
        return copy

    def __str__(self) -> str:
        if self.engine is None:
            return f"dealt {len(self.deck)} of {NUM_CARDS} cards"
        return render_text(self.engine)


pyspiel.register_game(GAME_TYPE, TreppenGame)
