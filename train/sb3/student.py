"""The SB3 backend's policy as the imitation warm start's student
(:class:`treppen.train.common.imitation.Student`)."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy


class PolicyStudent:
    """A MaskablePPO policy (``model.policy``) as imitation's student: its masked distribution, its
    value head and its own optimizer; its state is the policy's ``state_dict``.

    :param policy: the policy, trained in place.
    """

    def __init__(self, policy: MaskableActorCriticPolicy):
        self.policy = policy
        self.optimizer = policy.optimizer

    def evaluate(self, obs: torch.Tensor, actions: torch.Tensor, masks: np.ndarray) -> tuple[Any, torch.Tensor]:
        values, log_prob, _ = self.policy.evaluate_actions(obs, actions, action_masks=torch.as_tensor(masks))
        return values, log_prob

    def act(self, obs: np.ndarray, masks: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            obs_tensor, _ = self.policy.obs_to_tensor(obs)
            dist: Any = self.policy.get_distribution(obs_tensor, action_masks=masks)
            return dist.distribution.probs.argmax(dim=1).cpu().numpy()

    def set_training_mode(self, mode: bool) -> None:
        self.policy.set_training_mode(mode)

    def parameters(self) -> Any:
        return self.policy.parameters()

    def state_dict(self) -> dict[str, Any]:
        return self.policy.state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> Any:
        return self.policy.load_state_dict(state)
