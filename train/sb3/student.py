"""The SB3 backend's policy as the imitation warm start's student
(:class:`treppen.train.common.imitation.Student`)."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy

from treppen.train.common.imitation import Student


class PolicyStudent(Student):
    """A MaskablePPO policy (``model.policy``) as imitation's student: its masked distribution, its
    value head and its own optimizer.

    :param policy: the policy, trained in place.
    """

    def __init__(self, policy: MaskableActorCriticPolicy):
        super().__init__(policy, policy.optimizer)
        self.policy = policy

    def evaluate(self, obs: torch.Tensor, actions: torch.Tensor, masks: np.ndarray) -> tuple[Any, torch.Tensor]:
        values, log_prob, _ = self.policy.evaluate_actions(obs, actions, action_masks=torch.as_tensor(masks))
        return values, log_prob

    def act(self, obs: np.ndarray, masks: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            obs_tensor, _ = self.policy.obs_to_tensor(obs)
            dist: Any = self.policy.get_distribution(obs_tensor, action_masks=masks)
            return dist.distribution.probs.argmax(dim=1).cpu().numpy()
