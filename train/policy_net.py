"""The action-feature policy: every action scored from its features against the state .

:class:`ActionFeatureNet` is a plain ``torch.nn.Module`` (no Stable-Baselines3 in it, so other
backends can wrap it): observation (B, 969) -> action logits (B, 898) and a state embedding.

1. Cards: each of the 52 cards gets an embedding from its own observation entries, those of its
   neighbours (same suit two ranks either side, the rest of its rank; see
   :data:`agents.action_features.CARD_OBS_INDEX`), its rank, suit and points, and the global
   entries (hand sizes, stock, phase, points, ...).
2. State: pooled card embeddings (over the hand, and a max over all cards) plus the global
   entries, through an MLP.
3. Actions: a static feature row per action (:func:`agents.action_features.action_table`: kind,
   cards moved, depth, target, points) through an MLP, plus the sum of the embeddings of the cards
   the action moves (for a take: the staircase cards down to its depth, and the deepest one apart),
   plus the state embedding; one hidden layer shared by all actions gives the logit.

Actions that move the same cards share what is learnt about those cards; an action unseen in
training still gets a sensible score from its features.

:class:`ActionFeaturePolicy` wraps the net as an sb3-contrib ``MaskableActorCriticPolicy``:
``MaskablePPO(ActionFeaturePolicy, env, policy_kwargs={"rules": "rum500"})``. Masks apply as for
any MaskablePPO policy (illegal actions get probability 0).
"""

from __future__ import annotations

from typing import Any

import torch
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from torch import nn

from agents.action_features import (
    ACTION_FEATURES,
    CARD_OBS_FEATURES,
    CARD_OBS_INDEX,
    CHANNELS,
    GLOBAL_SLICE,
    action_table,
    card_channel_matrix,
    card_static_features,
)
from treppen_env.actions import NUM_ACTIONS, TAKE_BASE
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
    :raises ValueError: for an unknown preset or option.
    """

    # buffers (register_buffer), declared for type checkers
    action_table: torch.Tensor
    card_index: torch.Tensor
    card_static: torch.Tensor
    card_channels: torch.Tensor
    depths: torch.Tensor

    def __init__(
        self,
        rules: Rules | str = "treppenromme",
        rules_options: dict[str, Any] | None = None,
        card_dim: int = 64,
        hidden: int = 256,
        action_dim: int = 64,
    ):
        super().__init__()
        self.hidden = hidden
        table = action_table(make_rules(rules, **(rules_options or {})))
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

    def action_logits(self, obs: torch.Tensor, cards: torch.Tensor, state: torch.Tensor) -> torch.Tensor:
        """Logits (B, 898) from the card embeddings and state embedding of :meth:`encode`.

        A logit is the static action embedding scored against the state, plus the scores of the
        cards the action moves, each read from the channel of the action's kind (:data:`CHANNELS`).
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
        return logits + torch.cat([moved[:, : _TAKES.start], take, moved[:, _TAKES.stop :]], dim=1)

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Action logits (B, 898) and the state embedding (B, hidden) of observations (B, 969)."""
        cards, state = self.encode(obs)
        return self.action_logits(obs, cards, state), state


class _Head(nn.Module):
    """SB3's ``mlp_extractor`` interface around the net: the actor latent is the logits."""

    def __init__(self, net: ActionFeatureNet):
        super().__init__()
        self.net = net
        self.latent_dim_pi = NUM_ACTIONS
        self.latent_dim_vf = net.hidden

    def forward(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.net(features)

    def forward_actor(self, features: torch.Tensor) -> torch.Tensor:
        return self.net(features)[0]

    def forward_critic(self, features: torch.Tensor) -> torch.Tensor:
        return self.net.encode(features)[1]


class ActionFeaturePolicy(MaskableActorCriticPolicy):
    """sb3-contrib ``MaskableActorCriticPolicy`` whose logits come from :class:`ActionFeatureNet`.

    The value is a linear function of the net's state embedding. Saved and loaded with the model
    like any SB3 policy (its constructor arguments are stored in the ``.zip``).

    :param rules: rules preset of the action table (see :class:`ActionFeatureNet`).
    :param rules_options: rules options.
    :param card_dim: width of the card embeddings.
    :param hidden: width of the state embedding.
    :param action_dim: width of the static action embedding.
    :param kwargs: the usual ``MaskableActorCriticPolicy`` arguments (``net_arch`` is unused).
    """

    def __init__(
        self,
        *args: Any,
        rules: str = "treppenromme",
        rules_options: dict[str, Any] | None = None,
        card_dim: int = 64,
        hidden: int = 256,
        action_dim: int = 64,
        **kwargs: Any,
    ):
        self.net_kwargs: dict[str, Any] = {
            "rules": rules,
            "rules_options": dict(rules_options or {}),
            "card_dim": card_dim,
            "hidden": hidden,
            "action_dim": action_dim,
        }
        kwargs.setdefault("ortho_init", False)  # the net initialises itself
        super().__init__(*args, **kwargs)

    @property
    def net(self) -> ActionFeatureNet:
        """The wrapped :class:`ActionFeatureNet`."""
        head = self.mlp_extractor
        assert isinstance(head, _Head)
        return head.net

    def _build_mlp_extractor(self) -> None:
        # SB3 uses the extractor through its interface only (latent_dim_pi/vf, forward_actor/critic)
        self.mlp_extractor = _Head(ActionFeatureNet(**self.net_kwargs))  # type: ignore[assignment]

    def _build(self, lr_schedule: Any) -> None:
        super()._build(lr_schedule)
        self.action_net = nn.Identity()  # the latent already is the logits
        # as SB3's own _build: every torch optimizer takes lr, which the base class signature lacks
        self.optimizer = self.optimizer_class(self.parameters(), lr=lr_schedule(1), **self.optimizer_kwargs)  # type: ignore[call-arg]

    def _get_constructor_parameters(self) -> dict[str, Any]:
        return {**super()._get_constructor_parameters(), **self.net_kwargs}
