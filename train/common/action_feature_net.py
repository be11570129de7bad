"""The action-feature policy: every action scored from its features against the state .

:class:`ActionFeatureNet` is a plain ``torch.nn.Module`` (no Stable-Baselines3 in it, so other
backends can wrap it): observation (B, 969) -> action logits (B, 898) and a state embedding.

1. Cards: each of the 52 cards gets an embedding from its own observation entries, those of its
   neighbours (same suit two ranks either side, the rest of its rank; see
   :data:`treppen.agents.action_features.CARD_OBS_INDEX`), its rank, suit and points, and the global
   entries (hand sizes, stock, phase, points, ...).
2. State: pooled card embeddings (over the hand, and a max over all cards) plus the global
   entries, through an MLP.
3. Actions: a static feature row per action (:func:`treppen.agents.action_features.action_table`: kind,
   cards moved, depth, target, points) through an MLP, plus the sum of the embeddings of the cards
   the action moves (for a take: the staircase cards down to its depth, and the deepest one apart),
   plus the state embedding; one hidden layer shared by all actions gives the logit.

Actions that move the same cards share what is learnt about those cards; an action unseen in
training still gets a sensible score from its features.

With ``features="heuristic"`` each action's logit also gets a term from what the greedy
heuristic computes about that action in this position (:mod:`treppen_env.agent_core.feature_kernels`: its
plan's score after the action, the points it books, a discard's weight and danger, the taken
cards a take's plan lays, the heuristic's own pick), through one hidden layer modulated by the
state embedding; ``features="planner"`` gives the planner's view of the same columns instead (its
settings travel with the weights, the ``heuristic_values`` buffer). Those features are computed
from the observation and the action mask (:func:`treppen.agents.heuristic_features.heuristic_features`)
at every forward pass, so they need the mask: the policy raises without it.

The SB3 backend wraps it as a policy (:class:`treppen.train.sb3.policy_net.ActionFeaturePolicy`), the
RLlib backend as an RLModule (:mod:`treppen.train.rllib.modules`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn

from treppen.agents import heuristic_features as heuristic
from treppen.agents.action_features import (
    ACTION_FEATURES,
    CARD_OBS_FEATURES,
    CARD_OBS_INDEX,
    CHANNELS,
    GLOBAL_SLICE,
    action_table,
    card_channel_matrix,
    card_static_features,
)
from treppen.train.common.config import FEATURE_SETS
from treppen_env.actions import TAKE_BASE
from treppen_env.agent_core.feature_kernels import H_LEGAL
from treppen_env.cards import NUM_CARDS, NUM_RANKS
from treppen_env.observation import SLICES
from treppen_env.rules import Rules, make_rules

GLOBAL_FEATURES = GLOBAL_SLICE.stop - GLOBAL_SLICE.start
_TAKES = slice(TAKE_BASE + 1, TAKE_BASE + NUM_CARDS + 1)


class ActionFeatureNet(nn.Module):
    """Scores the 898 actions of an observation from their features (see the module docstring).

    :param rules: the rules (or a preset name) whose meld and lay-off values fill the action table (RULES §5).
    :param rules_options: rules options overriding the preset.
    :param card_dim: width of the card embeddings.
    :param hidden: width of the state embedding (also the value head's input).
    :param action_dim: width of the static action embedding scored against the state.
    :param features: ``cards``, ``heuristic`` or ``planner`` (:data:`FEATURE_SETS`; see the module docstring).
    :raises ValueError: for an unknown preset, option or feature set.
    """

    # buffers (register_buffer), declared for type checkers
    action_table: torch.Tensor
    card_index: torch.Tensor
    card_static: torch.Tensor
    card_channels: torch.Tensor
    depths: torch.Tensor
    heuristic_rules: torch.Tensor
    heuristic_values: torch.Tensor

    def __init__(
        self,
        rules: Rules | str = "treppenromme",
        rules_options: dict[str, Any] | None = None,
        card_dim: int = 64,
        hidden: int = 256,
        action_dim: int = 64,
        features: str = "cards",
    ):
        super().__init__()
        if features not in FEATURE_SETS:
            raise ValueError(f"features={features!r}; choose one of {list(FEATURE_SETS)}")
        self.hidden = hidden
        self.rules = make_rules(rules, **(rules_options or {}))
        self.features = features
        table = action_table(self.rules)
        self.register_buffer("action_table", torch.from_numpy(table))
        self.register_buffer("card_index", torch.from_numpy(CARD_OBS_INDEX).flatten())
        self.register_buffer("card_static", torch.from_numpy(card_static_features()))
        self.register_buffer("card_channels", torch.from_numpy(card_channel_matrix()), persistent=False)
        self.register_buffer("depths", torch.arange(1, NUM_CARDS + 1, dtype=torch.float32), persistent=False)
        self.card_in = nn.Linear(CARD_OBS_FEATURES, card_dim)
        self.card_id = nn.Linear(self.card_static.shape[1], card_dim, bias=False)
        self.card_global = nn.Linear(GLOBAL_FEATURES, card_dim, bias=False)
        self.state = nn.Sequential(
            nn.Linear(2 * card_dim + GLOBAL_FEATURES, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU()
        )
        self.card_mid = nn.Linear(card_dim, card_dim)
        self.card_state = nn.Linear(hidden, card_dim, bias=False)
        self.card_score = nn.Linear(card_dim, len(CHANNELS))
        self.action_mlp = nn.Sequential(
            nn.Linear(ACTION_FEATURES, action_dim), nn.ReLU(), nn.Linear(action_dim, action_dim + 1)
        )
        self.state_to_action = nn.Linear(hidden, action_dim, bias=False)
        if features in heuristic.VIEWS:  # the rules row travels with the weights (snapshots, RLlib exports)
            self.register_buffer("heuristic_rules", torch.from_numpy(heuristic.rules_row(self.rules).copy()))
            if features == "planner":  # and the planner's settings
                self.register_buffer("heuristic_values", torch.from_numpy(heuristic.view_values(features)))
            self.heuristic_in = nn.Linear(heuristic.NUM_FEATURES, action_dim)
            self.heuristic_state = nn.Linear(hidden, action_dim, bias=False)
            self.heuristic_out = nn.Linear(action_dim, 1)
        for layer in (self.card_score, self.state_to_action):  # near-uniform initial policy (SB3's 0.01 gain)
            nn.init.normal_(layer.weight, std=0.01)

    def encode(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Card embeddings (B, 52, card_dim) and the state embedding (B, hidden) of observations (B, 969)."""
        glob = obs[:, GLOBAL_SLICE]
        entries = obs.index_select(1, self.card_index).view(obs.shape[0], NUM_CARDS, -1)
        cards = self.card_in(entries) + self.card_id(self.card_static)
        cards = torch.relu(cards + self.card_global(glob)[:, None])
        hand = obs[:, SLICES["hand"]]
        pooled = torch.cat([(hand[..., None] * cards).sum(1) / NUM_RANKS, cards.amax(1), glob], dim=-1)
        state = self.state(pooled)
        cards = torch.relu(self.card_mid(cards) + self.card_state(state)[:, None])
        return cards, state

    def heuristic(self, obs: torch.Tensor, masks: Any) -> torch.Tensor | None:
        """The heuristic's features (B, 898, NUM_FEATURES) of observations (B, 969) with their
        action masks (B, 898), or ``None`` with ``features="cards"``.

        :raises ValueError: with ``features="heuristic"`` or ``"planner"`` and no mask.
        """
        if self.features == "cards":
            return None
        if masks is None:
            raise ValueError(f"features={self.features!r} needs the action mask (pass action_masks)")
        if isinstance(masks, torch.Tensor):
            masks = masks.detach().cpu().numpy()
        masks = np.asarray(masks).reshape(obs.shape[0], -1)
        planner = self.heuristic_values.cpu().numpy() if self.features == "planner" else None
        rules = self.heuristic_rules.cpu().numpy()
        values = heuristic.heuristic_features(obs.detach().cpu().numpy(), masks, rules, planner)
        return torch.from_numpy(values).to(obs.device)

    def action_logits(
        self, obs: torch.Tensor, cards: torch.Tensor, state: torch.Tensor, features: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Logits (B, 898) from the card embeddings and state embedding of :meth:`encode`, and the
        heuristic's features of :meth:`heuristic` (``None`` with ``features="cards"``).

        A logit is the static action embedding scored against the state, plus the scores of the
        cards the action moves, each read from the channel of the action's kind (:data:`CHANNELS`),
        plus (``heuristic``) the heuristic's features through a hidden layer modulated by the state.
        """
        batch = obs.shape[0]
        per_action = self.action_mlp(self.action_table)  # (898, action_dim + 1)
        logits = self.state_to_action(state) @ per_action[:, :-1].T + per_action[:, -1]  # (B, 898)
        scores = self.card_score(cards)  # (B, 52, channels)
        moved = scores.reshape(batch, -1) @ self.card_channels  # (B, 898): melds, lay-offs, discards
        # takes: the staircase cards down to the depth, and the deepest one apart (RULES §4.1-4.2)
        depth = torch.round(obs[:, SLICES["staircase"]] * NUM_CARDS)  # (B, 52), 0 off the staircase
        deepest = (depth[:, None, :] == self.depths[None, :, None]).float()  # (B, depth, card)
        taken, deep = CHANNELS.index("taken"), CHANNELS.index("deepest")
        take = deepest.cumsum(dim=1) @ scores[..., taken : taken + 1] + deepest @ scores[..., deep : deep + 1]
        take = take.squeeze(-1)  # (B, 52)
        logits = logits + torch.cat([moved[:, : _TAKES.start], take, moved[:, _TAKES.stop :]], dim=1)
        if features is not None:  # the legal actions only (their rows are the only nonzero ones)
            rows, actions = (features[..., H_LEGAL] > 0).nonzero(as_tuple=True)
            hidden = torch.relu(self.heuristic_in(features[rows, actions]) + self.heuristic_state(state)[rows])
            extra = torch.zeros_like(logits).index_put((rows, actions), self.heuristic_out(hidden).squeeze(-1))
            logits = logits + extra
        return logits

    def forward(self, obs: torch.Tensor, masks: Any = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Action logits (B, 898) and the state embedding (B, hidden) of observations (B, 969);
        ``masks`` (B, 898) are needed with ``features="heuristic"`` or ``"planner"`` (:meth:`heuristic`)."""
        cards, state = self.encode(obs)
        return self.action_logits(obs, cards, state, self.heuristic(obs, masks)), state
