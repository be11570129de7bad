"""The action-feature policy of the SB3 backend: :class:`ActionFeaturePolicy` wraps the
action-feature net (:class:`treppen.train.common.action_feature_net.ActionFeatureNet`) as an
sb3-contrib ``MaskableActorCriticPolicy``: ``MaskablePPO(ActionFeaturePolicy, env,
policy_kwargs={"rules": "rum500"})``. Masks apply as for any MaskablePPO policy (illegal actions get
probability 0).
"""

from __future__ import annotations

from typing import Any

import torch
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from torch import nn

from treppen.train.common.action_feature_net import ActionFeatureNet
from treppen_env.actions import NUM_ACTIONS


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
    :param features: ``cards``, ``heuristic`` or ``planner`` (:data:`FEATURE_SETS`); the last two need the
        action mask in every call that gives a distribution (MaskablePPO always passes it).
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
        features: str = "cards",
        **kwargs: Any,
    ):
        self.net_kwargs: dict[str, Any] = {
            "rules": rules,
            "rules_options": dict(rules_options or {}),
            "card_dim": card_dim,
            "hidden": hidden,
            "action_dim": action_dim,
            "features": features,
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

    # The three calls that build a distribution, as sb3-contrib's, with the mask given to the net
    # as well (the heuristic's features are computed from the observation and the mask).
    def forward(
        self, obs: torch.Tensor, deterministic: bool = False, action_masks: Any = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        logits, state = self.net(self.extract_features(obs, self.pi_features_extractor), action_masks)
        distribution = self._masked(logits, action_masks)
        actions = distribution.get_actions(deterministic=deterministic)
        return actions, self.value_net(state), distribution.log_prob(actions)

    def evaluate_actions(
        self, obs: torch.Tensor, actions: torch.Tensor, action_masks: Any = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        logits, state = self.net(self.extract_features(obs, self.pi_features_extractor), action_masks)
        distribution = self._masked(logits, action_masks)
        return self.value_net(state), distribution.log_prob(actions), distribution.entropy()

    def get_distribution(self, obs: Any, action_masks: Any = None) -> Any:
        logits, _ = self.net(self.extract_features(obs, self.pi_features_extractor), action_masks)
        return self._masked(logits, action_masks)

    def _masked(self, logits: torch.Tensor, action_masks: Any) -> Any:
        distribution = self._get_action_dist_from_latent(logits)
        if action_masks is not None:
            distribution.apply_masking(action_masks)
        return distribution
